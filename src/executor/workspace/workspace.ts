// Each run gets its own workspace under DATA_DIR/workspaces/<run id>: the files of the environment's
// source (a git repository: a local path, or a URL cloned once into DATA_DIR/sources/ and fetched
// before each run; or a plain copy otherwise), with a repository of its own for the agent. What the
// executor knows of the workspace lives apart, in the run's private git dir (private-git.ts): the
// start commit, an index, objects borrowed read-only from the source (alternates), a clean config.
// The diff, the patch and publishing read the workspace's files through it and never the agent's
// `.git`. A run never sees another run's objects nor the credentials a checkout keeps in
// .git/config, and the source is never written to. Where the executor may mount overlayfs, a git
// source's workspace is a copy-on-write view of one shared checkout of its commit (layers.ts).

import { createHash, randomUUID } from 'node:crypto';
import {
  existsSync,
  lchownSync,
  lstatSync,
  mkdirSync,
  readFileSync,
  readdirSync,
  renameSync,
  rmSync,
  statSync,
  utimesSync,
  writeFileSync
} from 'node:fs';
import { dirname, isAbsolute, join, relative, resolve } from 'node:path';
import { type EnvironmentConfig, isRemoteSource } from '../config/config.js';
import { type RunIdentity, asRunUser, readerReason } from '../sandbox/run-files.js';
import { giveTo } from '../sandbox/user.js';
import { copyTree, markWorkspaces } from './copy.js';
import { removeTree } from './remove.js';
import {
  type PrivateRepository,
  type RunTree,
  gitLine,
  privateGit,
  runTreeGit,
  sourceGit as git
} from './git.js';
import { type Layers, layerPaths } from './layer-changes.js';
import { excludeNested, nestedRepositories } from './nested.js';
import {
  type LayerOwner,
  layerMode,
  mountWorkspace,
  removeLayers,
  sweepLayers,
  unmountWorkspace,
  unmountedWorkspace,
  workspaceLayers
} from './layers.js';
import { type SetupLayer, setupKey } from './setup-layers.js';
import { checkoutRepository, privateGitDir, removePrivateGitDir, snapshotCopy } from './private-git.js';

export { gitReason, redactUrls } from './git.js';
export { type Freed, type LayerMode, freeSharedLayers, layerMode } from './layers.js';
export type { SetupLayer } from './setup-layers.js';

const MAX_DIFF_BYTES = 1024 * 1024;
/** The `diff` event names at most this many files; the rest are counted (`more_files`). */
export const MAX_DIFF_FILES = 1000;
/** Every diff of a workspace: no external diff, no textconv, submodules never looked into. */
const NO_PROGRAMS = ['--no-ext-diff', '--no-textconv', '--ignore-submodules=all'];

export interface Workspace {
  /** Where the agent works (a subdirectory of the checkout when the source is one). */
  path: string;
  /** The workspace's own directory under the data dir. */
  root: string;
  kind: 'repository' | 'copy';
  /**
   * Where the bytes the run wrote are: the overlay's upper layer when the workspace is a
   * copy-on-write view of a shared checkout (layers.ts), else the workspace itself. The quota and
   * size() count this directory only.
   */
  counted: string;
  /** What the run's user must be given before its first process (nothing for an overlay: see layers.ts). */
  owned: string[];
  /** Object stores the workspace borrows, read-only (the sandbox shows them). */
  borrowed: string[];
  /** The source's repository (a local checkout, or the bare cache of a URL source); none for a copy. */
  repository?: string;
  /** The branch the workspace started from, when the environment publishes (see startOf). */
  baseBranch?: string;
  /** The commit the workspace started at, as the executor made it (never read back from the workspace). */
  base: string;
  /** The run's private git dir with the workspace as its work tree (see private-git.ts). */
  git: PrivateRepository;
  /** Who reads the workspace's files for the executor (sandbox/run-files.ts): the run's user. */
  identity: RunIdentity;
  /**
   * Unified diff of every file changed since the workspace was made, and the changed paths: the
   * work tree added to the private index, against the start commit. A copy-on-write workspace
   * reads what changed from its layers; `walk: 'tree'` walks the whole work tree all the same.
   */
  diff(walk?: 'layers' | 'tree'): Promise<{
    diff: string;
    truncated: boolean;
    files: { path: string; change: string }[];
    /** How many changed files are not in `files` (past MAX_DIFF_FILES); absent when none. */
    more_files?: number;
    /** Directories holding a `.git` the run made, left out of the changes. */
    nested: string[];
    /** How the changes were found: from the layers, or by walking the whole work tree. */
    walked: 'layers' | 'tree';
  }>;
  /**
   * The binary patch of the changes diff() found against the start: its first `max` bytes, and its
   * whole size (counted, not kept, past `max`).
   */
  patch(max: number): Promise<{ bytes: Buffer; size: number }>;
  /**
   * Bytes the changes diff() found hold: the sizes of the new contents of every added or modified
   * file, each name counted (what applying the patch elsewhere writes).
   */
  changedBytes(): Promise<number>;
  /** The git tree of the whole work tree as diff() found it (what publishing commits). */
  tree(): Promise<string>;
  /** Disk use of what the run wrote here, in bytes and in files and directories (run-files.ts's du). */
  size(): Promise<TreeUsage>;
  /** Marks the workspace finished; it is removed once older than the retention time. */
  release(): void;
  /** The environment's kept setup layer, when the run may use or make one (setup_cache). */
  setupLayer?: SetupLayer;
}

