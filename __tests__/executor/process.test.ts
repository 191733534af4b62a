// The bundled executor as users run it: CLI commands, restarts, kill -9.
import { afterAll, describe, expect, it } from '@jest/globals';
import { spawn } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { showPath } from '../../src/executor/values/config-reader.js';
import { eventually } from '../support/eventually.js';
import {
  EXECUTOR_ENTRY,
  type ExecutorProcess,
  createKeyWithCli,
  executorCli,
  spawnExecutor,
  tempDir
} from '../support/executor.js';
import { waitForState } from '../support/wait.js';

const running: ExecutorProcess[] = [];
afterAll(async () => {
  for (const p of running) await p.stop('SIGKILL');
});

async function start(dir: string, args: string[] = []): Promise<ExecutorProcess> {
  const p = await spawnExecutor(['--data-dir', join(dir, 'data'), ...args], { cwd: dir });
  running.push(p);
  return p;
}

async function newKey(dir: string, team = 'default'): Promise<string> {
  return createKeyWithCli(dir, { kind: 'personal', name: 'ci', team });
}

const api = (p: ExecutorProcess, key: string) => ({
  create: async (prompt: string) => {
    const r = await fetch(`${p.url}/api/v1/agent/run`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ prompt, config: { environment_id: 'local' } })
    });
    expect(r.status).toBe(200);
    return ((await r.json()) as { run_id: string }).run_id;
  },
  get: async (id: string) =>
    (await (
      await fetch(`${p.url}/api/v1/agent/runs/${id}`, { headers: { authorization: `Bearer ${key}` } })
    ).json()) as Record<string, string>
});

