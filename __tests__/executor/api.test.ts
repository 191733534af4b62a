// The executor's HTTP API on a real port with a real SQLite file in a temp dir.
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { readFileSync } from 'node:fs';
import { type TestExecutor, startTestExecutor } from '../support/executor.js';
import { waitForState } from '../support/wait.js';

let ex: TestExecutor;
let key: string;
let keyB: string;

beforeAll(async () => {
  // One team creates 250 runs at once (paging): the whole queue is its share.
  ex = await startTestExecutor({
    limits: { max_prompt_bytes: 1000, max_body_bytes: 4096, max_queued_runs_per_team: 1000 }
  });
  key = (await ex.key('team-a', 'personal', 'alice')).raw;
  keyB = (await ex.key('team-b', 'agent', 'bot-b')).raw;
});
afterAll(() => ex.stop(1000));

const post = (path: string, body: unknown, k = key, headers: Record<string, string> = {}) =>
  ex.request(path, {
    method: 'POST',
    key: k,
    body: typeof body === 'string' ? body : JSON.stringify(body),
    headers
  });
const get = (path: string, k = key, headers: Record<string, string> = {}) =>
  ex.request(path, { key: k, headers });

async function create(prompt = 'hello', extra: Record<string, unknown> = {}, k = key): Promise<string> {
  const response = await post(
    '/api/v1/agent/run',
    { prompt, config: { environment_id: 'local' }, ...extra },
    k
  );
  expect(response.status).toBe(200);
  return ((await response.json()) as { run_id: string }).run_id;
}

async function expectProblem(response: Response, status: number, code: string, detail?: RegExp) {
  expect(response.status).toBe(status);
  expect(response.headers.get('content-type')).toMatch(/^application\/problem\+json/);
  const body = (await response.json()) as Record<string, unknown>;
  expect(body).toMatchObject({ status, error_code: code });
  expect(typeof body.title).toBe('string');
  expect(typeof body.type).toBe('string');
  if (detail) expect(body.detail).toMatch(detail);
  return body;
}

describe('runs', () => {
  it('creates on both paths, reads the record, and ends SUCCEEDED with a session link', async () => {
    const response = await post('/api/v1/agent/runs', {
      prompt: 'Say hi\n@sim say hi',
      config: { environment_id: 'local', model_id: 'm1' },
      title: 'T',
      metadata: { pr: '7' }
    });
    expect(response.status).toBe(200);
    const created = (await response.json()) as { run_id: string; state: string };
    expect(created.state).toBe('QUEUED');
    const run = await waitForState({ on: ex, key, id: created.run_id }, ['SUCCEEDED']);
    expect(run).toMatchObject({
      run_id: created.run_id,
      title: 'T',
      prompt: 'Say hi\n@sim say hi',
      agent_config: { environment_id: 'local', model_id: 'm1' },
      metadata: { pr: '7' },
      creator: { type: 'user', display_name: 'alice' },
      source: 'API'
    });
    expect(run.session_link).toMatch(new RegExp(`^${ex.url}/sessions/${created.run_id}\\?token=[\\w-]{32}$`));
    for (const field of ['created_at', 'updated_at', 'started_at', 'completed_at'])
      expect(Date.parse(run[field] as string)).not.toBeNaN();
    expect(run.status_message).toBeUndefined();
  });

  it('attributes agent keys to an agent', async () => {
    const id = await create('x', {}, keyB);
    const run = (await (await get(`/api/v1/agent/runs/${id}`, keyB)).json()) as { creator: { type: string } };
    expect(run.creator.type).toBe('agent');
  });

  it('records commands, files and failures in the transcript', async () => {
    const id = await create(
      'Do it\n@sim say working\n@sim write out/notes.md line1\\nline2\n@sim run cat out/notes.md && exit 3'
    );
    const run = await waitForState({ on: ex, key, id }, ['FAILED']);
    expect(run).toMatchObject({
      error_code: 'command_failed',
      status_message: 'command `cat out/notes.md && exit 3` exited with code 3'
    });
    const transcript = (await (await get(`/api/v1/agent/runs/${id}/transcript`)).json()) as {
      events: Record<string, unknown>[];
    };
    expect(transcript.events.map(e => `${e.kind}:${e.state ?? ''}`)).toEqual([
      'state:QUEUED',
      'state:INPROGRESS',
      'message:',
      'file:',
      'command:',
      'result:',
      'diff:',
      'artifact:',
      'state:FAILED'
    ]);
    expect(transcript.events[3]).toMatchObject({ path: 'out/notes.md', change: 'added' });
    expect(transcript.events[4]).toMatchObject({ exit_code: 3, output: 'line1\nline2' });
  });

  it('fails with the message of @sim fail', async () => {
    const id = await create('@sim fail the tests are red');
    expect(await waitForState({ on: ex, key, id }, ['FAILED'])).toMatchObject({
      status_message: 'the tests are red',
      error_code: 'agent_failed'
    });
  });

  it('cancels a running run and refuses to cancel a finished one', async () => {
    const id = await create('@sim sleep 30');
    await waitForState({ on: ex, key, id }, ['INPROGRESS']);
    const response = await post(`/api/v1/agent/runs/${id}/cancel`, '');
    expect(response.status).toBe(200);
    expect(await response.json()).toBe(id);
    expect(await waitForState({ on: ex, key, id }, ['CANCELLED'])).toMatchObject({
      status_message: 'cancelled by a client',
      error_code: 'cancelled'
    });
    await expectProblem(
      await post(`/api/v1/agent/runs/${id}/cancel`, ''),
      409,
      'run_already_finished',
      /already ended CANCELLED/
    );
  });
});

