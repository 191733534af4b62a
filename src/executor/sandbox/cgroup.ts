// Memory and process limits of a run with cgroups, v1 or v2, whichever the machine has. Each run
// gets a cgroup below the executor's own; the sandbox's first process joins it before it execs
// bubblewrap, so everything the run starts is counted. After the run its counters say whether a
// limit was hit, and whatever is left in it is killed.

import {
  existsSync,
  mkdirSync,
  readFileSync,
  readdirSync,
  readlinkSync,
  rmdirSync,
  statSync,
  writeFileSync
} from 'node:fs';
import { createHash } from 'node:crypto';
import { rmdir } from 'node:fs/promises';
import { join } from 'node:path';

const ROOT = '/sys/fs/cgroup';

/** Open files of a run's processes looked at for deleted ones; more stops the run (see deletedOpenBytes). */
export const MAX_OPEN_FILES = 65_536;

export interface Limits {
  memoryBytes: number;
  processes: number;
}

/** Where this process's cgroups are: one v2 directory, or the v1 memory and pids directories. */
interface Layout {
  version: 1 | 2;
  memory: string;
  pids: string;
}

let layout: Layout | undefined | null = null;

function own(line: (parts: string[]) => boolean): string | undefined {
  const text = readFileSync('/proc/self/cgroup', 'utf8');
  for (const entry of text.split('\n')) {
    const parts = entry.split(':');
    if (parts.length >= 3 && line(parts)) return parts.slice(2).join(':');
  }
  return undefined;
}

function writable(dir: string): boolean {
  const probe = join(dir, `agent-run-probe-${process.pid}`);
  try {
    mkdirSync(probe);
    rmdirSync(probe);
    return true;
  } catch {
    return false;
  }
}

/** Finds a place where this process may make cgroups with memory and pids limits, once. */
export function cgroupLayout(): Layout | undefined {
  if (layout !== null) return layout;
  layout = undefined;
  try {
    if (existsSync(join(ROOT, 'cgroup.controllers'))) {
      // v2: a sibling-free subtree needs memory and pids enabled in our own cgroup's subtree_control.
      const base = join(ROOT, own(parts => parts[0] === '0') ?? '/');
      const enabled = readFileSync(join(base, 'cgroup.subtree_control'), 'utf8');
      if (/\bmemory\b/.test(enabled) && /\bpids\b/.test(enabled) && writable(base))
        layout = { version: 2, memory: base, pids: base };
    } else {
      const memory = join(ROOT, 'memory', own(parts => parts[1]!.split(',').includes('memory')) ?? '/');
      const pids = join(ROOT, 'pids', own(parts => parts[1]!.split(',').includes('pids')) ?? '/');
      if (writable(memory) && writable(pids)) layout = { version: 1, memory, pids };
    }
  } catch {
    layout = undefined;
  }
  return layout;
}

/** Why limits cannot be enforced here, or undefined when they can. */
export function limitsProblem(): string | undefined {
  if (cgroupLayout()) return undefined;
  return 'no cgroup with memory and pids controllers can be made under this process (/sys/fs/cgroup); memory and process limits are not enforced';
}

/** One run's cgroup(s). */
export class RunCgroup {
  private constructor(
    private readonly layout: Layout,
    private readonly dirs: string[],
    readonly limits: Limits
  ) {}

  /** `prefix` names the executor's data dir, so a sweep only touches this executor's runs. */
  static create(prefix: string, runId: string, limits: Limits): RunCgroup | undefined {
    const found = cgroupLayout();
    if (!found) return undefined;
    const leaf = `agent-run-${prefix}-${runId}`;
    if (found.version === 2) {
      const dir = join(found.memory, leaf);
      mkdirSync(dir, { recursive: true });
      writeFileSync(join(dir, 'memory.max'), String(limits.memoryBytes));
      writeFileSync(join(dir, 'memory.swap.max'), '0', { flag: 'w' });
      writeFileSync(join(dir, 'pids.max'), String(limits.processes));
      return new RunCgroup(found, [dir], limits);
    }
    const memory = join(found.memory, leaf);
    const pids = join(found.pids, leaf);
    mkdirSync(memory, { recursive: true });
    mkdirSync(pids, { recursive: true });
    writeFileSync(join(memory, 'memory.limit_in_bytes'), String(limits.memoryBytes));
    try {
      // Swap counts too where the kernel accounts it, or a hog would page out instead of stopping.
      writeFileSync(join(memory, 'memory.memsw.limit_in_bytes'), String(limits.memoryBytes));
    } catch {
      // no swap accounting
    }
    writeFileSync(join(pids, 'pids.max'), String(limits.processes));
    return new RunCgroup(found, [memory, pids], limits);
  }

  static existing(found: Layout, dir: string): RunCgroup {
    return new RunCgroup(found, [dir], { memoryBytes: 0, processes: 0 });
  }

  /** The files a process writes its pid into to join this run's cgroups. */
  get procsFiles(): string[] {
    return this.dirs.map(dir => join(dir, 'cgroup.procs'));
  }