/** Whether a directory is inside a git repository with a commit, cached: sources do not move. */
const topLevels = new Map<string, Promise<string | undefined>>();
function gitTopLevel(dir: string): Promise<string | undefined> {
  let top = topLevels.get(dir);
  if (!top) {
    top = git(['rev-parse', '--show-toplevel', '--verify', '--quiet', 'HEAD'], dir)
      .then(out => out.split('\n')[0]!.trim() || undefined)
      .catch(() => undefined);
    topLevels.set(dir, top);
  }
  return top;
}

/**
 * Runs borrow a remote source's objects from its cache and read them as their own user: git makes
 * the cache readable by all whatever the executor's umask (077 would leave it root's alone), from
 * the clone's first directory (the option before `clone`) to every later fetch (the one after it,
 * kept in the cache's config).
 */
const READABLE_CACHE = 'core.sharedRepository=0644';

/**
 * Clones `source` bare into `target`, readable by all, once: runs of one source start side by side,
 * so the clone is made aside and renamed into place; the first rename wins and the others drop
 * their copy.
 */
async function cloneOnce(source: string, target: string, options: string[]): Promise<void> {
  mkdirSync(dirname(target), { recursive: true });
  const aside = `${target}.${process.pid}-${randomUUID()}`;
  try {
    await git([
      '-c',
      READABLE_CACHE,
      'clone',
      '--bare',
      '--quiet',
      ...options,
      '-c',
      READABLE_CACHE,
      source,
      aside
    ]);
    renameSync(aside, target);
  } catch (error) {
    rmSync(aside, { recursive: true, force: true });
    if (!existsSync(target)) throw error;
  }
}

/** A remote source is cloned once (bare) and fetched before each run. */
async function remoteCache(source: string, dataDir: string): Promise<string> {
  const cache = join(
    dataDir,
    'sources',
    createHash('sha256').update(source).digest('hex').slice(0, 16) + '.git'
  );
  if (!existsSync(cache)) {
    await cloneOnce(source, cache, []);
  } else {
    await git(['fetch', '--quiet', '--prune', 'origin', '+refs/heads/*:refs/heads/*'], cache);
  }
  return cache;
}

/**
 * Whether another user (the run's) can read an object store: its folders let others in and its
 * packs are readable. A clone made under `umask 077` fails this: its objects are its owner's alone.
 */
function readableByOthers(store: string): boolean {
  try {
    const pack = join(store, 'pack');
    const packs = existsSync(pack) ? readdirSync(pack).filter(name => name.endsWith('.pack')) : [];
    const paths = [
      store,
      ...(existsSync(pack) ? [pack] : []),
      ...packs.slice(0, 1).map(name => join(pack, name))
    ];
    return paths.every(path => {
      const stat = statSync(path);
      const need = stat.isDirectory() ? 0o005 : 0o004;
      return (stat.mode & need) === need;
    });
  } catch {
    return false;
  }
}

/**
 * The object stores a run borrows: the source's own when the run's user can read them; else a
 * mirror of the source kept in the data dir (`sources/local-<hash>.git`), cloned as from a remote
 * (a local clone would copy the objects' folders with their modes) and readable by all
 * (core.sharedRepository), with the run's start commit fetched into it.
 * The source is the operator's tree, never a run's: the executor reads it as itself.
 */
async function readableStores(
  stores: string[],
  repository: string,
  dataDir: string,
  head: string,
  owner: LayerOwner | undefined
): Promise<string[]> {
  if (!owner || stores.every(readableByOthers)) return stores;
  const mirror = join(
    dataDir,
    'sources',
    `local-${createHash('sha256').update(repository).digest('hex').slice(0, 16)}.git`
  );
  // Each commit gets a ref of its own, fetched only when the mirror lacks it, so that runs starting
  // side by side never take one ref's lock at once.
  if (!existsSync(mirror)) await cloneOnce(repository, mirror, ['--no-local']);
  const known = await git(['cat-file', '-e', `${head}^{commit}`], mirror).then(
    () => true,
    () => false
  );
  if (!known)
    await git(
      [
        'fetch',
        '--quiet',
        '--no-tags',
        '--no-write-fetch-head',
        repository,
        `+${head}:refs/agent-run/${head}`
      ],
      mirror
    );
  return [join(mirror, 'objects')];
}

