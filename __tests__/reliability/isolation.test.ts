// Team isolation, generated: many teams, keys and runs, and random (key, run, operation) triples.
// A key reads, lists, cancels and reads the transcript of its own team's runs, and of no other
// team's: direct access answers 404 exactly like a run that does not exist, lists never show
// them, and a cancel from another team changes nothing. A revoked key is refused at once.
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { randomUUID } from 'node:crypto';
import fc from 'fast-check';
import { type TestExecutor, startTestExecutor } from '../support/executor.js';

const SCALE = Number(process.env.RELIABILITY_SCALE ?? 1);
const TEAMS = 8;
const KEYS_PER_TEAM = 3;
const RUNS_PER_TEAM = 6;
const CASES = Math.round(1500 * SCALE);

interface Key {
  raw: string;
  id: string;
  team: string;
}
interface Run {
  id: string;
  team: string;
}

let ex: TestExecutor;
const keys: Key[] = [];
const runs: Run[] = [];
/** Runs a same-team key has cancelled: the only way a run's state may become CANCELLED. */
const cancelled = new Set<string>();

const request = (path: string, key: Key, method = 'GET') =>
  ex.request(path, { key: key.raw, method, ...(method === 'POST' ? { body: '' } : {}) });

beforeAll(async () => {
  ex = await startTestExecutor({ workers: 2, limits: { rate_limit_per_minute: 0 } });
  for (let t = 0; t < TEAMS; t++) {
    const team = `team-${t}`;
    for (let k = 0; k < KEYS_PER_TEAM; k++) {
      const { raw, id } = await ex.key(team, k % 2 === 0 ? 'personal' : 'agent', `${team}-key-${k}`);
      keys.push({ raw, id, team });
    }
    for (let r = 0; r < RUNS_PER_TEAM; r++) {
      // Long sleeps: every run stays QUEUED or INPROGRESS (so cancellable) unless a test cancels it.
      const response = await ex.request('/api/v1/agent/run', {
        method: 'POST',
        key: keys[t * KEYS_PER_TEAM + (r % KEYS_PER_TEAM)]!.raw,
        body: JSON.stringify({
          prompt: `@sim sleep 600\nrun ${r} of ${team}`,
          config: { environment_id: 'local' }
        })
      });
      expect(response.status).toBe(200);
      runs.push({ id: ((await response.json()) as { run_id: string }).run_id, team });
    }
  }
});
afterAll(() => ex.stop(500));

/** The 404 for a run that does not exist, with the id taken out: what another team's run must look like. */
async function notFoundShape(response: Response, id: string) {
  expect(response.status).toBe(404);
  expect(response.headers.get('content-type')).toMatch(/^application\/problem\+json/);
  const body = (await response.json()) as Record<string, unknown>;
  const { request_id: _requestId, ...rest } = body;
  return JSON.parse(JSON.stringify(rest).replaceAll(id, 'ID')) as Record<string, unknown>;
}

async function listAll(key: Key, limit: number, state?: string): Promise<string[]> {
  const ids: string[] = [];
  let cursor = '';
  for (let page = 0; page < 100; page++) {
    const query = new URLSearchParams({ limit: String(limit), cursor });
    if (state) query.set('state', state);
    const response = await request(`/api/v1/agent/runs?${query}`, key);
    expect(response.status).toBe(200);
    const body = (await response.json()) as {
      runs: { run_id: string }[];
      page_info: { has_next_page: boolean; next_cursor: string | null };
    };
    ids.push(...body.runs.map(run => run.run_id));
    if (!body.page_info.has_next_page) return ids;
    cursor = body.page_info.next_cursor!;
  }
  throw new Error('more than 100 pages');
}

