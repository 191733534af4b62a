// Copy-on-write workspaces. Checking a large repository out for every run costs seconds and the
// repository's whole size on disk per run; instead each source commit is checked out once per node
// (DATA_DIR/checkouts/<commit>-<stores>-<uid>: the files with the agent's `.git`, and the private
// git dir with its index), never written again, and each run's workspace is an overlayfs mount of
// it (the kernel's, mounted by the executor, which needs root) with an upper layer of the run's own,
// DATA_DIR/layers/<run id>/upper: whatever the run writes, deletes or renames lands there and never
// in the shared checkout nor in another run. The files keep the checkout's inode numbers and times,
// so the index copied with them stays valid and git compares by stat as in a plain checkout.
//
// Where overlayfs cannot be mounted (the executor is not root, the kernel lacks it, a data dir path
// overlayfs cannot name, AGENT_EXECUTOR_WORKSPACES=checkout) every workspace is a full checkout, as
// before; layerMode() (mounts.ts) says which once, for the start-up log. This file makes the layers
// and the shared checkouts under them, mounts them again after a restart, and removes unused shared
// checkouts past `workspaces.cache_size`; mounts.ts probes, lists and unmounts.

import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import {
  chmodSync,
  copyFileSync,
  chownSync,
  cpSync,
  existsSync,
  mkdirSync,
  readFileSync,
  readdirSync,
  renameSync,
  rmSync,
  statSync,
  utimesSync,
  writeFileSync
} from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { type PrivateRepository, privateGitAll } from './git.js';
import { restampIndex } from './index-stamps.js';
import { checkoutRepository } from './private-git.js';
import { mountPoints, options, unmountWorkspace } from './mounts.js';

export { type LayerMode, layerMode, mountPoints, unmountAll, unmountWorkspace } from './mounts.js';

const exec = promisify(execFile);

/** The owner a shared checkout's files are given (the run's host user), when the executor is root. */
export interface LayerOwner {
  uid: number;
  gid: number;
}

/**
 * Where a shared checkout lives: one per commit, object stores it borrows (two sources may hold
 * the same commit, and a run's sandbox shows only its own source's objects) and owner.
 */
function checkoutDir(dataDir: string, head: string, borrowed: string[], owner?: LayerOwner): string {
  const stores = createHash('sha256').update(borrowed.join('\n')).digest('hex').slice(0, 12);
  return join(dataDir, 'checkouts', `${head}-${stores}-${owner ? `${owner.uid}.${owner.gid}` : 'own'}`);
}
export function layersDir(dataDir: string, runId: string): string {
  return join(dataDir, 'layers', runId);
}

/** Checkouts this process is making or has handed to a run not yet mounted: never collected. */
const busy = new Map<string, number>();
/** Checkouts found whole by this process (after a restart, each is verified before its first use). */
const verified = new Set<string>();
/** One build at a time per checkout. */
const building = new Map<string, Promise<void>>();

/** Forgets which checkouts were verified, as a restarted process would (for tests). */
export function forgetVerified(): void {
  verified.clear();
}

interface Ready {
  head: string;
  bytes: number;
}

function readReady(dir: string): Ready | undefined {
  try {
    const ready = JSON.parse(readFileSync(join(dir, 'ready'), 'utf8')) as Ready;
    return typeof ready.head === 'string' && typeof ready.bytes === 'number' ? ready : undefined;
  } catch {
    return undefined;
  }
}

/** Whether a checkout left by an earlier process is still what it claims: nothing changed, nothing added. */
async function intact(dir: string, head: string): Promise<boolean> {
  const ready = readReady(dir);
  if (ready?.head !== head || !existsSync(join(dir, 'tree', '.git', 'HEAD'))) return false;
  const repo: PrivateRepository = { gitDir: join(dir, 'git'), workTree: join(dir, 'tree') };
  try {
    // A refresh first (stat data a reboot changed is looked at again); it fails on a changed file.
    const out = await privateGitAll(repo, [
      ['update-index', '-q', '--refresh'],
      ['diff-index', '--quiet', '--ignore-submodules=all', head, '--'],
      ['ls-files', '--others', '--directory']
    ]);
    return out.trim() === '';
  } catch {
    return false;
  }
}