/** The object stores a repository reads: its own and those it borrows itself. */
function objectStores(gitDir: string): string[] {
  const own = join(gitDir, 'objects');
  const stores = [own];
  const alternates = join(own, 'info', 'alternates');
  if (existsSync(alternates)) {
    for (const line of readFileSync(alternates, 'utf8').split('\n')) {
      const path = line.trim();
      if (path && !path.startsWith('#')) stores.push(isAbsolute(path) ? path : resolve(own, path));
    }
  }
  return stores.filter(path => existsSync(path));
}

/**
 * The commit a published environment's runs start at, and its branch: `publish.base` (a branch of
 * the source, or of its `origin`), else the branch the source's HEAD is on (none when detached).
 */
async function startOf(
  repository: string,
  base: string | undefined
): Promise<{ commit: string; branch?: string }> {
  if (base === undefined) {
    const branch = await git(['symbolic-ref', '--quiet', '--short', 'HEAD'], repository)
      .then(out => out.trim() || undefined)
      .catch(() => undefined);
    return { commit: (await git(['rev-parse', '--verify', 'HEAD^{commit}'], repository)).trim(), branch };
  }
  for (const ref of [`refs/heads/${base}`, `refs/remotes/origin/${base}`]) {
    const commit = await git(['rev-parse', '--verify', '--quiet', `${ref}^{commit}`], repository)
      .then(out => out.trim())
      .catch(() => '');
    if (commit) return { commit, branch: base };
  }
  throw new Error(`publish.base ${JSON.stringify(base)}: the source ${repository} has no such branch`);
}

export async function createWorkspace(
  environment: EnvironmentConfig,
  dataDir: string,
  runId: string,
  quotaBytes = Number.POSITIVE_INFINITY,
  /** The run's host user, when the executor is root: a shared checkout's files are theirs. */
  owner?: LayerOwner,
  /** Whether the run may use or make a kept setup layer (the environment's setup_cache). */
  cacheSetup = false
): Promise<Workspace> {
  const root = join(dataDir, 'workspaces', runId);
  markWorkspaces(join(dataDir, 'workspaces'));
  const { repository, sub } = await sourceRepository(environment, dataDir);

  // The private git dir is made first, so a crash leaves nothing the sweep would not see.
  const repo: PrivateRepository = { gitDir: privateGitDir(dataDir, runId), workTree: root };
  removePrivateGitDir(repo.gitDir);
  mkdirSync(repo.gitDir, { recursive: true, mode: 0o700 });
  const filled = repository
    ? await fillFromRepository(environment, dataDir, runId, repo, repository, owner, cacheSetup)
    : await fillFromCopy(environment, dataDir, repo, quotaBytes);

  // git on the work tree runs as the run's user from now on (run-files.ts): the private git dir and
  // a workspace root made here, which nothing of the run has touched yet, become that user's.
  if (owner) {
    ownAll(repo.gitDir, owner);
    await giveTo(owner, filled.owned);
  }
  const identity: RunIdentity = { user: owner, confined: environment.sandbox?.enabled !== false };
  const made: Made & { identity: RunIdentity } = {
    sub,
    kind: filled.kind,
    borrowed: filled.borrowed,
    repository,
    baseBranch: filled.start?.branch,
    base: filled.base,
    counted: filled.counted,
    owned: filled.owned,
    identity
  };
  try {
    // Kept beside the private git dir, so a later turn of the run (a follow-up) reopens the workspace.
    writeFileSync(madeFile(dataDir, runId), JSON.stringify(made), { mode: 0o600 });
  } catch (error) {
    await filled.setupLayer?.finish(false);
    throw error;
  }
  const layersOf = filled.counted === root ? undefined : () => workspaceLayers(dataDir, runId);
  return { ...workspaceOf(root, repo, made, layersOf), setupLayer: filled.setupLayer };
}

/**
 * The git repository a workspace is made from (a remote source's cache, or the local source's
 * own, if it is in one) and the source's folder inside it; no repository for a plain folder.
 */
async function sourceRepository(
  environment: EnvironmentConfig,
  dataDir: string
): Promise<{ repository?: string; sub: string }> {
  if (isRemoteSource(environment.source))
    return { repository: await remoteCache(environment.source, dataDir), sub: '' };
  if (!existsSync(environment.source)) throw new Error(`source ${environment.source} does not exist`);
  const repository = await gitTopLevel(environment.source);
  return { repository, sub: repository ? relative(repository, environment.source) : '' };
}

