// Limits answered with clear problem bodies: rate limit, full queue, shutdown.
import { afterEach, describe, expect, it } from '@jest/globals';
import { eventually } from '../support/eventually.js';
import { type TestExecutor, startTestExecutor } from '../support/executor.js';

let ex: TestExecutor | undefined;
afterEach(() => ex?.stop(500));

const body = (prompt: string) => JSON.stringify({ prompt, config: { environment_id: 'local' } });

describe('limits', () => {
  it('429 rate_limited with Retry-After once a key spends its requests, other keys unaffected', async () => {
    ex = await startTestExecutor({ limits: { rate_limit_per_minute: 5 } });
    const { raw } = await ex.key();
    const { raw: other } = await ex.key();
    const statuses: number[] = [];
    for (let i = 0; i < 6; i++) statuses.push((await ex.request('/api/v1/agent/runs', { key: raw })).status);
    expect(statuses).toEqual([200, 200, 200, 200, 200, 429]);
    const limited = await ex.request('/api/v1/agent/runs', { key: raw });
    expect(limited.status).toBe(429);
    expect(Number(limited.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    expect(await limited.json()).toMatchObject({
      error_code: 'rate_limited',
      retryable: true,
      detail: expect.stringMatching(/5 requests a minute/)
    });
    expect((await ex.request('/api/v1/agent/runs', { key: other })).status).toBe(200);
  });

  it('429 resource_unavailable when the queue is full', async () => {
    ex = await startTestExecutor({ workers: 1, limits: { max_queued_runs: 2 } });
    const { raw } = await ex.key();
    const create = () =>
      ex!.request('/api/v1/agent/run', { method: 'POST', key: raw, body: body('@sim sleep 30') });
    expect((await create()).status).toBe(200);
    await eventually(() => ex!.pool.runningCount > 0, {
      what: 'a running run',
      timeoutMs: 1000,
      intervalMs: 20
    }).catch(() => undefined);
    expect((await create()).status).toBe(200);
    expect((await create()).status).toBe(200);
    const full = await create();
    expect(full.status).toBe(429);
    expect(full.headers.get('retry-after')).toBe('10');
    expect(await full.json()).toMatchObject({
      error_code: 'resource_unavailable',
      detail: 'the queue holds 2 runs, its limit; retry later'
    });
  });

  it('answers 503 to new runs while shutting down, and lets running runs finish in the grace period', async () => {
    ex = await startTestExecutor();
    const { raw } = await ex.key();
    const created = (await (
      await ex.request('/api/v1/agent/run', { method: 'POST', key: raw, body: body('@sim sleep 0.5') })
    ).json()) as { run_id: string };
    await eventually(() => ex!.pool.runningCount > 0, {
      what: 'a running run',
      timeoutMs: 1000,
      intervalMs: 20
    }).catch(() => undefined);
    const stopping = ex.stop(5000);
    const refused = await ex.request('/api/v1/agent/run', { method: 'POST', key: raw, body: body('late') });
    expect(refused.status).toBe(503);
    expect(await refused.json()).toMatchObject({ error_code: 'shutting_down' });
    expect((await ex.request('/readyz')).status).toBe(503);
    await stopping;
    const store = await ex.openStore();
    const run = await store.runs.getRunAnyTeam(created.run_id);
    await store.close();
    expect(run?.state).toBe('SUCCEEDED');
    ex = undefined;
  });
});
