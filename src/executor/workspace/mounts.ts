// The overlayfs mounts of copy-on-write workspaces (layers.ts makes what they stack): whether
// this machine can mount one at all (probed once per data dir, for the start-up log), the mount
// points below a directory as the kernel lists them, and unmounting a workspace (lazily when
// something still has it open) or all of a node's (also synchronously, for a process that exits
// at once on a second signal). A workspace is never deleted through a mount.

import { execFile, spawnSync } from 'node:child_process';
import { mkdirSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';

const exec = promisify(execFile);

export type LayerMode = { kind: 'overlay' } | { kind: 'checkout'; reason: string };

const modes = new Map<string, LayerMode>();

/** Mounts overlayfs once on a scratch directory of the data dir: what works here, probed once. */
export function layerMode(dataDir: string): LayerMode {
  let mode = modes.get(dataDir);
  if (!mode) {
    mode = probe(dataDir);
    modes.set(dataDir, mode);
  }
  return mode;
}

function probe(dataDir: string): LayerMode {
  if (process.env.AGENT_EXECUTOR_WORKSPACES === 'checkout')
    return { kind: 'checkout', reason: 'AGENT_EXECUTOR_WORKSPACES=checkout' };
  if (process.platform !== 'linux') return { kind: 'checkout', reason: 'overlayfs is Linux only' };
  if (process.getuid?.() !== 0)
    return {
      kind: 'checkout',
      reason: `mounting overlayfs needs root and the executor is uid ${process.getuid?.()}`
    };
  // overlayfs separates its options with `,` and lower layers with `:`.
  if (/[,:\\\n]/.test(dataDir))
    return {
      kind: 'checkout',
      reason: `the data dir ${dataDir} holds a character overlayfs options cannot name (, : \\)`
    };
  const dir = join(dataDir, 'layers', '.probe');
  // A probe a crash interrupted may still be mounted: never delete through it.
  if (mountPoints(dir).size > 0) spawnSync('umount', ['-l', join(dir, 'merged')], { timeout: 10_000 });
  rmSync(dir, { recursive: true, force: true });
  for (const sub of ['lower', 'upper', 'work', 'merged']) mkdirSync(join(dir, sub), { recursive: true });
  const merged = join(dir, 'merged');
  const mounted = spawnSync(
    'mount',
    [
      '-t',
      'overlay',
      'overlay',
      '-o',
      options(join(dir, 'lower'), join(dir, 'upper'), join(dir, 'work')),
      merged
    ],
    {
      encoding: 'utf8',
      timeout: 10_000
    }
  );
  if (mounted.status === 0) spawnSync('umount', [merged], { timeout: 10_000 });
  const why =
    (mounted.stderr ?? '').trim().split('\n').pop() ||
    mounted.error?.message ||
    `exit code ${mounted.status}`;
  if (mounted.status === 0 && !mountPoints(dataDir).has(merged))
    rmSync(dir, { recursive: true, force: true });
  return mounted.status === 0
    ? { kind: 'overlay' }
    : { kind: 'checkout', reason: `overlayfs could not be mounted here (${why})` };
}

export function options(lower: string, upper: string, work: string): string {
  return `lowerdir=${lower},upperdir=${upper},workdir=${work}`;
}

/** The mount points at or below `dir`, from /proc/self/mountinfo (octal escapes decoded). */
export function mountPoints(dir: string): Set<string> {
  const found = new Set<string>();
  let text = '';
  try {
    text = readFileSync('/proc/self/mountinfo', 'utf8');
  } catch {
    return found;
  }
  for (const line of text.split('\n')) {
    const field = line.split(' ')[4];
    if (!field) continue;
    const path = field.replace(/\\([0-7]{3})/g, (_, code: string) => String.fromCharCode(parseInt(code, 8)));
    if (path === dir || path.startsWith(`${dir}/`)) found.add(path);
  }
  return found;
}

/**
 * Unmounts a run's workspace when it is mounted (lazily when something still has it open) and
 * answers whether nothing is mounted there any more: a workspace is never deleted through a mount.
 */
export async function unmountWorkspace(dataDir: string, runId: string): Promise<boolean> {
  const path = join(dataDir, 'workspaces', runId);
  if (!mountPoints(path).has(path)) return true;
  await exec('umount', [path]).catch(() => exec('umount', ['-l', path]).catch(() => undefined));
  return !mountPoints(path).has(path);
}

/**
 * Unmounts every workspace of the data dir (the node stops: no mount outlives it; a retained
 * workspace's layer stays and is mounted again by the next start's sweep).
 */
export async function unmountAll(dataDir: string): Promise<void> {
  const workspaces = join(dataDir, 'workspaces');
  for (const mount of mountPoints(workspaces)) {
    const runId = mount.slice(workspaces.length + 1);
    if (runId && !runId.includes('/')) await unmountWorkspace(dataDir, runId);
  }
}

/**
 * Unmounts every workspace of the data dir at once, lazily and synchronously: for a process about
 * to exit without its graceful stop (a second SIGTERM or SIGINT), so that no mount outlives it.
 */
export function unmountAllNow(dataDir: string): void {
  const workspaces = join(dataDir, 'workspaces');
  for (const mount of mountPoints(workspaces)) {
    const runId = mount.slice(workspaces.length + 1);
    if (runId && !runId.includes('/')) spawnSync('umount', ['-l', mount], { timeout: 10_000 });
  }
}