  /** The limit that was hit, as a sentence, or undefined. */
  exceeded(): string | undefined {
    const read = (dir: string, file: string) => {
      try {
        return readFileSync(join(dir, file), 'utf8');
      } catch {
        return '';
      }
    };
    const counter = (text: string, name: string) =>
      Number(new RegExp(`^${name} (\\d+)`, 'm').exec(text)?.[1] ?? 0);
    const [memoryDir, pidsDir] =
      this.layout.version === 2 ? [this.dirs[0]!, this.dirs[0]!] : [this.dirs[0]!, this.dirs[1]!];
    const oom =
      this.layout.version === 2
        ? counter(read(memoryDir, 'memory.events'), 'oom_kill')
        : counter(read(memoryDir, 'memory.oom_control'), 'oom_kill');
    if (oom > 0)
      return `the run's processes used more than the memory limit of ${Math.round(this.limits.memoryBytes / 1024 ** 2)} MiB`;
    if (counter(read(pidsDir, 'pids.events'), 'max') > 0)
      return `the run tried to start more than the limit of ${this.limits.processes} processes at once`;
    return undefined;
  }

  /** Kills whatever is left in the run's cgroups and removes them. */
  async destroy(): Promise<void> {
    await this.kill();
    for (const dir of this.dirs) {
      try {
        // Removing a v1 memory cgroup can take a while (its charges move up): off the event loop.
        await rmdir(dir);
      } catch {
        // still busy: the next start-up's sweep removes it
      }
    }
  }

  /**
   * Bytes of regular files the run's processes hold open after deleting them: a file unlinked but
   * open is in no tree `du` walks, yet fills the disk. Read from the kernel's view of the run's
   * processes (/proc/<pid>/fd, whose links name the open file: nothing the run can redirect), each
   * file once. Past MAX_OPEN_FILES open files in all the count stops and answers undefined (the
   * caller stops the run: no count could be trusted).
   */
  deletedOpenBytes(): number | undefined {
    const pids = new Set<string>();
    for (const file of this.procsFiles)
      try {
        for (const pid of readFileSync(file, 'utf8').split('\n')) if (pid) pids.add(pid);
      } catch {
        // gone
      }
    const seen = new Set<string>();
    let bytes = 0;
    let looked = 0;
    for (const pid of pids) {
      let fds: string[];
      try {
        fds = readdirSync(`/proc/${pid}/fd`);
      } catch {
        continue;
      }
      looked += fds.length;
      if (looked > MAX_OPEN_FILES) return undefined;
      for (const fd of fds) {
        const path = `/proc/${pid}/fd/${fd}`;
        try {
          if (!readlinkSync(path).endsWith(' (deleted)')) continue;
          const stat = statSync(path);
          const id = `${stat.dev}:${stat.ino}`;
          if (!stat.isFile() || seen.has(id)) continue;
          seen.add(id);
          bytes += stat.size;
        } catch {
          // closed meanwhile
        }
      }
    }
    return bytes;
  }

  /**
   * A signal to every process of the run but bubblewrap itself (which would end the sandbox),
   * skipping the pids in `done`, to which it adds those it signalled. Returns how many of the
   * run's own processes are alive (signalled now or before).
   */
  signalAgents(signal: NodeJS.Signals, done = new Set<number>()): number {
    let pids: number[] = [];
    try {
      pids = readFileSync(this.procsFiles[this.procsFiles.length - 1]!, 'utf8')
        .split('\n')
        .filter(Boolean)
        .map(Number);
    } catch {
      return 0;
    }
    let alive = 0;
    for (const pid of pids) {
      try {
        if (readFileSync(`/proc/${pid}/comm`, 'utf8').trim() === 'bwrap') continue;
        alive++;
        if (done.has(pid)) continue;
        process.kill(pid, signal);
        done.add(pid);
      } catch {
        // gone
      }
    }
    return alive;
  }

  /** SIGKILL to every process in the run's cgroups, until none is left (or a second has passed). */
  async kill(): Promise<void> {
    for (let attempt = 0; attempt < 50; attempt++) {
      let left = 0;
      for (const file of this.procsFiles) {
        let pids: string[] = [];
        try {
          pids = readFileSync(file, 'utf8').split('\n').filter(Boolean);
        } catch {
          continue;
        }
        for (const pid of pids) {
          left++;
          try {
            process.kill(Number(pid), 'SIGKILL');
          } catch {
            // gone
          }
        }
      }
      if (left === 0) break;
      await new Promise(resolve => setTimeout(resolve, 20));
    }
  }
}

/** Kills what is left in cgroups of runs a previous process started, and removes them. */
export async function sweepCgroups(prefix: string): Promise<number> {
  const found = cgroupLayout();
  if (!found) return 0;
  let removed = 0;
  for (const base of new Set([found.memory, found.pids])) {
    for (const name of readdirSync(base)) {
      if (!name.startsWith(`agent-run-${prefix}-`)) continue;
      await RunCgroup.existing(found, join(base, name)).destroy();
      removed++;
    }
  }
  return removed;
}

/** A short, stable name for a data dir, so one executor's cgroups are told from another's. */
export function dataDirTag(dataDir: string): string {
  return createHash('sha256').update(dataDir).digest('hex').slice(0, 10);
}
