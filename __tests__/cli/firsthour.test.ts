// What a new user of `agent-run` tripped on in the first hour (issue 25) and what a hostile agent
// could do to their terminal (issue 28, finding 6): the bundled command line (dist/cli/index.js) as
// a real process against the contract server on a real port.
import { afterEach, describe, expect, it, jest } from '@jest/globals';
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ContractServer, type ContractServerOptions } from '../support/contract-server.js';
import { runCli } from './support.js';

// Real processes on a shared machine: wait for events, with room to spare under load.
jest.setTimeout(120_000);

const KEY = 'test-key-0123456789';
const servers: ContractServer[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map(server => server.stop()));
});

async function start(options: ContractServerOptions = {}): Promise<ContractServer> {
  const server = await new ContractServer({ apiKey: KEY, ...options }).start();
  servers.push(server);
  return server;
}
const env = (server: ContractServer) => ({ AGENT_RUN_BASE_URL: server.url, AGENT_RUN_API_KEY: KEY });

/** A stored run as the service would list it. */
function seed(server: ContractServer, id: string, fields: Record<string, unknown> = {}) {
  const now = new Date().toISOString();
  server.runs.set(id, {
    run_id: id,
    state: 'INPROGRESS',
    prompt: `Prompt of ${id}\nsecond line`,
    config: { environment_id: 'env-1' },
    agent_config: { environment_id: 'env-1' },
    created_at: now,
    updated_at: now,
    version: 1,
    ...fields
  });
}

/** Terminal controls other than newline and tab, as they would reach a terminal. */
// eslint-disable-next-line no-control-regex -- finding control characters is the point
const CONTROLS = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/;
const HOSTILE = 'owned\u001b]52;c;aGk=\u0007 \u001b]0;title\u0007\u001b[2K\u009b1A';
const SHOWN = 'owned\\x1b]52;c;aGk=\\x07 \\x1b]0;title\\x07\\x1b[2K\\x9b1A';