/** The shared checkout of `head`, made when missing (or found changed); answers its directory. */
async function sharedCheckout(
  dataDir: string,
  head: string,
  borrowed: string[],
  shallow: string,
  owner?: LayerOwner
): Promise<string> {
  const dir = checkoutDir(dataDir, head, borrowed, owner);
  while (building.has(dir)) await building.get(dir);
  if (verified.has(dir) && existsSync(join(dir, 'ready'))) return dir;
  const made = (async () => {
    if (existsSync(dir) && (await intact(dir, head))) return;
    rmSync(dir, { recursive: true, force: true });
    const temporary = `${dir}.making-${process.pid}`;
    rmSync(temporary, { recursive: true, force: true });
    mkdirSync(temporary, { recursive: true, mode: 0o700 });
    const repo: PrivateRepository = { gitDir: join(temporary, 'git'), workTree: join(temporary, 'tree') };
    mkdirSync(repo.gitDir, { mode: 0o700 });
    await checkoutRepository(repo, head, borrowed, shallow);
    const owned = (async () => {
      if (!owner) return;
      await exec('chown', ['-R', '-h', '-P', `${owner.uid}:${owner.gid}`, '--', repo.workTree]);
      // chown changed every file's owner and ctime: the index learns them once here, or every
      // run's diff (and the agent's first `git status`) would read every file again. They are
      // written into it from one lstat a file (index-stamps.ts), so git's refresh, which checks
      // every entry and writes the index, reads again only what that left (racily clean files).
      restampIndex(join(repo.gitDir, 'index'), repo.workTree, head.length === 40 ? 'sha1' : 'sha256');
      await privateGitAll(repo, [['update-index', '-q', '--refresh']]);
      copyFileSync(join(repo.gitDir, 'index'), join(repo.workTree, '.git', 'index'));
    })();
    // Its size (for workspaces.cache_size) is taken meanwhile: ownership changes no byte count.
    const [{ stdout }] = await Promise.all([
      exec('du', ['-s', '--apparent-size', '--block-size=1', temporary]),
      owned
    ]);
    writeFileSync(join(temporary, 'ready'), JSON.stringify({ head, bytes: Number(stdout.split('\t')[0]) }));
    renameSync(temporary, dir);
  })();
  building.set(dir, made);
  try {
    await made;
    verified.add(dir);
  } finally {
    building.delete(dir);
  }
  return dir;
}

/**
 * Makes a run's workspace at `workTree` as a copy-on-write view of the shared checkout of `head`,
 * and its private git dir at `gitDir` from the checkout's (the same index: no file is read again).
 */
export async function mountWorkspace(
  dataDir: string,
  runId: string,
  repository: PrivateRepository,
  head: string,
  borrowed: string[],
  shallow: string,
  owner?: LayerOwner
): Promise<{ upper: string }> {
  if (!/^(?:[0-9a-f]{40}|[0-9a-f]{64})$/.test(head))
    throw new Error(`the source's start ${JSON.stringify(head)} is not a commit id`);
  const key = checkoutDir(dataDir, head, borrowed, owner);
  busy.set(key, (busy.get(key) ?? 0) + 1);
  try {
    const dir = await sharedCheckout(dataDir, head, borrowed, shallow, owner);
    const now = new Date();
    utimesSync(join(dir, 'ready'), now, now);
    const layers = layersDir(dataDir, runId);
    await unmountWorkspace(dataDir, runId);
    rmSync(layers, { recursive: true, force: true });
    const upper = join(layers, 'upper');
    const work = join(layers, 'work');
    mkdirSync(upper, { recursive: true, mode: 0o700 });
    mkdirSync(work, { mode: 0o700 });
    // The root of the view is the upper layer's: the run's user owns it as it owned a checkout.
    if (owner) chownSync(upper, owner.uid, owner.gid);
    chmodSync(upper, 0o755);
    writeFileSync(join(layers, 'checkout'), `${dir}\n`);
    cpSync(join(dir, 'git'), repository.gitDir, { recursive: true });
    mkdirSync(repository.workTree, { recursive: true });
    await exec('mount', [
      '-t',
      'overlay',
      'overlay',
      '-o',
      options(join(dir, 'tree'), upper, work),
      repository.workTree
    ]);
    return { upper };
  } finally {
    const left = (busy.get(key) ?? 1) - 1;
    if (left > 0) busy.set(key, left);
    else busy.delete(key);
  }
}