describe('agent-executor CLI', () => {
  it('creates keys (raw value alone on the last line), lists them without raw values, revokes them', async () => {
    const dir = tempDir();
    const created = await executorCli(
      ['keys', 'create', '--kind', 'agent', '--name', 'ci-bot', '--team', 'platform', '--data-dir', 'data'],
      { cwd: dir }
    );
    expect(created.code).toBe(0);
    const lines = created.stdout.trim().split('\n');
    const raw = lines.at(-1)!;
    expect(raw).toMatch(/^arx_[0-9A-Za-z]{36}$/);
    const id = /key (key_\w+)/.exec(lines[0]!)![1]!;
    const listed = await executorCli(['keys', 'list', '--data-dir', 'data'], { cwd: dir });
    // In columns, like every table of both command lines (issue 50, friction 13).
    expect(listed.stdout).toMatch(new RegExp(`^${id} +platform +agent +ci-bot +arx_`, 'm'));
    expect(listed.stdout.split('\n')[0]).toMatch(/^ID +TEAM +KIND +NAME +HINT +CREATED +STATUS$/);
    expect(listed.stdout).not.toContain('\t');
    expect(listed.stdout).not.toContain(raw);
    expect((await executorCli(['keys', 'revoke', id, '--data-dir', 'data'], { cwd: dir })).stdout).toBe(
      `Revoked key ${id}.\n`
    );
    expect((await executorCli(['keys', 'list', '--data-dir', 'data'], { cwd: dir })).stdout).toMatch(
      / {2}revoked \d{4}-/
    );
    const again = await executorCli(['keys', 'revoke', id, '--data-dir', 'data'], { cwd: dir });
    expect(again.code).toBe(2);
    expect(again.stderr).toContain(`no active key with id "${id}"`);
  });

  it('explains bad arguments and bad config files', async () => {
    const dir = tempDir();
    const kind = await executorCli(['keys', 'create', '--kind', 'robot', '--name', 'x'], { cwd: dir });
    expect(kind.code).toBe(2);
    expect(kind.stderr).toContain('--kind "robot": expected personal or agent');
    expect((await executorCli(['launch'], { cwd: dir })).stderr).toContain(
      'unknown command "launch"; expected serve, keys or environments'
    );
    writeFileSync(
      join(dir, 'agent-executor.yaml'),
      'workers: many\nlease: 720h\nenvironments:\n  - id: web\n    timeout: soon\n    colour: red\n'
    );
    const bad = await executorCli(['environments', 'list'], { cwd: dir });
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain('workers "many": expected a whole number from 1 to 256');
    expect(bad.stderr).toContain(
      'environments[0].timeout "soon": expected a duration such as 90s, 30m or 1h30m'
    );
    expect(bad.stderr).toContain('environments[0].colour: unknown key');
    expect(bad.stderr).toContain(
      'lease "720h": expected a duration such as 90s, 30m or 1h30m, at most 24 days'
    );
  });

  // Split roles on SQLite are allowed since the data-dir lock became one per role: what is refused
  // now (a second api or worker, or all beside either) is in reliability/scale-out-sqlite.test.ts.
  it('refuses unknown roles and unsupported stores', async () => {
    const dir = tempDir();
    const bogus = await executorCli(['serve', '--role', 'boss'], { cwd: dir });
    expect(bogus.code).toBe(2);
    expect(bogus.stderr).toContain('--role "boss": expected all, api or worker');
    const store = await executorCli(['keys', 'list', '--store', 'mongodb://admin:topsecret@db/x'], {
      cwd: dir
    });
    expect(store.code).toBe(2);
    expect(store.stderr).toContain('--store "mongodb://admin:***@db/x": unsupported store');
    expect(store.stderr).not.toContain('topsecret');
  });

  it('keeps keys in the store --store names', async () => {
    const dir = tempDir();
    const path = join(dir, 'shared', 'keys.db');
    const created = await executorCli(
      ['keys', 'create', '--kind', 'agent', '--name', 'ci', '--store', `sqlite:${path}`],
      {
        cwd: dir
      }
    );
    expect(created.code).toBe(0);
    expect(readFileSync(path).length).toBeGreaterThan(0);
    const listed = await executorCli(['keys', 'list', '--store', path], { cwd: dir });
    expect(listed.stdout).toMatch(/ default +agent +ci /);
    const elsewhere = await executorCli(['keys', 'list'], { cwd: dir });
    expect(elsewhere.stdout).toContain('No keys.');
  });

  it('lists environments as an aligned table, durations as they are written in the config', async () => {
    const dir = tempDir();
    expect((await executorCli(['environments', 'list'], { cwd: dir })).stdout).toMatch(
      /^ID {5}NAME {31}SOURCE +AGENT +TIMEOUT +CONCURRENCY\nlocal {2}Local directory \(simulated agent\) {2}/
    );
    writeFileSync(
      join(dir, 'agent-executor.yaml'),
      [
        'environments:',
        '  - id: web',
        '    name: Web app',
        '    timeout: 10m',
        '  - id: nightly-build',
        '    name: Nightly',
        '    timeout: 1h2m5s',
        '    max_concurrent_runs: 12',
        ''
      ].join('\n')
    );
    const listed = await executorCli(['environments', 'list'], { cwd: dir });
    const pad = ' '.repeat(dir.length - 'SOURCE'.length);
    expect(listed.stdout).toBe(
      [
        `ID             NAME     SOURCE${pad}  AGENT      TIMEOUT  CONCURRENCY`,
        `web            Web app  ${dir}  simulated  10m      4`,
        `nightly-build  Nightly  ${dir}  simulated  1h2m5s   12`,
        ''
      ].join('\n')
    );
    expect(listed.stdout).not.toContain('\t');
  });

  it('refuses to serve, before listening, configuration every run would fail on', async () => {
    const dir = tempDir();
    writeFileSync(
      join(dir, 'agent-executor.yaml'),
      [
        'environments:',
        '  - id: web',
        '    source: missing-dir',
        '  - id: remote',
        '    source: htps://github.com/acme/web.git',
        '  - id: cli',
        '    agent: {kind: command, command: [no-such-agent-cli, -p]}',
        '    env: [AGENT_EXECUTOR_TEST_UNSET_VARIABLE]',
        ''
      ].join('\n')
    );
    const result = await executorCli(['serve', '--port', '0', '--data-dir', join(dir, 'data')], { cwd: dir });
    expect(result.code).toBe(1);
    expect(result.stdout).not.toContain('listening on');
    const lines = result.stderr.trim().split('\n');
    expect(lines[0]).toBe('agent-executor: refusing to start:');
    expect(lines.slice(1)).toEqual([
      // (The path is shown whole: the user must see which folder is meant.)
      `- environment "web": source ${showPath(join(dir, 'missing-dir'))}: no such directory; ` +
        'expected a directory, an https://, http://, ssh://, git:// or file:// URL, or user@host:path',
      '- environment "remote": source "htps://github.com/acme/web.git": htps:// is not a scheme git fetches ' +
        'from; expected a directory, an https://, http://, ssh://, git:// or file:// URL, or user@host:path',
      '- environment "cli": env "AGENT_EXECUTOR_TEST_UNSET_VARIABLE": not set in the executor\'s environment; ' +
        'expected it exported before agent-executor starts, or removed from env',
      `- environment "cli": agent.command "no-such-agent-cli": not found on the PATH runs get (${process.env.PATH}); ` +
        'expected a program on that PATH or an absolute path'
    ]);
    // An API-only node runs nothing, so it does not check: it starts on the same configuration.
    const api = await spawnExecutor(['--role', 'api', '--data-dir', join(dir, 'data')], { cwd: dir });
    expect(api.stderr()).not.toContain('refusing to start');
    expect(await api.stop()).toBe(0);
  });

  it('lists the agent kinds in its usage', async () => {
    const help = await executorCli(['--help']);
    expect(help.stdout).toMatch(/\n {2}simulated {2}deterministic, for testing workflows/);
    expect(help.stdout).toMatch(/\n {2}command {4}runs an agent CLI/);
  });

  it('has --help on every command and subcommand, a --version, and global flags before or after the command', async () => {
    const dir = tempDir();
    for (const [args, says] of [
      [['keys', '--help'], 'keys revoke ID'],
      [['keys', 'create', '--help'], 'keys create --kind personal|agent'],
      [['environments', '--help'], 'environments list'],
      [['environments', 'list', '-h'], 'environments list'],
      [['serve', '--help'], 'serve [--host HOST]'],
      [['help', 'keys'], 'keys list'],
      [['--help'], 'Commands:']
    ] as const) {
      const help = await executorCli([...args], { cwd: dir });
      expect({ args, code: help.code, stderr: help.stderr }).toEqual({ args, code: 0, stderr: '' });
      expect(help.stdout).toContain(says);
      expect(help.stdout).toContain('--data-dir DIR');
    }
    const { version } = JSON.parse(readFileSync('package.json', 'utf8')) as { version: string };
    for (const flag of ['--version', '-V']) {
      expect(await executorCli([flag], { cwd: dir })).toEqual({
        code: 0,
        stdout: `agent-executor ${version}\n`,
        stderr: ''
      });
    }
    const created = await executorCli(
      ['--data-dir', 'elsewhere', 'keys', 'create', '--kind', 'agent', '--name', 'early-flag'],
      { cwd: dir }
    );
    expect(created.code).toBe(0);
    const before = await executorCli(['--data-dir', 'elsewhere', 'keys', 'list'], { cwd: dir });
    const after = await executorCli(['keys', 'list', '--data-dir=elsewhere'], { cwd: dir });
    expect(before.stdout).toMatch(/ agent +early-flag /);
    expect(after.stdout).toBe(before.stdout);
    const unknown = await executorCli(['keys', 'rotate'], { cwd: dir });
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toContain('unknown keys command "rotate"; expected create, list or revoke');
  });

  it('says which Node it needs on a Node without node:sqlite', async () => {
    // The machine's own node (20 here) stands for an old Node; the project's scripts run on 24.
    const old = '/usr/bin/node';
    const { execFileSync } = await import('node:child_process');
    const major = Number(execFileSync(old, ['-p', 'process.versions.node.split(".")[0]']).toString());
    expect(major).toBeLessThan(22);
    const result = await executorCli(['serve'], { node: old });
    expect(result.code).toBe(1);
    expect(result.stderr.trim()).toMatch(
      /^agent-executor needs Node.js 24 \(it uses node:sqlite\); this is Node v\d+\S+ Get it one of these ways: .*`npx agent-executor \.\.\.` runs it on the Node 24 .*`actions\/setup-node` with `node-version: 24`/
    );
    expect(result.stderr.trim().split('\n')).toHaveLength(1);
  });
});