/** What filling a new workspace made of it. */
interface Filled {
  kind: Workspace['kind'];
  counted: string;
  owned: string[];
  borrowed: string[];
  /** The commit (and branch) a published environment's run starts at. */
  start?: { commit: string; branch?: string };
  base: string;
  setupLayer?: SetupLayer;
}

/**
 * Fills the workspace with the repository's start commit: a copy-on-write view of its shared
 * checkout where overlays may be mounted, else a checkout of its own.
 */
async function fillFromRepository(
  environment: EnvironmentConfig,
  dataDir: string,
  runId: string,
  repo: PrivateRepository,
  repository: string,
  owner: LayerOwner | undefined,
  cacheSetup: boolean
): Promise<Filled> {
  const root = repo.workTree;
  const start = environment.publish ? await startOf(repository, environment.publish.base) : undefined;
  const head = start?.commit ?? (await git(['rev-parse', '--verify', 'HEAD^{commit}'], repository)).trim();
  const gitDir = resolve(repository, (await git(['rev-parse', '--git-common-dir'], repository)).trim());
  const borrowed = await readableStores(objectStores(gitDir), repository, dataDir, head, owner);
  if (layerMode(dataDir).kind === 'overlay') {
    const keyOf = cacheSetup ? (checkout: string) => setupKey(checkout, environment) : undefined;
    const mounted = await mountWorkspace(
      dataDir,
      runId,
      repo,
      head,
      borrowed,
      join(gitDir, 'shallow'),
      owner,
      keyOf
    );
    return {
      kind: 'repository',
      counted: mounted.upper,
      owned: [],
      borrowed,
      start,
      base: head,
      setupLayer: mounted.setup
    };
  }
  const base = await checkoutRepository(repo, head, borrowed, join(gitDir, 'shallow'));
  return { kind: 'repository', counted: root, owned: [root], borrowed, start, base };
}

/** Fills the workspace with a copy of a source that is no git repository, recorded as its start. */
async function fillFromCopy(
  environment: EnvironmentConfig,
  dataDir: string,
  repo: PrivateRepository,
  quotaBytes: number
): Promise<Filled> {
  const root = repo.workTree;
  copyTree(environment.source, root, dataDir, quotaBytes);
  const base = await snapshotCopy(repo);
  return { kind: 'copy', counted: root, owned: [root], borrowed: [], base };
}

/**
 * Gives a directory root just made (nothing of a run has been in it) and everything below it to
 * `owner`, without following a link.
 */
function ownAll(path: string, owner: LayerOwner): void {
  lchownSync(path, owner.uid, owner.gid);
  if (!lstatSync(path).isDirectory()) return;
  for (const name of readdirSync(path)) ownAll(join(path, name), owner);
}

/** How a workspace was made: what a later turn needs to reopen it (never read from the workspace). */
interface Made {
  sub: string;
  kind: Workspace['kind'];
  borrowed: string[];
  repository?: string;
  baseBranch?: string;
  base: string;
  /** What the quota measures: the workspace, or only the run's own layer of a copy-on-write one. */
  counted: string;
  /** What is given to the run's user before its first process (nothing for a copy-on-write view). */
  owned: string[];
  /** Who reads the workspace for the executor (absent in records of earlier versions: root's). */
  identity?: RunIdentity;
  /** Why the workspace may not be continued (its start from an earlier run failed half way). */
  unusable?: string;
}
const MADE_FILE = 'agent-run-workspace.json';

/**
 * Where a workspace's record is kept: beside its private git dir, in a folder only root writes
 * (the private git dir itself is the run user's since git runs as that user).
 */
function madeFile(dataDir: string, runId: string): string {
  return join(dataDir, 'gitdirs', `${runId}.json`);
}

function readMade(dataDir: string, runId: string): Made | undefined {
  // Records of earlier versions are inside the private git dir, which root alone wrote then.
  for (const file of [madeFile(dataDir, runId), join(privateGitDir(dataDir, runId), MADE_FILE)])
    if (existsSync(file)) return JSON.parse(readFileSync(file, 'utf8')) as Made;
  return undefined;
}

/**
 * Marks a workspace as one no later turn may continue, saying why (a start from an earlier run
 * that failed half way: a follow-up must not run over a partial copy).
 */
export function markUnusable(dataDir: string, runId: string, why: string): void {
  const made = readMade(dataDir, runId);
  if (made)
    writeFileSync(madeFile(dataDir, runId), JSON.stringify({ ...made, unusable: why }), { mode: 0o600 });
}

