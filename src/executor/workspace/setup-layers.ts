// The setup cache (`setup_cache: true`): an environment's setup commands (`npm ci`, say) cost the
// same for every run of one commit, so the first run of a commit keeps what they wrote as a second
// shared, read-only layer, DATA_DIR/setups/<key>/upper, stacked between the shared checkout and each
// later run's own upper layer; those runs skip the commands. The key is a hash of the checkout (the
// commit, the object stores, the run user), the environment's source (its directory), the setup
// list, the names and values of the environment's `env` variables and its sandbox settings: a
// change to any of them is another key.
//
// What is kept is only what the setup commands wrote into the workspace, in the sandbox, before the
// agent's first process: the run's upper layer is moved out once the last command succeeded (the
// sandbox's pid namespace ended every process the commands started, and the workspace is unmounted
// first), and the run goes on with a fresh empty upper layer of its own over it. An agent never
// writes to it; a failed or interrupted setup is never kept. One build per key at a time (the
// others wait for it); a layer is made under a temporary name with a `ready` file written last and
// renamed whole, and after a restart its listing is checked against the one recorded before use.

import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import {
  chownSync,
  chmodSync,
  existsSync,
  mkdirSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
  utimesSync,
  writeFileSync
} from 'node:fs';
import { basename, join } from 'node:path';
import { promisify } from 'node:util';
import type { EnvironmentConfig } from '../config/config.js';
import { type RunIdentity, asRunUser, readerReason } from '../sandbox/run-files.js';
import { mountPoints, options } from './mounts.js';

const exec = promisify(execFile);

/** What a run's workspace knows of the setup cache. */
export interface SetupLayer {
  /** True when the commands' result is already under the workspace: the run skips them. */
  cached: boolean;
  /**
   * After the setup commands (a run that builds the layer): when they all succeeded, keeps what they
   * wrote as the shared layer and gives the run a fresh layer over it; answers whether it was kept.
   * Always releases the build for the runs waiting on it; a second call does nothing.
   */
  finish(succeeded: boolean): Promise<boolean>;
}

interface Ready {
  key: string;
  checkout: string;
  bytes: number;
  listing: string;
}

export function setupsDir(dataDir: string): string {
  return join(dataDir, 'setups');
}

/**
 * The key of the setup's result for one shared checkout (its directory names commit, stores, owner).
 * The environment's source is part of it: environments on two directories of one repository share
 * a checkout, but their setup runs in their own directory and writes there.
 */
export function setupKey(checkout: string, environment: EnvironmentConfig): string {
  const { network, read, write, user } = environment.sandbox;
  const values = environment.env.map(name => [name, process.env[name] ?? null]);
  const { source, setup } = environment;
  return createHash('sha256')
    .update(JSON.stringify([basename(checkout), source, setup, values, { network, read, write, user }]))
    .digest('hex')
    .slice(0, 32);
}

/** Builds under way in this process, by layer directory. */
const building = new Map<string, Promise<void>>();
/** Layers found whole by this process (after a restart, each is checked before its first use). */
const verified = new Set<string>();

/** Forgets which layers were checked, as a restarted process would (for tests). */
export function forgetVerifiedSetups(): void {
  verified.clear();
}

export function isBuilding(dir: string): boolean {
  return building.has(dir);
}