describe('logs', () => {
  const STOPPED_TEXT = /^\d\d:\d\d:\d\d\.\d{3}Z INFO {2}stopped signal=SIGTERM\r?$/m;

  it('are JSON lines when stderr is not a terminal, and end with a "stopped" record on a graceful stop', async () => {
    const dir = tempDir();
    const p = await start(dir);
    expect(await p.stop('SIGTERM')).toBe(0);
    const records = p
      .stderr()
      .trim()
      .split('\n')
      .map(line => JSON.parse(line) as { msg: string; signal?: string });
    expect(records.at(-1)).toMatchObject({ msg: 'stopped', signal: 'SIGTERM' });
  });

  it('are text lines with log_format: text', async () => {
    const dir = tempDir();
    writeFileSync(join(dir, 'agent-executor.yaml'), 'log_format: text\n');
    const p = await start(dir);
    expect(await p.stop('SIGTERM')).toBe(0);
    expect(p.stderr()).toMatch(/^\d\d:\d\d:\d\d\.\d{3}Z INFO {2}store opened store=\S+ role=all$/m);
    expect(p.stderr()).toMatch(STOPPED_TEXT);
    expect(p.stderr()).not.toContain('{"level"');
  });

  it('are text lines on a terminal', async () => {
    // `script` gives the executor a pseudo-terminal as stdout and stderr, as a user's shell does.
    const dir = tempDir();
    const command = [process.execPath, EXECUTOR_ENTRY, 'serve', '--port', '0', '--data-dir', 'data']
      .map(arg => `'${arg}'`)
      .join(' ');
    const child = spawn('script', ['-qfec', command, '/dev/null'], {
      cwd: dir,
      stdio: ['pipe', 'pipe', 'pipe']
    });
    let output = '';
    child.stdout.on('data', chunk => (output += chunk));
    const exited = new Promise(resolveExit => child.on('exit', resolveExit));
    await eventually(() => output.includes('listening on'), { what: 'listening', timeoutMs: 30_000 });
    process.kill(Number(readFileSync(join(dir, 'data', 'executor.pid'), 'utf8')), 'SIGTERM');
    await exited;
    expect(output).toMatch(STOPPED_TEXT);
    expect(output).not.toContain('{"level"');
  });
});

