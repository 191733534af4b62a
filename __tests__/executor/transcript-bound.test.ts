// An agent that prints far more than `limits.transcript` cannot fill the store or the executor's
// memory: the run still succeeds, its stored transcript keeps the head and the tail of the output
// with one `truncated` event between them, the executor answers /healthz while the flood is
// written, transcript reads come in pages (`limit`, `has_more`, `next_after`), and the session
// page, the conversation and the dashboard show a bounded part of a long transcript with an
// "… N more events" marker. Real executor on a real port, a real agent process; on SQLite, or
// PostgreSQL with AGENT_EXECUTOR_TEST_STORE=postgres.
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { TERMINAL_STATES } from '../../src/api/index.js';
import { AgentRunClient, type ProgressItem, RunFollower } from '../../src/client/index.js';
import { parseConfig } from '../../src/executor/config/config.js';
import { type TestExecutor, startTestExecutor, tempDir } from '../support/executor.js';
import { waitForState } from '../support/wait.js';

const LIMIT = 1024 * 1024;
/** About 20 MB of numbered lines between two marker lines. */
const FLOOD =
  'cat >/dev/null; echo HEAD-MARK; seq 1 1000000 | sed "s/^/filler line /"; echo TAIL-MARK; echo done >&2';

type Json = Record<string, unknown>;
let ex: TestExecutor;
let key: string;

beforeAll(async () => {
  const source = tempDir('agent-flood-source-');
  ex = await startTestExecutor({
    workspaces: { retention: '0s' },
    limits: { transcript: '1MiB' },
    environments: [
      { id: 'flood', source, agent: { kind: 'command', command: ['/bin/sh', '-c', FLOOD], prompt: 'stdin' } },
      { id: 'sim', source, agent: { kind: 'simulated' } }
    ]
  });
  key = (await ex.key()).raw;
});
afterAll(() => ex?.stop(1000));

async function create(environment: string, prompt = 'go'): Promise<string> {
  const response = await ex.request('/api/v1/agent/runs', {
    method: 'POST',
    key,
    body: JSON.stringify({ prompt, config: { environment_id: environment } })
  });
  expect(response.status).toBe(200);
  return ((await response.json()) as { run_id: string }).run_id;
}

async function getRun(id: string): Promise<Json> {
  return (await (await ex.request(`/api/v1/agent/runs/${id}`, { key })).json()) as Json;
}

const finished = (id: string): Promise<Json> =>
  waitForState({ on: ex, key, id }, TERMINAL_STATES, { timeoutMs: 240_000 });

async function transcript(id: string, query: string): Promise<Json & { events: Json[] }> {
  const response = await ex.request(`/api/v1/agent/runs/${id}/transcript${query}`, { key });
  expect(response.status).toBe(200);
  return (await response.json()) as Json & { events: Json[] };
}

