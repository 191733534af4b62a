// Real agents in real workspaces: the command agent runs fixture scripts that behave like agent
// CLIs (edit files, print, fail, ignore SIGTERM) as real child processes.
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { parseConfig } from '../../src/executor/config/config.js';
import { checkRunnable } from '../../src/executor/node/startup.js';
import { gitReason } from '../../src/executor/workspace/workspace.js';
import { eventually } from '../support/eventually.js';
import { type TestExecutor, startTestExecutor, tempDir } from '../support/executor.js';
import { waitForState } from '../support/wait.js';

const FIXTURES = resolve('__tests__/fixtures/agents');
let ex: TestExecutor;
let key: string;
let repo: string;
let plain: string;

function gitRepo(): string {
  const dir = tempDir('agent-source-');
  writeFileSync(join(dir, 'README.md'), 'original\n');
  mkdirSync(join(dir, 'src'));
  writeFileSync(join(dir, 'src', 'app.txt'), 'app\n');
  const git = (...args: string[]) =>
    execFileSync('git', ['-C', dir, '-c', 'user.name=t', '-c', 'user.email=t@t', ...args]);
  git('init', '--quiet');
  git('add', '--all');
  git('commit', '--quiet', '-m', 'initial');
  return dir;
}

beforeAll(async () => {
  repo = gitRepo();
  plain = tempDir('agent-plain-');
  writeFileSync(join(plain, 'README.md'), 'plain original\n');
  process.env.ALLOWED_TOKEN = 'yes-passed';
  process.env.EXECUTOR_SECRET = 'must-not-pass';
  const agent = (script: string, prompt = 'stdin') => ({
    kind: 'command',
    command: [join(FIXTURES, script), '{prompt}'],
    prompt
  });
  ex = await startTestExecutor({
    workers: 8,
    workspaces: { retention: '0s', continue_for: '0s', quota: '200KiB' },
    environments: [
      {
        id: 'edit',
        source: repo,
        agent: { kind: 'command', command: [join(FIXTURES, 'edit-and-print.sh')], prompt: 'stdin' }
      },
      {
        id: 'edit-copy',
        source: plain,
        agent: { kind: 'command', command: [join(FIXTURES, 'edit-and-print.sh')] }
      },
      {
        id: 'remote',
        source: `file://${repo}`,
        agent: { kind: 'command', command: [join(FIXTURES, 'edit-and-print.sh')] }
      },
      { id: 'fail', source: repo, agent: agent('fail.sh', 'arg') },
      // Unconfined, so the pid its child writes is a pid of this machine (sandbox tests cover confined runs).
      { id: 'stubborn', source: repo, sandbox: 'off', agent: agent('stubborn.sh') },
      { id: 'slow', source: repo, timeout: '1s', agent: agent('stubborn.sh') },
      { id: 'env', source: repo, env: ['ALLOWED_TOKEN'], agent: agent('env.sh') },
      {
        id: 'setup',
        source: repo,
        setup: ['echo preparing', 'test -f README.md'],
        agent: { kind: 'simulated' }
      },
      { id: 'setup-fails', source: repo, setup: ['exit 4'], agent: { kind: 'simulated' } },
      { id: 'quota', source: repo, agent: { kind: 'simulated' } },
      { id: 'leaky', source: 'https://deploy:s3cr3t@127.0.0.1:9/repo.git', agent: { kind: 'simulated' } },
      { id: 'gone', source: 'file:///nonexistent-agent-source/repo.git', agent: { kind: 'simulated' } }
    ]
  });
  key = (await ex.key()).raw;
});
afterAll(() => ex.stop(1000));

async function run(environment: string, prompt: string): Promise<string> {
  const response = await ex.request('/api/v1/agent/run', {
    method: 'POST',
    key,
    body: JSON.stringify({ prompt, config: { environment_id: environment } })
  });
  expect(response.status).toBe(200);
  return ((await response.json()) as { run_id: string }).run_id;
}
async function read(id: string) {
  return (await (await ex.request(`/api/v1/agent/runs/${id}`, { key })).json()) as Record<string, string>;
}
const until = (id: string, states?: readonly string[]) => waitForState({ on: ex, key, id }, states);
async function events(id: string) {
  return (
    (await (await ex.request(`/api/v1/agent/runs/${id}/transcript`, { key })).json()) as {
      events: Record<string, unknown>[];
    }
  ).events;
}

