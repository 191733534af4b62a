// Each run gets its own workspace under DATA_DIR/workspaces/<run id>: the files of the environment's
// source (a git repository: a local path, or a URL cloned once into DATA_DIR/sources/ and fetched
// before each run; or a plain copy otherwise), with a repository of its own for the agent. What the
// executor knows of the workspace lives apart, in the run's private git dir (private-git.ts): the
// start commit, an index, objects borrowed read-only from the source (alternates), a clean config.
// The diff, the patch and publishing read the workspace's files through it and never the agent's
// `.git`. A run never sees another run's objects nor the credentials a checkout keeps in
// .git/config, and the source is never written to. Where the executor may mount overlayfs, a git
// source's workspace is a copy-on-write view of one shared checkout of its commit (layers.ts).

import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import {
  closeSync,
  existsSync,
  mkdirSync,
  openSync,
  readSync,
  readFileSync,
  readdirSync,
  rmSync,
  statSync,
  utimesSync,
  writeFileSync
} from 'node:fs';
import { isAbsolute, join, relative, resolve } from 'node:path';
import { promisify } from 'node:util';
import { type EnvironmentConfig, isRemoteSource } from '../config.js';
import { copyTree, markWorkspaces } from './copy.js';
import { removeTree } from './remove.js';
import { type PrivateRepository, privateGit, privateGitAll, sourceGit as git } from './git.js';
import { excludeNested, nestedRepositories } from './nested.js';
import {
  type LayerOwner,
  layerMode,
  mountWorkspace,
  removeLayers,
  sweepLayers,
  unmountWorkspace,
  unmountedWorkspace
} from './layers.js';
import { type SetupLayer, setupKey } from './setup-layers.js';
import { checkoutRepository, privateGitDir, removePrivateGitDir, snapshotCopy } from './private-git.js';

export { gitReason, redactUrls } from './git.js';
export { type Freed, type LayerMode, freeSharedLayers, layerMode } from './layers.js';
export type { SetupLayer } from './setup-layers.js';

const exec = promisify(execFile);
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
  /**
   * Unified diff of every file changed since the workspace was made, and the changed paths: the
   * work tree added to the private index, against the start commit.
   */
  diff(): Promise<{
    diff: string;
    truncated: boolean;
    files: { path: string; change: string }[];
    /** How many changed files are not in `files` (past MAX_DIFF_FILES); absent when none. */
    more_files?: number;
    /** Directories holding a `.git` the run made, left out of the changes. */
    nested: string[];
  }>;
  /**
   * Writes the binary patch of the private index (as diff() left it) against the start into the
   * private git dir, and answers the file's path.
   */
  patch(): Promise<string>;
  /** Disk use of the workspace in bytes (measured by `du` in a child process, off the event loop). */
  size(): Promise<number>;
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

/** A remote source is cloned once (bare) and fetched before each run. */
async function remoteCache(source: string, dataDir: string): Promise<string> {
  const cache = join(
    dataDir,
    'sources',
    createHash('sha256').update(source).digest('hex').slice(0, 16) + '.git'
  );
  if (!existsSync(cache)) {
    mkdirSync(join(dataDir, 'sources'), { recursive: true });
    await git(['clone', '--bare', '--quiet', source, cache]);
  } else {
    await git(['fetch', '--quiet', '--prune', 'origin', '+refs/heads/*:refs/heads/*'], cache);
  }
  return cache;
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
  let repository: string | undefined;
  let sub = '';
  if (isRemoteSource(environment.source)) {
    repository = await remoteCache(environment.source, dataDir);
  } else {
    if (!existsSync(environment.source)) throw new Error(`source ${environment.source} does not exist`);
    repository = await gitTopLevel(environment.source);
    if (repository) sub = relative(repository, environment.source);
  }

  let kind: Workspace['kind'];
  let counted = root;
  let owned = [root];
  let borrowed: string[] = [];
  let start: { commit: string; branch?: string } | undefined;
  let base: string;
  let setupLayer: SetupLayer | undefined;
  // The private git dir is made first, so a crash leaves nothing the sweep would not see.
  const repo: PrivateRepository = { gitDir: privateGitDir(dataDir, runId), workTree: root };
  removePrivateGitDir(repo.gitDir);
  mkdirSync(repo.gitDir, { recursive: true, mode: 0o700 });
  if (repository) {
    if (environment.publish) start = await startOf(repository, environment.publish.base);
    const head = start?.commit ?? (await git(['rev-parse', '--verify', 'HEAD^{commit}'], repository)).trim();
    const gitDir = resolve(repository, (await git(['rev-parse', '--git-common-dir'], repository)).trim());
    borrowed = objectStores(gitDir);
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
      counted = mounted.upper;
      setupLayer = mounted.setup;
      owned = [];
      base = head;
    } else {
      base = await checkoutRepository(repo, head, borrowed, join(gitDir, 'shallow'));
    }
    kind = 'repository';
  } else {
    copyTree(environment.source, root, dataDir, quotaBytes);
    base = await snapshotCopy(repo);
    kind = 'copy';
  }

  const made: Made = { sub, kind, borrowed, repository, baseBranch: start?.branch, base, counted, owned };
  try {
    // Kept beside the private git dir, so a later turn of the run (a follow-up) reopens the workspace.
    writeFileSync(join(repo.gitDir, MADE_FILE), JSON.stringify(made), { mode: 0o600 });
  } catch (error) {
    await setupLayer?.finish(false);
    throw error;
  }
  return { ...workspaceOf(root, repo, made), setupLayer };
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
}
const MADE_FILE = 'agent-run-workspace.json';