describe('a run that prints far more than limits.transcript', () => {
  let id: string;
  let run: Json;
  const healthWhileRunning: number[] = [];

  beforeAll(async () => {
    id = await create('flood');
    await waitForState({ on: ex, key, id }, ['INPROGRESS', ...TERMINAL_STATES]);
    // /healthz is asked again and again while the agent prints; answers count when the run was
    // still in progress after them.
    for (;;) {
      const health = await ex.request('/healthz');
      const state = (await getRun(id)).state;
      if (state !== 'INPROGRESS') break;
      healthWhileRunning.push(health.status);
      await new Promise(resolve => setTimeout(resolve, 20));
    }
    run = await finished(id);
  }, 300_000);

  it('succeeds although its output was cut, and /healthz answered 200 while the output was written', async () => {
    expect(run).toMatchObject({ state: 'SUCCEEDED' });
    const store = await ex.openStore();
    const kinds = (await store.transcript.listEvents(id)).map(event => event.kind);
    await store.close();
    expect(kinds).toContain('truncated');
    expect(healthWhileRunning.length).toBeGreaterThan(0);
    expect(healthWhileRunning.every(status => status === 200)).toBe(true);
  });

  it('stores at most the limit plus a small overhead: the head, the tail and the dropped-bytes event', async () => {
    const store = await ex.openStore();
    const events = await store.transcript.listEvents(id);
    await store.close();
    const stored = events.reduce((sum, event) => sum + JSON.stringify(event).length, 0);
    expect(stored).toBeLessThanOrEqual(LIMIT + 64 * 1024);
    const outputs = events.filter(event => event.kind === 'output' && event.stream === 'stdout');
    expect(String(outputs[0]?.text)).toMatch(/^HEAD-MARK\nfiller line 1\n/);
    const stdout = outputs.map(event => String(event.text)).join('');
    expect(stdout).toMatch(/filler line 1000000\nTAIL-MARK\n$/);
    expect(stdout).not.toMatch(/\nfiller line 500000\n/);
    const cut = events.filter(event => event.kind === 'truncated');
    expect(cut).toHaveLength(1);
    expect(cut[0]).toMatchObject({ limit_bytes: LIMIT, text: expect.stringMatching(/bytes of output/) });
    expect(Number(cut[0]!.dropped_bytes)).toBeGreaterThan(17_000_000);
    expect(Number(cut[0]!.dropped_lines)).toBeGreaterThan(900_000);
    // In order: head, the note, the tail, then the agent's exit.
    const seqOf = (event: Json | undefined) => Number(event?.seq);
    expect(seqOf(outputs[0])).toBeLessThan(seqOf(cut[0]));
    expect(seqOf(cut[0])).toBeLessThan(seqOf(outputs.at(-1)));
    expect(seqOf(outputs.at(-1))).toBeLessThan(seqOf(events.find(event => event.kind === 'exit')));
    // One output event stays small.
    for (const event of outputs) expect(Buffer.byteLength(String(event.text))).toBeLessThanOrEqual(64 * 1024);
  });

  it('reads the transcript in pages of at most `limit` events, with a cursor to go on from', async () => {
    const first = await transcript(id, '?limit=5');
    expect(first.events).toHaveLength(5);
    expect(first).toMatchObject({ has_more: true, next_after: first.events[4]!.seq });
    const second = await transcript(id, `?after=${first.next_after}&limit=5`);
    expect(Number(second.events[0]!.seq)).toBe(Number(first.next_after) + 1);
    let after = 0;
    let count = 0;
    let sawEnd = false;
    for (let pages = 0; pages < 1000 && !sawEnd; pages++) {
      const page = await transcript(id, `?after=${after}&limit=1000`);
      expect(page.events.length).toBeLessThanOrEqual(1000);
      count += page.events.length;
      after = Number(page.next_after);
      sawEnd = page.has_more === false;
    }
    expect(sawEnd).toBe(true);
    const store = await ex.openStore();
    expect(count).toBe(await store.transcript.countEvents(id, 0));
    await store.close();
  });

  it('answers a bad limit with 400 naming the value and the range', async () => {
    const response = await ex.request(`/api/v1/agent/runs/${id}/transcript?limit=0`, { key });
    expect(response.status).toBe(400);
    expect(((await response.json()) as Json).detail).toMatch(
      /limit "0": expected a whole number of events from 1 to 1000/
    );
  });

  it('keeps the end of the output as the final answer and the session page renders', async () => {
    const conversation = JSON.stringify(
      await (await ex.request(`/api/v1/agent/runs/${id}/conversation`, { key })).json()
    );
    expect(conversation).toMatch(/TAIL-MARK/);
    const page = await fetch(String(run.session_link));
    expect(page.status).toBe(200);
    const html = await page.text();
    expect(html).toMatch(/HEAD-MARK/);
    expect(html).toMatch(/TAIL-MARK/);
    expect(html).toMatch(/bytes of output \(\d+ events, \d+ lines\) were dropped/);
    expect(html.length).toBeLessThan(4 * 1024 * 1024);
  });
});

describe('a transcript longer than one response shows', () => {
  it('is shown as head, tail and a marker on the session page and in the conversation', async () => {
    const id = await create('sim', 'say hello');
    const run = await finished(id);
    // A long transcript as an executor without the limit stored it: 6 MB of output events.
    const store = await ex.openStore();
    const line = 'x'.repeat(4000);
    for (let i = 0; i < 1500; i++)
      await store.transcript.appendEvent(
        id,
        'output',
        { stream: 'stdout', text: `${i === 1499 ? 'LAST ' : ''}${line}` },
        new Date().toISOString()
      );
    await store.close();
    const page = await (await fetch(String(run.session_link))).text();
    expect(page.length).toBeLessThan(3 * 1024 * 1024);
    expect(page).toMatch(/hello/);
    expect(page).toMatch(/LAST x/);
    expect(page).toMatch(/… \d+ more events \(\d+ bytes\) are not shown here, see the transcript/);
    const response = await ex.request(`/api/v1/agent/runs/${id}/conversation`, { key });
    const body = await response.text();
    expect(body.length).toBeLessThan(3 * 1024 * 1024);
    expect(body).toMatch(/more events .* are not shown here/);
    expect(body).toMatch(/LAST x/);
    // The client and its follower page through all of it (default pages of 100 events).
    const client = new AgentRunClient({ baseUrl: ex.url, apiKey: key });
    const whole = await client.runs.wholeTranscript(id);
    expect(whole?.events.length).toBeGreaterThan(1500);
    expect(whole?.has_more).toBe(false);
    expect(String(whole?.events.at(-1)?.text)).toMatch(/^LAST x/);
    const items: ProgressItem[] = [];
    const follower = new RunFollower(client, id, { onItems: found => items.push(...found), holdSeconds: 1 });
    follower.start();
    await follower.finish();
    expect(items.length).toBeGreaterThan(1500);
    expect(JSON.stringify(items.at(-1))).toMatch(/LAST x/);
  });
});

describe('limits.transcript', () => {
  it('takes binary sizes, defaults to 16 MiB and refuses one too small to hold a head and a tail', () => {
    const dir = tempDir();
    expect(parseConfig({}, dir).limits.transcriptBytes).toBe(16 * 1024 ** 2);
    expect(parseConfig({ limits: { transcript: '2MiB' } }, dir).limits.transcriptBytes).toBe(2 * 1024 ** 2);
    expect(() => parseConfig({ limits: { transcript: '1KiB' } }, dir)).toThrow(
      /limits.transcript "1KiB": expected at least 64KiB/
    );
  });
});