/** Mounts a retained workspace again over its layer (after a restart), when its checkout is whole. */
async function remount(dataDir: string, runId: string): Promise<void> {
  const layers = layersDir(dataDir, runId);
  try {
    const dir = readFileSync(join(layers, 'checkout'), 'utf8').trim();
    if (!readReady(dir)) return;
    const options_ = options(join(dir, 'tree'), join(layers, 'upper'), join(layers, 'work'));
    await exec('mount', ['-t', 'overlay', 'overlay', '-o', options_, join(dataDir, 'workspaces', runId)]);
  } catch {
    // left unmounted: the sweep removes it at the end of its retention
  }
}

/** Removes a run's layers (after its workspace is unmounted). */
export function removeLayers(dataDir: string, runId: string): void {
  rmSync(layersDir(dataDir, runId), { recursive: true, force: true });
}

/**
 * After a crash or at any sweep: unmounts workspaces whose layers are gone, removes layers whose
 * workspace is gone, mounts again retained workspaces a stop or a reboot unmounted, and removes unused shared checkouts, least recently used first, while all of
 * them together weigh more than `cacheBytes`. A checkout is used while a run's layers name it.
 */
export async function sweepLayers(dataDir: string, cacheBytes: number, active: Set<string>): Promise<number> {
  const workspaces = join(dataDir, 'workspaces');
  for (const mount of mountPoints(workspaces)) {
    const runId = mount.slice(workspaces.length + 1);
    if (runId.includes('/') || active.has(runId)) continue;
    if (!existsSync(layersDir(dataDir, runId))) await unmountWorkspace(dataDir, runId);
  }
  const layers = join(dataDir, 'layers');
  const used = new Set<string>(busy.keys());
  for (const runId of existsSync(layers) ? readdirSync(layers) : []) {
    if (runId.startsWith('.')) continue;
    if (!active.has(runId) && !existsSync(join(workspaces, runId))) {
      if (await unmountWorkspace(dataDir, runId)) removeLayers(dataDir, runId);
      continue;
    }
    const workspace = join(workspaces, runId);
    if (
      !active.has(runId) &&
      existsSync(join(layers, runId, 'upper')) &&
      !mountPoints(workspace).has(workspace)
    )
      await remount(dataDir, runId);
    try {
      used.add(readFileSync(join(layers, runId, 'checkout'), 'utf8').trim());
    } catch {
      // layers being made: their checkout is in `busy`
    }
  }
  const checkouts = join(dataDir, 'checkouts');
  const all: { dir: string; bytes: number; used: number }[] = [];
  for (const name of existsSync(checkouts) ? readdirSync(checkouts) : []) {
    const dir = join(checkouts, name);
    if (name.includes('.making-')) {
      if (!building.has(dir.slice(0, dir.indexOf('.making-')))) rmSync(dir, { recursive: true, force: true });
      continue;
    }
    const ready = readReady(dir);
    if (!ready) {
      if (!building.has(dir) && !used.has(dir)) rmSync(dir, { recursive: true, force: true });
      continue;
    }
    all.push({ dir, bytes: ready.bytes, used: statSync(join(dir, 'ready')).mtimeMs });
  }
  let total = all.reduce((sum, checkout) => sum + checkout.bytes, 0);
  let removed = 0;
  for (const checkout of all.sort((a, b) => a.used - b.used)) {
    if (total <= cacheBytes) break;
    if (used.has(checkout.dir) || building.has(checkout.dir)) continue;
    rmSync(checkout.dir, { recursive: true, force: true });
    verified.delete(checkout.dir);
    total -= checkout.bytes;
    removed++;
  }
  return removed;
}