describe('command agent', () => {
  it('gets the prompt on stdin, streams its output, and its changes come out as a unified diff', async () => {
    const id = await run('edit', 'Add a file please');
    expect(await until(id)).toMatchObject({ state: 'SUCCEEDED' });
    const all = await events(id);
    const output = all.filter(e => e.kind === 'output');
    expect(
      output
        .filter(e => e.stream === 'stdout')
        .map(e => e.text)
        .join('')
    ).toBe('agent got: Add a file please\ndone\n');
    expect(
      output
        .filter(e => e.stream === 'stderr')
        .map(e => e.text)
        .join('')
    ).toBe('working on it\n');
    // Output arrives as it is printed, not only at exit: the first line comes before the 3 s sleep
    // ends (by more than 500 ms however late a loaded machine reads it).
    expect(Date.parse(output[0]!.at as string)).toBeLessThan(
      Date.parse(all.find(e => e.kind === 'exit')!.at as string) - 500
    );
    const diff = all.find(e => e.kind === 'diff')!;
    expect(diff.files).toEqual([
      { path: 'README.md', change: 'modified' },
      { path: 'added.txt', change: 'added' }
    ]);
    expect(diff.diff).toContain('--- a/README.md\n+++ b/README.md');
    expect(diff.diff).toContain(' original\n+changed by the agent');
    expect(diff.diff).toContain('+++ b/added.txt\n@@ -0,0 +1 @@\n+new file');
    expect(readFileSync(join(repo, 'README.md'), 'utf8')).toBe('original\n');
  });

  it('works on a copy when the source is not a git repository, and on a remote repository URL', async () => {
    const copy = await run('edit-copy', 'copy');
    const remote = await run('remote', 'remote');
    for (const id of [copy, remote]) {
      expect((await until(id)).status_message).toBeUndefined();
      const diff = (await events(id)).find(e => e.kind === 'diff')!;
      expect((diff.files as { path: string }[]).map(f => f.path)).toEqual(['README.md', 'added.txt']);
    }
    expect(readFileSync(join(plain, 'README.md'), 'utf8')).toBe('plain original\n');
    expect(existsSync(join(plain, 'added.txt'))).toBe(false);
  });

  it('keeps concurrent runs apart', async () => {
    const ids = await Promise.all([1, 2, 3, 4].map(n => run('edit', `run ${n}`)));
    for (const [n, id] of ids.entries()) {
      await until(id, ['SUCCEEDED']);
      const out = (await events(id))
        .filter(e => e.stream === 'stdout')
        .map(e => e.text)
        .join('');
      expect(out).toContain(`agent got: run ${n + 1}\n`);
      const diff = (await events(id)).find(e => e.kind === 'diff')!.diff as string;
      expect(diff.match(/\+changed by the agent/g)).toHaveLength(1);
    }
  });

  it('fails with the exit code and the last lines of stderr; the prompt may be an argument', async () => {
    const id = await run('fail', 'the prompt');
    const failed = await until(id);
    expect(failed.error_code).toBe('agent_failed');
    expect(failed.status_message).toMatch(/^agent exited with code 7; last lines of stderr:\n/);
    expect(failed.status_message).toContain('error: tests failed (3 of 10)');
    expect(failed.status_message).not.toContain('noise line 4\n');
    expect(failed.status_message!.split('\n')).toHaveLength(11);
    const stdout = (await events(id))
      .filter(e => e.stream === 'stdout')
      .map(e => e.text)
      .join('');
    expect(stdout).toBe('trying the prompt\n');
  });

  it('on cancel stops the whole process group, SIGKILL after SIGTERM is ignored', async () => {
    const id = await run('stubborn', 'x');
    await until(id, ['INPROGRESS']);
    const workspace = join(ex.dataDir, 'workspaces', id);
    await eventually(() => existsSync(join(workspace, 'child.pid')), {
      what: 'child.pid',
      timeoutMs: 30_000
    });
    const child = Number(readFileSync(join(workspace, 'child.pid'), 'utf8'));
    expect((await ex.request(`/api/v1/agent/runs/${id}/cancel`, { method: 'POST', key })).status).toBe(200);
    expect((await read(id)).state).toBe('CANCELLED');
    const alive = () => {
      try {
        process.kill(child, 0);
        return true;
      } catch {
        return false;
      }
    };
    expect(alive()).toBe(true);
    await eventually(() => !alive(), { what: `process ${child} to end`, timeoutMs: 30_000 }).catch(
      () => undefined
    );
    expect(alive()).toBe(false);
  }, 120_000);

  it('fails a run past its timeout', async () => {
    const id = await run('slow', 'x');
    expect(await until(id, ['FAILED'])).toMatchObject({
      error_code: 'timeout',
      status_message: 'the run exceeded its time limit of 1 s'
    });
  }, 120_000);

  it("passes only the environment's listed variables", async () => {
    const id = await run('env', 'x');
    await until(id, ['SUCCEEDED']);
    const out = (await events(id))
      .filter(e => e.stream === 'stdout')
      .map(e => e.text)
      .join('');
    expect(out).toBe(`ALLOWED=yes-passed SECRET=unset RUN=${id}\n`);
  });

  it('refuses at start-up a program it could not start, instead of failing each run', () => {
    // This environment used to start and fail each run with the status message
    // 'agent command "no-such-agent-cli" could not start: not found on PATH'.
    const config = parseConfig(
      {
        environments: [
          { id: 'missing', source: repo, agent: { kind: 'command', command: ['no-such-agent-cli'] } }
        ]
      },
      repo
    );
    expect(() => checkRunnable(config, { PATH: '/usr/bin:/bin' })).toThrow(
      'refusing to start: environment "missing": agent.command "no-such-agent-cli": not found on the PATH runs get ' +
        '(/usr/bin:/bin); expected a program on that PATH or an absolute path'
    );
  });
});

