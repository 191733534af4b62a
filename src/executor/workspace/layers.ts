// Copy-on-write workspaces. Checking a large repository out for every run costs seconds and the
// repository's whole size on disk per run; instead each source commit is checked out once per node
// (shared-checkout.ts: the files with the agent's `.git`, and the private git dir with its index),
// never written again, and each run's workspace is an overlayfs mount of it (the kernel's, mounted
// by the executor, which needs root) with an upper layer of the run's own,
// DATA_DIR/layers/<run id>/upper: whatever the run writes, deletes or renames lands there and never
// in the shared checkout nor in another run. The files keep the checkout's inode numbers and times,
// so the index copied with them stays valid and git compares by stat as in a plain checkout.
//
// Where overlayfs cannot be mounted (the executor is not root, the kernel lacks it, a data dir path
// overlayfs cannot name, AGENT_EXECUTOR_WORKSPACES=checkout) every workspace is a full checkout, as
// before; layerMode() (mounts.ts) says which once, for the start-up log. This file mounts a run's
// layers over its shared checkout (and setup layer), mounts them again after a restart, and removes
// unused shared checkouts past `workspaces.cache_size`; mounts.ts probes, lists and unmounts.

import { execFile } from 'node:child_process';
import {
  chmodSync,
  chownSync,
  cpSync,
  existsSync,
  mkdirSync,
  readFileSync,
  readdirSync,
  rmSync,
  statSync,
  utimesSync,
  writeFileSync
} from 'node:fs';
import { join, relative } from 'node:path';
import { promisify } from 'node:util';
import { makingLeftOver } from '../sandbox/processes.js';
import type { PrivateRepository } from './git.js';
import type { Layers } from './layer-changes.js';
import { removeTree } from './remove.js';
import { mountPoints, options, unmountWorkspace } from './mounts.js';
import {
  type LayerOwner,
  building,
  busy,
  checkoutDir,
  checkoutWhole,
  hold,
  readReady,
  sharedCheckout,
  verified
} from './shared-checkout.js';
import {
  type SetupLayer,
  claimSetupLayer,
  forgetSetup,
  isBuilding,
  keepSetupLayer,
  lowers,
  readSetupReady,
  setupLayerIntact,
  setupsDir
} from './setup-layers.js';

export { type LayerMode, layerMode, mountPoints, unmountAll, unmountWorkspace } from './mounts.js';
export { type LayerOwner, forgetVerified } from './shared-checkout.js';

const exec = promisify(execFile);

export function layersDir(dataDir: string, runId: string): string {
  return join(dataDir, 'layers', runId);
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
  owner?: LayerOwner,
  /** The run may use or make a kept setup layer (setup-layers.ts): the key of one, from the checkout. */
  setupKeyOf?: (checkout: string) => string
): Promise<{ upper: string; setup?: SetupLayer }> {
  if (!/^(?:[0-9a-f]{40}|[0-9a-f]{64})$/.test(head))
    throw new Error(`the source's start ${JSON.stringify(head)} is not a commit id`);
  const released = [hold(checkoutDir(dataDir, head, borrowed, owner))];
  let claimed: Awaited<ReturnType<typeof claimSetupLayer>> | undefined;
  try {
    const dir = await sharedCheckout(dataDir, head, borrowed, shallow, owner);
    const now = new Date();
    utimesSync(join(dir, 'ready'), now, now);
    const setupKey = setupKeyOf?.(dir);
    if (setupKey) {
      // Never collected while it is claimed and mounted (as the checkout is, through `busy`).
      released.push(hold(join(setupsDir(dataDir), setupKey)));
      claimed = await claimSetupLayer(dataDir, setupKey, dir);
    }
    const cachedSetup = claimed && 'cached' in claimed ? claimed.cached : undefined;
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
    if (cachedSetup) writeFileSync(join(layers, 'setup'), `${cachedSetup}\n`);
    cpSync(join(dir, 'git'), repository.gitDir, { recursive: true });
    mkdirSync(repository.workTree, { recursive: true });
    await exec('mount', [
      '-t',
      'overlay',
      'overlay',
      '-o',
      options(lowers(dir, cachedSetup), upper, work),
      repository.workTree
    ]);
    if (!claimed) return { upper };
    if ('cached' in claimed) return { upper, setup: { cached: true, finish: () => Promise.resolve(false) } };
    return { upper, setup: buildingLayer(dataDir, runId, setupKey!, claimed, dir) };
  } catch (error) {
    if (claimed && 'build' in claimed) claimed.release();
    throw error;
  } finally {
    for (const release of released) release();
  }
}

/** The setup layer a run builds: kept (or not) once its setup commands ended, then released. */
function buildingLayer(
  dataDir: string,
  runId: string,
  key: string,
  claimed: { build: string; release: () => void },
  checkout: string
): SetupLayer {
  let finished = false;
  return {
    cached: false,
    async finish(succeeded) {
      if (finished) return false;
      finished = true;
      try {
        return succeeded && (await keepSetupLayer(dataDir, runId, key, claimed.build, checkout));
      } finally {
        claimed.release();
      }
    }
  };
}