/**
 * The workspace an earlier turn of the run made, as it was left (a follow-up continues in it);
 * undefined when it is gone (removed after workspaces.continue_for) or was never made. Throws,
 * saying why, for a copy-on-write workspace that is not mounted: never an empty directory.
 */
export function reopenWorkspace(dataDir: string, runId: string): Workspace | undefined {
  const root = join(dataDir, 'workspaces', runId);
  const repo: PrivateRepository = { gitDir: privateGitDir(dataDir, runId), workTree: root };
  const file = join(repo.gitDir, MADE_FILE);
  if (!existsSync(root) || !existsSync(file)) return undefined;
  const unmounted = unmountedWorkspace(dataDir, runId);
  if (unmounted) throw new Error(`the workspace of run ${runId} cannot be continued: ${unmounted}`);
  const made = JSON.parse(readFileSync(file, 'utf8')) as Made;
  return workspaceOf(root, repo, made);
}

function workspaceOf(root: string, repo: PrivateRepository, made: Made): Workspace {
  const { sub, kind, borrowed, repository, baseBranch, base, counted, owned } = made;
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
    async diff() {
      // Nested repositories the run made stay out of the index: git never probes them (nested.ts).
      const nested = nestedRepositories(root);
      const names = await privateGitAll(repo, [
        ['add', '--all', ...excludeNested(nested)],
        ['diff', '--cached', '--name-status', '--no-renames', ...NO_PROGRAMS, base]
      ]);
      const lines = names.split('\n').filter(Boolean);
      const files = lines.slice(0, MAX_DIFF_FILES).map(line => {
        const [status, ...path] = line.split('\t');
        const change = status === 'A' ? 'added' : status === 'D' ? 'deleted' : 'modified';
        return { path: path.join('\t'), change };
      });
      const more = lines.length - files.length;
      const { diff, truncated } =
        files.length > 0 ? await boundedDiff(repo, base) : { diff: '', truncated: false };
      return more > 0
        ? { diff, truncated, files, more_files: more, nested }
        : { diff, truncated, files, nested };
    },
    async patch() {
      const file = join(repo.gitDir, 'changes.patch');
      rmSync(file, { force: true });
      await privateGit(repo, [
        'diff',
        '--cached',
        '--binary',
        '--no-color',
        '--no-renames',
        ...NO_PROGRAMS,
        `--output=${file}`,
        base
      ]);
      return file;
    },
    size: () => diskUsage(counted),
    release() {
      const now = new Date();
      if (existsSync(root)) utimesSync(root, now, now);
    }
  };
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
 * The unified diff of the private index against `base`, at most MAX_DIFF_BYTES of it: git writes
 * it to a file of the private git dir (a diff of any size: a run may have written GBs of text),
 * and only its head is read, cut at a line's end when one is near.
 */
async function boundedDiff(
  repo: PrivateRepository,
  base: string
): Promise<{ diff: string; truncated: boolean }> {
  const file = join(repo.gitDir, 'changes.diff');
  rmSync(file, { force: true });
  try {
    await privateGit(repo, ['diff', '--cached', '--no-color', ...NO_PROGRAMS, `--output=${file}`, base]);
    const head = Buffer.alloc(MAX_DIFF_BYTES + 1);
    const fd = openSync(file, 'r');
    let read = 0;
    try {
      for (let n = 1; n > 0 && read < head.length; read += n)
        n = readSync(fd, head, read, head.length - read, null);
    } finally {
      closeSync(fd);
    }
    if (read <= MAX_DIFF_BYTES) return { diff: head.toString('utf8', 0, read), truncated: false };
    const lineEnd = head.lastIndexOf(0x0a, MAX_DIFF_BYTES - 1);
    const cut = lineEnd > MAX_DIFF_BYTES / 2 ? lineEnd + 1 : MAX_DIFF_BYTES;
    return {
      diff: `${head.toString('utf8', 0, cut)}\n[diff cut at ${MAX_DIFF_BYTES} bytes]\n`,
      truncated: true
    };
  } finally {
    rmSync(file, { force: true });
  }
}

/** Bytes on disk under a directory, as `du` counts them (apparent sizes, links not followed). */
export async function diskUsage(dir: string): Promise<number> {
  const { stdout } = await exec('du', ['-s', '--apparent-size', '--block-size=1', dir]);
  return Number(stdout.split('\t')[0]);
}
