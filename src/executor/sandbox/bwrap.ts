// The bubblewrap command line that confines one process of a run, and the start-up check that
// bubblewrap works here. Inside: system directories read-only, the workspace read-write, a private
// /tmp and an empty private HOME; the executor's data dir, config file and home are absent; own PID,
// IPC, UTS and network namespaces, a new session, no capabilities, killed with the executor.
// Started by a root executor, bubblewrap makes the mounts as root (so it reaches paths under
// root-only directories, such as a data dir made by mkdtemp) without a user namespace, and the
// run's program is then started as the run's unprivileged user (sandbox/user.ts dropTo): uid 0
// never runs agent code.

import { spawnSync } from 'node:child_process';
import { accessSync, constants, existsSync, statSync } from 'node:fs';
import { delimiter, dirname, isAbsolute, join, resolve, sep } from 'node:path';
import { type RunUser, dropTo } from './user.js';

/** The system directories a run sees, read-only (each only when it exists). */
const SYSTEM_DIRS = [
  '/usr',
  '/bin',
  '/sbin',
  '/lib',
  '/lib32',
  '/lib64',
  '/libx32',
  '/etc',
  '/opt/hostedtoolcache'
];
/** Files under /etc that only root should read: shadowed by an empty file. */
const HIDDEN_ETC = ['/etc/shadow', '/etc/gshadow', '/etc/shadow-', '/etc/gshadow-', '/etc/sudoers'];
/** HOME inside the sandbox: an empty tmpfs per run. */
export const SANDBOX_HOME = '/home/agent';

export interface ConfineOptions {
  /** The run's workspace root, writable. */
  workspace: string;
  /** Directories visible read-only at their own path (the source's object store, the agent program). */
  read: string[];
  /** Extra writable directories. */
  write: string[];
  /** Paths that must be absent even when a bound directory holds them. */
  hide: string[];
  /** `none` gives the run a network namespace with only its own loopback. */
  network: 'none' | 'host';
  /** Files to place inside: [host path, path inside] read-only (e.g. the proxy forwarder). */
  files?: [string, string][];
  /** The run's host user when the executor is root; the command must then start with `dropTo`. */
  user?: RunUser;
  /** A host directory shown as HOME (kept across the run's processes); else HOME is an empty tmpfs. */
  home?: string;
  /** The workspace bound read-only (a plan-mode turn: the agent may read it, not change it). */
  readOnlyWorkspace?: boolean;
}

/**
 * The program to run: AGENT_EXECUTOR_BWRAP (tests point it at a missing file), else bwrap on the
 * executor's PATH, as an absolute path. It starts as root in the run's workspace with the run's
 * variables: looked up by name there, a relative PATH entry (`node_modules/.bin`) would find a
 * `bwrap` the run wrote in its workspace and run it as root on the host.
 */
export function bwrapProgram(): string {
  return hostProgram(process.env.AGENT_EXECUTOR_BWRAP || 'bwrap');
}

/** `name` in the first absolute directory of the executor's PATH that has it; else `name` itself. */
export function hostProgram(name: string): string {
  if (name.includes('/')) return name;
  for (const dir of (process.env.PATH ?? '').split(delimiter)) {
    if (!isAbsolute(dir)) continue;
    const file = join(dir, name);
    try {
      accessSync(file, constants.X_OK);
      if (statSync(file).isFile()) return file;
    } catch {
      // not here
    }
  }
  return name;
}

/**
 * `--dir` for each directory above a path bound at `dest`: bubblewrap would make the missing ones
 * 0700 root, which the run's user could not pass through (existing ones are left as they are).
 */
function parentDirs(dest: string): string[] {
  const args: string[] = [];
  let dir = dirname(dest);
  const dirs: string[] = [];
  while (dir !== '/' && dir !== '.') {
    dirs.unshift(dir);
    dir = dirname(dir);
  }
  for (const d of dirs) args.push('--dir', d);
  return args;
}

/** A read-only bind of `from` at `to`, its missing parents made passable first. */
function roBind(from: string, to: string): string[] {
  return [...parentDirs(to), '--ro-bind', from, to];
}

function inside(path: string, dir: string): boolean {
  return path === dir || path.startsWith(dir.endsWith(sep) ? dir : dir + sep);
}

