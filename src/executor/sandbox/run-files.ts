// The one way the executor reads, copies, measures, lists or changes a tree a run can write (its
// workspace or layer, its HOME, its output folder, an earlier run's of the same): a program run as
// the run's own unprivileged user, with no capability, inside a bubblewrap sandbox that shows only
// the system directories and the trees named for this call. A link the run planted, a directory
// swapped for a link mid-walk, a FIFO or /dev/zero under a name the executor expects: each reaches
// at most what the run itself could reach, never a file of the host, the data dir or another run.
// What the program prints is the run's bytes: callers bound it here and parse it as untrusted.
//
// Root (the executor) still mounts and unmounts, makes a run's directories (empty) and removes
// whole trees once no process of the run exists, never following a link; it never opens a path
// inside such a tree. docs/architecture-security.md states the rule; __tests__/unit/run-files-sites.test.ts
// lists every call site that touches a run's tree and fails on one that does not come through here.

import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { systemProgram } from './user.js';
import { bwrapProgram } from './bwrap.js';

/** The system directories a reader sees, read-only (the same a run sees). */
const SYSTEM_DIRS = ['/usr', '/bin', '/sbin', '/lib', '/lib32', '/lib64', '/libx32', '/etc'];
/** Files of /etc only root should read: shadowed by an empty file here too. */
const HIDDEN_ETC = ['/etc/shadow', '/etc/gshadow', '/etc/shadow-', '/etc/gshadow-', '/etc/sudoers'];

/** Who a reader runs as, and whether it is confined at all. */
export interface RunIdentity {
  /** The run's host user when the executor is root; undefined: the executor's own user. */
  user?: { uid: number; gid: number };
  /**
   * False only for an environment with `sandbox: off`: its run's processes are the executor's own
   * user, unconfined, so a reader gains nothing by being confined and runs directly.
   */
  confined: boolean;
}

export interface RunFilesCall {
  /** Directories shown read-only, at their own path. Each must be a directory root made. */
  read?: string[];
  /** Directories shown writable, at their own path (bound after `read`). */
  write?: string[];
  program: string;
  args: string[];
  /** Where it starts (inside one of the trees); `/` by default. */
  cwd?: string;
  /** Its whole environment besides PATH, HOME and LANG=C. */
  env?: Record<string, string>;
  stdin?: string | Buffer;
  /** Bytes of standard output kept (64 KiB by default); past them the rest is only counted. */
  maxStdout?: number;
  /** Ends the program as soon as it printed more than `maxStdout` (its output is then cut). */
  stopPastMax?: boolean;
  /** Killed after this long (5 minutes by default). */
  timeoutMs?: number;
  /** The address space it may use, in KiB (2 GiB by default). */
  memoryKb?: number;
  /** The largest file it may write, in KiB (no limit by default). */
  fileSizeKb?: number;
  /** Keeps the host's network (a copy from a registry); none by default. */
  network?: boolean;
}

export interface RunFilesResult {
  /** Exit code; null when it was killed. */
  code: number | null;
  signal: NodeJS.Signals | null;
  /** The first `maxStdout` bytes it printed. */
  stdout: Buffer;
  /** How many bytes it printed in all (more than stdout.length when it printed past the limit). */
  stdoutBytes: number;
  /** The end of what it printed on standard error (8 KiB at most), as text. */
  stderr: string;
  /** True when it was killed for its time limit. */
  timedOut: boolean;
  /** That time limit, in milliseconds. */
  timeLimitMs: number;
}

/** Files of the system directories a reader must not see (the executor's config file). */
const hidden = new Set<string>();

/** Hides `paths` (files under the system directories, such as a config file in /etc) from readers. */
export function hideFromReaders(paths: string[]): void {
  for (const path of paths) hidden.add(resolve(path));
}

const STDERR_KEPT = 8 * 1024;
export const READER_TIMEOUT_MS = 5 * 60 * 1000;
const READER_MEMORY_KB = 2 * 1024 * 1024;
const PATH = '/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin';

/** `--dir` for each directory above `dest` (made passable inside; the host's are not shown). */
function parents(dest: string): string[] {
  const dirs: string[] = [];
  for (let dir = dirname(dest); dir !== '/' && dir !== '.'; dir = dirname(dir)) dirs.unshift(dir);
  return dirs.flatMap(dir => ['--dir', dir]);
}

/** The bubblewrap arguments of a reader: system directories, the named trees, nothing else. */
function readerArgs(identity: RunIdentity, call: RunFilesCall): string[] {
  const args = ['--die-with-parent', '--new-session', '--unshare-ipc', '--unshare-pid', '--unshare-uts'];
  if (!call.network) args.push('--unshare-net');
  args.push('--unshare-cgroup-try');
  if (identity.user) {
    // Made as root (it must reach the data dir's root-only folders to bind them), then setpriv
    // below drops to the run's user for good: these capabilities are only for that step (and
    // DAC_READ_SEARCH for entering the folder the program starts in).
    args.push('--cap-drop', 'ALL');
    for (const cap of ['CAP_SETUID', 'CAP_SETGID', 'CAP_SETPCAP', 'CAP_DAC_READ_SEARCH'])
      args.push('--cap-add', cap);
  } else {
    args.push('--unshare-user', '--cap-drop', 'ALL');
  }
  for (const dir of SYSTEM_DIRS) args.push('--ro-bind-try', dir, dir);
  for (const file of [...HIDDEN_ETC, ...hidden])
    if (SYSTEM_DIRS.some(dir => file.startsWith(`${dir}/`)) && existsSync(file))
      args.push('--ro-bind', '/dev/null', file);
  args.push('--proc', '/proc', '--dev', '/dev', '--perms', '1777', '--tmpfs', '/tmp');
  for (const dir of (call.read ?? []).map(path => resolve(path)))
    args.push(...parents(dir), '--ro-bind', dir, dir);
  for (const dir of (call.write ?? []).map(path => resolve(path)))
    args.push(...parents(dir), '--bind', dir, dir);
  return args;
}