describe('team isolation', () => {
  it(
    `holds for ${CASES} random (key, run, operation) cases`,
    async () => {
      const counts = { own: 0, foreign: 0, missing: 0, list: 0 };
      await fc.assert(
        fc.asyncProperty(
          fc.nat({ max: keys.length - 1 }),
          fc.oneof(
            { weight: 9, arbitrary: fc.nat({ max: runs.length - 1 }) },
            { weight: 1, arbitrary: fc.constant(-1) } // a run that does not exist
          ),
          fc.constantFrom('get', 'get', 'transcript', 'cancel', 'list'),
          fc.integer({ min: 1, max: 10 }),
          fc.option(fc.constantFrom('QUEUED', 'INPROGRESS', 'CANCELLED', 'QUEUED,INPROGRESS'), {
            nil: undefined
          }),
          async (k, r, op, limit, state) => {
            const key = keys[k]!;
            if (op === 'list') {
              counts.list++;
              const listed = await listAll(key, limit, state);
              const mine = new Set(runs.filter(run => run.team === key.team).map(run => run.id));
              // Never another team's run, never a repeat, and without a filter every run of the team.
              for (const id of listed) expect({ id, visible: mine.has(id) }).toEqual({ id, visible: true });
              expect(new Set(listed).size).toBe(listed.length);
              if (state === undefined) expect(new Set(listed)).toEqual(mine);
              return;
            }
            const run = r >= 0 ? runs[r]! : { id: randomUUID(), team: '' };
            const path =
              op === 'get'
                ? `/api/v1/agent/runs/${run.id}`
                : op === 'transcript'
                  ? `/api/v1/agent/runs/${run.id}/transcript`
                  : `/api/v1/agent/runs/${run.id}/cancel`;
            const response = await request(path, key, op === 'cancel' ? 'POST' : 'GET');
            if (run.team === key.team) {
              counts.own++;
              if (op === 'cancel') {
                // 409 only when this test already cancelled it: nothing else ends these runs.
                expect(response.status).toBe(cancelled.has(run.id) ? 409 : 200);
                cancelled.add(run.id);
              } else {
                expect(response.status).toBe(200);
                const body = (await response.json()) as { run_id: string };
                expect(body.run_id).toBe(run.id);
              }
              return;
            }
            counts[r >= 0 ? 'foreign' : 'missing']++;
            // Exactly the answer for a run that does not exist.
            const foreign = await notFoundShape(response, run.id);
            const ghost = randomUUID();
            const missing = await notFoundShape(
              await request(path.replace(run.id, ghost), key, op === 'cancel' ? 'POST' : 'GET'),
              ghost
            );
            expect(foreign).toEqual(missing);
            expect(foreign.error_code).toBe('not_found');
            if (r >= 0) {
              // The owner still sees it, unchanged by a foreign cancel.
              const owner = keys.find(candidate => candidate.team === run.team)!;
              const read = (await (await request(`/api/v1/agent/runs/${run.id}`, owner)).json()) as {
                state: string;
              };
              expect(read.state === 'CANCELLED').toBe(cancelled.has(run.id));
            }
          }
        ),
        { numRuns: CASES }
      );
      // The generator reached every kind of case.
      expect(counts.own).toBeGreaterThan(CASES / 20);
      expect(counts.foreign).toBeGreaterThan(CASES / 4);
      expect(counts.missing).toBeGreaterThan(0);
      expect(counts.list).toBeGreaterThan(CASES / 10);
    },
    // Every case runs: this only catches a hang, and is long, as a loaded machine needs.
    300_000 * SCALE
  );

  it('refuses a revoked key on its very next request, whatever the request', async () => {
    const attempts = [
      (key: string) => ex.request(`/api/v1/agent/runs/${runs[0]!.id}`, { key }),
      (key: string) => ex.request('/api/v1/agent/runs', { key }),
      (key: string) => ex.request(`/api/v1/agent/runs/${runs[0]!.id}/transcript`, { key }),
      (key: string) =>
        ex.request(`/api/v1/agent/runs/${runs[1]!.id}/cancel`, { key, method: 'POST', body: '' }),
      (key: string) =>
        ex.request('/api/v1/agent/run', {
          key,
          method: 'POST',
          body: JSON.stringify({ prompt: 'never', config: { environment_id: 'local' } })
        })
    ];
    await fc.assert(
      fc.asyncProperty(fc.nat({ max: attempts.length - 1 }), fc.nat({ max: 20 }), async (which, before) => {
        const key = await ex.key(runs[0]!.team, 'agent', 'soon-revoked');
        // Some requests first (they may warm a cache), then revoke and try at once.
        for (let i = 0; i < before; i++)
          expect((await ex.request('/api/v1/agent/runs?limit=1', { key: key.raw })).status).toBe(200);
        expect(await ex.context.stores.accounts.revokeKey(key.id, new Date().toISOString())).toBe(true);
        const response = await attempts[which]!(key.raw);
        expect(response.status).toBe(401);
        expect(response.headers.get('www-authenticate')).toMatch(/^Bearer/);
        expect(await response.json()).toMatchObject({ status: 401, error_code: 'unauthenticated' });
      }),
      { numRuns: Math.round(40 * SCALE) }
    );
    // The revoked keys created no run and cancelled nothing.
    const listed = await listAll(keys[0]!, 100);
    expect(listed.length).toBe(RUNS_PER_TEAM);
  });
});
