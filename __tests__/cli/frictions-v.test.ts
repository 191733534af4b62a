// What a new user tripped on in the first hour (issue 50, frictions 3, 4, 13 and 15), through the
// command lines' source entries (their exported main) so the test sees this tree, not the last bundle:
// `run --wait` is the default said aloud; a mistyped command gets the nearest one; `keys list` lines
// up in columns like every other table; a count of one takes the singular noun.
import { afterAll, beforeAll, describe, expect, it, jest } from '@jest/globals';
import { rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { PassThrough } from 'node:stream';
import { main } from '../../src/cli/main.js';
import { counted } from '../../src/common/plural.js';
import { simulatedAgent } from '../../src/executor/agents/simulated.js';
import type { AgentContext } from '../../src/executor/agents/types.js';
import { main as executorMain } from '../../src/executor/node/cli.js';
import { type TestExecutor, startTestExecutor, tempDir } from '../support/executor.js';

jest.setTimeout(120_000);

interface Ran {
  code: number;
  stdout: string;
  stderr: string;
}

let ex: TestExecutor;
let env: NodeJS.ProcessEnv;
const dirs: string[] = [];

beforeAll(async () => {
  ex = await startTestExecutor();
  env = { AGENT_RUN_BASE_URL: ex.url, AGENT_RUN_API_KEY: (await ex.key('team-frictions-v')).raw };
});
afterAll(async () => {
  await ex.stop(500);
  rmSync(dirname(ex.dataDir), { recursive: true, force: true });
  for (const made of dirs) rmSync(made, { recursive: true, force: true });
});

/** `agent-run ARGV`, its output collected. */
async function agentRun(...argv: string[]): Promise<Ran> {
  const stdout = new PassThrough();
  const stderr = new PassThrough();
  let out = '';
  let err = '';
  stdout.on('data', chunk => (out += String(chunk)));
  stderr.on('data', chunk => (err += String(chunk)));
  const code = await main(argv, { stdout, stderr, env });
  return { code, stdout: out, stderr: err };
}

/** `agent-executor ARGV`, what it writes with console.log and console.error collected. */
async function agentExecutor(...argv: string[]): Promise<Ran> {
  const out: string[] = [];
  const err: string[] = [];
  const log = jest.spyOn(console, 'log').mockImplementation((...parts) => void out.push(parts.join(' ')));
  const error = jest.spyOn(console, 'error').mockImplementation((...parts) => void err.push(parts.join(' ')));
  try {
    const code = await executorMain(argv);
    return {
      code,
      stdout: out.map(line => `${line}\n`).join(''),
      stderr: err.map(line => `${line}\n`).join('')
    };
  } finally {
    log.mockRestore();
    error.mockRestore();
  }
}

describe('agent-run run --wait (friction 3)', () => {
  it('is accepted and waits for the answer, as run does without it', async () => {
    const run = await agentRun('run', '--wait', '--environment', 'local', '@sim result waited for');
    expect(run.stderr).not.toContain('Unknown option');
    expect(run.stdout).toBe('waited for\n');
    expect(run.code).toBe(0);
  });

  it('is refused beside --no-wait, naming the default', async () => {
    const run = await agentRun('run', '--wait', '--no-wait', '--environment', 'local', 'hello');
    expect(run.code).toBe(2);
    expect(run.stderr).toContain('--wait and --no-wait: run waits unless told --no-wait; give one of them');
  });

  it('is listed in run --help', async () => {
    const help = await agentRun('run', '--help');
    expect(help.stdout).toMatch(
      /^ {2}--wait +wait for the run to end and print its answer \(the default\)$/m
    );
  });
});

describe('a mistyped command (friction 4)', () => {
  it.each([
    ['lsit', 'list'],
    ['rnu', 'run'],
    ['cancle', 'cancel']
  ])('agent-run %s names the command meant, %s', async (typed, meant) => {
    const run = await agentRun(typed);
    expect(run.code).toBe(2);
    expect(run.stderr).toContain(`unknown command "${typed}"; expected one of run, get, list`);
    expect(run.stderr).toMatch(new RegExp(`; did you mean ${meant}\\?\\n$`));
  });

  it('agent-run suggests nothing for a word near no command', async () => {
    const run = await agentRun('deploy');
    expect(run.code).toBe(2);
    expect(run.stderr).not.toContain('did you mean');
  });

  it.each([
    [['srve'], 'unknown command "srve"; expected serve, keys or environments; did you mean serve?'],
    [['kyes', 'list'], 'unknown command "kyes"; expected serve, keys or environments; did you mean keys?'],
    [
      ['help', 'environmnts'],
      'help "environmnts": expected serve, keys or environments; did you mean environments?'
    ],
    [['keys', 'lsit'], 'unknown keys command "lsit"; expected create, list or revoke; did you mean list?'],
    [['environments', 'lits'], 'unknown environments command "lits"; expected list; did you mean list?']
  ])('agent-executor %j names the command meant', async (argv, message) => {
    const cwd = tempDir('frictions-v-');
    dirs.push(cwd);
    const run = await agentExecutor(...argv, '--data-dir', join(cwd, 'data'));
    expect(run.code).toBe(2);
    expect(run.stderr).toContain(`agent-executor: ${message}\n`);
  });
});

describe('agent-executor keys list (friction 13)', () => {
  it('lines its columns up, without tabs, like environments list', async () => {
    const cwd = tempDir('frictions-v-');
    dirs.push(cwd);
    const dataDir = join(cwd, 'data');
    const create = (kind: string, name: string, team: string) =>
      agentExecutor('keys', 'create', '--kind', kind, '--name', name, '--team', team, '--data-dir', dataDir);
    expect((await create('agent', 'ci', 'platform')).code).toBe(0);
    expect((await create('personal', 'a-longer-name', 'web')).code).toBe(0);
    const listed = await agentExecutor('keys', 'list', '--data-dir', dataDir);
    expect(listed.code).toBe(0);
    expect(listed.stdout).not.toContain('\t');
    const lines = listed.stdout.trimEnd().split('\n');
    expect(lines).toHaveLength(3);
    // Every column starts where its header does, on every line.
    const starts = ['TEAM', 'KIND', 'NAME', 'HINT', 'CREATED', 'STATUS'].map(name => lines[0]!.indexOf(name));
    expect(lines[0]).toMatch(/^ID +TEAM +KIND +NAME +HINT +CREATED +STATUS$/);
    for (const line of lines.slice(1)) {
      for (const start of starts) expect(line[start - 1]).toBe(' ');
      for (const start of starts) expect(line[start]).not.toBe(' ');
    }
    expect(lines[1]!.slice(starts[2], starts[3]).trimEnd()).toMatch(/^(ci|a-longer-name)$/);
    expect(listed.stdout).toMatch(/ active\n.* active\n$/);
  });
});

describe('counts (friction 15)', () => {
  it('say "1 child run" and "2 child runs"', () => {
    expect(counted(1, 'child run')).toBe('1 child run');
    expect(counted(2, 'child run')).toBe('2 child runs');
    expect(counted(0, 'argument')).toBe('0 arguments');
  });

  it("a gather of one child is 'Gathered 1 child run:'", async () => {
    const events: { kind: string; text?: unknown }[] = [];
    // The child client's two calls (create, then gather) answered as the executor answers them.
    const processes: AgentContext['processes'] = {
      home: undefined,
      run: async (_program, _args, options) => {
        const ask = JSON.parse(options.stdin ?? '{}') as { action: string };
        const answer =
          ask.action === 'create'
            ? { run_id: 'run_child1' }
            : [{ run_id: 'run_child1', state: 'SUCCEEDED', result: 'alpha' }];
        await options.onStdout?.(Buffer.from(JSON.stringify(answer)));
        return { exitCode: 0, signal: null, durationMs: 1 };
      },
      shell: async () => ({ exitCode: 0, signal: null, output: '', durationMs: 1 })
    };
    const outcome = await simulatedAgent.run({
      runId: 'run_parent',
      environmentId: 'local',
      prompt: '@sim child @sim result alpha\n@sim gather',
      workspace: '/nonexistent',
      agent: { kind: 'simulated' },
      env: { AGENT_RUN_API_KEY: 'token', AGENT_RUN_BASE_URL: 'http://executor' },
      mode: 'orchestrate',
      signal: new AbortController().signal,
      record: async (kind, data) => void events.push({ kind, ...data }),
      processes
    });
    expect(outcome).toMatchObject({ state: 'SUCCEEDED' });
    const result = events.find(event => event.kind === 'result');
    expect(result?.text).toBe('Gathered 1 child run:\n- child 1 (run_child1) SUCCEEDED: alpha');
  });

  it('a fan-out of one item says "Fan-out: 1 run" and "1 of 1 run succeeded"', async () => {
    const cwd = tempDir('frictions-v-');
    dirs.push(cwd);
    const file = join(cwd, 'one.yml');
    writeFileSync(file, '- "@sim result only one"\n');
    const run = await agentRun('run', '--environment', 'local', '--fan-out', file);
    expect(run.code).toBe(0);
    expect(run.stderr).toContain('Fan-out: 1 run, at most 4 at once (--require all).');
    expect(run.stderr).toContain('Fan-out succeeded: 1 of 1 run succeeded (--require all)');
  });

  it('agent-run followup with one argument says "got 1 argument"', async () => {
    const run = await agentRun('followup', 'run_x');
    expect(run.code).toBe(2);
    expect(run.stderr).toContain('expected ID and MESSAGE, got 1 argument; quote a message with spaces');
  });
});