/**
 * Mounts a retained workspace again over its layer (after a restart), when its checkout is whole
 * and its setup layer (if any) still as it was made; a changed setup layer is never mounted under
 * it: why is written to the run's layers (`refused`), and the workspace stays unmounted for good.
 */
async function remount(dataDir: string, runId: string): Promise<void> {
  const layers = layersDir(dataDir, runId);
  if (existsSync(join(layers, REFUSED))) return;
  try {
    const dir = readFileSync(join(layers, 'checkout'), 'utf8').trim();
    if (!readReady(dir)) return;
    // Checked as a new run's first use checks it: a changed checkout is never mounted under it.
    if (!(await checkoutWhole(dir))) {
      writeFileSync(
        join(layers, REFUSED),
        `the shared checkout under it (${relative(dataDir, dir)}) changed since the workspace was made over it\n`
      );
      return;
    }
    const setup = existsSync(join(layers, 'setup'))
      ? readFileSync(join(layers, 'setup'), 'utf8').trim()
      : undefined;
    if (setup && !readSetupReady(setup)) return;
    if (setup && !(await setupLayerIntact(setup, dir))) {
      writeFileSync(
        join(layers, REFUSED),
        `the setup layer under it (${relative(dataDir, setup)}) changed since the workspace was made over it\n`
      );
      return;
    }
    const options_ = options(lowers(dir, setup), join(layers, 'upper'), join(layers, 'work'));
    await exec('mount', ['-t', 'overlay', 'overlay', '-o', options_, join(dataDir, 'workspaces', runId)]);
  } catch {
    // left unmounted: the sweep removes it at the end of its retention
  }
}

/**
 * The layers of a run's copy-on-write workspace as they are now (keeping a setup layer moves the
 * run's first writes under it), or undefined when it is not one or not mounted. Only root's own
 * records are read here, never the layers.
 */
export function workspaceLayers(dataDir: string, runId: string): Layers | undefined {
  const layers = layersDir(dataDir, runId);
  const merged = join(dataDir, 'workspaces', runId);
  if (!existsSync(join(layers, 'checkout')) || !mountPoints(merged).has(merged)) return undefined;
  const checkout = readFileSync(join(layers, 'checkout'), 'utf8').trim();
  const setup = existsSync(join(layers, 'setup')) ? readFileSync(join(layers, 'setup'), 'utf8').trim() : '';
  return {
    upper: join(layers, 'upper'),
    ...(setup ? { setup: join(setup, 'upper') } : {}),
    tree: join(checkout, 'tree'),
    merged
  };
}

/** Why a retained workspace was not mounted again (remount), in its layers. */
const REFUSED = 'refused';

/**
 * Why a copy-on-write workspace that should be there is not (its mount is missing: a changed setup
 * layer refused, its checkout gone), or undefined when it is mounted or is not copy-on-write.
 */
export function unmountedWorkspace(dataDir: string, runId: string): string | undefined {
  const layers = layersDir(dataDir, runId);
  const workspace = join(dataDir, 'workspaces', runId);
  if (!existsSync(join(layers, 'upper')) || mountPoints(workspace).has(workspace)) return undefined;
  try {
    return `it could not be mounted again: ${readFileSync(join(layers, REFUSED), 'utf8').trim()}`;
  } catch {
    return 'it is not mounted (the shared checkout under it is gone or could not be mounted again)';
  }
}

/** Removes a run's layers (after its workspace is unmounted). */
export function removeLayers(dataDir: string, runId: string): void {
  removeTree(layersDir(dataDir, runId));
}

/** A shared checkout or kept setup layer removed to make room, for the log. */
export interface Freed {
  name: string;
  bytes: number;
}

/**
 * After a crash or at any sweep: unmounts workspaces whose layers are gone, removes layers whose
 * workspace is gone, mounts again retained workspaces a stop or a reboot unmounted, and removes
 * unused shared checkouts and kept setup layers, least recently used first, while all of them
 * together weigh more than `cacheBytes` or `enough` (free space, see freeSharedLayers) says no. A
 * checkout or setup layer is used while a run's layers name it; a setup layer goes with its checkout.
 */
export async function sweepLayers(
  dataDir: string,
  cacheBytes: number,
  active: Set<string>,
  enough: () => boolean = () => true
): Promise<Freed[]> {
  await unmountOrphans(dataDir, active);
  const used = await sweepRunLayers(dataDir, active);
  const byCheckout = new Map<string, Cached>();
  const all = [...cachedCheckouts(dataDir, used, byCheckout), ...cachedSetups(dataDir, used, byCheckout)];
  return evict(dataDir, all, used, cacheBytes, enough);
}

/** A shared checkout or kept setup layer on disk: its size, when it was last used, a checkout's setup layers. */
type Cached = { dir: string; bytes: number; used: number; setups: string[] };