describe('stopping', () => {
  it('runs no further directive once a run is cancelled', async () => {
    const id = await create('@sim sleep 1\n@sim run touch marker\n@sim write after.txt hi');
    await waitForState({ on: ex, key, id }, ['INPROGRESS']);
    await new Promise(resolve => setTimeout(resolve, 300));
    expect((await post(`/api/v1/agent/runs/${id}/cancel`, '')).status).toBe(200);
    await waitForState({ on: ex, key, id }, ['CANCELLED']);
    // Past the end of the `sleep 1` the directives after it would have run by now, had it gone on.
    await new Promise(resolve => setTimeout(resolve, 1500));
    const kinds = (
      (await (await get(`/api/v1/agent/runs/${id}/transcript`)).json()) as { events: { kind: string }[] }
    ).events.map(e => e.kind);
    expect(kinds).toEqual(['state', 'state', 'state']);
  });

  it('does not wait for processes a command left behind outside its group', async () => {
    // The left-behind sleep outlasts the wait below: a run that waited for it would not end in time.
    const id = await create('@sim run setsid sleep 120 > /dev/null 2>&1 & echo started');
    const run = await waitForState({ on: ex, key, id });
    expect(run.state).toBe('SUCCEEDED');
    expect(Date.parse(run.completed_at as string) - Date.parse(run.started_at as string)).toBeLessThan(
      120_000
    );
  });
});