/**
 * The workspace an earlier turn of the run made, as it was left (a follow-up continues in it);
 * undefined when it is gone (removed after workspaces.continue_for) or was never made. Throws,
 * saying why, for a copy-on-write workspace that is not mounted: never an empty directory.
 */
export function reopenWorkspace(
  dataDir: string,
  runId: string,
  /** Who reads it when its record (of an earlier version) does not say: the environment's run user. */
  identity: RunIdentity
): Workspace | undefined {
  const root = join(dataDir, 'workspaces', runId);
  const repo: PrivateRepository = { gitDir: privateGitDir(dataDir, runId), workTree: root };
  const made = existsSync(root) ? readMade(dataDir, runId) : undefined;
  if (!made) return undefined;
  if (made.unusable) throw new Error(`the workspace of run ${runId} cannot be continued: ${made.unusable}`);
  const unmounted = unmountedWorkspace(dataDir, runId);
  if (unmounted) throw new Error(`the workspace of run ${runId} cannot be continued: ${unmounted}`);
  return workspaceOf(root, repo, { ...made, identity: made.identity ?? identity }, () =>
    workspaceLayers(dataDir, runId)
  );
}

function workspaceOf(
  root: string,
  repo: PrivateRepository,
  made: Made & { identity: RunIdentity },
  /** The layers of a copy-on-write workspace as they are when asked. */
  layersOf?: () => Layers | undefined
): Workspace {
  const { sub, kind, borrowed, repository, baseBranch, base, counted, owned, identity } = made;
  const view: TreeView = {
    tree: { repository: repo, borrowed, identity },
    repo,
    root,
    base,
    identity,
    layersOf
  };
  return {
    path: sub ? join(root, sub) : root,
    root,
    kind,
    counted,
    owned,
    borrowed,
    repository,
    baseBranch,
    base,
    git: repo,
    identity,
    diff: (walk = 'layers') => workspaceDiff(view, walk),
    async patch(max: number) {
      const { stdout, bytes } = await runTreeGit(view.tree, [changes(view, '--binary')], { maxStdout: max });
      return { bytes: stdout, size: bytes };
    },
    changedBytes: () => changedBytes(view),
    tree: () => workTree(view),
    size: () => treeUsage(identity, [counted]),
    release() {
      const now = new Date();
      if (existsSync(root)) utimesSync(root, now, now);
    }
  };
}

/** What a workspace's diff, patch and tree read its changes with, and what its last diff left. */
interface TreeView {
  tree: RunTree;
  repo: PrivateRepository;
  root: string;
  base: string;
  identity: RunIdentity;
  layersOf?: () => Layers | undefined;
  /**
   * The two trees a diff from the layers wrote (the start and the end of the paths it looked at);
   * unset after a walk, whose changes are the private index against the start.
   */
  ends?: { from: string; to: string };
}

/** The git diff of the changes, with `options`: the two trees, or the private index (as `add` left it) and the start. */
function changes(view: TreeView, ...options: string[]): string[] {
  const compared = view.ends ? [view.ends.from, view.ends.to] : ['--cached', view.base];
  return ['diff', '--no-color', '--no-renames', ...NO_PROGRAMS, ...options, ...compared];
}

type WorkspaceDiff = Awaited<ReturnType<Workspace['diff']>>;

/** Workspace.diff: the changed files' names (from the layers, else by a walk), then the diff itself. */
async function workspaceDiff(view: TreeView, walk: 'layers' | 'tree'): Promise<WorkspaceDiff> {
  view.ends = undefined;
  // A copy-on-write workspace says what the run may have changed (layer-changes.ts); else, or
  // when its layers say too much, the whole tree is walked.
  const layers = walk === 'layers' ? view.layersOf?.() : undefined;
  const fromLayers = layers ? await layerNames(view, layers) : undefined;
  const nested = fromLayers ? fromLayers.nested : await nestedRepositories(view.root, view.identity);
  const names = fromLayers ? fromLayers.names : await walkedNames(view, nested);
  const lines = names.split('\n').filter(Boolean);
  const files = lines.slice(0, MAX_DIFF_FILES).map(line => {
    const [status, ...path] = line.split('\t');
    const change = status === 'A' ? 'added' : status === 'D' ? 'deleted' : 'modified';
    return { path: path.join('\t'), change };
  });
  const more = lines.length - files.length;
  const { diff, truncated } =
    files.length === 0
      ? { diff: '', truncated: false }
      : cutDiff(fromLayers?.head ?? (await boundedDiff(view.tree, changes(view))));
  const walked = fromLayers ? ('layers' as const) : ('tree' as const);
  return more > 0
    ? { diff, truncated, files, more_files: more, nested, walked }
    : { diff, truncated, files, nested, walked };
}

