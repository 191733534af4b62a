// Every request's cost bounded (issue 33): a list filters by at most 5 metadata pairs, looked up in
// their own indexed table (never by parsing each run's JSON), and a page of large runs ends early;
// the fields a create keeps beyond
// prompt, config and title are at most 64 KiB of JSON, and so is the config; config.mcp_servers is
// bounded (servers, env and header entries, bytes). Each bound answers with a problem that names the limit and what
// broke it. The executor on a real port, SQLite or (AGENT_EXECUTOR_TEST_STORE=postgres) PostgreSQL.
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { rmSync } from 'node:fs';
import { dirname } from 'node:path';
import { type TestExecutor, startTestExecutor } from '../support/executor.js';
import { waitForState } from '../support/wait.js';

let ex: TestExecutor;
let key: string;
let keyB: string;

beforeAll(async () => {
  ex = await startTestExecutor({ workers: 1 });
  key = (await ex.key('team-a', 'personal', 'alice')).raw;
  keyB = (await ex.key('team-b', 'personal', 'bob')).raw;
});
afterAll(async () => {
  await ex.stop(1000);
  rmSync(dirname(ex.dataDir), { recursive: true, force: true });
});

const create = (body: Record<string, unknown>, k = key) =>
  ex.request('/api/v1/agent/runs', {
    method: 'POST',
    key: k,
    body: JSON.stringify({ prompt: '@sim result ok', config: { environment_id: 'local' }, ...body })
  });

async function created(body: Record<string, unknown>, k = key): Promise<string> {
  const response = await create(body, k);
  expect(response.status).toBe(200);
  const id = ((await response.json()) as { run_id: string }).run_id;
  await waitForState({ on: ex, key: k, id });
  return id;
}

async function problem(response: Response, status: number, code: string): Promise<string> {
  expect(response.headers.get('content-type')).toMatch(/^application\/problem\+json/);
  const body = (await response.json()) as { status: number; error_code: string; detail: string };
  expect({ status: response.status, error_code: body.error_code }).toEqual({ status, error_code: code });
  return body.detail;
}

const list = (query: string, k = key) => ex.request(`/api/v1/agent/runs?${query}`, { key: k });

describe('the metadata filter of a list', () => {
  it('refuses a 6th pair with 400, naming the parameter and the limit of 5', async () => {
    const query = ['a', 'b', 'c', 'd', 'e', 'f'].map(k => `metadata[${k}]=1`).join('&');
    const detail = await problem(await list(query), 400, 'invalid_request');
    expect(detail).toBe(
      'metadata[f]: a list filters by at most 5 metadata[key]=value pairs; this request has 6'
    );
  });

  it('refuses one pair repeated 900 times the same way, and /healthz answers meanwhile', async () => {
    const query = Array.from({ length: 900 }, () => 'metadata[a]=b').join('&');
    const [refused, health] = await Promise.all([list(query), ex.request('/healthz')]);
    expect(await problem(refused, 400, 'invalid_request')).toMatch(
      /^metadata\[a\]: a list filters by at most 5 .*; this request has 900$/
    );
    expect(health.status).toBe(200);
  });

  it('with 5 pairs finds exactly the runs that have all five, in order and in pages, never another team’s', async () => {
    const all = { repo: 'o/r', pr: '7', bot: 'review', tier: 'a b', 'odd.key"': 'ü "q"' };
    const both = await created({ metadata: { ...all, extra: 'x' } });
    // A kept field with a NUL: the list used to cast every run's fields to jsonb, which PostgreSQL refuses for it.
    const withNul = await created({ metadata: all, note: 'a\u0000b' });
    await created({ metadata: { ...all, tier: 'b' } });
    await created({ metadata: { repo: 'o/r', pr: '7' } });
    await created({ metadata: all }, keyB);
    const query = Object.entries(all)
      .map(([k, v]) => `metadata[${encodeURIComponent(k)}]=${encodeURIComponent(v)}`)
      .join('&');
    const response = await list(query);
    expect(response.status).toBe(200);
    const page = (await response.json()) as { runs: { run_id: string; metadata: unknown }[] };
    expect(page.runs.map(run => run.run_id)).toEqual([withNul, both]);
    expect(page.runs[1]!.metadata).toEqual({ ...all, extra: 'x' });

    const first = (await (await list(`${query}&limit=1`)).json()) as {
      runs: { run_id: string }[];
      page_info: { next_cursor: string };
    };
    expect(first.runs.map(run => run.run_id)).toEqual([withNul]);
    const cursor = encodeURIComponent(first.page_info.next_cursor);
    const second = (await (await list(`${query}&limit=1&cursor=${cursor}`)).json()) as {
      runs: { run_id: string }[];
    };
    expect(second.runs.map(run => run.run_id)).toEqual([both]);
  });

  it('ends a page of large runs early (about 1 MiB of their text), and the cursor goes on from there', async () => {
    // Each about 180,000 characters: five fit in a page, the sixth would pass 1 MiB.
    const heavy = {
      prompt: `@sim result ok ${'p'.repeat(60_000)}`,
      config: { environment_id: 'local', note: 'c'.repeat(60_000) },
      note: 'x'.repeat(60_000),
      metadata: { batch: 'heavy' }
    };
    const made: string[] = [];
    for (let i = 0; i < 7; i++) {
      const response = await create(heavy);
      expect(response.status).toBe(200);
      made.unshift(((await response.json()) as { run_id: string }).run_id);
    }
    type Page = {
      runs: { run_id: string }[];
      page_info: { has_next_page: boolean; next_cursor: string | null };
    };
    const first = (await (await list('metadata[batch]=heavy&limit=100')).json()) as Page;
    expect(first.runs.map(run => run.run_id)).toEqual(made.slice(0, 5));
    expect(first.page_info.has_next_page).toBe(true);
    const cursor = encodeURIComponent(first.page_info.next_cursor!);
    const second = (await (await list(`metadata[batch]=heavy&limit=100&cursor=${cursor}`)).json()) as Page;
    expect(second.runs.map(run => run.run_id)).toEqual(made.slice(5));
    expect(second.page_info).toEqual({ has_next_page: false, next_cursor: null });
  });

  it('refuses metadata holding NUL at create (422): the pairs are kept as text', async () => {
    const detail = await problem(await create({ metadata: { k: 'a\u0000b' } }), 422, 'invalid_field');
    expect(detail).toBe('metadata key "k": keys and values may not contain NUL');
  });
});

