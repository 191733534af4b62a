// Process groups of running runs, recorded in the node's data dir (processes/<run>.<pid>) so that a
// restarted executor stops any survivor before it fails those runs `executor_restarted`, and
// killed on every exit of this process (a second Ctrl-C included). Also the free-space check that
// stops a node claiming runs while its data dir's file system is nearly full, of bytes or of inodes.

import { mkdirSync, readFileSync, readdirSync, rmSync, statfsSync } from 'node:fs';
import { join } from 'node:path';
import { PRIVATE_DIR_MODE, writePrivateFile } from './private-files.js';
import { dataDirTag, sweepCgroups } from './cgroup.js';

/**
 * Every process of an unconfined run (`sandbox: off`) carries this variable, set to its data dir's
 * tag: a restarted executor finds by it the survivors its records missed. Confined runs need none:
 * their cgroup finds them.
 */
export const SURVIVOR_VARIABLE = 'AGENT_RUN_EXECUTOR';

const live = new Set<number>();
let hooked = false;

/** When the process started, in clock ticks since boot: tells a survivor from a reused pid. */
function startTime(pid: number): string | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19];
  } catch {
    return undefined;
  }
}

/** SIGKILL to every process group this process started and has not seen end. */
export function killAllGroups(): void {
  for (const pid of live) {
    try {
      process.kill(-pid, 'SIGKILL');
    } catch {
      // gone
    }
  }
  live.clear();
}

/** Records a run's process group; the returned function forgets it once the group has ended. */
export function recordGroup(
  dataDir: string | undefined,
  runId: string | undefined,
  pid: number | undefined
): () => void {
  if (pid === undefined) return () => undefined;
  if (!hooked) {
    hooked = true;
    process.on('exit', killAllGroups);
  }
  live.add(pid);
  let file: string | undefined;
  if (dataDir && runId) {
    try {
      mkdirSync(join(dataDir, 'processes'), { recursive: true, mode: PRIVATE_DIR_MODE });
      file = join(dataDir, 'processes', `${runId}.${pid}`);
      writePrivateFile(file, `${pid} ${startTime(pid) ?? ''}\n`);
    } catch {
      file = undefined;
    }
  }
  return () => {
    live.delete(pid);
    if (file) rmSync(file, { force: true });
  };
}

interface Log {
  warn(object: Record<string, unknown>, message: string): void;
  info(object: Record<string, unknown>, message: string): void;
}

/** At start-up: stops process groups and cgroups a previous process of this data dir left. */
export async function stopSurvivors(dataDir: string, log: Log): Promise<void> {
  const dir = join(dataDir, 'processes');
  let stopped = 0;
  let names: string[] = [];
  try {
    names = readdirSync(dir);
  } catch {
    // none recorded
  }
  for (const name of names) {
    const [pid, started] = readFileSync(join(dir, name), 'utf8').trim().split(' ');
    if (pid && started && startTime(Number(pid)) === started) {
      try {
        process.kill(-Number(pid), 'SIGKILL');
        stopped++;
      } catch {
        // gone meanwhile
      }
    }
    rmSync(join(dir, name), { force: true });
  }
  const tag = dataDirTag(dataDir);
  const tagged = killTagged(`${SURVIVOR_VARIABLE}=${tag}`);
  const cgroups = await sweepCgroups(tag);
  if (stopped > 0 || cgroups > 0 || tagged > 0)
    log.warn(
      { process_groups: stopped, cgroups, tagged_processes: tagged },
      'stopped processes left running by a previous executor process'
    );
}

