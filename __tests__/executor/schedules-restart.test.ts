// A restart across due times, with the executor's own scheduler: schedules are made on one
// executor, it stops, due times pass (a moved clock), and a new executor on the same store starts
// the missed time once (catch_up) or skips it (catch_up: false), by itself, on its own ticks.

import { expect, it } from '@jest/globals';
import { type Executor, startExecutor } from '../../src/executor/node/serve.js';
import type { Stores } from '../../src/executor/store/types.js';
import { eventually } from '../support/eventually.js';
import { type TestExecutor, startTestExecutor } from '../support/executor.js';

let first: TestExecutor;
let key: string;

async function api(on: { url: string }, path: string, body?: unknown): Promise<Record<string, unknown>> {
  const response = await fetch(on.url + path, {
    method: body === undefined ? 'GET' : 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body)
  });
  expect(response.status).toBe(200);
  return (await response.json()) as Record<string, unknown>;
}

async function restartedAt(nowMs: number): Promise<Executor> {
  const store: Stores = await first.openStore();
  const node = await startExecutor(
    { ...first.config, port: 0 },
    { store, checkEnvironments: false, now: () => nowMs }
  );
  return node;
}

it('a new executor on the store starts a missed due time once, or skips it with catch_up: false', async () => {
  first = await startTestExecutor();
  key = (await first.key('team-restart')).raw;
  const schedule = (body: Record<string, unknown>) =>
    api(first, '/api/v1/agent/schedules', {
      cron_schedule: '* * * * *',
      prompt: '@sim say caught up',
      agent_config: { environment_id: 'local' },
      ...body
    });
  const catchUp = await schedule({ name: 'catch up' });
  const skip = await schedule({ name: 'skip', catch_up: false });
  const due = Date.parse((catchUp.history as { next_run: string }).next_run);
  await first.stop(500);

  // Every node was down for five due times.
  const runsOf = async (on: { url: string }, id: unknown) =>
    ((await api(on, `/api/v1/agent/runs?schedule_id=${String(id)}`)).runs as { run_id: string }[]).length;
  // Stopped here, not in an afterAll: the test store's PostgreSQL server goes when the file is done.
  const worker = await restartedAt(due + 5 * 60_000 + 1000);
  try {
    await eventually(async () => (await runsOf(worker, catchUp.id)) === 1, {
      what: 'the caught-up run',
      timeoutMs: 30_000
    });
    const skipped = await eventually(
      async () => {
        const record = await api(worker, `/api/v1/agent/schedules/${String(skip.id)}`);
        return record.last_spawn_error ? record : undefined;
      },
      { what: 'the skipped fire recorded', timeoutMs: 30_000 }
    );
    expect(skipped.last_spawn_error).toMatch(/passed while no executor ran; skipped \(catch_up: false\)/);
    expect(await runsOf(worker, skip.id)).toBe(0);
    // later ticks of the same clock start nothing more
    await worker.scheduler.tick();
    expect(await runsOf(worker, catchUp.id)).toBe(1);
  } finally {
    await worker.stop(500);
  }
}, 120_000);
