// Who a run is on the host, and what it may write. The executor runs as root here (as on CI runners
// and in containers): a run's processes must not be uid 0, a root-only file of the host is
// unreadable to them by its permissions, their workspace is theirs to write in, the output folder
// counts against the disk quota, and a `sandbox.user` that cannot be used stops the start-up.

import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { TERMINAL_STATES } from '../../src/api/index.js';
import { waitForState } from '../support/wait.js';
import { execFileSync } from 'node:child_process';
import { existsSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { type TestExecutor, startTestExecutor, tempDir } from '../support/executor.js';
import { commandOutput, createRun, requireBubblewrap } from './support.js';

const SECRET = `ROOT-ONLY-${process.pid}-${Date.now()}`;
const rootFile = `/etc/agent-run-user-test-${process.pid}`;

let ex: TestExecutor;
let key: string;
let source: string;

beforeAll(async () => {
  requireBubblewrap();
  if (process.getuid?.() !== 0)
    throw new Error('these tests need the executor to run as root, as CI runs them');
  writeFileSync(rootFile, `${SECRET}\n`, { mode: 0o600 });
  source = tempDir('sandbox-user-source-');
  writeFileSync(join(source, 'README.md'), 'hello\n');
  const git = (...args: string[]) =>
    execFileSync('git', ['-C', source, '-c', 'user.name=t', '-c', 'user.email=t@t', ...args]);
  git('init', '--quiet');
  git('add', '--all');
  git('commit', '--quiet', '-m', 'initial');
  ex = await startTestExecutor({
    workers: 2,
    workspaces: { quota: '64MiB', max_files: 2000 },
    environments: [{ id: 'repo', source }]
  });
  key = (await ex.key()).raw;
}, 120_000);

afterAll(async () => {
  await ex?.stop(1000);
  rmSync(rootFile, { force: true });
});

async function run(prompt: string) {
  const id = await createRun(ex, key, 'repo', prompt);
  const end = await waitForState({ on: ex, key, id }, TERMINAL_STATES, { timeoutMs: 60_000 });
  return { end, output: await commandOutput(ex, key, id), id };
}

describe('a run of a root executor', () => {
  it('is not root: its processes have an unprivileged uid and gid and no supplementary groups', async () => {
    const agentRun = execFileSync('getent', ['passwd', 'agent-run'], { encoding: 'utf8' }).split(':');
    const { end, output } = await run('@sim run echo "uid=$(id -u) gid=$(id -g) groups=$(id -G)"');
    expect(end.state).toBe('SUCCEEDED');
    const [uid, gid] = [agentRun[2], agentRun[3]];
    expect(uid).not.toBe('0');
    expect(output).toContain(`uid=${uid} gid=${gid} groups=${gid}\n`);
  });

  it('cannot read a 0600 root file of the host: permission denied', async () => {
    const { output } = await run(`@sim run cat ${rootFile}; echo "exit=$?"`);
    expect(output).toContain(`cat: ${rootFile}: Permission denied\nexit=1`);
    expect(output).not.toContain(SECRET);
  });

  it('owns its workspace, HOME and /tmp: writes, commits, and the change comes back as its patch', async () => {
    const { end, output, id } = await run(
      [
        '@sim run echo changed > README.md && touch "$HOME/h" /tmp/t && echo "wrote ok"',
        '@sim run git -c user.name=a -c user.email=a@a commit -qam "agent commit" && echo "committed ok"'
      ].join('\n')
    );
    expect(output).toContain('wrote ok');
    expect(output).toContain('committed ok');
    expect(end.state).toBe('SUCCEEDED');
    const record = (await (await ex.request(`/api/v1/agent/runs/${id}`, { key })).json()) as {
      artifacts?: { data: { filename: string } }[];
    };
    expect(record.artifacts?.map(a => a.data.filename)).toEqual(['changes.patch']);
  });

  it('fails with workspace_quota_exceeded when it writes 300 MiB into its output folder (quota 64 MiB)', async () => {
    const { end } = await run(
      '@sim run dd if=/dev/zero of="$(dirname "$AGENT_RESULT_FILE")/filler" bs=1M count=300 status=none; echo done'
    );
    expect(end).toMatchObject({
      state: 'FAILED',
      error_code: 'workspace_quota_exceeded',
      status_message: 'the workspace grew past its disk quota of 64 MiB'
    });
  }, 120_000);
});

describe('what a run may make besides bytes', () => {
  it('is stopped by workspaces.max_files when it makes empty files without end (they cost no bytes)', async () => {
    // Up to a million empty files: the count stops it long before (2,000 here).
    const { end } = await run('@sim run i=0; while [ $i -lt 1000000 ]; do : > "f$i"; i=$((i+1)); done');
    expect(end).toMatchObject({
      state: 'FAILED',
      error_code: 'workspace_quota_exceeded',
      status_message: 'the workspace holds more than 2000 files and directories (workspaces.max_files)'
    });
  });

  it('is stopped when it hides part of what it wrote from its own user (the quota cannot count it)', async () => {
    const { end } = await run(
      '@sim run mkdir hidden && head -c 1000 /dev/zero > hidden/bytes && chmod 000 hidden'
    );
    expect(end).toMatchObject({ state: 'FAILED', error_code: 'workspace_quota_exceeded' });
    expect(end.status_message).toMatch(
      /^the workspace holds files its own user cannot read, which the quota cannot count \(du: cannot read directory '[^']*hidden': Permission denied\)$/
    );
  });
});

describe('programs the executor starts as root for a run', () => {
  it('are never looked up on a relative PATH entry the run can write to (a planted bwrap)', async () => {
    const marker = `/tmp/agent-run-planted-bwrap-${process.pid}`;
    const saved = process.env.PATH;
    // A relative entry first, as `node_modules/.bin` often is: it is looked up from the workspace.
    process.env.PATH = `planted:${saved}`;
    try {
      const { end, output } = await run(
        [
          `@sim run mkdir -p planted && printf '#!/bin/sh\\necho pwned > ${marker}\\n' > planted/bwrap && chmod +x planted/bwrap && echo planted`,
          '@sim run echo "second process ran"'
        ].join('\n')
      );
      expect(output).toContain('planted');
      expect(output).toContain('second process ran');
      expect(end.state).toBe('SUCCEEDED');
      expect(existsSync(marker)).toBe(false);
    } finally {
      process.env.PATH = saved;
      rmSync(marker, { force: true });
    }
  });
});

describe('sandbox.user at start-up', () => {
  const start = (user: unknown) =>
    startTestExecutor({ environments: [{ id: 'e', source: tempDir(), sandbox: { user } }] });

  it('refuses a user the machine does not have, naming it', async () => {
    await expect(start('no-such-agent-user')).rejects.toThrow(
      'environment e: sandbox.user "no-such-agent-user": no such user on this machine; expected a user name such as agent-run, or a numeric uid[:gid] such as 2000:2000'
    );
  });

  it('refuses root by name or by number', async () => {
    await expect(start('root')).rejects.toThrow(
      'sandbox.user "root" is uid 0 (root): a run must not be root'
    );
    await expect(start('1000:0')).rejects.toThrow('sandbox.user "1000:0" is gid 0 (root)');
  });

  it('refuses a value of neither form', async () => {
    await expect(start('not a user!')).rejects.toThrow(
      'environments[0].sandbox.user "not a user!": expected a user name such as agent-run, or a numeric uid[:gid] such as 2000:2000'
    );
  });

  it('runs as a numeric uid:gid with no passwd entry', async () => {
    const other = await startTestExecutor({
      environments: [{ id: 'n', source, sandbox: { user: '2345:2346' } }]
    });
    try {
      const otherKey = (await other.key()).raw;
      const id = await createRun(other, otherKey, 'n', '@sim run echo "ids=$(id -u):$(id -g)"');
      expect((await waitForState({ on: other, key: otherKey, id })).state).toBe('SUCCEEDED');
      expect(await commandOutput(other, otherKey, id)).toContain('ids=2345:2346\n');
    } finally {
      await other.stop(1000);
    }
  });
});