/** SIGKILL to every other process whose environment holds `entry` (NAME=value); how many. */
function killTagged(entry: string): number {
  let killed = 0;
  let names: string[] = [];
  try {
    names = readdirSync('/proc');
  } catch {
    return 0;
  }
  for (const name of names) {
    if (!/^\d+$/.test(name) || Number(name) === process.pid) continue;
    let environ: string;
    try {
      environ = readFileSync(`/proc/${name}/environ`, 'latin1');
    } catch {
      continue; // ended meanwhile, or not ours to read
    }
    if (!environ.split('\0').includes(entry)) continue;
    try {
      process.kill(Number(name), 'SIGKILL');
      killed++;
    } catch {
      // gone meanwhile
    }
  }
  return killed;
}

/** Data dirs whose file system is short of space or inodes now, with the reason. */
const low = new Map<string, string>();

/** Bytes an unprivileged user may still write on the file system of `dir`, or undefined. */
export function freeBytes(dir: string): number | undefined {
  try {
    const stats = statfsSync(dir);
    return stats.bavail * stats.bsize;
  } catch {
    return undefined;
  }
}

/**
 * Inodes (files, directories, links) that can still be made on the file system of `dir`; undefined
 * when it cannot be read or the file system has no fixed number (btrfs, some FUSE ones report 0).
 */
export function freeInodes(dir: string): number | undefined {
  try {
    const stats = statfsSync(dir);
    return stats.files > 0 ? stats.ffree : undefined;
  } catch {
    return undefined;
  }
}

interface FreeSpaceFloors {
  dataDir: string;
  workspaces: { minFreeBytes: number; minFreeInodes: number };
}

/** Why the data dir's file system is too full to take a run (space, inodes or both), or undefined. */
function freeSpaceShortage(config: FreeSpaceFloors): string | undefined {
  const reasons: string[] = [];
  const free = freeBytes(config.dataDir);
  const min = config.workspaces.minFreeBytes;
  if (free !== undefined && free < min)
    reasons.push(
      `the data dir's file system has ${Math.floor(free / 1024 ** 2)} MiB free, less than workspaces.min_free (${Math.round(min / 1024 ** 2)} MiB)`
    );
  const inodes = freeInodes(config.dataDir);
  const minInodes = config.workspaces.minFreeInodes;
  if (inodes !== undefined && inodes < minInodes)
    reasons.push(
      `the data dir's file system has ${inodes} free inodes, less than workspaces.min_free_inodes (${minInodes})`
    );
  return reasons.length > 0 ? reasons.join('; ') : undefined;
}

/**
 * Why this node must not claim runs now (too little free space, or too few free inodes), or
 * undefined; logged when it starts and when it ends. Both the pool (before each claim) and /readyz
 * look: statfs is one system call.
 */
export function freeSpaceProblem(config: FreeSpaceFloors, log: Log): string | undefined {
  const shortage = freeSpaceShortage(config);
  const problem = shortage && `${shortage}: not claiming runs`;
  const was = low.get(config.dataDir);
  if (problem && !was)
    log.warn(
      {
        data_dir: config.dataDir,
        free_bytes: freeBytes(config.dataDir),
        free_inodes: freeInodes(config.dataDir)
      },
      problem
    );
  if (!problem && was)
    log.info(
      { data_dir: config.dataDir },
      'free space and inodes are back above workspaces.min_free and min_free_inodes: claiming runs again'
    );
  if (problem) low.set(config.dataDir, problem);
  else low.delete(config.dataDir);
  return problem;
}

/** Whether process `pid` of this machine is alive (one of another user's counts). */
export function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/**
 * A folder being made, `<final path>.making-<pid>`: whether it is left over, to be removed. Several
 * executor processes may share a data dir: a folder of another live process is its build in
 * progress, never removed; one of this process only when `buildingHere(final path)` says no build
 * of it is under way.
 */
export function makingLeftOver(dir: string, buildingHere: (made: string) => boolean): boolean {
  const at = dir.lastIndexOf('.making-');
  const pid = Number(dir.slice(at + '.making-'.length));
  if (!Number.isSafeInteger(pid) || pid <= 0) return true;
  if (pid === process.pid) return !buildingHere(dir.slice(0, at));
  return !processAlive(pid);
}
