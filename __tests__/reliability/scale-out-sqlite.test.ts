// Split roles on one machine: `serve --role api` and `serve --role worker` as two processes (the
// bundled executor) on ONE data dir's SQLite file. What crosses between them is only the file:
// creates reach the worker, cancels reach the running agent, held reads wake, restarts of the API
// process leave the worker's runs alone, and a key revoked by the CLI is refused at once.
import { afterAll, describe, expect, it } from '@jest/globals';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { type ExecutorProcess, executorCli, spawnExecutor, tempDir } from '../support/executor.js';
import { waitForRead } from '../support/wait.js';

const started: ExecutorProcess[] = [];
afterAll(async () => {
  for (const node of started) await node.stop('SIGKILL');
});

interface Machine {
  dir: string;
  config: string;
  key: string;
  keyId: string;
  api: ExecutorProcess;
  worker: ExecutorProcess;
}

/** One data dir; the environment's agent sleeps as many seconds as the prompt says. */
async function machine(): Promise<Machine> {
  const dir = tempDir('split-sqlite-');
  mkdirSync(join(dir, 'source'));
  const config = join(dir, 'agent-executor.yaml');
  writeFileSync(
    config,
    [
      'workers: 1',
      'lease: 3s',
      'log_level: warn',
      'limits:',
      '  rate_limit_per_minute: 0',
      'environments:',
      '  - id: sh',
      '    source: source',
      '    agent:',
      '      kind: command',
      '      prompt: arg',
      `      command: [sh, -c, 'sleep "$1"', sh, '{prompt}']`
    ].join('\n')
  );
  const created = await executorCli(
    ['keys', 'create', '--kind', 'agent', '--name', 'split', '--config', config],
    {
      cwd: dir
    }
  );
  expect(created.code).toBe(0);
  const key = created.stdout.trim().split('\n').at(-1)!;
  const listed = await executorCli(['keys', 'list', '--config', config], { cwd: dir });
  const keyId = /key_[0-9A-Za-z]+/.exec(listed.stdout)![0];
  const api = await serve(dir, config, 'api');
  const worker = await serve(dir, config, 'worker');
  return { dir, config, key, keyId, api, worker };
}

async function serve(dir: string, config: string, role: string): Promise<ExecutorProcess> {
  const node = await spawnExecutor(['--config', config, '--role', role], { cwd: dir });
  started.push(node);
  return node;
}

function headers(m: Machine, extra: Record<string, string> = {}) {
  return { authorization: `Bearer ${m.key}`, 'content-type': 'application/json', ...extra };
}

async function create(m: Machine, seconds: number): Promise<string> {
  const response = await fetch(`${m.api.url}/api/v1/agent/run`, {
    method: 'POST',
    headers: headers(m),
    body: JSON.stringify({ prompt: String(seconds), config: { environment_id: 'sh' } })
  });
  expect(response.status).toBe(200);
  return ((await response.json()) as { run_id: string }).run_id;
}

async function read(m: Machine, runId: string) {
  const response = await fetch(`${m.api.url}/api/v1/agent/runs/${runId}`, { headers: headers(m) });
  return {
    etag: response.headers.get('etag')!,
    run: (await response.json()) as { state: string; error_code?: string; completed_at: string }
  };
}

const until = (m: Machine, id: string, states?: readonly string[], timeoutMs?: number) =>
  waitForRead({ on: m.api, key: m.key, id }, states, { timeoutMs });

async function stop(m: Machine): Promise<void> {
  await Promise.all([m.api.stop(), m.worker.stop()]);
}

describe('serve --role api and --role worker on one SQLite data dir', () => {
  it('runs runs to SUCCEEDED, cancels a run on the worker, wakes held reads within 500 ms', async () => {
    const m = await machine();
    // The worker serves no run API; the API runs nothing itself.
    expect((await fetch(`${m.worker.url}/api/v1/agent/runs`, { headers: headers(m) })).status).toBe(404);
    const quick = await Promise.all([create(m, 0), create(m, 0), create(m, 0)]);
    for (const id of quick) expect((await until(m, id, ['SUCCEEDED'])).run.state).toBe('SUCCEEDED');

    const long = await create(m, 30);
    await until(m, long, ['INPROGRESS']);
    const cancelled = await fetch(`${m.api.url}/api/v1/agent/runs/${long}/cancel`, {
      method: 'POST',
      headers: headers(m)
    });
    expect(cancelled.status).toBeLessThan(300);
    // The worker process hears the cancel through the file and stops the agent: the run stays
    // CANCELLED (a finish by the worker would not overwrite it), and its one worker slot is free
    // for the next run long before the 30 s agent would have ended.
    expect((await until(m, long, ['CANCELLED'])).run.error_code).toBe('cancelled');
    const after = await create(m, 0);
    expect((await until(m, after, ['SUCCEEDED'], 25_000)).run.state).toBe('SUCCEEDED');

    const lags: number[] = [];
    for (let i = 0; i < 3; i++) {
      const id = await create(m, 1);
      const { etag } = await until(m, id, ['INPROGRESS']);
      const held = await fetch(`${m.api.url}/api/v1/agent/runs/${id}`, {
        headers: headers(m, { 'if-none-match': etag, prefer: 'wait=60' })
      });
      const answeredAt = Date.now();
      const run = (await held.json()) as { state: string; completed_at: string };
      expect(held.status).toBe(200);
      expect(run.state).toBe('SUCCEEDED');
      lags.push(answeredAt - Date.parse(run.completed_at));
    }
    console.log(`split roles on SQLite: held reads answered ${lags.join(', ')} ms after the worker finished`);
    // Each held read answered with the finished run (200, not the 304 of a wait run out): the worker
    // process's change reached the API process. The lags above are measurements, not a bound.
    await stop(m);
  }, 120_000);

  it('a restarted API process leaves the worker’s running run alone; a second --role api is refused', async () => {
    const m = await machine();
    const second = spawnExecutor(['--config', m.config, '--role', 'api'], { cwd: m.dir });
    await expect(second).rejects.toThrow(
      /another executor \(pid \d+\) is serving data dir .* with --role api; a data dir takes one --role all, or one --role api beside one --role worker/
    );
    const all = spawnExecutor(['--config', m.config], { cwd: m.dir });
    await expect(all).rejects.toThrow(/another executor \(pid \d+\) is serving data dir/);

    const running = await create(m, 4);
    await until(m, running, ['INPROGRESS']);
    expect(await m.api.stop('SIGKILL')).toBe(null);
    m.api = await serve(m.dir, m.config, 'api');
    expect((await read(m, running)).run.state).toBe('INPROGRESS');
    expect((await until(m, running)).run.state).toBe('SUCCEEDED');
    await stop(m);
  }, 120_000);

  it('a key revoked by the CLI on the same data dir is refused on the very next request', async () => {
    const m = await machine();
    const id = await create(m, 0);
    // Warm whatever the API keeps in memory.
    for (let i = 0; i < 5; i++) expect((await read(m, id)).run.state).toBeDefined();
    const revoked = await executorCli(['keys', 'revoke', m.keyId, '--config', m.config], { cwd: m.dir });
    expect(revoked.code).toBe(0);
    const next = await fetch(`${m.api.url}/api/v1/agent/runs/${id}`, { headers: headers(m) });
    expect(next.status).toBe(401);
    await stop(m);
  }, 120_000);
});