/**
 * The command that, inside the reader, sets the address-space cap, enters `cwd` and becomes the
 * run's user for good (no groups, no capability, none regained through a setuid file) as it execs
 * the program: one shell, then setpriv. The shell may enter a folder closed to root without its
 * capabilities (a run's 0700 folder) by CAP_DAC_READ_SEARCH, which goes with the change of user.
 */
function asUser(user: RunIdentity['user'], memoryKb: number, cwd: string, fileSizeKb?: number): string[] {
  const drop = user
    ? [
        systemProgram('setpriv'),
        `--reuid=${user.uid}`,
        `--regid=${user.gid}`,
        '--clear-groups',
        '--inh-caps=-all',
        '--bounding-set=-all',
        '--no-new-privs',
        '--'
      ]
    : [];
  // `ulimit -f` counts 512-byte blocks in dash (Debian's sh) and POSIX.
  const files = fileSizeKb === undefined ? '' : `ulimit -f ${fileSizeKb * 2} || exit 125; `;
  const script = `ulimit -v ${memoryKb} || exit 125; ${files}cd -- "$1" || exit 125; shift; exec "$@"`;
  return ['/bin/sh', '-c', script, 'sh', cwd, ...drop];
}

/**
 * Runs `call.program` as the run's user on the trees `call` names, and answers what it printed
 * (bounded) and how it ended. Never throws for the program's own failure: callers read `code`.
 */
export function asRunUser(identity: RunIdentity, call: RunFilesCall): Promise<RunFilesResult> {
  const env = { PATH, HOME: '/tmp', LANG: 'C', ...call.env };
  const [program, args] = readerCommand(identity, call);
  return new Promise((resolveResult, reject) => {
    const child = spawn(program, args, {
      cwd: '/',
      env,
      detached: true,
      stdio: [call.stdin === undefined ? 'ignore' : 'pipe', 'pipe', 'pipe']
    });
    watchReader(child, call, resolveResult, reject);
  });
}

/** The program and arguments of a reader: as the run's user, confined when the run is. */
function readerCommand(identity: RunIdentity, call: RunFilesCall): [string, string[]] {
  const memoryKb = call.memoryKb ?? READER_MEMORY_KB;
  const command = [
    ...asUser(identity.user, memoryKb, call.cwd ?? '/', call.fileSizeKb),
    call.program,
    ...call.args
  ];
  return identity.confined
    ? [bwrapProgram(), [...readerArgs(identity, call), '--', ...command]]
    : [command[0]!, command.slice(1)];
}

/**
 * Feeds a reader its stdin and keeps what it prints (stdout up to `call.maxStdout`, stderr's
 * end), killing it past its time limit (or past maxStdout with stopPastMax); `done` gets how it ended.
 */
function watchReader(
  child: ChildProcess,
  call: RunFilesCall,
  done: (result: RunFilesResult) => void,
  fail: (error: Error) => void
): void {
  const maxStdout = call.maxStdout ?? 64 * 1024;
  const kept: Buffer[] = [];
  let keptBytes = 0;
  let stdoutBytes = 0;
  let stderr = '';
  let timedOut = false;
  const kill = () => {
    try {
      process.kill(-child.pid!, 'SIGKILL');
    } catch {
      // already gone
    }
  };
  const timeLimitMs = call.timeoutMs ?? READER_TIMEOUT_MS;
  const timer = setTimeout(() => {
    timedOut = true;
    kill();
  }, timeLimitMs);
  child.stdout!.on('data', (chunk: Buffer) => {
    stdoutBytes += chunk.length;
    if (keptBytes < maxStdout) {
      const part = chunk.subarray(0, maxStdout - keptBytes);
      kept.push(part);
      keptBytes += part.length;
    }
    if (call.stopPastMax && stdoutBytes > maxStdout) kill();
  });
  child.stderr!.on('data', (chunk: Buffer) => {
    stderr = (stderr + chunk.toString('utf8')).slice(-STDERR_KEPT);
  });
  if (call.stdin !== undefined) {
    child.stdin!.on('error', () => undefined);
    child.stdin!.end(call.stdin);
  }
  child.on('error', error => {
    clearTimeout(timer);
    fail(error);
  });
  child.on('close', (code, signal) => {
    clearTimeout(timer);
    done({ code, signal, stdout: Buffer.concat(kept), stdoutBytes, stderr, timedOut, timeLimitMs });
  });
}

/** The first line of a reader's complaint, for a message (bounded, control characters dropped). */
export function readerReason(result: RunFilesResult): string {
  if (result.timedOut) {
    const minutes = result.timeLimitMs / 60_000;
    return Number.isInteger(minutes)
      ? `it ran longer than ${minutes} minute${minutes === 1 ? '' : 's'}`
      : result.timeLimitMs < 1000
        ? `it ran longer than ${result.timeLimitMs} ms`
        : `it ran longer than ${Math.round(result.timeLimitMs / 1000)} s`;
  }
  const line =
    result.stderr
      .split('\n')
      .map(text => text.trim())
      .find(Boolean) ?? `exit code ${result.code ?? result.signal}`;
  // eslint-disable-next-line no-control-regex
  return line.replace(/[\u0000-\u001f\u007f-\u009f]/g, '?').slice(0, 300);
}