describe('conditional reads', () => {
  it('answers 304 to a matching ETag and holds with Prefer: wait until the run changes', async () => {
    const id = await create('@sim sleep 1');
    // Once claimed, the run holds still for a second: long enough to read it twice unchanged.
    await waitForState({ on: ex, key, id }, ['INPROGRESS']);
    const first = await get(`/api/v1/agent/runs/${id}`);
    const etag = first.headers.get('etag')!;
    expect(etag).toMatch(/^"v\d+"$/);
    expect((await get(`/api/v1/agent/runs/${id}`, key, { 'if-none-match': etag })).status).toBe(304);

    const current = (await (await get(`/api/v1/agent/runs/${id}`)).json()) as { state: string };
    let tag = (await get(`/api/v1/agent/runs/${id}`)).headers.get('etag')!;
    let state = current.state;
    // Each held read answers with a change (200, a new ETag), not with the wait running out (304):
    // one read per change, however long the machine takes to make it.
    while (state !== 'SUCCEEDED') {
      const held = await get(`/api/v1/agent/runs/${id}`, key, { 'if-none-match': tag, prefer: 'wait=60' });
      expect(held.headers.get('preference-applied')).toBe('wait=60');
      expect(held.status).toBe(200);
      const run = (await held.json()) as { state: string; updated_at: string };
      expect(held.headers.get('etag')).not.toBe(tag);
      state = run.state;
      tag = held.headers.get('etag')!;
    }
  });

  it('answers 304 after the wait when nothing changed', async () => {
    const id = await create('@sim sleep 5');
    await waitForState({ on: ex, key, id }, ['INPROGRESS']);
    const etag = (await get(`/api/v1/agent/runs/${id}`)).headers.get('etag')!;
    const started = Date.now();
    const held = await get(`/api/v1/agent/runs/${id}`, key, { 'if-none-match': etag, prefer: 'wait=1' });
    expect(held.status).toBe(304);
    expect(held.headers.get('etag')).toBe(etag);
    expect(Date.now() - started).toBeGreaterThanOrEqual(950);
  });
});

describe('errors', () => {
  it('401 for a missing, malformed, unknown or revoked key, with WWW-Authenticate', async () => {
    const missing = await ex.request('/api/v1/agent/runs');
    expect(missing.headers.get('www-authenticate')).toBe('Bearer realm="agent-executor"');
    await expectProblem(missing, 401, 'unauthenticated', /missing Authorization header/);
    await expectProblem(await get('/api/v1/agent/runs', 'arx_nope'), 401, 'unauthenticated', /malformed/);
    const unknown = key.slice(0, -10) + 'AAAAAAAAAA';
    await expectProblem(await get('/api/v1/agent/runs', unknown), 401, 'unauthenticated');
    const { raw, id } = await ex.key('team-a');
    expect((await get('/api/v1/agent/runs', raw)).status).toBe(200);
    await ex.context.store.revokeKey(id, new Date().toISOString());
    await expectProblem(await get('/api/v1/agent/runs', raw), 401, 'unauthenticated', /unknown or revoked/);
  });

  it('400 for a body that is not JSON or not an object', async () => {
    await expectProblem(
      await post('/api/v1/agent/run', '{"prompt": '),
      400,
      'invalid_request',
      /not valid JSON/
    );
    await expectProblem(
      await post('/api/v1/agent/run', '[1]'),
      400,
      'invalid_request',
      /must be a JSON object/
    );
  });

  it('413 for a body over the limit, 415 for another content type', async () => {
    const big = JSON.stringify({ prompt: 'x'.repeat(5000), config: { environment_id: 'local' } });
    await expectProblem(await post('/api/v1/agent/run', big), 413, 'payload_too_large', /4096 bytes/);
    await expectProblem(
      await post('/api/v1/agent/run', 'hi', key, { 'content-type': 'text/plain' }),
      415,
      'unsupported_media_type'
    );
  });

  it('422 naming the field for a bad prompt, config or title, and for a prompt over the limit', async () => {
    await expectProblem(
      await post('/api/v1/agent/run', { config: { environment_id: 'local' } }),
      422,
      'invalid_field',
      /^prompt: expected a string, got nothing$/
    );
    await expectProblem(
      await post('/api/v1/agent/run', { prompt: 5, config: {} }),
      422,
      'invalid_field',
      /^prompt: expected a string, got number 5$/
    );
    await expectProblem(
      await post('/api/v1/agent/run', { prompt: 'x' }),
      422,
      'invalid_field',
      /^config: expected an object/
    );
    await expectProblem(
      await post('/api/v1/agent/run', { prompt: 'x', config: { environment_id: '' } }),
      422,
      'invalid_field',
      /^config.environment_id/
    );
    await expectProblem(
      await post('/api/v1/agent/run', { prompt: 'x', config: { environment_id: 'local' }, title: 3 }),
      422,
      'invalid_field',
      /^title/
    );
    await expectProblem(
      await post('/api/v1/agent/run', { prompt: 'é'.repeat(600), config: { environment_id: 'local' } }),
      422,
      'prompt_too_large',
      /^prompt: 1200 bytes is over the limit of 1000 bytes$/
    );
  });

  it('404 naming an unknown environment, and for unknown runs and routes', async () => {
    await expectProblem(
      await post('/api/v1/agent/run', { prompt: 'x', config: { environment_id: 'prod' } }),
      404,
      'environment_not_found',
      /"prod" does not exist; this executor serves: local/
    );
    await expectProblem(await get('/api/v1/agent/runs/nope'), 404, 'not_found');
    await expectProblem(await get('/api/v1/agent/nothing'), 404, 'route_not_found');
  });

  it('400 for bad list parameters', async () => {
    await expectProblem(
      await get('/api/v1/agent/runs?limit=500'),
      400,
      'invalid_request',
      /limit "500": expected a whole number from 1 to 100/
    );
    await expectProblem(await get('/api/v1/agent/runs?state=DONE'), 400, 'invalid_request', /state "DONE"/);
    await expectProblem(
      await get('/api/v1/agent/runs?created_after=yesterday'),
      400,
      'invalid_request',
      /RFC 3339/
    );
    await expectProblem(
      await get('/api/v1/agent/runs?cursor=garbage'),
      400,
      'invalid_request',
      /next_cursor/
    );
  });
});

