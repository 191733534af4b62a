// Reads and list pages may be answered from memory while the store is unchanged (read-cache.ts):
// every write, by this process or by another connection on the same store, must show at once —
// a revoked key is refused, a cancelled run reads CANCELLED, a new run is listed. On PostgreSQL
// nothing is cached, and the same answers must come out.
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import type { Stores } from '../../src/executor/store/types.js';
import { type TestExecutor, startTestExecutor } from '../support/executor.js';

let ex: TestExecutor;
let key: string;
let other: Stores;

beforeAll(async () => {
  ex = await startTestExecutor({ workers: 1 });
  key = (await ex.key('team-a')).raw;
  other = await ex.openStore();
});
afterAll(async () => {
  await other.close();
  await ex.stop(1000);
});

const get = (path: string, k = key, headers: Record<string, string> = {}) =>
  ex.request(path, { key: k, headers });
/** A run that stays unfinished for the test's length (QUEUED, then INPROGRESS). */
const create = async (title: string) =>
  (
    (await (
      await ex.request('/api/v1/agent/runs', {
        method: 'POST',
        key,
        body: JSON.stringify({ title, prompt: '@sim sleep 120', config: { environment_id: 'local' } })
      })
    ).json()) as { run_id: string }
  ).run_id;
/** Reads the same thing a few times, as a poller does, so the answer is cached when it can be. */
const polled = async (path: string, k = key) => {
  let last: Response | undefined;
  for (let i = 0; i < 3; i++) {
    last = await get(path, k);
    expect(last.status).toBe(200);
  }
  return (await last!.json()) as Record<string, unknown>;
};

describe('answers kept between writes', () => {
  it('refuses a key revoked by another connection right after its reads were answered', async () => {
    const { raw, id } = await ex.key('team-a');
    await polled('/api/v1/agent/runs', raw);
    await other.accounts.revokeKey(id, new Date().toISOString());
    const refused = await get('/api/v1/agent/runs', raw);
    expect(refused.status).toBe(401);
    expect(((await refused.json()) as { error_code: string }).error_code).toBe('unauthenticated');
  });

  it('shows a cancel made here and one made by another connection on the next read and list', async () => {
    const here = await create('cancelled here');
    const there = await create('cancelled there');
    expect((await polled(`/api/v1/agent/runs/${here}`)).state).not.toBe('CANCELLED');
    const before = (await get(`/api/v1/agent/runs/${here}`)).headers.get('etag');
    await polled('/api/v1/agent/runs?limit=5');
    const cancel = await ex.request(`/api/v1/agent/runs/${here}/cancel`, { method: 'POST', key });
    expect(cancel.status).toBe(200);
    const read = await get(`/api/v1/agent/runs/${here}`);
    expect(((await read.json()) as { state: string }).state).toBe('CANCELLED');
    expect(read.headers.get('etag')).not.toBe(before);
    // The old ETag no longer matches: a conditional read gets the new record, not a 304.
    expect((await get(`/api/v1/agent/runs/${here}`, key, { 'if-none-match': before! })).status).toBe(200);

    expect((await polled(`/api/v1/agent/runs/${there}`)).state).not.toBe('CANCELLED');
    expect((await other.runs.cancelRun('team-a', there, new Date().toISOString())).kind).toBe('cancelled');
    expect(((await (await get(`/api/v1/agent/runs/${there}`)).json()) as { state: string }).state).toBe(
      'CANCELLED'
    );
    const page = (await (await get('/api/v1/agent/runs?limit=5')).json()) as {
      runs: { run_id: string; state: string }[];
    };
    expect(page.runs.find(run => run.run_id === there)?.state).toBe('CANCELLED');
    expect(page.runs.find(run => run.run_id === here)?.state).toBe('CANCELLED');
  });

  it('lists a run created by another request right after the page was answered', async () => {
    const before = (await polled('/api/v1/agent/runs?limit=100')) as { runs: unknown[] };
    const id = await create('a new one');
    const after = (await (await get('/api/v1/agent/runs?limit=100')).json()) as {
      runs: { run_id: string }[];
    };
    expect(after.runs).toHaveLength(before.runs.length + 1);
    expect(after.runs[0]!.run_id).toBe(id);
  });

  it("never answers one team's cached read to another team's key", async () => {
    const id = await create('team a only');
    await polled(`/api/v1/agent/runs/${id}`);
    const { raw } = await ex.key('team-b');
    expect((await get(`/api/v1/agent/runs/${id}`, raw)).status).toBe(404);
    const page = (await (await get('/api/v1/agent/runs?limit=100', raw)).json()) as { runs: unknown[] };
    expect(page.runs).toEqual([]);
  });

  it("shows another connection's cancel to every read sent after it, while many reads share each turn", async () => {
    const id = await create('read by many at once');
    await polled(`/api/v1/agent/runs/${id}`);
    let cancelled = false;
    const stale: string[] = [];
    let afterCancel = 0;
    // Twenty pollers keep requests arriving together, so each turn of the server's loop answers
    // several; a read sent once the cancel was acknowledged must say CANCELLED.
    const poller = async () => {
      while (afterCancel < 200) {
        const sentAfter = cancelled;
        const run = (await (await get(`/api/v1/agent/runs/${id}`)).json()) as { state: string };
        if (sentAfter) {
          afterCancel++;
          if (run.state !== 'CANCELLED') stale.push(run.state);
        }
      }
    };
    const pollers = Array.from({ length: 20 }, poller);
    await polled(`/api/v1/agent/runs/${id}`);
    expect((await other.runs.cancelRun('team-a', id, new Date().toISOString())).kind).toBe('cancelled');
    cancelled = true;
    await Promise.all(pollers);
    expect(stale).toEqual([]);
  });
});
