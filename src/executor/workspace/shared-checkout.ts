// The shared, read-only checkouts under copy-on-write workspaces (layers.ts mounts them): one per
// commit, object stores and owner, DATA_DIR/checkouts/<commit>-<stores>-<uid.gid>, holding the files
// with the agent's `.git` (tree/) and the private git dir with its index (git/). Made once, under a
// temporary name, by git writing every file as the run's user (private-git.ts, git.ts): the index
// git writes then already holds each file's owner and times, so nothing has to give the files away
// and make git read them all again. A `ready` file (commit, bytes) written last marks it whole; one
// found after a restart is checked with git before its first use (or before a retained workspace is
// mounted on it again) and made again when anything in it changed.

import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import type { FileOwner, PrivateRepository } from './git.js';
import { privateGitAll } from './git.js';
import { checkoutRepository } from './private-git.js';

const exec = promisify(execFile);

/** The owner a shared checkout's files are given (the run's host user), when the executor is root. */
export type LayerOwner = FileOwner;

/**
 * Where a shared checkout lives: one per commit, object stores it borrows (two sources may hold
 * the same commit, and a run's sandbox shows only its own source's objects) and owner.
 */
export function checkoutDir(dataDir: string, head: string, borrowed: string[], owner?: LayerOwner): string {
  const stores = createHash('sha256').update(borrowed.join('\n')).digest('hex').slice(0, 12);
  return join(dataDir, 'checkouts', `${head}-${stores}-${owner ? `${owner.uid}.${owner.gid}` : 'own'}`);
}

/** Checkouts (and setup layers) this process is making or has handed to a run not yet mounted. */
export const busy = new Map<string, number>();
/** Checkouts found whole by this process (after a restart, each is verified before its first use). */
export const verified = new Set<string>();
/** One build at a time per checkout. */
export const building = new Map<string, Promise<void>>();

/** Holds `dir` against collection until the returned function is called. */
export function hold(dir: string): () => void {
  busy.set(dir, (busy.get(dir) ?? 0) + 1);
  return () => {
    const left = (busy.get(dir) ?? 1) - 1;
    if (left > 0) busy.set(dir, left);
    else busy.delete(dir);
  };
}

/** Forgets which checkouts were verified, as a restarted process would (for tests). */
export function forgetVerified(): void {
  verified.clear();
}

interface Ready {
  head: string;
  bytes: number;
}

export function readReady(dir: string): Ready | undefined {
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

/**
 * Whether the shared checkout `dir` may be mounted under a workspace: whole (its `ready` file) and,
 * the first time this process meets it, found unchanged by git. A changed one is left as it is
 * (the next run that needs its commit makes it again).
 */
export async function checkoutWhole(dir: string): Promise<boolean> {
  while (building.has(dir)) await building.get(dir);
  const ready = readReady(dir);
  if (!ready) return false;
  if (verified.has(dir)) return true;
  // One check at a time per checkout, as one build (two refreshes of one index fail on its lock).
  let whole = false;
  const checked = (async () => {
    whole = await intact(dir, ready.head);
    if (whole) verified.add(dir);
  })();
  building.set(dir, checked);
  try {
    await checked;
  } finally {
    building.delete(dir);
  }
  return whole;
}

/** The shared checkout of `head`, made when missing (or found changed); answers its directory. */
export async function sharedCheckout(
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
    await checkoutRepository(repo, head, borrowed, shallow, owner);
    const bytes = indexedBytes(join(repo.gitDir, 'index'), head.length === 40 ? 20 : 32);
    writeFileSync(join(temporary, 'ready'), JSON.stringify({ head, bytes }));
    renameSync(temporary, dir);
    measureLater(dir, head);
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
 * The index records a file's size modulo 4 GiB (a commit may hold a larger one): `du` counts the
 * checkout's bytes exactly once the run is on its way (MEASURE_AFTER_MS later), and its count
 * replaces the index's in the `ready` file (renamed over it whole), unless the checkout was removed
 * or made again meanwhile.
 */
function measureLater(dir: string, head: string): void {
  const measure = () =>
    exec('du', ['-s', '--apparent-size', '--block-size=1', dir])
      .then(({ stdout }) => {
        const bytes = Number(stdout.split('\t')[0]);
        if (!Number.isSafeInteger(bytes) || readReady(dir)?.head !== head) return;
        writeFileSync(join(dir, 'ready.measured'), JSON.stringify({ head, bytes }));
        renameSync(join(dir, 'ready.measured'), join(dir, 'ready'));
      })
      .catch(() => undefined);
  // Not while the run's sandbox and agent start (a walk of every file, on a machine of few cores).
  setTimeout(() => void measure(), MEASURE_AFTER_MS).unref();
}
/** How long after a checkout is made its bytes are counted. */
const MEASURE_AFTER_MS = 10_000;

/**
 * What a checkout weighs until `du` has counted it (measureLater), for workspaces.cache_size: the
 * sizes of its files as the index records them (read from the index git just wrote, instead of
 * walking the tree again), and the index itself twice (the private one and the agent's copy).
 * Index versions 2 and 3 (what read-tree writes); for any other, the index's size alone.
 */
export function indexedBytes(indexFile: string, hashBytes: number): number {
  const index = readFileSync(indexFile);
  let bytes = 2 * statSync(indexFile).size;
  const version = index.length >= 12 ? index.readUInt32BE(4) : 0;
  if (index.toString('latin1', 0, 4) !== 'DIRC' || (version !== 2 && version !== 3)) return bytes;
  let at = 12;
  for (let i = index.readUInt32BE(8); i > 0 && at + 42 + hashBytes < index.length; i--) {
    bytes += index.readUInt32BE(at + 36);
    const extended = (index.readUInt16BE(at + 40 + hashBytes) & 0x4000) !== 0;
    const nameEnd = index.indexOf(0, at + 42 + hashBytes + (extended ? 2 : 0));
    if (nameEnd < 0) break;
    // Entries are padded with 1 to 8 NULs to a multiple of 8 bytes.
    at += (nameEnd - at + 8) & ~7;
  }
  return bytes;
}