describe('server-owned fields', () => {
  it('keeps extra body fields but never lets them pose as server fields', async () => {
    const id = await create('@sim sleep 5', {
      status_message: 'spoof',
      session_link: 'https://evil',
      state: 'SUCCEEDED',
      metadata: { a: '1' }
    });
    const run = (await (await get(`/api/v1/agent/runs/${id}`)).json()) as Record<string, unknown>;
    expect(run.state).not.toBe('SUCCEEDED');
    expect(run.status_message).toBeUndefined();
    expect(run.session_link === undefined || String(run.session_link).startsWith(ex.url)).toBe(true);
    expect(run.metadata).toEqual({ a: '1' });
    await post(`/api/v1/agent/runs/${id}/cancel`, '');
  });

  it('answers 400, not 500, to absurdly nested JSON and to malformed URLs', async () => {
    const deep =
      '{"prompt":"x","config":{"environment_id":"local","x":' +
      '['.repeat(100_000) +
      ']'.repeat(100_000) +
      '}}';
    const response = await ex.request('/api/v1/agent/run', {
      method: 'POST',
      key,
      body: deep,
      headers: { 'content-type': 'application/json' }
    });
    expect(response.status).toBeGreaterThanOrEqual(400);
    expect(response.status).toBeLessThan(500);
    await expectProblem(await get('/api/v1/agent/runs/%ZZ'), 400, 'invalid_request');
  });
});

describe('teams', () => {
  it('never shows one team’s run to another: 404 on read, cancel and transcript, absent from lists', async () => {
    const id = await create('private');
    await expectProblem(await get(`/api/v1/agent/runs/${id}`, keyB), 404, 'not_found');
    await expectProblem(await get(`/api/v1/agent/runs/${id}/transcript`, keyB), 404, 'not_found');
    await expectProblem(await post(`/api/v1/agent/runs/${id}/cancel`, '', keyB), 404, 'not_found');
    const list = (await (await get('/api/v1/agent/runs?limit=100', keyB)).json()) as {
      runs: { run_id: string }[];
    };
    expect(list.runs.map(r => r.run_id)).not.toContain(id);
    expect(list.runs.length).toBeGreaterThan(0);
  });
});