/** Unmounts the workspaces of runs not active here whose layers are gone. */
async function unmountOrphans(dataDir: string, active: Set<string>): Promise<void> {
  const workspaces = join(dataDir, 'workspaces');
  for (const mount of mountPoints(workspaces)) {
    const runId = mount.slice(workspaces.length + 1);
    if (runId.includes('/') || active.has(runId)) continue;
    if (!existsSync(layersDir(dataDir, runId))) await unmountWorkspace(dataDir, runId);
  }
}

/**
 * Removes the layers of runs whose workspace is gone and mounts again the retained ones a stop or
 * a reboot unmounted; answers the checkouts and setup layers in use (busy, or named by a run's layers).
 */
async function sweepRunLayers(dataDir: string, active: Set<string>): Promise<Set<string>> {
  const workspaces = join(dataDir, 'workspaces');
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
    for (const name of ['checkout', 'setup']) {
      try {
        used.add(readFileSync(join(layers, runId, name), 'utf8').trim());
      } catch {
        // layers being made (their checkout is in `busy`), or without a setup layer
      }
    }
  }
  return used;
}

/** The ready shared checkouts (each also put in `byCheckout`); half-made ones no one uses or makes are removed. */
function cachedCheckouts(dataDir: string, used: Set<string>, byCheckout: Map<string, Cached>): Cached[] {
  const checkouts = join(dataDir, 'checkouts');
  const all: Cached[] = [];
  for (const name of existsSync(checkouts) ? readdirSync(checkouts) : []) {
    const dir = join(checkouts, name);
    if (name.includes('.making-')) {
      // Another live process's checkout in the making is its own, never removed here.
      if (makingLeftOver(dir, made => building.has(made))) rmSync(dir, { recursive: true, force: true });
      continue;
    }
    const ready = readReady(dir);
    if (!ready) {
      if (!building.has(dir) && !used.has(dir)) rmSync(dir, { recursive: true, force: true });
      continue;
    }
    const entry = { dir, bytes: ready.bytes, used: statSync(join(dir, 'ready')).mtimeMs, setups: [] };
    all.push(entry);
    byCheckout.set(dir, entry);
  }
  return all;
}

/** The ready setup layers, each listed on its checkout; half-made or orphaned ones no one uses are removed. */
function cachedSetups(dataDir: string, used: Set<string>, byCheckout: Map<string, Cached>): Cached[] {
  const setups = setupsDir(dataDir);
  const all: Cached[] = [];
  for (const name of existsSync(setups) ? readdirSync(setups) : []) {
    const dir = join(setups, name);
    const made = name.includes('.making-') ? dir.slice(0, dir.indexOf('.making-')) : dir;
    if (isBuilding(made) || (made !== dir && !makingLeftOver(dir, isBuilding))) continue;
    const ready = made === dir ? readSetupReady(dir) : undefined;
    const checkout = ready && byCheckout.get(ready.checkout);
    // Half made, or over a checkout that is gone: never used again.
    if (!ready || !checkout) {
      if (used.has(dir)) continue;
      rmSync(dir, { recursive: true, force: true });
      forgetSetup(dir);
      continue;
    }
    checkout.setups.push(dir);
    all.push({ dir, bytes: ready.bytes, used: statSync(join(dir, 'ready')).mtimeMs, setups: [] });
  }
  return all;
}

/**
 * Removes unused entries of `all`, least recently used first, while together they weigh more than
 * `cacheBytes` or `enough` says no; answers what was removed.
 */
function evict(
  dataDir: string,
  all: Cached[],
  used: Set<string>,
  cacheBytes: number,
  enough: () => boolean
): Freed[] {
  let total = all.reduce((sum, entry) => sum + entry.bytes, 0);
  const freed: Freed[] = [];
  const gone = new Set<string>();
  const remove = (entry: Cached) => {
    rmSync(entry.dir, { recursive: true, force: true });
    verified.delete(entry.dir);
    forgetSetup(entry.dir);
    gone.add(entry.dir);
    total -= entry.bytes;
    freed.push({ name: relative(dataDir, entry.dir), bytes: entry.bytes });
  };
  for (const entry of all.sort((a, b) => a.used - b.used)) {
    if (total <= cacheBytes && enough()) break;
    if (gone.has(entry.dir) || used.has(entry.dir) || building.has(entry.dir)) continue;
    // A checkout's setup layers go first (no run uses them: a run using one names the checkout too).
    for (const setup of entry.setups) remove(all.find(other => other.dir === setup)!);
    remove(entry);
  }
  return freed;
}

/**
 * Removes unused shared checkouts and setup layers, least recently used first, until `enough`
 * (the data dir's file system has workspaces.min_free again) or none is left unused.
 */
export function freeSharedLayers(
  dataDir: string,
  active: Set<string>,
  enough: () => boolean
): Promise<Freed[]> {
  return sweepLayers(dataDir, Number.POSITIVE_INFINITY, active, enough);
}