/**
 * The changes among the paths the layers name, without the private index: the name-status lines
 * and (when whole) the head of the diff, with `view.ends` set to the two trees written; undefined
 * when the layers cannot tell or git refuses a candidate (a path below a directory the run swapped
 * for a link), and the whole tree is walked instead, as for a full checkout.
 */
async function layerNames(
  view: TreeView,
  layers: Layers
): Promise<{ nested: string[]; names: string; head?: Buffer } | undefined> {
  const found = await layerPaths(view.identity, layers);
  if (!found) return undefined;
  const listed = await runTreeGit(view.tree, [changedOnly(found.nested, view.base)], {
    pipeline: true,
    stdin: Buffer.from(found.candidates.map(path => `:(literal)${path}\0`).join(''))
  }).catch(() => undefined);
  if (!listed) return undefined;
  // The first line names the two trees, the name-status lines follow up to a NUL (no line
  // of git's has one), then the head of the diff the end's script printed.
  const out = listed.stdout;
  const newline = out.indexOf(0x0a);
  const end = out.indexOf(0, newline);
  const [from, to] = out.toString('utf8', 0, Math.max(newline, 0)).split(' ');
  if (!from || !to || !TREE.test(from) || !TREE.test(to))
    throw new Error('git write-tree failed: no tree was named');
  view.ends = { from, to };
  return {
    nested: found.nested,
    // Past what runTreeGit keeps (64 MB of names) the diff is printed on its own below.
    names: out.toString('utf8', newline + 1, end < 0 ? undefined : end),
    // A head cut short with the rest of the output (past runTreeGit's limit) is not the diff's.
    head: end < 0 || listed.bytes > out.length ? undefined : out.subarray(end + 1)
  };
}

/** The name-status lines of a walk: the whole work tree added to the private index, against the start. */
async function walkedNames(view: TreeView, nested: string[]): Promise<string> {
  const { stdout } = await runTreeGit(view.tree, [
    // Nested repositories the run made stay out of the index: git never probes them (nested.ts).
    ['add', '--all', ...excludeNested(nested)],
    ['diff', '--cached', '--name-status', '--no-renames', ...NO_PROGRAMS, view.base]
  ]);
  return stdout.toString('utf8');
}

/** Workspace.changedBytes: the sizes of the new contents of every added or modified file. */
async function changedBytes(view: TreeView): Promise<number> {
  const { stdout } = await runTreeGit(
    view.tree,
    [
      changes(view, '--raw', '--no-abbrev'),
      // `:<old mode> <new mode> <old id> <new id> <status>`: new contents only, no submodule.
      `awk '$2 != "160000" && $4 !~ /^0+$/ { print $4 }'`,
      ['cat-file', '--batch-check=%(objectsize)'],
      `awk '{ s += $1 } END { printf "%.0f\\n", s }'`
    ],
    { pipeline: true }
  );
  const bytes = Number(stdout.toString('utf8').trim());
  if (!Number.isSafeInteger(bytes)) throw new Error('the size of the changes could not be read');
  return bytes;
}

/** Workspace.tree: the git tree of the whole work tree as the last diff found it. */
async function workTree(view: TreeView): Promise<string> {
  // After a walk the private index holds the whole work tree; after a diff from the layers, the
  // start's tree with the changes between the two trees put in (a whole index is read here
  // only, when a run publishes).
  const made = view.ends
    ? (await runTreeGit(view.tree, [wholeTree(view.base, view.ends)], { pipeline: true })).stdout.toString(
        'utf8'
      )
    : await privateGit(view.repo, ['write-tree']);
  const id = made.trim();
  if (!TREE.test(id)) throw new Error('git write-tree failed: no tree was named');
  return id;
}

/** A tree id as `write-tree` prints it. */
const TREE = /^(?:[0-9a-f]{40}|[0-9a-f]{64})$/;

/**
 * The script that finds what changed among `candidates` (on stdin, NUL-ended pathspecs) without
 * the private index, whose every load costs what the repository weighs: a temporary index holds
 * only the start's entries below the candidates (`reset`), written as the first tree; `ls-files`
 * keeps the candidates git tracks or would add (a pathspec naming nothing, or only ignored files,
 * would make `add` fail), `add --all` records them, and that index is written as the second tree.
 * The upper layer holds every turn's changes, so nothing an earlier turn recorded is needed. Prints
 * the two trees on one line, then the name-status diff between them.
 */