export function readSetupReady(dir: string): Ready | undefined {
  try {
    const ready = JSON.parse(readFileSync(join(dir, 'ready'), 'utf8')) as Ready;
    return typeof ready.checkout === 'string' && typeof ready.bytes === 'number' ? ready : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Who reads a layer a run's setup commands wrote: its owner (the run's user) in the reader sandbox
 * (sandbox/run-files.ts), never root.
 */
function layerReader(upper: string): RunIdentity {
  const { uid, gid } = statSync(upper);
  return process.getuid?.() === 0 && uid !== 0 ? { user: { uid, gid }, confined: true } : { confined: true };
}

/**
 * Every entry of a layer with its type, size, time, mode and owner, hashed: what a change alters;
 * listed by `find` as the layer's owner (run-files.ts), and its bytes with it.
 */
async function listing(upper: string): Promise<{ hash: string; bytes: number }> {
  const result = await asRunUser(layerReader(upper), {
    read: [upper],
    program: 'find',
    args: [upper, '-printf', '%P\\t%y\\t%s\\t%T@\\t%m\\t%U\\t%G\\n'],
    maxStdout: 1024 ** 3
  });
  if (result.code !== 0) throw new Error(`the setup layer cannot be listed: ${readerReason(result)}`);
  const lines = result.stdout.toString('utf8').split('\n').filter(Boolean).sort();
  const bytes = lines.reduce((sum, line) => sum + (Number(line.split('\t')[2]) || 0), 0);
  return { hash: createHash('sha256').update(lines.join('\n')).digest('hex'), bytes };
}

/** Whether a kept layer is still as it was made (checked once per process). */
async function intact(dir: string, key: string, checkout: string): Promise<boolean> {
  if (verified.has(dir)) return true;
  const ready = readSetupReady(dir);
  if (ready?.key !== key || ready.checkout !== checkout || !existsSync(join(dir, 'upper'))) return false;
  const same = await listing(join(dir, 'upper'))
    .then(found => found.hash === ready.listing)
    .catch(() => false);
  if (same) verified.add(dir);
  return same;
}

/**
 * Whether the kept layer `dir` is still as it was made over `checkout`, for a retained workspace
 * mounted again after a restart: the same check a new run's first use of it makes.
 */
export function setupLayerIntact(dir: string, checkout: string): Promise<boolean> {
  return intact(dir, basename(dir), checkout);
}

/**
 * The setup layer of `key` over `checkout`: the kept one when there is one (waiting for a build
 * of the same key under way), else a build this run makes (the caller mounts without it).
 */
export async function claimSetupLayer(
  dataDir: string,
  key: string,
  checkout: string
): Promise<{ cached: string } | { build: string; release: () => void }> {
  const dir = join(setupsDir(dataDir), key);
  while (building.has(dir)) await building.get(dir);
  if (existsSync(dir) && (await intact(dir, key, checkout))) {
    const now = new Date();
    utimesSync(join(dir, 'ready'), now, now);
    return { cached: dir };
  }
  rmSync(dir, { recursive: true, force: true });
  let release!: () => void;
  building.set(
    dir,
    new Promise<void>(resolve => {
      release = () => {
        building.delete(dir);
        resolve();
      };
    })
  );
  return { build: dir, release };
}

/**
 * Moves a run's upper layer (what the setup commands wrote) to be the kept layer `dir` and mounts
 * the run's workspace again over it with a fresh upper layer; answers false (nothing changed) when
 * the workspace cannot be unmounted.
 */
export async function keepSetupLayer(
  dataDir: string,
  runId: string,
  key: string,
  dir: string,
  checkout: string
): Promise<boolean> {
  const workspace = join(dataDir, 'workspaces', runId);
  const layers = join(dataDir, 'layers', runId);
  const upper = join(layers, 'upper');
  const work = join(layers, 'work');
  // Never lazily: a process still holding the view must not see its layer become a shared one.
  await exec('umount', [workspace]).catch(() => undefined);
  if (mountPoints(workspace).has(workspace)) return false;
  const { uid, gid } = statSync(upper);
  const temporary = `${dir}.making-${process.pid}`;
  rmSync(temporary, { recursive: true, force: true });
  mkdirSync(temporary, { recursive: true, mode: 0o700 });
  renameSync(upper, join(temporary, 'upper'));
  const found = await listing(join(temporary, 'upper'));
  const ready: Ready = { key, checkout, bytes: found.bytes, listing: found.hash };
  writeFileSync(join(temporary, 'ready'), JSON.stringify(ready));
  renameSync(temporary, dir);
  verified.add(dir);
  mkdirSync(upper, { mode: 0o700 });
  chownSync(upper, uid, gid);
  chmodSync(upper, 0o755);
  rmSync(work, { recursive: true, force: true });
  mkdirSync(work, { mode: 0o700 });
  writeFileSync(join(layers, 'setup'), `${dir}\n`);
  await exec('mount', [
    '-t',
    'overlay',
    'overlay',
    '-o',
    options(lowers(checkout, dir), upper, work),
    workspace
  ]);
  return true;
}

/** The lower layers of a workspace: the setup layer (when there is one) over the checkout's tree. */
export function lowers(checkout: string, setup?: string): string {
  return setup ? `${join(setup, 'upper')}:${join(checkout, 'tree')}` : join(checkout, 'tree');
}

/** Forgets a removed layer. */
export function forgetSetup(dir: string): void {
  verified.delete(dir);
}
