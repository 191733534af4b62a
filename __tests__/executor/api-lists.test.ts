// The executor's HTTP API on a real port with a real SQLite file in a temp dir (or a PostgreSQL
// database: jest's postgres project): the run list's filters and sorts.
import { describe, expect, it } from '@jest/globals';
import { apiSuite, ex, key, keyB, expectNoRawKeys, expectProblem } from '../support/api-suite.js';
import { sleep, waitForState } from '../support/wait.js';

const api = apiSuite();
const { post, get, create } = api;

describe('paging', () => {
  it('filters by state, environment and creation time', async () => {
    const { raw: k } = await ex.key('team-filter');
    const a = await create('@sim fail no', {}, k);
    await waitForState({ on: ex, key: k, id: a }, ['FAILED']);
    const middle = new Date().toISOString();
    await sleep(5);
    const b = await create('ok', {}, k);
    await waitForState({ on: ex, key: k, id: b }, ['SUCCEEDED']);
    const ids = async (query: string) =>
      (
        (await (await get(`/api/v1/agent/runs?${query}`, k)).json()) as { runs: { run_id: string }[] }
      ).runs.map(r => r.run_id);
    expect(await ids('state=FAILED')).toEqual([a]);
    expect(await ids('state=FAILED&state=SUCCEEDED')).toEqual([b, a]);
    expect(await ids('environment_id=local')).toEqual([b, a]);
    expect(await ids('environment_id=other')).toEqual([]);
    expect(await ids(`created_after=${middle}`)).toEqual([b]);
    expect(await ids(`created_before=${middle}`)).toEqual([a]);
  });
});

describe('list filters and sorts', () => {
  const ids = async (k: string, query: string) => {
    const response = await get(`/api/v1/agent/runs?${query}`, k);
    expect(response.status).toBe(200);
    return ((await response.json()) as { runs: { run_id: string }[] }).runs.map(r => r.run_id);
  };

  it('filters by updated_after, creator, q, name, model_id and artifact_type', async () => {
    const { raw: k, id: keyId } = await ex.key('team-filters');
    const { raw: other } = await ex.key('team-filters', 'agent', 'other');
    const post1 = async (body: Record<string, unknown>, kk = k) => {
      const response = await post('/api/v1/agent/run', body, kk);
      expect(response.status).toBe(200);
      return ((await response.json()) as { run_id: string }).run_id;
    };
    const a = await post1({
      prompt: '@sim sleep 60\nFix the Login bug',
      title: 'Nightly',
      config: { environment_id: 'local', name: 'fixer', model_id: 'm-1' }
    });
    const b = await post1({
      prompt: '@sim sleep 60\nwrite docs',
      title: 'About LOGIN pages',
      config: { environment_id: 'local', name: 'writer', model_id: 'm-2' }
    });
    const c = await post1({ prompt: '@sim sleep 60\nother', config: { environment_id: 'local' } }, other);
    expect(await ids(k, `creator=${keyId}`)).toEqual([b, a]);
    expect(await ids(k, 'q=login')).toEqual([b, a]);
    expect(await ids(k, 'q=LOGIN%20BUG')).toEqual([a]);
    expect(await ids(k, 'q=nightly')).toEqual([a]);
    expect(await ids(k, 'q=nowhere')).toEqual([]);
    expect(await ids(k, 'name=writer')).toEqual([b]);
    expect(await ids(k, 'model_id=m-1')).toEqual([a]);
    expect(await ids(k, 'model_id=m-1&name=writer')).toEqual([]);
    expect(await ids(k, 'artifact_type=PULL_REQUEST')).toEqual([]);
    expect(await ids(k, '')).toEqual([c, b, a]);
    // Cancelling a changes its updated_at: it alone was updated after the moment before (b and c
    // end first, and nothing changes an ended run).
    for (const id of [b, c]) expect((await post(`/api/v1/agent/runs/${id}/cancel`, '', k)).status).toBe(200);
    const moment = new Date().toISOString();
    await sleep(5);
    expect((await post(`/api/v1/agent/runs/${a}/cancel`, '', k)).status).toBe(200);
    expect(await ids(k, `updated_after=${moment}`)).toEqual([a]);
  });

  it('sorts by created_at or updated_at either way, and pages each sort with its own cursor', async () => {
    const { raw: k } = await ex.key('team-sorts');
    const made: string[] = [];
    for (let i = 0; i < 7; i++) made.push(await create(`@sim sleep 5\nrun ${i}`, {}, k));
    // End every run, in another order than their creation: updated_at order is then this one,
    // and no worker changes an ended run.
    const ended = [3, 0, 5, 1, 6, 2, 4].map(i => made[i]!);
    for (const id of ended) {
      await sleep(3);
      expect([200, 409]).toContain((await post(`/api/v1/agent/runs/${id}/cancel`, '', k)).status);
    }
    const all = async (query: string) => {
      const seen: string[] = [];
      let cursor = '';
      for (;;) {
        const response = await get(
          `/api/v1/agent/runs?limit=2&${query}${cursor ? `&cursor=${cursor}` : ''}`,
          k
        );
        expect(response.status).toBe(200);
        const page = (await response.json()) as {
          runs: { run_id: string }[];
          page_info: { has_next_page: boolean; next_cursor: string | null };
        };
        seen.push(...page.runs.map(r => r.run_id));
        if (!page.page_info.has_next_page) return seen;
        cursor = page.page_info.next_cursor!;
      }
    };
    expect(await all('')).toEqual([...made].reverse());
    expect(await all('sort_by=created_at&sort_order=desc')).toEqual([...made].reverse());
    expect(await all('sort_order=asc')).toEqual(made);
    expect(await all('sort_by=updated_at&sort_order=asc')).toEqual(ended);
    expect(await all('sort_by=updated_at')).toEqual([...ended].reverse());
    // A cursor belongs to its sort.
    const first = (await (await get('/api/v1/agent/runs?limit=2', k)).json()) as {
      page_info: { next_cursor: string };
    };
    await expectProblem(
      await get(`/api/v1/agent/runs?sort_by=updated_at&cursor=${first.page_info.next_cursor}`, k),
      400,
      'invalid_request',
      /cursor ".+": expected the next_cursor of a previous page with the same sort_by and sort_order/
    );
  });

  it('400 naming an unknown parameter or a bad sort, never silently ignored', async () => {
    await expectProblem(
      await get('/api/v1/agent/runs?stat=QUEUED'),
      400,
      'invalid_request',
      /^unknown parameter "stat"; expected one of limit, cursor, state, .*sort_order$/
    );
    await expectProblem(
      await get('/api/v1/agent/runs?sort_by=title'),
      400,
      'invalid_request',
      /^sort_by "title": expected created_at or updated_at$/
    );
    await expectProblem(
      await get('/api/v1/agent/runs?sort_order=up'),
      400,
      'invalid_request',
      /^sort_order "up": expected asc or desc$/
    );
    await expectProblem(
      await get('/api/v1/agent/runs?updated_after=soon'),
      400,
      'invalid_request',
      /^updated_after "soon": expected an RFC 3339 timestamp/
    );
  });
});

describe('storage', () => {
  it('keeps no raw key in the database files', () => {
    expectNoRawKeys(ex, [key, keyB]);
  });
});