describe('restarts', () => {
  it('keeps runs across a clean stop and start, and refuses a second server on one data dir', async () => {
    const dir = tempDir();
    const key = await newKey(dir);
    const first = await start(dir);
    const ids = [await api(first, key).create('@sim say one'), await api(first, key).create('@sim say two')];
    await waitForState({ on: first, key, id: ids[1]! }, ['SUCCEEDED']);
    const second = spawnExecutor(['--data-dir', join(dir, 'data')], { cwd: dir });
    await expect(second).rejects.toThrow(/another executor \(pid \d+\) is serving data dir/);
    expect(await first.stop('SIGTERM')).toBe(0);
    const again = await start(dir);
    for (const id of ids) expect((await api(again, key).get(id)).state).toBe('SUCCEEDED');
    await again.stop();
  });

  it('after kill -9 during a run: that run is FAILED executor_restarted, queued ones still run, none lost', async () => {
    const dir = tempDir();
    writeFileSync(join(dir, 'agent-executor.yaml'), 'workers: 1\n');
    const key = await newKey(dir);
    const first = await start(dir);
    const running = await api(first, key).create('@sim sleep 30');
    await waitForState({ on: first, key, id: running }, ['INPROGRESS']);
    const queued = [
      await api(first, key).create('@sim say later 1'),
      await api(first, key).create('@sim say later 2')
    ];
    await first.stop('SIGKILL');
    const again = await start(dir);
    const failed = await api(again, key).get(running);
    expect(failed).toMatchObject({ state: 'FAILED', error_code: 'executor_restarted' });
    expect(failed.status_message).toMatch(
      /executor restarted while this run was in progress; it was not re-run/
    );
    for (const id of queued)
      expect((await waitForState({ on: again, key, id }, ['SUCCEEDED'])).state).toBe('SUCCEEDED');
    const transcript = (await (
      await fetch(`${again.url}/api/v1/agent/runs/${running}/transcript`, {
        headers: { authorization: `Bearer ${key}` }
      })
    ).json()) as { events: { kind: string; state?: string }[] };
    expect(transcript.events.filter(e => e.kind === 'state').map(e => e.state)).toEqual([
      'QUEUED',
      'INPROGRESS',
      'FAILED'
    ]);
    expect(readFileSync(join(dir, 'data', 'executor.pid'), 'utf8').trim()).toBe(String(again.child.pid));
    await again.stop();
  });
});