function changedOnly(nested: string[], base: string): string {
  const file = (name: string) => `"$GIT_DIR/agent-run-end-${name}"`;
  const [index, list, kept, above] = [file('index'), file('changed'), file('kept'), file('above')];
  const exclude = nested.map(path => `:(exclude,literal)${path}`);
  const fromFile = (file: string) => `--pathspec-from-file=${file}`;
  return [
    `export GIT_INDEX_FILE=${index}`,
    // Whatever happens, nothing of the end is left in the private git dir.
    `trap 'rm -f ${index} ${list} ${kept} ${above}' EXIT`,
    `rm -f ${index} ${list} ${kept} ${above}`,
    `cat > ${list} || exit 1`,
    // An empty pathspec list would reset the whole index.
    `if [ -s ${list} ]; then ${gitLine(['reset', '-q', base, '--pathspec-file-nul'])} ${fromFile(list)} || exit 1; fi`,
    // The start's submodules (gitlinks) among the entries of the folders above the candidates join
    // the index, so a file the run wrote inside a submodule's folder stays out of the changes as
    // git keeps it out of a whole index: the submodule's recorded commit never changes.
    `if [ -s ${list} ]; then sed -z -n 's/^:(literal)//;:a;s|/[^/]*$||p;ta' < ${list} | sort -zu > ${above} || exit 1; fi`,
    `if [ -s ${above} ]; then GIT_LITERAL_PATHSPECS=1 xargs -0 -r ${gitLine(['ls-tree', '-z', base, '--'])} < ${above} | { grep -z '^160000 ' || [ $? = 1 ]; } | ${gitLine(['update-index', '-z', '--index-info'])} || exit 1; fi`,
    `from=$(${gitLine(['write-tree'])}) || exit 1`,
    `if [ -s ${list} ]; then xargs -0 -r ${gitLine(['ls-files', '-z', '--cached', '--others', '--exclude-standard', '--', ...exclude])} < ${list} | sort -zu | sed -z 's/^/:(literal)/' > ${kept} || exit 1; fi`,
    `if [ -s ${kept} ]; then ${gitLine(['add', '--all', '--pathspec-file-nul'])} ${fromFile(kept)} || exit 1; fi`,
    `to=$(${gitLine(['write-tree'])}) || exit 1`,
    `printf '%s %s\\n' "$from" "$to"`,
    `${gitLine(['diff', '--name-status', '--no-renames', ...NO_PROGRAMS])} "$from" "$to" || exit 1`,
    "printf '\\0'",
    // The head of the diff, no more: git is stopped by `head` (SIGPIPE) once past it.
    `[ "$from" != "$to" ] || exit 0`,
    `${gitLine(['diff', '--no-color', '--no-renames', ...NO_PROGRAMS])} "$from" "$to" | head -c ${MAX_DIFF_BYTES + 1}`,
    'status=("${PIPESTATUS[@]}")',
    '[ "${status[1]}" = 0 ] && { [ "${status[0]}" = 0 ] || [ "${status[0]}" = 141 ]; }'
  ].join('\n');
}

/**
 * The script that prints the tree of the whole work tree after a diff from the layers: the start's
 * tree read into a temporary index, the paths deleted between the two trees taken out (mode 0),
 * then every entry of the second tree put in.
 */
function wholeTree(base: string, { from, to }: { from: string; to: string }): string {
  const index = '"$GIT_DIR/agent-run-tree-index"';
  const deleted = gitLine([
    'diff-tree',
    '-r',
    '-z',
    '--no-renames',
    '--ignore-submodules=none',
    '--diff-filter=D',
    '--name-only',
    from,
    to
  ]);
  return [
    `export GIT_INDEX_FILE=${index}`,
    `trap 'rm -f ${index}' EXIT`,
    `rm -f ${index}`,
    `${gitLine(['read-tree', base])} || exit 1`,
    `{ ${deleted} | sed -z 's/^/0 ${'0'.repeat(from.length)}\\t/' && ${gitLine(['ls-tree', '-r', '-z', '--full-tree', to])}; } | ${gitLine(['update-index', '-z', '--index-info'])} || exit 1`,
    gitLine(['write-tree'])
  ].join('\n');
}

/**
 * Removes released workspaces older than `retentionMs` (and any left by a crashed process) with
 * their private git dirs, and private git dirs left without a workspace; then lets git forget
 * worktrees whose directories are gone (workspaces made by earlier versions were worktrees of the
 * source). A workspace is removed by a plain recursive delete that follows no link: nothing in it
 * (a `.git` file naming another directory, say) is read.
 */
