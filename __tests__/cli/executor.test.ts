// `agent-run` (dist/cli/index.js) against the bundled executor, both run as users run them.
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type ExecutorProcess, spawnExecutorWithKey } from '../support/executor.js';
import { runAction } from '../support/runner.js';
import { type CliRun, runCli } from './support.js';

let executor: ExecutorProcess;
let key: string;
let env: Record<string, string>;

beforeAll(async () => {
  const started = await spawnExecutorWithKey({ kind: 'personal', name: 'cli' });
  ({ key } = started);
  executor = started;
  env = { AGENT_RUN_BASE_URL: executor.url, AGENT_RUN_API_KEY: key };
});
afterAll(() => executor.stop());

const cli = (args: string[], extra: Record<string, string> = {}) =>
  runCli(args, { env: { ...env, ...extra } });

function expectNoKey(run: CliRun) {
  for (const text of [run.stdout, run.stderr, run.argv.join(' ')]) expect(text).not.toContain(key);
}

describe('agent-run run', () => {
  it("succeeds with exit 0, streams progress to stderr, and prints the agent's answer from the executor's conversation", async () => {
    const run = await cli([
      'run',
      '--environment',
      'local',
      '--title',
      'CLI',
      '@sim say hello from the agent'
    ]);
    expect(run.code).toBe(0);
    expect(run.stderr).toMatch(/Created run \S+ in environment local\./);
    // Each fact once (issue 25 item 17): the answer, the end state, the session link.
    expect(run.stderr.split('agent: hello from the agent')).toHaveLength(2);
    expect(run.stderr).not.toMatch(/^state /m);
    expect(run.stderr).toMatch(/ended SUCCEEDED in \d+s\./);
    expect(run.stderr.split('Session: ')).toHaveLength(2);
    expect(run.stderr).not.toContain('no conversation endpoint');
    expect(run.stdout).toBe('hello from the agent\n');
    expectNoKey(run);
  });

  it('exits 1 on a failed run, with the status message', async () => {
    const run = await cli(['run', '--environment', 'local', '@sim fail lint found 3 errors']);
    expect(run.code).toBe(1);
    expect(run.stderr).toMatch(/ended FAILED \(agent_failed\): lint found 3 errors/);
    expectNoKey(run);
  });

  it('prints the final record with --json, reads the prompt from stdin', async () => {
    const run = await runCli(['run', '--environment', 'local', '--json', '-'], {
      env,
      stdin: '@sim say from stdin'
    });
    expect(run.code).toBe(0);
    const record = JSON.parse(run.stdout) as Record<string, unknown>;
    expect(record).toMatchObject({
      state: 'SUCCEEDED',
      result: 'from stdin',
      structured_output: null,
      artifacts: []
    });
    expect(record.prompt).toBe('@sim say from stdin');
  });

  it('exits 3 when the run outlasts --timeout, and the run keeps going', async () => {
    const run = await cli(['run', '--environment', 'local', '--timeout', '2s', '@sim sleep 30']);
    expect(run.code).toBe(3);
    expect(run.stderr).toMatch(/did not end within 2s/);
    const id = /agent-run cancel (\S+)/.exec(run.stderr)![1]!;
    const cancelled = await cli(['cancel', id, '--reason', 'test over']);
    expect(cancelled.code).toBe(0);
    expect(cancelled.stdout).toContain(`Cancelled run ${id}`);
    const record = JSON.parse((await cli(['get', id, '--json'])).stdout) as { status_message: string };
    expect(record.status_message).toContain('test over');
    const again = await cli(['cancel', id]);
    expect(again.code).toBe(1);
    expect(again.stderr).toContain('cannot be cancelled');
  });

  it('cancels the run it created on Ctrl-C (SIGINT), says so and exits 130', async () => {
    let sent = false;
    const run = await runCli(['run', '--environment', 'local', '@sim sleep 60'], {
      env,
      onStderr: (text, child) => {
        if (!sent && /INPROGRESS/.test(text)) {
          sent = true;
          child.kill('SIGINT');
        }
      }
    });
    expect(run.code).toBe(130);
    const id = /Interrupted: cancelled run (\S+)\./.exec(run.stderr)![1]!;
    const got = await cli(['get', id, '--json']);
    expect(JSON.parse(got.stdout)).toMatchObject({ state: 'CANCELLED' });
    expect(JSON.parse(got.stdout).status_message).toContain('agent-run was interrupted');
  });

  it('returns the run id at once with --no-wait; wait, get and logs then see it', async () => {
    const started = await cli([
      'run',
      '--environment',
      'local',
      '--no-wait',
      '@sim sleep 2\n@sim run echo hi-from-command'
    ]);
    expect(started.code).toBe(0);
    const id = started.stdout.trim();
    expect(id).toMatch(/^\S+$/);
    const followed = await cli(['logs', id, '--follow']);
    expect(followed.code).toBe(0);
    expect(followed.stdout).toMatch(/\$ echo hi-from-command → exit 0/);
    expect(followed.stdout).toContain('hi-from-command');
    const waited = await cli(['wait', id, '--json']);
    expect(waited.code).toBe(0);
    expect(JSON.parse(waited.stdout)).toMatchObject({ run_id: id, state: 'SUCCEEDED' });
    const got = await cli(['get', id]);
    expect(got.stdout).toMatch(new RegExp(`run: +${id}`));
    expect(got.stdout).toMatch(/state: +SUCCEEDED/);
    const json = await cli(['get', id, '--json']);
    expect(JSON.parse(json.stdout)).toMatchObject({ run_id: id, state: 'SUCCEEDED' });
    const logs = await cli(['logs', id]);
    expect(logs.stdout).toContain('$ echo hi-from-command → exit 0');
    const unknown = await cli(['wait', 'no-such-run']);
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toMatch(/^error: 404 from GET \/api\/v1\/agent\/runs\/no-such-run: not found/m);
    expect(unknown.stderr).not.toContain('neither a transcript');
    const artifacts = await cli(['artifacts', id, '--json']);
    expect(artifacts.code).toBe(0);
    expect(JSON.parse(artifacts.stdout)).toEqual([]);
  });

  it('exits 2 on bad usage and refuses the key as a flag value', async () => {
    expect((await cli(['run', '--environment', 'local'])).code).toBe(2);
    expect((await cli(['run', '--bogus', 'x'])).code).toBe(2);
    expect((await cli(['list', '--limit', '0'])).code).toBe(2);
    const flag = await cli(['get', 'x', '--api-key', 'wk-secret-flag']);
    expect(flag.code).toBe(2);
    expect(flag.stderr).toContain('AGENT_RUN_API_KEY');
    expect(flag.stderr).not.toContain('wk-secret-flag');
    const help = await cli(['run', '--help']);
    expect(help.code).toBe(0);
    expect(help.stdout).toContain('Example:');
    expect(help.stdout).toContain('4  blocked');
  });

  it('exits 5 when the key is refused or the service unreachable', async () => {
    const refused = await cli(['get', 'x'], { AGENT_RUN_API_KEY: 'wk-not-a-real-key' });
    expect(refused.code).toBe(5);
    expect(refused.stderr).toContain('401');
    const dir = mkdtempSync(join(tmpdir(), 'cli-key-'));
    writeFileSync(join(dir, 'key'), `${key}\n`);
    const fromFile = await runCli(['list', '--api-key-file', join(dir, 'key'), '--base-url', executor.url]);
    expect(fromFile.code).toBe(0);
    const unreachable = await cli(['get', 'x'], { AGENT_RUN_BASE_URL: 'http://127.0.0.1:9' });
    expect(unreachable.code).toBe(5);
  });
});

