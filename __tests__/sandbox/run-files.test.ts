// The one primitive through which the executor touches a tree a run can write (sandbox/run-files.ts):
// the program runs as the run's user with no capability, sees the system directories and the trees
// named for the call only, and a link the run planted reaches nothing of the host. Run as root, as
// CI and most self-hosters run the executor.

import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import {
  chownSync,
  existsSync,
  lstatSync,
  mkdirSync,
  readFileSync,
  readlinkSync,
  rmSync,
  symlinkSync,
  writeFileSync
} from 'node:fs';
import { join } from 'node:path';
import { asRunUser, readerReason } from '../../src/executor/sandbox/run-files.js';
import { type RunUser, runUser } from '../../src/executor/sandbox/user.js';
import { tempDir } from '../support/executor.js';
import { requireBubblewrap } from './support.js';

const SECRET = `HOST-SECRET-${process.pid}`;
let dir: string;
let user: RunUser;
let secretDir: string;

beforeAll(() => {
  requireBubblewrap();
  if (process.getuid?.() !== 0) throw new Error('these tests need root, as CI runs them');
  user = runUser(undefined)!;
  dir = tempDir('run-files-');
  secretDir = tempDir('run-files-secret-');
  writeFileSync(join(secretDir, 'secret.txt'), `${SECRET}\n`, { mode: 0o644 });
  mkdirSync(join(dir, 'from'));
  mkdirSync(join(dir, 'to'));
  chownSync(join(dir, 'to'), user.uid, user.gid);
  writeFileSync(join(dir, 'from', 'note.txt'), 'kept\n');
  // What a hostile run leaves: links to a host file, a host directory and the host's shadow file.
  symlinkSync(join(secretDir, 'secret.txt'), join(dir, 'from', 'to-secret'));
  symlinkSync(secretDir, join(dir, 'from', 'to-dir'));
  symlinkSync('/etc/shadow', join(dir, 'from', 'to-shadow'));
});

afterAll(() => {
  rmSync(dir, { recursive: true, force: true });
  rmSync(secretDir, { recursive: true, force: true });
});

const run = (script: string, read = [join(dir, 'from')], write = [join(dir, 'to')]) =>
  asRunUser({ user, confined: true }, { read, write, cwd: dir, program: '/bin/sh', args: ['-c', script] });

describe('asRunUser', () => {
  it("runs as the run's user with no capability", async () => {
    const result = await run('id -u; id -g; grep -E "^Cap(Eff|Prm|Bnd):" /proc/self/status');
    expect(result.code).toBe(0);
    const [uid, gid, ...caps] = result.stdout.toString().trim().split('\n');
    expect(Number(uid)).toBe(user.uid);
    expect(Number(gid)).toBe(user.gid);
    for (const line of caps) expect(line).toMatch(/:\s+0{16}$/);
  });

  it('shows only the named trees: a planted link reaches no host file', async () => {
    const result = await run(
      'cd from && cat note.txt; cat to-secret; ls to-dir/; cat to-shadow; ls /root; echo end',
      [join(dir, 'from')]
    );
    const out = result.stdout.toString();
    expect(out).toContain('kept');
    expect(out).toContain('end');
    expect(out).not.toContain(SECRET);
    expect(result.stderr).toMatch(/to-secret: No such file or directory/);
  });

  it('copies a tree as the run user, links kept as links, nothing of the host copied', async () => {
    const result = await run(`cp -R -P -- ${join(dir, 'from')}/. ${join(dir, 'to')}`);
    expect(result.code).toBe(0);
    expect(readFileSync(join(dir, 'to', 'note.txt'), 'utf8')).toBe('kept\n');
    // The copies are links still, whose targets the copy never read; every file is the run user's.
    expect(lstatSync(join(dir, 'to', 'to-shadow')).isSymbolicLink()).toBe(true);
    expect(readlinkSync(join(dir, 'to', 'to-shadow'))).toBe('/etc/shadow');
    expect(lstatSync(join(dir, 'to', 'note.txt')).uid).toBe(user.uid);
  });

  it('a walk that follows every link (any swap, at any moment) copies nothing of the host', async () => {
    // The worst a directory swapped for a link mid-copy can do is make the walk go through the
    // link: here every link is followed on purpose. Root-only files are unreadable to the user, the
    // host's shadow file is /dev/null inside, and the secret's folder is not there at all.
    const into = join(dir, 'followed');
    mkdirSync(into);
    chownSync(into, user.uid, user.gid);
    const result = await run(`cp -R -L -- ${join(dir, 'from')}/. ${into}`, [join(dir, 'from')], [into]);
    expect(result.stderr).toMatch(/to-secret|to-dir/);
    expect(readFileSync(join(into, 'note.txt'), 'utf8')).toBe('kept\n');
    // (/dev/null stands for it: the user may not make a device, so nothing at all is copied.)
    const shadow = join(into, 'to-shadow');
    expect(existsSync(shadow) ? readFileSync(shadow, 'utf8') : '').toBe('');
    expect(existsSync(join(into, 'to-secret'))).toBe(false);
    expect(existsSync(join(into, 'to-dir'))).toBe(false);
  });

  it('cannot write a tree shown read-only', async () => {
    const result = await run(`echo x > ${join(dir, 'from', 'new.txt')}`);
    expect(result.code).not.toBe(0);
    expect(result.stderr).toMatch(/Read-only file system|Permission denied/);
  });

  it('keeps at most maxStdout bytes, counts the rest, and stops past it when asked', async () => {
    const counted = await asRunUser(
      { user, confined: true },
      { program: '/bin/sh', args: ['-c', 'head -c 100000 /dev/zero'], maxStdout: 1000 }
    );
    expect(counted.stdout.length).toBe(1000);
    expect(counted.stdoutBytes).toBe(100000);
    const stopped = await asRunUser(
      { user, confined: true },
      { program: '/bin/sh', args: ['-c', 'cat /dev/zero'], maxStdout: 1000, stopPastMax: true }
    );
    expect(stopped.stdout.length).toBe(1000);
    expect(stopped.code).toBeNull();
  });

  it('is killed at its time limit', async () => {
    const result = await asRunUser(
      { user, confined: true },
      { program: '/bin/sh', args: ['-c', 'exec sleep 600'], timeoutMs: 300 }
    );
    expect(result.timedOut).toBe(true);
    expect(result.code).toBeNull();
    // The refusal names the limit the call had, not the default one.
    expect(readerReason(result)).toBe('it ran longer than 300 ms');
    expect(readerReason({ ...result, timeLimitMs: 15 * 60_000 })).toBe('it ran longer than 15 minutes');
  });
});