export async function sweepWorkspaces(
  dataDir: string,
  environments: EnvironmentConfig[],
  retentionMs: number,
  active: Set<string>,
  /** How much unused shared checkouts may weigh together (layers.ts); unbounded by default. */
  cacheBytes = Number.POSITIVE_INFINITY
): Promise<number> {
  const dir = join(dataDir, 'workspaces');
  const gitDirs = join(dataDir, 'gitdirs');
  const old = (path: string) => Date.now() - statSync(path).mtimeMs >= retentionMs;
  let removed = 0;
  for (const name of existsSync(dir) ? readdirSync(dir) : []) {
    if (active.has(name) || name.startsWith('.')) continue;
    const path = join(dir, name);
    if (!old(path)) continue;
    // A copy-on-write workspace is unmounted first, and left for the next sweep when it cannot be.
    if (!(await unmountWorkspace(dataDir, name))) continue;
    removeLayers(dataDir, name);
    removeTree(path);
    removePrivateGitDir(privateGitDir(dataDir, name));
    // A harness run's HOME (its CLI's session) is kept as long as its workspace, for follow-ups.
    removeTree(join(dataDir, 'homes', name));
    removed++;
  }
  for (const name of existsSync(gitDirs) ? readdirSync(gitDirs) : []) {
    const runId = name.replace(/\.git$/, '');
    if (active.has(runId) || existsSync(join(dir, runId))) continue;
    if (old(join(gitDirs, name))) removePrivateGitDir(join(gitDirs, name));
  }
  await sweepLayers(dataDir, cacheBytes, active);
  if (removed > 0) {
    const repositories = new Set<string>();
    for (const env of environments) {
      if (isRemoteSource(env.source)) {
        repositories.add(
          join(
            dataDir,
            'sources',
            createHash('sha256').update(env.source).digest('hex').slice(0, 16) + '.git'
          )
        );
      } else {
        const top = await gitTopLevel(env.source);
        if (top) repositories.add(top);
      }
    }
    for (const repository of repositories)
      await git(['worktree', 'prune'], repository).catch(() => undefined);
  }
  return removed;
}

/**
 * The head of the unified diff `diff` prints, at most MAX_DIFF_BYTES + 1 bytes of it: git prints
 * it through the reader (a diff of any size: a run may have written GBs of text) and is stopped
 * once past the limit; cutDiff then cuts it at a line's end when one is near.
 */
async function boundedDiff(tree: RunTree, diff: string[]): Promise<Buffer> {
  const { stdout } = await runTreeGit(tree, [diff], { maxStdout: MAX_DIFF_BYTES + 1, stopPastMax: true });
  return stdout;
}

/** A diff's head (at most MAX_DIFF_BYTES + 1 bytes of it) as the `diff` event shows it. */
function cutDiff(stdout: Buffer): { diff: string; truncated: boolean } {
  if (stdout.length <= MAX_DIFF_BYTES) return { diff: stdout.toString('utf8'), truncated: false };
  const lineEnd = stdout.lastIndexOf(0x0a, MAX_DIFF_BYTES - 1);
  const cut = lineEnd > MAX_DIFF_BYTES / 2 ? lineEnd + 1 : MAX_DIFF_BYTES;
  return {
    diff: `${stdout.toString('utf8', 0, cut)}\n[diff cut at ${MAX_DIFF_BYTES} bytes]\n`,
    truncated: true
  };
}

/** What a run's trees hold: bytes (apparent sizes) and entries (files, directories, links). */
export interface TreeUsage {
  bytes: number;
  files: number;
  /** Set when part of the trees could not be read by the run's own user (so not counted). */
  unreadable?: string;
  /** Set when what the run holds could not be counted at all (why). */
  uncounted?: string;
}

/**
 * Bytes and entries under a run's trees, counted by `du` as the run's user in the reader sandbox
 * (run-files.ts): links are not followed, and what the run made unreadable to its own user is
 * reported, so that nothing can be hidden from the quota.
 */
export async function treeUsage(identity: RunIdentity, dirs: string[]): Promise<TreeUsage> {
  const present = dirs.filter(dir => existsSync(dir));
  if (present.length === 0) return { bytes: 0, files: 0 };
  const result = await asRunUser(identity, {
    read: present,
    program: '/bin/sh',
    args: [
      '-c',
      'du -s -c --apparent-size --block-size=1 -- "$@"; a=$?; du -s -c --inodes -- "$@"; exit $((a | $?))',
      'sh',
      ...present
    ],
    maxStdout: 64 * 1024
  });
  const totals = result.stdout
    .toString('utf8')
    .split('\n')
    .map(line => /^(\d+)\ttotal$/.exec(line)?.[1])
    .filter((total): total is string => total !== undefined);
  if (totals.length !== 2) throw new Error(`what the run wrote cannot be measured: ${readerReason(result)}`);
  const usage = { bytes: Number(totals[0]), files: Number(totals[1]) };
  return result.code === 0 ? usage : { ...usage, unreadable: readerReason(result) };
}