describe('agent-run in the first hour', () => {
  it('ends quietly when the reader closes the pipe (logs --follow | head)', async () => {
    const server = await start({ transcript: true });
    seed(server, 'r-pipe');
    server.addEvent('r-pipe', { kind: 'message', text: 'first' });
    let closed = false;
    const run = await runCli(['logs', 'r-pipe', '--follow'], {
      env: env(server),
      onStdout: (_text, child) => {
        if (closed) return;
        closed = true;
        child.stdout!.destroy();
        // Written after the pipe closed: the command meets EPIPE on its next line.
        for (let i = 0; i < 5; i++) server.addEvent('r-pipe', { kind: 'message', text: `more ${i}` });
        setTimeout(() => server.update('r-pipe', { state: 'SUCCEEDED' }), 2000).unref();
      }
    });
    expect(closed).toBe(true);
    expect(run.stderr).not.toContain('EPIPE');
    expect(run.stderr).not.toMatch(/at \S+ \(/); // no stack trace
    expect(run.code).toBe(0);
  });

  it('list pages for --limit above the service page size, with environment, duration and a title', async () => {
    const server = await start();
    for (let i = 0; i < 130; i++) seed(server, `r-${String(i).padStart(3, '0')}`);
    seed(server, 'r-ended', {
      state: 'SUCCEEDED',
      title: 'Named',
      started_at: '2026-01-01T00:00:00.000Z',
      completed_at: '2026-01-01T00:00:04.000Z'
    });
    const run = await runCli(['list', '--limit', '120'], { env: env(server) });
    expect(run.code).toBe(0);
    const limits = server.requests
      .filter(r => r.method === 'GET' && r.path.startsWith('/api/v1/agent/runs?'))
      .map(r => Number(new URL(r.path, server.url).searchParams.get('limit')));
    expect(limits).toEqual([100, 20]);
    const lines = run.stdout.trim().split('\n');
    expect(lines).toHaveLength(1 + 120);
    expect(lines[0]).toMatch(/^RUN ID\s+STATE\s+ENVIRONMENT\s+CREATED\s+DURATION\s+TITLE$/);
    expect(lines[1]).toMatch(/^r-ended\s+SUCCEEDED\s+env-1\s+\S+\s+4s\s+Named$/);
    expect(lines[2]).toMatch(/^r-129\s+INPROGRESS\s+env-1\s+\S+\s+Prompt of r-129$/);
    expect(run.stderr).toContain('More runs exist');
  });

  it('selects fields with --json FIELDS, and open prints the session page', async () => {
    const server = await start();
    seed(server, 'r-a', { session_link: 'https://sessions.example/r-a' });
    seed(server, 'r-b', { title: 'B' });
    const listed = await runCli(['list', '--json', 'run_id,title', '--limit', '2'], { env: env(server) });
    expect(listed.code).toBe(0);
    expect(JSON.parse(listed.stdout)).toEqual([
      { run_id: 'r-b', title: 'B' },
      { run_id: 'r-a', title: null }
    ]);
    const got = await runCli(['get', 'r-a', '--json=state,session_link'], { env: env(server) });
    expect(JSON.parse(got.stdout)).toEqual({
      state: 'INPROGRESS',
      session_link: 'https://sessions.example/r-a'
    });
    const opened = await runCli(['open', 'r-a', '--print'], { env: env(server) });
    expect(opened.code).toBe(0);
    expect(opened.stdout).toBe('https://sessions.example/r-a\n');
    const none = await runCli(['open', 'r-b'], { env: env(server) });
    expect(none.code).toBe(1);
    expect(none.stderr).toContain('run r-b has no session page yet (it is INPROGRESS)');
  });

  it('wait leaves the run alone on Ctrl-C and exits 130', async () => {
    const server = await start();
    seed(server, 'r-watch');
    let sent = false;
    const run = await runCli(['wait', 'r-watch'], {
      env: env(server),
      onStderr: (text, child) => {
        if (!sent && /INPROGRESS/.test(text)) {
          sent = true;
          child.kill('SIGINT');
        }
      }
    });
    expect(run.code).toBe(130);
    expect(run.stderr).toContain('run r-watch keeps running');
    expect(server.count('POST', '/api/v1/agent/runs/r-watch/cancel')).toBe(0);
    expect(server.runs.get('r-watch')!.state).toBe('INPROGRESS');
  });

  it("wait reports the run's duration, not the time it waited, and states the end once", async () => {
    const server = await start();
    seed(server, 'r-done', {
      state: 'SUCCEEDED',
      started_at: '2026-01-01T00:00:00.000Z',
      completed_at: '2026-01-01T00:00:04.000Z'
    });
    const run = await runCli(['wait', 'r-done'], { env: env(server) });
    expect(run.code).toBe(0);
    expect(run.stderr).toContain('run r-done ended SUCCEEDED in 4s.');
    expect(run.stderr).not.toContain('run r-done: SUCCEEDED');
  });

  it('refuses --config environment_id that differs from --environment', async () => {
    const server = await start();
    const run = await runCli(
      ['run', '--environment', 'local', '--config', '{"environment_id":"other"}', 'Hi'],
      {
        env: env(server)
      }
    );
    expect(run.code).toBe(2);
    expect(run.stderr).toContain(
      'config.environment_id "other" differs from --environment "local": set it in one place'
    );
    expect(server.count('POST', '/api/v1/agent/runs')).toBe(0);
  });

  it('exits 5 without a key, as the exit codes in the help promise', async () => {
    const run = await runCli(['get', 'r1'], { env: { AGENT_RUN_BASE_URL: 'http://127.0.0.1:9' } });
    expect(run.code).toBe(5);
    expect(run.stderr).toContain('no API key: set AGENT_RUN_API_KEY');
  });

  it('names AGENT_RUN_API_KEY when the service rejects the key', async () => {
    const server = await start();
    const run = await runCli(['get', 'r1'], {
      env: { ...env(server), AGENT_RUN_API_KEY: 'wrong-key-0123456789' }
    });
    expect(run.code).toBe(5);
    expect(run.stderr).toContain('the API key was rejected; check AGENT_RUN_API_KEY');
    expect(run.stderr).not.toContain('api-key secret');
  });
});

describe('agent-run action in the first hour', () => {
  it('refuses unknown inputs naming the known ones, and inputs the command sets itself', async () => {
    const server = await start();
    const typo = await runCli(['action', '--input', 'promt=typo', '--input', 'environment-id=e'], {
      env: env(server)
    });
    expect(typo.code).toBe(2);
    expect(typo.stderr).toMatch(
      /--input "promt": action\.yml has no such input; expected one of prompt, prompt-file,/
    );
    const base = await runCli(['action', '--input', 'base-url=http://elsewhere', '--input', 'prompt=x'], {
      env: env(server)
    });
    expect(base.code).toBe(2);
    expect(base.stderr).toContain('--input base-url is refused: this command sets it; use --base-url URL');
    expect(server.requests).toHaveLength(0);
  });

  it('sets the repository, ref, sha and event, reads prompt-file from the current directory, and removes its temp folder', async () => {
    const server = await start();
    server.onCreate = run => server.script(run.run_id, [[100, { state: 'SUCCEEDED' }]]);
    const dir = mkdtempSync(join(tmpdir(), 'cli-action-cwd-'));
    const temp = join(dir, 'tmp');
    mkdirSync(temp);
    const checkout = join(dir, 'checkout');
    mkdirSync(join(checkout, 'prompts'), { recursive: true });
    const git = (...args: string[]) => execFileSync('git', args, { cwd: checkout, stdio: 'ignore' });
    git('init', '-q', '-b', 'feature');
    git('remote', 'add', 'origin', 'https://github.com/octo-org/from-git.git');
    writeFileSync(join(checkout, 'prompts', 'ask.md'), 'Check {{repo}} at {{ref}}');
    git('-c', 'user.name=t', '-c', 'user.email=t@e', 'add', '.');
    git('-c', 'user.name=t', '-c', 'user.email=t@e', 'commit', '-q', '-m', 'one');
    const sha = execFileSync('git', ['rev-parse', 'HEAD'], { cwd: checkout, encoding: 'utf8' }).trim();
    const payload = join(dir, 'event.json');
    writeFileSync(payload, JSON.stringify({ inputs: {} }));

    const run = await runCli(
      [
        'action',
        '--json',
        '--input',
        'prompt-file=ask.md',
        '--input',
        'environment-id=e',
        '--event',
        'workflow_dispatch',
        '--event-path',
        payload
      ],
      { env: { ...env(server), TMPDIR: temp }, cwd: join(checkout, 'prompts') }
    );
    expect(run.code).toBe(0);
    const sent = JSON.parse(server.requests.find(r => r.method === 'POST')!.body) as { prompt: string };
    expect(sent.prompt).toContain('Check octo-org/from-git at refs/heads/feature');
    expect(readdirSync(temp)).toEqual([]);

    const flagged = await runCli(
      [
        'action',
        '--input',
        'prompt=In {{repo}}',
        '--input',
        'environment-id=e',
        '--repo',
        'alice/elsewhere',
        '--sha',
        sha
      ],
      { env: { ...env(server), TMPDIR: temp }, cwd: checkout }
    );
    expect(flagged.code).toBe(0);
    const second = server.requests.filter(r => r.method === 'POST').at(-1)!;
    expect((JSON.parse(second.body) as { prompt: string }).prompt).toContain('In alice/elsewhere');
    expect(readdirSync(temp)).toEqual([]);
  });

  it('forwards SIGTERM to the action, which cancels its run; prints the outputs and exits 130', async () => {
    const server = await start();
    server.onCreate = run => server.script(run.run_id, [[100, { state: 'INPROGRESS' }]]);
    let sent = false;
    const run = await runCli(['action', '--input', 'prompt=Long', '--input', 'environment-id=e'], {
      env: env(server),
      onStderr: (text, child) => {
        if (!sent && /INPROGRESS/.test(text)) {
          sent = true;
          child.kill('SIGTERM');
        }
      }
    });
    expect(run.code).toBe(130);
    const id = [...server.runs.keys()][0]!;
    expect(server.runs.get(id)!.state).toBe('CANCELLED');
    expect(run.stderr).toContain('Post step.');
    expect(run.stdout).toContain('Outputs:');
    expect(run.stdout).toContain(`run-id: ${id}`);
  });
});

describe("the user's terminal (issue 28, finding 6)", () => {
  it('logs, wait and action show control characters from the run instead of sending them', async () => {
    const server = await start({ transcript: true, conversation: true });
    seed(server, 'r-evil', { state: 'SUCCEEDED', status_message: HOSTILE });
    server.addEvent('r-evil', { kind: 'command', command: `echo ${HOSTILE}`, exit_code: 0, output: HOSTILE });
    server.addEvent('r-evil', { kind: 'message', text: HOSTILE });
    server.runs.get('r-evil')!.conversation = {
      conversation_id: 'r-evil',
      steps: [
        { id: 's', steps: [], messages: [{ role: 'assistant', content: [{ type: 'text', text: HOSTILE }] }] }
      ]
    };
    const logs = await runCli(['logs', 'r-evil'], { env: env(server) });
    const waited = await runCli(['wait', 'r-evil'], { env: env(server) });
    for (const run of [logs, waited]) {
      expect(run.stdout + run.stderr).not.toMatch(CONTROLS);
      expect(run.stdout + run.stderr).toContain(SHOWN);
    }
    const raw = await runCli(['logs', 'r-evil', '--raw'], { env: env(server) });
    expect(raw.stdout).toContain(HOSTILE);

    server.onCreate = run => {
      run.conversation = server.runs.get('r-evil')!.conversation;
      server.script(run.run_id, [[100, { state: 'FAILED', status_message: HOSTILE }]]);
    };
    const action = await runCli(['action', '--input', 'prompt=Go', '--input', 'environment-id=e'], {
      env: env(server)
    });
    expect(action.code).toBe(1);
    expect(action.stdout + action.stderr).not.toMatch(CONTROLS);
    expect(action.stdout + action.stderr).toContain('owned\\x1b]52;c;aGk=');
  });

  it('logs shows bidirectional controls escaped, as C0 and C1 are (issue 34)', async () => {
    const server = await start({ transcript: true, conversation: true });
    const BIDI = 'approved \u202egnp.exe\u202c \u2066isolated\u2069 \u200f\u061c';
    seed(server, 'r-bidi', { state: 'SUCCEEDED', status_message: BIDI });
    server.addEvent('r-bidi', { kind: 'command', command: `echo ${BIDI}`, exit_code: 0, output: BIDI });
    server.addEvent('r-bidi', { kind: 'message', text: BIDI });
    server.runs.get('r-bidi')!.conversation = {
      conversation_id: 'r-bidi',
      steps: [
        { id: 's', steps: [], messages: [{ role: 'assistant', content: [{ type: 'text', text: BIDI }] }] }
      ]
    };
    const logs = await runCli(['logs', 'r-bidi'], { env: env(server) });
    const json = await runCli(['get', 'r-bidi', '--json'], { env: env(server) });
    for (const run of [logs, json]) {
      expect(run.code).toBe(0);
      expect(run.stdout + run.stderr).not.toMatch(/[\u202a-\u202e\u2066-\u2069\u200e\u200f\u061c]/);
    }
    expect(logs.stdout + logs.stderr).toContain(
      'approved \\u202egnp.exe\\u202c \\u2066isolated\\u2069 \\u200f\\u061c'
    );
    expect(JSON.parse(json.stdout).status_message).toBe(BIDI);
  });
});
