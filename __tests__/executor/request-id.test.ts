// Every answer names its request in `x-request-id`, whichever way it was answered: a read from the
// read cache, a 304, a refused or rate-limited key, a route without a key, the dashboard, a session
// page, a signed download, an unknown route, a malformed URL. The ids are distinct.
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { type TestExecutor, startTestExecutor } from '../support/executor.js';

let ex: TestExecutor;
let key: string;
let runId: string;

beforeAll(async () => {
  ex = await startTestExecutor({ workers: 1, limits: { rate_limit_per_minute: 30 } });
  key = (await ex.key('team-a')).raw;
  const created = await ex.request('/api/v1/agent/runs', {
    method: 'POST',
    key,
    body: JSON.stringify({ prompt: '@sim sleep 120', config: { environment_id: 'local' } })
  });
  runId = ((await created.json()) as { run_id: string }).run_id;
});
afterAll(async () => {
  await ex.stop(1000);
});

const seen = new Set<string>();
/** The answer's status, after checking it carries a request id not seen before. */
async function idOf(response: Response): Promise<number> {
  await response.arrayBuffer();
  const id = response.headers.get('x-request-id');
  expect(id).toMatch(/^\S+-[0-9a-z]+$/);
  expect(seen.has(id!)).toBe(false);
  seen.add(id!);
  return response.status;
}

describe('x-request-id', () => {
  it('is on reads, cached reads, 304s and refused keys', async () => {
    const path = `/api/v1/agent/runs/${runId}`;
    expect(await idOf(await ex.request(path, { key }))).toBe(200);
    const again = await ex.request(path, { key });
    const etag = again.headers.get('etag')!;
    expect(await idOf(again)).toBe(200);
    expect(await idOf(await ex.request(path, { key, headers: { 'if-none-match': etag } }))).toBe(304);
    expect(await idOf(await ex.request(path))).toBe(401);
    expect(await idOf(await ex.request(path, { key: 'ar_not_a_key' }))).toBe(401);
    expect(await idOf(await ex.request('/api/v1/agent/runs/no-such-run', { key }))).toBe(404);
  });

  it('is on answers of routes without a key, the dashboard, sessions, downloads and unknown routes', async () => {
    expect(await idOf(await ex.request('/healthz'))).toBe(200);
    expect(await idOf(await ex.request('/'))).toBeLessThan(500);
    expect(await idOf(await ex.request(`/sessions/${runId}?token=wrong`))).toBe(404);
    expect(await idOf(await ex.request('/api/v1/agent/artifacts/none/download?expires=1&signature=x'))).toBe(
      404
    );
    expect(await idOf(await ex.request('/no/such/route'))).toBe(404);
    expect(await idOf(await ex.request('/api/v1/agent/runs/%ZZ', { key }))).toBe(400);
  });

  it('is on a rate-limited answer', async () => {
    const { raw } = await ex.key('team-b');
    let status = 200;
    for (let i = 0; i < 40 && status !== 429; i++)
      status = await idOf(await ex.request('/api/v1/agent/runs', { key: raw }));
    expect(status).toBe(429);
  });
});