describe('idempotency', () => {
  it('50 concurrent identical creates with one key make exactly one run', async () => {
    const body = { prompt: 'once', config: { environment_id: 'local' } };
    const responses = await Promise.all(
      Array.from({ length: 50 }, () =>
        post('/api/v1/agent/run', body, key, { 'idempotency-key': 'same-key-50' })
      )
    );
    const ids = new Set<string>();
    for (const response of responses) {
      expect([200, 409]).toContain(response.status);
      if (response.status === 200) ids.add(((await response.json()) as { run_id: string }).run_id);
    }
    expect(ids.size).toBe(1);
    const all = (await (await get('/api/v1/agent/runs?limit=100')).json()) as {
      runs: { run_id: string; prompt: string }[];
    };
    expect(all.runs.filter(r => r.prompt === 'once')).toHaveLength(1);
  });

  it('replays the same run for the same key and body (keys order aside), 422 for another body', async () => {
    const first = await post(
      '/api/v1/agent/run',
      { prompt: 'p', config: { environment_id: 'local', a: 1, b: 2 } },
      key,
      { 'idempotency-key': 'k2' }
    );
    const again = await post(
      '/api/v1/agent/run',
      { config: { b: 2, a: 1, environment_id: 'local' }, prompt: 'p' },
      key,
      { 'idempotency-key': 'k2' }
    );
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(((await again.json()) as { run_id: string }).run_id).toBe(
      ((await first.json()) as { run_id: string }).run_id
    );
    await expectProblem(
      await post('/api/v1/agent/run', { prompt: 'other', config: { environment_id: 'local' } }, key, {
        'idempotency-key': 'k2'
      }),
      422,
      'idempotency_key_reused'
    );
    // Keys are per team: team B may use the same key for its own run.
    const other = await post(
      '/api/v1/agent/run',
      { prompt: 'p', config: { environment_id: 'local', a: 1, b: 2 } },
      keyB,
      { 'idempotency-key': 'k2' }
    );
    expect(other.status).toBe(200);
  });
});

