// The data dir is the executor's alone (private-files.ts): `agent-executor serve` started under
// umask 000 still makes it 0700 and the database, SQLite's -wal and -shm and the role lock 0600; a
// data dir an older executor left 0755 (its database 0644) is tightened at start-up with one
// warning naming the path and both modes; a `sandbox.write` or `sandbox.read` path that contains
// the data dir, or lies inside it, refuses the start (exit 2) naming the environment, the key, the
// path and the rule. The executor is the TypeScript source, started as a user starts it.
import { afterAll, describe, expect, it } from '@jest/globals';
import { chmodSync, mkdirSync, realpathSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { DEFAULT_SANDBOX, sandboxPathProblems } from '../../src/executor/sandbox/config.js';
import { type ExecutorProcess, spawnExecutor, tempDir } from '../support/executor.js';

const made: string[] = [];
afterAll(() => {
  for (const dir of made) rmSync(dir, { recursive: true, force: true });
});

function dir(prefix: string): string {
  const path = tempDir(prefix);
  made.push(path);
  return path;
}

const modeOf = (path: string) => `0${(statSync(path).mode & 0o7777).toString(8)}`;

/** The JSON log lines of an executor's stderr whose message matches `pattern`. */
function logLines(stderr: string, pattern: RegExp): string[] {
  return stderr
    .split('\n')
    .filter(line => line.startsWith('{'))
    .map(line => String((JSON.parse(line) as { msg?: unknown }).msg))
    .filter(message => pattern.test(message));
}

async function stopped(executor: ExecutorProcess): Promise<void> {
  expect(await executor.stop()).toBe(0);
}

describe('the data dir, private by default', () => {
  it('is made 0700 with its database, -wal, -shm and lock 0600 by serve under umask 000', async () => {
    const base = dir('private-umask-');
    const data = join(base, 'data');
    const executor = await spawnExecutor(['--data-dir', data], { cwd: base, source: true, umask: '000' });
    try {
      expect(modeOf(data)).toBe('0700');
      for (const file of ['executor.db', 'executor.db-wal', 'executor.db-shm', 'executor.pid'])
        expect([file, modeOf(join(data, file))]).toEqual([file, '0600']);
      // A new data dir is not "tightened": nothing to warn about.
      expect(logLines(executor.stderr(), /data dir/)).toEqual([]);
    } finally {
      await stopped(executor);
    }
  }, 120_000);

  it('tightens a data dir left 0755 (its database 0644) with one warning naming the path and both modes', async () => {
    const base = dir('private-loose-');
    const data = join(base, 'data');
    const first = await spawnExecutor(['--data-dir', data], { cwd: base, source: true });
    await stopped(first);
    // As an older executor under umask 022 left it.
    chmodSync(data, 0o755);
    chmodSync(join(data, 'executor.db'), 0o644);
    const executor = await spawnExecutor(['--data-dir', data], { cwd: base, source: true });
    try {
      expect(modeOf(data)).toBe('0700');
      expect(modeOf(join(data, 'executor.db'))).toBe('0600');
      expect(modeOf(join(data, 'executor.db-wal'))).toBe('0600');
      expect(logLines(executor.stderr(), /data dir/)).toEqual([
        `data dir ${data} was mode 0755, open to other users of this machine (it holds every prompt and the link secrets): made it 0700`
      ]);
    } finally {
      await stopped(executor);
    }
    // Once private, a later start says nothing.
    const again = await spawnExecutor(['--data-dir', data], { cwd: base, source: true });
    try {
      expect(logLines(again.stderr(), /data dir/)).toEqual([]);
    } finally {
      await stopped(again);
    }
  }, 120_000);
});

describe('a shared directory as the data dir', () => {
  it('is refused (exit 1), not made 0700 under its other users', async () => {
    const base = dir('private-shared-');
    const shared = join(base, 'shared');
    mkdirSync(shared);
    chmodSync(shared, 0o1777);
    const message = await spawnExecutor(['--data-dir', shared], { cwd: base, source: true }).then(
      async executor => {
        await executor.stop();
        return 'the executor started';
      },
      (error: Error) => error.message
    );
    expect(message).toBe(
      `executor exited with 1:\nagent-executor: data dir ${shared} is mode 01777, a directory shared with other users ` +
        '(sticky bit); the executor makes its data dir 0700: use a directory of its own, such as a folder inside it\n'
    );
    expect(modeOf(shared)).toBe('01777');
  }, 120_000);
});

describe('sandbox paths that would show a run the data dir', () => {
  /** Starts serve on `config` (an agent-executor.yaml in `base`); answers its refusal. */
  async function refusal(base: string, config: string): Promise<string> {
    writeFileSync(join(base, 'agent-executor.yaml'), config);
    const started = spawnExecutor(['--config', join(base, 'agent-executor.yaml')], {
      cwd: base,
      source: true
    });
    const error = await started.then(
      async executor => {
        await executor.stop();
        throw new Error('the executor started');
      },
      (error: Error) => error.message
    );
    return error;
  }

  it('refuses at start-up (exit 2) a sandbox.write parent of the data dir, naming the path and the rule', async () => {
    const base = dir('private-write-');
    const message = await refusal(
      base,
      [
        `data_dir: ${base}/state/data`,
        'environments:',
        '  - id: ci',
        `    source: ${base}`,
        '    sandbox:',
        `      write: [${base}/state]`
      ].join('\n')
    );
    expect(message).toMatch(/^executor exited with 2:/);
    expect(message).toContain(
      `environment "ci": sandbox.write "${base}/state": contains the data dir ${base}/state/data, ` +
        'whose database holds every prompt and the link secrets; a run must never see the data dir; ' +
        'expected a path that neither contains the data dir nor lies inside it'
    );
  }, 120_000);

  it('refuses a sandbox.read inside the data dir, and a link that leads to it, before the data dir exists', async () => {
    const base = dir('private-read-');
    mkdirSync(join(base, 'tools'));
    mkdirSync(join(base, 'state'));
    symlinkSync(join(base, 'state'), join(base, 'tools', 'state-link'));
    const message = await refusal(
      base,
      [
        `data_dir: ${base}/state/data`,
        'environments:',
        '  - id: ci',
        `    source: ${base}`,
        '    sandbox:',
        `      read: [${base}/state/data/checkouts]`,
        `      write: [${base}/tools/state-link]`
      ].join('\n')
    );
    expect(message).toMatch(/^executor exited with 2:/);
    expect(message).toContain(
      `environment "ci": sandbox.read "${base}/state/data/checkouts": lies inside the data dir ${base}/state/data;`
    );
    expect(message).toContain(
      `environment "ci": sandbox.write "${base}/tools/state-link" (${base}/state): contains the data dir ${base}/state/data,`
    );
  }, 120_000);
});

describe('the rule, case by case', () => {
  const RULE =
    'whose database holds every prompt and the link secrets; a run must never see the data dir; ' +
    'expected a path that neither contains the data dir nor lies inside it';
  const env = (sandbox: { read?: string[]; write?: string[]; enabled?: boolean }) => ({
    id: 'e',
    sandbox: { ...DEFAULT_SANDBOX, ...sandbox }
  });

  it('follows a dangling link to where the data dir will be, and allows paths beside it', () => {
    const base = realpathSync(dir('private-rule-'));
    symlinkSync(join(base, 'state'), join(base, 'later'));
    const data = join(base, 'state', 'data');
    expect(sandboxPathProblems([env({ write: [join(base, 'later')] })], data)).toEqual([
      expect.stringMatching(
        /^environment "e": sandbox\.write ".*\/later" \(.*\/state\): contains the data dir /
      )
    ]);
    expect(
      sandboxPathProblems(
        [
          env({
            read: [join(base, 'state', 'tools'), join(base, 'state', 'data-other')],
            write: [dirname(base)]
          })
        ],
        data
      )
    ).toEqual(
      // The temp dir holds the data dir: refused; the siblings are not.
      [`environment "e": sandbox.write "${dirname(base)}": contains the data dir ${data}, ${RULE}`]
    );
    expect(sandboxPathProblems([env({ enabled: false, write: ['/'] })], data)).toEqual([]);
  });

  it('refuses a writable path over the config file and a path that is it; a read-only parent keeps it hidden', () => {
    const base = realpathSync(dir('private-config-'));
    const config = join(base, 'etc', 'agent-executor.yaml');
    mkdirSync(join(base, 'etc'));
    writeFileSync(config, '');
    const data = join(base, 'data');
    expect(
      sandboxPathProblems(
        [env({ read: [join(base, 'etc'), config], write: [join(base, 'etc')] })],
        data,
        config
      )
    ).toEqual([
      `environment "e": sandbox.read "${config}": is the config file ${config}, which runs must not see; expected a path that is not it`,
      `environment "e": sandbox.write "${base}/etc": contains the config file ${config}, which runs must not see; expected a path that does not contain it`
    ]);
  });
});