describe('workspaces', () => {
  it('never puts credentials of a source URL in a status message', async () => {
    const id = await run('leaky', 'x');
    const failed = await until(id, ['FAILED']);
    expect(failed.status_message).toMatch(/^the agent could not run: git clone failed: /);
    expect(failed.status_message).not.toContain('s3cr3t');
    expect(failed.status_message).toMatch(
      /^the agent could not run: git clone failed: fatal: unable to access /
    );
    expect(failed.status_message!.split('\n')).toHaveLength(1);
  });

  it("says in one line what git was doing and git's own fatal line, without its advice", async () => {
    // git prints two fatal lines and a paragraph of advice here; the first fatal line is the reason.
    const failed = await until(await run('gone', 'x'), ['FAILED']);
    expect(failed.status_message).toBe(
      "the agent could not run: git clone failed: fatal: '/nonexistent-agent-source/repo.git' does not appear to be a git repository"
    );
    expect(
      gitReason({
        stderr:
          "hint: Using 'master' as the name for the initial branch.\nhint: see git help init\nfatal: bad object HEAD\n"
      })
    ).toBe('fatal: bad object HEAD');
  });

  it('runs setup commands in the workspace and records them like commands', async () => {
    const id = await run('setup', '@sim say ok');
    await until(id, ['SUCCEEDED']);
    const setup = (await events(id)).filter(e => e.kind === 'setup');
    expect(setup).toMatchObject([
      { command: 'echo preparing', exit_code: 0, output: 'preparing\n' },
      { command: 'test -f README.md', exit_code: 0 }
    ]);
    const bad = await run('setup-fails', '@sim say never');
    expect(await until(bad, ['FAILED'])).toMatchObject({
      error_code: 'setup_failed',
      status_message: 'setup command `exit 4` exited with code 4'
    });
    expect((await events(bad)).some(e => e.kind === 'message')).toBe(false);
  });

  it('fails a run whose workspace grows past the quota', async () => {
    const id = await run('quota', '@sim run head -c 600000 /dev/zero > big.bin\n@sim sleep 100');
    expect(await until(id)).toMatchObject({
      error_code: 'workspace_quota_exceeded',
      status_message: 'the workspace grew past its disk quota of 200 KiB'
    });
  }, 120_000);

  it('removes finished workspaces after the retention time', async () => {
    const id = await run('edit', 'cleanup');
    await until(id, ['SUCCEEDED']);
    const workspace = join(ex.dataDir, 'workspaces', id);
    const listed = () => execFileSync('git', ['-C', repo, 'worktree', 'list']).toString().includes(id);
    await eventually(() => !existsSync(workspace) && !listed(), {
      what: `workspace ${id} to be removed`,
      timeoutMs: 30_000
    }).catch(() => undefined);
    expect(existsSync(workspace)).toBe(false);
    expect(listed()).toBe(false);
  });
});