describe('paging', () => {
  it('pages through 250 runs newest first with concurrent inserts: none missing, none repeated', async () => {
    const { raw: pager } = await ex.key('team-paging');
    const before: string[] = [];
    for (let i = 0; i < 250; i++) before.push(await create(`@sim say page ${i}`, {}, pager));
    const seen: string[] = [];
    let cursor = '';
    let inserts = 0;
    for (;;) {
      const page = (await (
        await get(`/api/v1/agent/runs?limit=17${cursor ? `&cursor=${cursor}` : ''}`, pager)
      ).json()) as {
        runs: { run_id: string }[];
        page_info: { has_next_page: boolean; next_cursor: string | null };
      };
      seen.push(...page.runs.map(r => r.run_id));
      await Promise.all([create('@sim say during', {}, pager), create('@sim say during', {}, pager)]);
      inserts += 2;
      if (!page.page_info.has_next_page) break;
      cursor = page.page_info.next_cursor!;
    }
    expect(inserts).toBeGreaterThan(20);
    expect(seen).toEqual([...before].reverse());
  });

  it('filters by state, environment and creation time', async () => {
    const { raw: k } = await ex.key('team-filter');
    const a = await create('@sim fail no', {}, k);
    await waitForState({ on: ex, key: k, id: a }, ['FAILED']);
    const middle = new Date().toISOString();
    await new Promise(resolve => setTimeout(resolve, 5));
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
    await new Promise(resolve => setTimeout(resolve, 5));
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
      await new Promise(resolve => setTimeout(resolve, 3));
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

describe('start-up', () => {
  it('prints no Fastify deprecation warning (FSTDEP023)', async () => {
    // Fastify warns through process.emitWarning(message, name, code): record each call.
    const warnings: string[] = [];
    const emitWarning = process.emitWarning;
    process.emitWarning = ((message: string | Error, ...rest: unknown[]) => {
      warnings.push(`${String(rest[1] ?? '')} ${String(message)}`);
    }) as typeof process.emitWarning;
    try {
      const { buildApp } = await import('../../src/executor/server/app.js');
      const app = await buildApp(ex.context, { publicUrl: () => ex.url, requestPrefix: 'test' });
      // app.inject() needs an ESM-only cookie parser jest cannot load: a real port instead.
      await app.listen({ host: '127.0.0.1', port: 0 });
      const { port } = app.server.address() as { port: number };
      const answer = await fetch(`http://127.0.0.1:${port}/api/v1/agent/runs?limit=1`, {
        headers: { authorization: `Bearer ${key}` }
      });
      expect(answer.status).toBe(200);
      await app.close();
      await new Promise(resolve => setImmediate(resolve));
    } finally {
      process.emitWarning = emitWarning;
    }
    expect(warnings.filter(warning => warning.includes('FSTDEP'))).toEqual([]);
  });
});

describe('service endpoints', () => {
  it('serves health, readiness, the OpenAPI document and the error reference without a key', async () => {
    expect(await (await ex.request('/healthz')).json()).toEqual({ status: 'ok' });
    expect(await (await ex.request('/readyz')).json()).toEqual({ status: 'ready', environments: ['local'] });
    const doc = (await (await ex.request('/api/v1/openapi.json')).json()) as {
      openapi: string;
      paths: Record<string, unknown>;
      components: { schemas: Record<string, unknown> };
    };
    expect(doc.openapi).toBe('3.1.0');
    expect(Object.keys(doc.paths)).toEqual(
      expect.arrayContaining([
        '/api/v1/agent/run',
        '/api/v1/agent/runs',
        '/api/v1/agent/runs/{run_id}',
        '/api/v1/agent/runs/{run_id}/cancel'
      ])
    );
    expect(doc.components.schemas.RunRecord).toBeDefined();
    const errors = (await (await ex.request('/api/v1/errors')).json()) as {
      errors: { error_code: string; meaning: string }[];
    };
    expect(errors.errors.map(e => e.error_code)).toEqual(
      expect.arrayContaining(['executor_restarted', 'idempotency_key_reused', 'rate_limited'])
    );
  });
});

describe('session page', () => {
  it('renders the run with everything escaped, and 404s without the right token', async () => {
    const id = await create(
      '<script>alert(1)</script>\n@sim say <img src=x onerror=alert(2)>\n@sim run echo "<b>bold</b>"'
    );
    const run = (await waitForState({ on: ex, key, id }, ['SUCCEEDED'])) as { session_link: string };
    const page = await fetch(run.session_link);
    expect(page.status).toBe(200);
    expect(page.headers.get('content-type')).toMatch(/^text\/html/);
    const html = await page.text();
    expect(html).not.toContain('<script>alert(1)</script>');
    expect(html).not.toContain('<img src=x');
    expect(html).not.toContain('<b>bold</b>');
    expect(html).toContain('&#60;script&#62;alert(1)&#60;/script&#62;');
    expect(html).toContain('&#60;b&#62;bold&#60;/b&#62;');
    expect(html).toContain('SUCCEEDED');
    expect((await fetch(run.session_link.replace(/token=.*/, 'token=wrong'))).status).toBe(404);
    expect((await fetch(run.session_link.split('?')[0]!)).status).toBe(404);
  });
});

describe('storage', () => {
  it('keeps no raw key in the database files', () => {
    const files = ex.storeFiles();
    expect(files.length).toBeGreaterThan(0);
    for (const file of files) {
      const bytes = readFileSync(file);
      expect(bytes.includes(key)).toBe(false);
      expect(bytes.includes(keyB)).toBe(false);
    }
  });
});
