// The host user a run's processes are, when the executor itself is root (as on CI runners and in
// containers). Root inside a sandbox still holds the owner's read bit on every root-only file the
// sandbox shows (keys under /etc/ssl/private, a 0600 file under /etc): so a run never keeps uid 0.
// The environment's `sandbox.user` names the user (a name, or a numeric uid[:gid]); by default the
// system user `agent-run`, created here with `useradd --system` when the machine lacks it, so the
// run's files have a name in `ls` and tools that look the user up (git, ssh) find one. Where no user
// can be created (no useradd, a read-only /etc), a fixed high uid with no passwd entry stands in.
// When the executor is not root it cannot switch users: runs are the executor's own user.

import { execFile, spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';

const exec = promisify(execFile);

/** The user made (or looked up) when an environment does not name one. */
export const DEFAULT_USER = 'agent-run';
/** Used when `agent-run` can neither be found nor created: above every range useradd allocates. */
export const FALLBACK_ID = 2_000_000_000;

/** A resolved host identity for a run's processes. */
export interface RunUser {
  uid: number;
  gid: number;
  /** How the start-up log names it: `agent-run (uid 998, gid 998)`. */
  label: string;
}

const NAME = /^[a-z_][a-z0-9_-]{0,31}\$?$/i;
const NUMERIC = /^(\d{1,10})(?::(\d{1,10}))?$/;
export const USER_FORMS = 'expected a user name such as agent-run, or a numeric uid[:gid] such as 2000:2000';

/** Whether `value` has the form of a `sandbox.user` (checked when the config is read). */
export function userSpecProblem(value: unknown): string | undefined {
  const text = typeof value === 'number' ? String(value) : value;
  if (typeof text !== 'string' || !(NAME.test(text) || NUMERIC.test(text))) return USER_FORMS;
  return undefined;
}

/**
 * The passwd entry of a name or a uid: [uid, gid], or undefined when there is none. getent asks
 * every user database the machine has (LDAP, systemd); without getent, /etc/passwd is read.
 */
function passwd(key: string): [number, number] | undefined {
  const result = spawnSync('getent', ['passwd', key], { encoding: 'utf8' });
  let line = result.status === 0 ? result.stdout.split('\n')[0]! : '';
  if (result.error) {
    const lines = existsSync('/etc/passwd') ? readFileSync('/etc/passwd', 'utf8').split('\n') : [];
    line = lines.find(entry => entry.split(':')[0] === key || entry.split(':')[2] === key) ?? '';
  }
  const fields = line.split(':');
  if (fields.length < 4) return undefined;
  return [Number(fields[2]), Number(fields[3])];
}

/** Thrown at start-up for a `sandbox.user` that cannot be used; its message names the value. */
export class RunUserError extends Error {}

const resolved = new Map<string, RunUser>();

/**
 * The identity of runs for `spec` (an environment's `sandbox.user`, or undefined for the default);
 * undefined when the executor is not root (nothing to switch from). Looked up once per spec.
 */
export function runUser(spec: string | undefined): RunUser | undefined {
  if (process.getuid?.() !== 0) return undefined;
  const key = spec ?? '';
  let user = resolved.get(key);
  if (!user) {
    user = spec === undefined ? defaultUser() : namedUser(spec);
    if (user.uid === 0 || user.gid === 0)
      throw new RunUserError(
        `sandbox.user ${JSON.stringify(spec)} is ${user.uid === 0 ? 'uid' : 'gid'} 0 (root): a run must not be root on the host; ${USER_FORMS} other than 0`
      );
    resolved.set(key, user);
  }
  return user;
}

function namedUser(spec: string): RunUser {
  const numeric = NUMERIC.exec(spec);
  if (numeric) {
    const uid = Number(numeric[1]);
    const entry = passwd(String(uid));
    const gid = numeric[2] !== undefined ? Number(numeric[2]) : (entry?.[1] ?? uid);
    if (uid > 4_294_967_294 || gid > 4_294_967_294)
      throw new RunUserError(`sandbox.user ${JSON.stringify(spec)}: an id above 4294967294; ${USER_FORMS}`);
    return { uid, gid, label: `uid ${uid}, gid ${gid}` };
  }
  const entry = passwd(spec);
  if (!entry)
    throw new RunUserError(
      `sandbox.user ${JSON.stringify(spec)}: no such user on this machine; ${USER_FORMS} (create it with \`useradd --system ${spec}\`)`
    );
  return { uid: entry[0], gid: entry[1], label: `${spec} (uid ${entry[0]}, gid ${entry[1]})` };
}

function defaultUser(): RunUser {
  return systemUser(DEFAULT_USER, FALLBACK_ID);
}

/**
 * The system user `name` (made with `useradd --system` when the machine lacks it); where none can
 * be made, `fallback` (uid and gid) with no passwd entry. The run's user is one (agent-run); the
 * user that unpacks container images is another (images/cache.ts), so no run owns an image's files.
 */
export function systemUser(name: string, fallback: number): RunUser {
  let entry = passwd(name);
  let how = '';
  if (!entry) {
    const made = spawnSync(
      'useradd',
      [
        '--system',
        '--user-group',
        '--no-create-home',
        '--home-dir',
        '/nonexistent',
        '--shell',
        '/usr/sbin/nologin'
      ].concat(name),
      { encoding: 'utf8' }
    );
    // Another executor starting at the same moment may have made it first: look again either way.
    entry = passwd(name);
    if (entry && made.status === 0) how = ', created now';
  }
  if (entry)
    return { uid: entry[0], gid: entry[1], label: `${name} (uid ${entry[0]}, gid ${entry[1]}${how})` };
  return {
    uid: fallback,
    gid: fallback,
    label: `uid ${fallback}, gid ${fallback} (no user ${name} here and useradd could not make one)`
  };
}

/**
 * Gives a workspace root the executor just made (a full checkout, a copy of the source: nothing of
 * the run has been in it yet) to the run's user. Symbolic links are changed themselves, never
 * followed (a checkout may hold a link to any file of the host).
 */
export async function giveTo(user: { uid: number; gid: number } | undefined, paths: string[]): Promise<void> {
  if (!user || paths.length === 0) return;
  await exec(systemProgram('chown'), ['-R', '-h', '-P', `${user.uid}:${user.gid}`, '--', ...paths]);
}

/**
 * A program of the system directories the sandbox shows, by absolute path: run as root inside the
 * sandbox, it must never be looked up on the run's PATH (which may name the workspace). The
 * executor's git that writes a shared checkout as the run's user finds `setpriv` the same way.
 */
export function systemProgram(name: string): string {
  for (const dir of ['/usr/bin', '/bin', '/usr/sbin', '/sbin']) {
    const file = join(dir, name);
    if (existsSync(file)) return file;
  }
  return `/usr/bin/${name}`;
}

/**
 * The command that, inside a sandbox bubblewrap made as root, gives the run its own HOME and then
 * becomes the run's user for good (no groups, no capabilities, none regained through setuid files)
 * before it execs the run's program (appended after it).
 */
export function dropTo(user: RunUser, home: string): string[] {
  const id = `${user.uid}:${user.gid}`;
  const script =
    `${systemProgram('chown')} ${id} ${home} || exit 125; ` +
    `exec ${systemProgram('setpriv')} --reuid=${user.uid} --regid=${user.gid} ` +
    '--clear-groups --inh-caps=-all --bounding-set=-all --no-new-privs -- "$@"';
  return ['/bin/sh', '-c', script, 'sh'];
}
