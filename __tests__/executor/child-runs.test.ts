// Parent and child runs on the executor's HTTP API (a real port, a real store: SQLite, or
// PostgreSQL under jest:postgres): parent_run_id on create, its team and depth checks, the
// metadata a child inherits, the ancestor_run_id list filter and the cancel that cascades.
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { type TestExecutor, startTestExecutor } from '../support/executor.js';
import { waitForState } from '../support/wait.js';

let ex: TestExecutor;
let key: string;
let keyB: string;

beforeAll(async () => {
  ex = await startTestExecutor();
  key = (await ex.key('team-a', 'personal', 'alice')).raw;
  keyB = (await ex.key('team-b', 'personal', 'bob')).raw;
});
afterAll(() => ex.stop(1000));

const post = (path: string, body: unknown, k = key) =>
  ex.request(path, { method: 'POST', key: k, body: JSON.stringify(body) });

async function create(
  extra: Record<string, unknown> = {},
  prompt = '@sim sleep 120',
  k = key
): Promise<string> {
  const response = await post(
    '/api/v1/agent/runs',
    { prompt, config: { environment_id: 'local' }, ...extra },
    k
  );
  expect(response.status).toBe(200);
  return ((await response.json()) as { run_id: string }).run_id;
}

async function read(id: string, k = key): Promise<Record<string, unknown>> {
  const response = await ex.request(`/api/v1/agent/runs/${id}`, { key: k });
  expect(response.status).toBe(200);
  return (await response.json()) as Record<string, unknown>;
}

async function listIds(query: string, k = key): Promise<string[]> {
  const response = await ex.request(`/api/v1/agent/runs?${query}`, { key: k });
  expect(response.status).toBe(200);
  return ((await response.json()) as { runs: { run_id: string }[] }).runs.map(run => run.run_id);
}

describe('parent and child runs', () => {
  it('records the parent, inherits its metadata, bounds the depth and refuses other teams', async () => {
    const root = await create({ metadata: { pr: '7', review: 'all' } });
    const child = await create({ parent_run_id: root, metadata: { review: 'security' } });
    expect(await read(child)).toMatchObject({
      parent_run_id: root,
      metadata: { pr: '7', review: 'security' }
    });
    expect((await read(root)).parent_run_id).toBeUndefined();

    const grandchild = await create({ parent_run_id: child });
    expect((await read(grandchild)).metadata).toEqual({ pr: '7', review: 'security' });
    const third = await create({ parent_run_id: grandchild });
    const fourth = await post('/api/v1/agent/runs', {
      prompt: 'too deep',
      config: { environment_id: 'local' },
      parent_run_id: third
    });
    expect(fourth.status).toBe(400);
    const problem = (await fourth.json()) as { detail: string; error_code: string };
    expect(problem.error_code).toBe('invalid_request');
    expect(problem.detail).toContain('at most 3 levels below a root');

    // Another team's run is not there for this key, whatever its id.
    const other = await post(
      '/api/v1/agent/runs',
      { prompt: 'x', config: { environment_id: 'local' }, parent_run_id: root },
      keyB
    );
    expect(other.status).toBe(404);
    expect(((await other.json()) as { error_code: string }).error_code).toBe('not_found');
    const unknown = await post('/api/v1/agent/runs', {
      prompt: 'x',
      config: { environment_id: 'local' },
      parent_run_id: 'no-such-run'
    });
    expect(unknown.status).toBe(404);

    for (const id of [root, child, grandchild, third]) await post(`/api/v1/agent/runs/${id}/cancel`, {});
  });

  it('lists every descendant of a run with ancestor_run_id, and only the team’s', async () => {
    const root = await create();
    const a = await create({ parent_run_id: root });
    const b = await create({ parent_run_id: root });
    const a1 = await create({ parent_run_id: a });
    const unrelated = await create();
    expect(new Set(await listIds(`ancestor_run_id=${root}`))).toEqual(new Set([a, b, a1]));
    expect(await listIds(`ancestor_run_id=${a}`)).toEqual([a1]);
    expect(await listIds(`ancestor_run_id=${a1}`)).toEqual([]);
    expect(await listIds(`ancestor_run_id=${root}`, keyB)).toEqual([]);
    expect(await listIds(`ancestor_run_id=${root}&limit=100`)).not.toContain(unrelated);
    for (const id of [root, unrelated]) await post(`/api/v1/agent/runs/${id}/cancel`, {});
  });

  it('cancels the running descendants with the parent, each message naming it', async () => {
    const root = await create();
    const done = await create({ parent_run_id: root }, '@sim say finished first');
    await waitForState({ on: ex, key, id: done }, ['SUCCEEDED']);
    const child = await create({ parent_run_id: root });
    const grandchild = await create({ parent_run_id: child });
    await waitForState({ on: ex, key, id: root }, ['INPROGRESS']);

    const cancel = await post(`/api/v1/agent/runs/${root}/cancel`, { reason: 'enough' });
    expect(cancel.status).toBe(200);
    expect(await read(root)).toMatchObject({
      state: 'CANCELLED',
      status_message: 'cancelled by a client: enough'
    });
    for (const id of [child, grandchild]) {
      const run = await waitForState({ on: ex, key, id }, ['CANCELLED']);
      expect(run.status_message).toBe(`cancelled because its ancestor run ${root} was cancelled`);
    }
    // A child that had ended keeps its state.
    expect((await read(done)).state).toBe('SUCCEEDED');
  });

  it('shows parent_run_id and ancestor_run_id in the OpenAPI document', async () => {
    const doc = (await (await ex.request('/api/v1/openapi.json')).json()) as {
      paths: Record<string, Record<string, { parameters?: { name: string }[] }>>;
      components?: unknown;
    };
    const text = JSON.stringify(doc);
    expect(text).toContain('"parent_run_id"');
    expect(doc.paths['/api/v1/agent/runs']!.get!.parameters!.map(p => p.name)).toContain('ancestor_run_id');
  });
});