describe('agent-run list', () => {
  it('prints a table, or JSON, filtered by state', async () => {
    const table = await cli(['list', '--limit', '3']);
    expect(table.code).toBe(0);
    expect(table.stdout.split('\n')[0]).toMatch(/^RUN ID +STATE +ENVIRONMENT +CREATED +DURATION +TITLE$/);
    const json = await cli(['list', '--state', 'FAILED', '--json']);
    const page = JSON.parse(json.stdout) as { runs: { state: string }[] };
    expect(page.runs.length).toBeGreaterThan(0);
    expect(page.runs.every(run => run.state === 'FAILED')).toBe(true);
    expectNoKey(json);
  });
});

describe('agent-run action', () => {
  it('gives the same outputs as the runner-style run of dist/index.js', async () => {
    const prompt = 'Write the notes\n@sim say done\n@sim write NOTES.md hello';
    const local = await cli([
      'action',
      '--json',
      '--input',
      `prompt=${prompt}`,
      '--input',
      'environment-id=local',
      '--input',
      'title=Local try'
    ]);
    expect(local.code).toBe(0);
    const { outputs, summary } = JSON.parse(local.stdout) as {
      outputs: Record<string, string>;
      summary: string;
    };
    const runner = await runAction({
      prompt,
      'environment-id': 'local',
      'api-key': key,
      'base-url': executor.url,
      title: 'Local try'
    });
    expect(Object.keys(outputs).sort()).toEqual(Object.keys(runner.outputs).sort());
    expect(outputs).toMatchObject({ state: 'SUCCEEDED', conclusion: 'succeeded', 'error-code': '' });
    expect(outputs['session-link']).toMatch(
      new RegExp(`^${executor.url}/sessions/${outputs['run-id']}\\?token=`)
    );
    expect(summary).toContain('succeeded');
    expect(local.stderr).toMatch(/Created run \S+ in environment local\./);
    expect(local.stderr).not.toContain('::add-mask::');
    expectNoKey(local);

    const plain = await cli([
      'action',
      '--input',
      '@sim fail nope'.replace(/^/, 'prompt='),
      '--input',
      'environment-id=local'
    ]);
    expect(plain.code).toBe(1);
    expect(plain.stdout).toContain('conclusion: failed');
    expect(plain.stdout).toContain('Job summary:');
    expect(plain.stderr).toMatch(/Error: Run \S+ ended FAILED/);
    expectNoKey(plain);
  });

  it('refuses --input api-key', async () => {
    const run = await cli(['action', '--input', 'api-key=wk-on-the-command-line', '--input', 'prompt=x']);
    expect(run.code).toBe(2);
    expect(run.stderr).toContain('--input api-key is refused');
    expect(run.stderr).not.toContain('wk-on-the-command-line');
  });
});