describe('fields a create keeps beyond prompt, config and title', () => {
  it('are refused past 64 KiB of JSON in all (422), naming the limit and the largest field', async () => {
    const wide = Object.fromEntries(Array.from({ length: 16_000 }, (_, i) => [`k${i}`, 'v']));
    const detail = await problem(await create({ wide, metadata: { a: 'b' } }), 422, 'invalid_field');
    expect(detail).toMatch(
      /^wide: \d+ bytes of JSON; the fields beyond prompt, config and title may take 65536 bytes in all \(64 KiB\), these take \d+$/
    );
    const long = await problem(await create({ note: 'x'.repeat(65_536) }), 422, 'invalid_field');
    expect(long).toMatch(/^note: 65538 bytes of JSON; .* 65536 bytes in all \(64 KiB\), these take 65547$/);
  });

  it('are kept whole up to the limit', async () => {
    // {"note":"…"} is 11 bytes around the text.
    const note = 'y'.repeat(65_536 - 11);
    const id = await created({ note });
    const record = (await (await ex.request(`/api/v1/agent/runs/${id}`, { key })).json()) as {
      note: string;
    };
    expect(record.note).toBe(note);
  });
});

describe('a run’s config', () => {
  it('is refused past 64 KiB of JSON (422), naming its largest field and the limit', async () => {
    const config = { environment_id: 'local', base_prompt: 'b'.repeat(70_000) };
    expect(await problem(await create({ config }), 422, 'invalid_field')).toBe(
      'config.base_prompt: 70002 bytes of JSON; config may take 65536 bytes in all (64 KiB), this one takes 70043'
    );
  });
});

describe('config.mcp_servers', () => {
  const withMcp = (servers: Record<string, unknown>) =>
    create({ config: { environment_id: 'local', mcp_servers: servers } });

  it('refuses 35,000 env values (422), naming the server and the limit of 64', async () => {
    const env = Object.fromEntries(Array.from({ length: 35_000 }, (_, i) => [`V${i}`, `secret-${i}`]));
    const detail = await problem(
      await withMcp({ tools: { command: 'mcp-tools', env } }),
      422,
      'invalid_field'
    );
    expect(detail).toBe('config.mcp_servers.tools.env: 35000 entries; at most 64 per server are allowed');
  });

  it('refuses more than 64 headers, more than 20 servers, or more than 64 KiB in all', async () => {
    const headers = Object.fromEntries(Array.from({ length: 65 }, (_, i) => [`H${i}`, 'v']));
    expect(
      await problem(await withMcp({ web: { url: 'https://mcp.example', headers } }), 422, 'invalid_field')
    ).toBe('config.mcp_servers.web.headers: 65 entries; at most 64 per server are allowed');
    const many = Object.fromEntries(Array.from({ length: 21 }, (_, i) => [`s${i}`, { command: 'x' }]));
    expect(await problem(await withMcp(many), 422, 'invalid_field')).toBe(
      'config.mcp_servers: 21 servers; at most 20 are allowed'
    );
    const big = { command: 'x', env: { TOKEN: 't'.repeat(70_000) } };
    expect(await problem(await withMcp({ small: { command: 'y' }, big }), 422, 'invalid_field')).toMatch(
      /^config\.mcp_servers: \d+ bytes of JSON, over the limit of 65536 \(64 KiB\); the largest server is big \(\d+ bytes\)$/
    );
  });

  it('takes 20 servers of 64 env values each', async () => {
    const env = Object.fromEntries(Array.from({ length: 64 }, (_, i) => [`V${i}`, `value-${i}`]));
    const servers = Object.fromEntries(
      Array.from({ length: 20 }, (_, i) => [`s${i}`, { command: 'x', env }])
    );
    const response = await withMcp(servers);
    expect(response.status).toBe(200);
    const { run_id } = (await response.json()) as { run_id: string };
    await waitForState({ on: ex, key, id: run_id });
  });
});