/** bwrap's arguments up to (not including) the command. */
export function bwrapArgs(options: ConfineOptions): string[] {
  const args = ['--die-with-parent', '--new-session'];
  if (options.user) {
    // No user namespace: the program's uid is the run user's on the host too. The first process
    // keeps only what dropTo needs (own HOME, then setuid/setgid and emptying the bounding set).
    args.push('--unshare-ipc', '--unshare-pid', '--unshare-uts', '--unshare-cgroup-try');
    if (options.network !== 'host') args.push('--unshare-net');
    args.push('--cap-drop', 'ALL');
    for (const cap of ['CAP_SETUID', 'CAP_SETGID', 'CAP_CHOWN', 'CAP_SETPCAP']) args.push('--cap-add', cap);
  } else {
    args.push('--unshare-all', '--cap-drop', 'ALL');
    if (options.network === 'host') args.push('--share-net');
  }
  for (const dir of SYSTEM_DIRS) args.push('--ro-bind-try', dir, dir);
  for (const file of HIDDEN_ETC) if (existsSync(file)) args.push('--ro-bind', '/dev/null', file);
  // Made by root, /tmp and /dev/shm are open to all (sticky) so the run's user may write there.
  args.push('--proc', '/proc', '--dev', '/dev', '--perms', '1777', '--tmpfs', '/dev/shm');
  args.push('--perms', '1777', '--tmpfs', '/tmp');
  if (options.home && existsSync(options.home))
    args.push(...parentDirs(SANDBOX_HOME), '--bind', options.home, SANDBOX_HOME);
  else args.push('--tmpfs', SANDBOX_HOME);
  for (const path of options.read.map(p => resolve(p)))
    if (existsSync(path)) args.push(...roBind(path, path));
  // What must be absent goes over whatever bound it, shortest path first so nested ones stay hidden;
  // the workspace and writable paths are bound afterwards, so one inside the data dir still shows.
  const hidden = [...new Set(options.hide.map(p => resolve(p)))]
    .filter(path => path !== '/' && existsSync(path))
    .sort((a, b) => a.length - b.length);
  for (const path of hidden) {
    if (statSync(path).isDirectory()) args.push('--tmpfs', path);
    else args.push(...parentDirs(path), '--ro-bind', '/dev/null', path);
  }
  // Read-only paths a hidden directory covered (the source's objects inside the data dir).
  for (const path of options.read.map(p => resolve(p)))
    if (existsSync(path) && hidden.some(h => inside(path, h))) args.push(...roBind(path, path));
  for (const path of options.write.map(p => resolve(p)))
    if (existsSync(path)) args.push(...parentDirs(path), '--bind', path, path);
  const workspace = resolve(options.workspace);
  if (existsSync(workspace))
    args.push(
      ...parentDirs(workspace),
      options.readOnlyWorkspace ? '--ro-bind' : '--bind',
      workspace,
      workspace
    );
  for (const [from, to] of options.files ?? []) args.push(...roBind(from, to));
  return args;
}

export interface SandboxCheck {
  ok: boolean;
  /** Why it cannot start and how to fix it, when not ok. */
  problem?: string;
}

const checked = new Map<string, SandboxCheck>();

/**
 * Starts `true` in a sandbox shaped like a run's (as the run's user when given), once per process,
 * bubblewrap program and user.
 */
export function checkBubblewrap(user?: RunUser): SandboxCheck {
  const program = bwrapProgram();
  const key = `${program}\0${user?.uid ?? ''}:${user?.gid ?? ''}`;
  const known = checked.get(key);
  if (known) return known;
  let cached: SandboxCheck;
  const workspace = dirname(process.execPath);
  const command = user ? [...dropTo(user, SANDBOX_HOME), 'true'] : ['true'];
  const result = spawnSync(
    program,
    [...bwrapArgs({ workspace, read: [], write: [], hide: [], network: 'none', user }), ...command],
    {
      encoding: 'utf8',
      timeout: 10_000
    }
  );
  if (result.error) {
    const missing = (result.error as NodeJS.ErrnoException).code === 'ENOENT';
    cached = {
      ok: false,
      problem: missing
        ? `bubblewrap (${program}) is not installed; install it with \`sudo apt-get install bubblewrap\` (Debian/Ubuntu) or \`dnf install bubblewrap\``
        : `bubblewrap (${program}) could not start: ${result.error.message}`
    };
  } else if (result.status !== 0) {
    const stderr = stderrEnd(result.stderr);
    const userns = /namespace|uid map|permission|not permitted/i.test(stderr);
    const setpriv = /setpriv/.test(stderr) || result.status === 125;
    cached = {
      ok: false,
      problem: setpriv
        ? `the sandbox could not become the run's user ${user?.label ?? ''} (${stderr || `exit code ${result.status}`}); setpriv (util-linux) must be installed: \`sudo apt-get install util-linux\``
        : userns
          ? `bubblewrap cannot create user namespaces here (${stderr}); allow them with \`sudo sysctl -w kernel.apparmor_restrict_unprivileged_userns=0\` (Ubuntu 23.10+ AppArmor) or \`sudo sysctl -w kernel.unprivileged_userns_clone=1\``
          : `bubblewrap failed its start-up check with exit code ${result.status}: ${stderr}`
    };
  } else {
    cached = { ok: true };
  }
  checked.set(key, cached);
  return cached;
}

/** The last two lines of a check's stderr as one: what a start-up check quotes of a failure. */
export function stderrEnd(stderr: string): string {
  return stderr.trim().split('\n').slice(-2).join(' ');
}

/** Why a check's process did not succeed: its start error, else its stderr's end, else its exit code. */
export function whyItFailed(result: { error?: Error; stderr: string; status: number | null }): string {
  return result.error?.message ?? (stderrEnd(result.stderr) || `exit code ${result.status}`);
}
