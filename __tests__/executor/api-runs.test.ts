// The executor's HTTP API on a real port with a real SQLite file in a temp dir (or a PostgreSQL
// database: jest's postgres project): runs from creation to their end, stopping them, held reads,
// what one team sees of another's runs, the session page. The other api-*.test.ts files test the
// rest of the API, each on an executor of its own so that jest runs them side by side.
import { describe, expect, it } from '@jest/globals';
import { apiSuite, ex, key, keyB, expectNoRawKeys, expectProblem } from '../support/api-suite.js';
import { sleep, waitForState } from '../support/wait.js';

const api = apiSuite();
const { post, get, create } = api;

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
    await sleep(300);
    expect((await post(`/api/v1/agent/runs/${id}/cancel`, '')).status).toBe(200);
    await waitForState({ on: ex, key, id }, ['CANCELLED']);
    // Past the end of the `sleep 1` the directives after it would have run by now, had it gone on.
    await sleep(1500);
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
    expectNoRawKeys(ex, [key, keyB]);
  });
});
