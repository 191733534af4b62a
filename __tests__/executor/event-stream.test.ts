// The event streams, end to end: a real executor on a real port, a third-party EventSource client
// (the `eventsource` package), a proxy that cuts connections as a network would, and raw sockets
// for readers that misbehave. A run's stream resumes after a cut with Last-Event-ID without loss
// or duplicate and ends with `done`; `?after=` starts later; a reader that never reads is cut, not
// buffered; streams are bounded per key and per node (429 with Retry-After); the events cursor
// follows several runs of a team; another team's runs are 404.

import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { rmSync, writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { join } from 'node:path';
import { EventSource } from 'eventsource';
import { EVENT_KINDS } from '../../src/api/events.js';
import { AgentRunClient } from '../../src/client/index.js';
import { type CountingProxy, startCountingProxy } from '../support/counting-proxy.js';
import { eventually } from '../support/eventually.js';
import { type TestExecutor, startTestExecutor, tempDir } from '../support/executor.js';
import { waitForState } from '../support/wait.js';

let ex: TestExecutor;
let dir: string;
let key: string;
let client: AgentRunClient;
let proxy: CountingProxy;

beforeAll(async () => {
  dir = tempDir('event-stream-');
  writeFileSync(join(dir, 'README.md'), 'x\n');
  ex = await startTestExecutor({
    workers: 6,
    limits: { stream_heartbeat: '1s', stream_buffer: '64KiB', max_streams_per_key: 2, max_streams: 8 },
    environments: [
      { id: 'local', source: dir, agent: { kind: 'simulated' } },
      {
        id: 'shell',
        source: dir,
        sandbox: 'off',
        agent: { kind: 'command', command: ['/bin/sh', '-c', '{prompt}'], prompt: 'arg' }
      }
    ]
  });
  key = (await ex.key('team-a')).raw;
  client = new AgentRunClient({ baseUrl: ex.url, apiKey: key });
  proxy = await startCountingProxy(ex.url);
});
afterAll(async () => {
  client?.close();
  await proxy?.close();
  await ex?.stop(1000);
  rmSync(dir, { recursive: true, force: true });
});

const create = async (environment: string, prompt: string, apiKey = key) => {
  const answer = await ex.request('/api/v1/agent/runs', {
    method: 'POST',
    key: apiKey,
    body: JSON.stringify({ prompt, config: { environment_id: environment } })
  });
  expect(answer.status).toBe(200);
  return ((await answer.json()) as { run_id: string }).run_id;
};
const ended = (id: string, apiKey = key) => waitForState({ on: ex, key: apiKey, id });
/** A shell run that waits for its gate file before it ends. */
const gated = (gate: string, before = 'before') =>
  `echo ${before}; while [ ! -e ${gate} ]; do sleep 0.05; done; echo after`;

interface Message {
  id?: string;
  event: string;
  data: string;
}

/** Parses a whole text/event-stream body into its messages (and the comments apart). */
function parse(text: string): { messages: Message[]; comments: number } {
  const messages: Message[] = [];
  let comments = 0;
  for (const block of text.split('\n\n')) {
    const message: Message = { event: 'message', data: '' };
    let data = false;
    for (const line of block.split('\n')) {
      if (line.startsWith(':')) comments++;
      else if (line.startsWith('id: ')) message.id = line.slice(4);
      else if (line.startsWith('event: ')) message.event = line.slice(7);
      else if (line.startsWith('data: ')) {
        message.data = line.slice(6);
        data = true;
      }
    }
    if (data) messages.push(message);
  }
  return { messages, comments };
}

const streamHeaders = (apiKey = key, extra: Record<string, string> = {}) => ({
  key: apiKey,
  headers: { accept: 'text/event-stream', ...extra }
});

describe("a run's event stream", () => {
  it('is followed by an EventSource client, cut mid-run, resumed with Last-Event-ID without loss or duplicate', async () => {
    const gate = join(dir, 'gate-resume');
    const id = await create('shell', gated(gate));
    const authorized: ConstructorParameters<typeof EventSource>[1] = {
      fetch: (url, init) =>
        fetch(url, { ...init, headers: { ...init.headers, authorization: `Bearer ${key}` } })
    };
    const source = new EventSource(`${proxy.url}/api/v1/agent/runs/${id}/events`, authorized);
    const received: { id: string; kind: string; event: Record<string, unknown> }[] = [];
    let cutAfter: string | undefined;
    const done = new Promise<Record<string, unknown>>((resolve, reject) => {
      for (const kind of EVENT_KINDS)
        source.addEventListener(kind, message => {
          const event = JSON.parse(message.data) as Record<string, unknown>;
          received.push({ id: message.lastEventId, kind, event });
          // The first output is in: the network drops the stream, then the run may go on.
          if (cutAfter === undefined && kind === 'output' && String(event.text).includes('before')) {
            cutAfter = message.lastEventId;
            proxy.cut();
            writeFileSync(gate, '');
          }
        });
      source.addEventListener('done', message => resolve(JSON.parse(message.data)));
      source.addEventListener('error', event => {
        if (source.readyState === EventSource.CLOSED)
          reject(new Error(`the stream failed: ${event.message}`));
      });
    });
    const end = await done;
    source.close();
    expect(end).toMatchObject({ run_id: id, state: 'SUCCEEDED' });
    expect(cutAfter).toBeDefined();

    const whole = (await client.runs.wholeTranscript(id))!.events.map(event => event.seq);
    const seqs = received.map(item => Number(item.id));
    expect(seqs).toEqual(whole);
    expect(new Set(seqs).size).toBe(seqs.length);
    expect(received.map(item => item.event.seq)).toEqual(whole);
    expect(received.some(item => item.kind === 'output' && String(item.event.text).includes('after'))).toBe(
      true
    );
    // The state changes are in the stream, the last one with the run's record.
    const states = received.filter(item => item.kind === 'state').map(item => item.event.state);
    expect(states).toEqual(expect.arrayContaining(['INPROGRESS', 'SUCCEEDED']));
    // The reconnect asked for what came after the last event received before the cut.
    const opens = proxy.requests.filter(request => request.url === `/api/v1/agent/runs/${id}/events`);
    expect(opens.length).toBeGreaterThanOrEqual(2);
    expect(opens[0]!.headers['last-event-id']).toBeUndefined();
    expect(opens[1]!.headers['last-event-id']).toBe(cutAfter);
  });

  it('starts after ?after= (or Last-Event-ID), ends with event: done, and answers JSON pages without the Accept header', async () => {
    const id = await create('local', '@sim say one\n@sim say two\n@sim say three\n@sim result done');
    expect((await ended(id)).state).toBe('SUCCEEDED');
    const path = `/api/v1/agent/runs/${id}/events`;

    const all = await ex.request(path, streamHeaders());
    expect(all.status).toBe(200);
    expect(all.headers.get('content-type')).toMatch(/^text\/event-stream/);
    const whole = parse(await all.text()).messages;
    expect(whole.at(-1)).toMatchObject({ event: 'done' });
    const done = JSON.parse(whole.at(-1)!.data) as Record<string, unknown>;
    expect(done).toMatchObject({ run_id: id, state: 'SUCCEEDED', last_seq: Number(whole.at(-2)!.id) });
    expect((done.run as Record<string, unknown>).state).toBe('SUCCEEDED');
    const ids = whole.slice(0, -1).map(message => Number(message.id));
    expect(ids.length).toBeGreaterThan(4);
    for (const message of whole.slice(0, -1)) {
      const event = JSON.parse(message.data) as { seq: number; kind: string };
      expect([event.seq, event.kind]).toEqual([Number(message.id), message.event]);
    }

    const later = parse(await (await ex.request(`${path}?after=${ids[2]}`, streamHeaders())).text()).messages;
    expect(later.slice(0, -1).map(message => Number(message.id))).toEqual(ids.slice(3));
    expect(later.at(-1)!.event).toBe('done');
    const resumed = parse(
      await (
        await ex.request(`${path}?after=1`, streamHeaders(key, { 'last-event-id': String(ids[4]) }))
      ).text()
    ).messages;
    expect(resumed.slice(0, -1).map(message => Number(message.id))).toEqual(ids.slice(5));

    const page = await ex.request(`${path}?after=${ids[0]}&limit=2`, { key });
    expect(page.headers.get('content-type')).toMatch(/^application\/json/);
    expect(await page.json()).toMatchObject({
      run_id: id,
      state: 'SUCCEEDED',
      has_more: true,
      next_after: ids[2],
      events: [{ seq: ids[1] }, { seq: ids[2] }]
    });

    const bad = await ex.request(path, streamHeaders(key, { 'last-event-id': 'yesterday' }));
    expect(bad.status).toBe(400);
    expect(((await bad.json()) as { detail: string }).detail).toMatch(/Last-Event-ID "yesterday": expected/);
  });

  it('sends a comment line when nothing happens for a heartbeat', async () => {
    const gate = join(dir, 'gate-heartbeat');
    const id = await create('shell', gated(gate));
    const closed = new AbortController();
    const answer = await ex.request(`/api/v1/agent/runs/${id}/events`, {
      ...streamHeaders(),
      signal: closed.signal
    });
    const reader = answer.body!.getReader();
    let text = '';
    while (!/\n: keep-alive\n/.test(text)) text += new TextDecoder().decode((await reader.read()).value);
    closed.abort();
    writeFileSync(gate, '');
    expect((await ended(id)).state).toBe('SUCCEEDED');
  });

  it("answers 404 for another team's run, as for a run that does not exist", async () => {
    const other = (await ex.key('team-b')).raw;
    const id = await create('local', '@sim result theirs', other);
    for (const headers of [streamHeaders(key), { key }]) {
      const answer = await ex.request(`/api/v1/agent/runs/${id}/events`, headers);
      expect(answer.status).toBe(404);
      expect(((await answer.json()) as { error_code: string }).error_code).toBe('not_found');
    }
    const own = await ex.request(`/api/v1/agent/runs/${id}/events`, streamHeaders(other));
    expect(own.status).toBe(200);
    await own.text();
  });
});

describe('what a stream may cost', () => {
  it('cuts a reader that never reads instead of buffering for it, and frees its slot', async () => {
    const reader = (await ex.key('team-slow')).raw;
    const big = await create('shell', "head -c 8000000 /dev/zero | tr '\\0' x | fold -w 4000", reader);
    expect((await ended(big, reader)).state).toBe('SUCCEEDED');
    const gate = join(dir, 'gate-slow');
    const held = await create('shell', gated(gate), reader);
    try {
      // One of the key's two slots: a stream that is read.
      const second = new AbortController();
      const open = await ex.request(`/api/v1/agent/runs/${held}/events`, {
        ...streamHeaders(reader),
        signal: second.signal
      });
      expect(open.status).toBe(200);
      // The other: a reader that takes the first chunk of the 8 MB run's stream, then nothing more.
      const { port } = new URL(ex.url);
      const socket = connect(Number(port), '127.0.0.1');
      socket.write(
        `GET /api/v1/agent/runs/${big}/events HTTP/1.1\r\nhost: x\r\naccept: text/event-stream\r\nauthorization: Bearer ${reader}\r\n\r\n`
      );
      let got = '';
      await new Promise(resolve =>
        socket.once('data', chunk => {
          socket.pause();
          got += chunk.toString('latin1');
          resolve(undefined);
        })
      );
      expect(got).toMatch(/^HTTP\/1.1 200/);
      // Both slots are taken until the server cuts the reader that stopped: then a stream opens.
      const probe = async () => {
        const answer = await ex.request(`/api/v1/agent/runs/${held}/events`, streamHeaders(reader));
        await answer.body?.cancel();
        return answer.status === 200;
      };
      await eventually(probe, { what: 'the slow reader cut and its slot free', timeoutMs: 60_000 });
      // What it was sent before the cut stops short of the run's 8 MB, and the stream never ended.
      socket.on('data', chunk => (got += chunk.toString('latin1')));
      socket.resume();
      await new Promise(resolve => socket.once('close', resolve));
      expect(got.length).toBeLessThan(7_000_000);
      expect(got).not.toContain('event: done');
      second.abort();
    } finally {
      writeFileSync(gate, '');
    }
    expect((await ended(held, reader)).state).toBe('SUCCEEDED');
  });

  it('bounds the streams of one key (429 with Retry-After) without starving another key or the node', async () => {
    const attacker = (await ex.key('team-many')).raw;
    const gate = join(dir, 'gate-many');
    const id = await create('shell', gated(gate), attacker);
    const closers: AbortController[] = [];
    let others: { other: string; run: string }[] = [];
    const open = (apiKey: string, run: string) => {
      const closer = new AbortController();
      closers.push(closer);
      return ex.request(`/api/v1/agent/runs/${run}/events`, {
        ...streamHeaders(apiKey),
        signal: closer.signal
      });
    };
    try {
      const answers = await Promise.all(Array.from({ length: 10 }, () => open(attacker, id)));
      const statuses = answers.map(answer => answer.status).sort();
      expect(statuses).toEqual([200, 200, 429, 429, 429, 429, 429, 429, 429, 429]);
      const refusal = answers.find(answer => answer.status === 429)!;
      expect(refusal.headers.get('retry-after')).toBe('5');
      const problem = (await refusal.json()) as { error_code: string; detail: string };
      expect(problem.error_code).toBe('too_many_streams');
      expect(problem.detail).toMatch(/limits\.max_streams_per_key: 2/);

      // Another team still gets its streams, up to the node's bound (8, two of them the attacker's).
      others = await Promise.all(
        ['team-c', 'team-d', 'team-e', 'team-f'].map(async team => {
          const other = (await ex.key(team)).raw;
          const run = await create('shell', gated(gate), other);
          return { other, run };
        })
      );
      const more = await Promise.all(
        others.flatMap(({ other, run }) => [open(other, run), open(other, run)])
      );
      const moreStatuses = more.map(answer => answer.status).sort();
      expect(moreStatuses.filter(status => status === 200)).toHaveLength(6);
      const full = more.find(answer => answer.status === 429)!;
      expect(((await full.json()) as { detail: string }).detail).toMatch(/limits\.max_streams: 8/);
    } finally {
      for (const closer of closers) closer.abort();
      writeFileSync(gate, '');
    }
    await ended(id, attacker);
    for (const { other, run } of others) await ended(run, other);
  });
});

describe('the events cursor', () => {
  it("follows the changes of state of two runs on one cursor, in pages, and 404s another team's run", async () => {
    const first = await create('local', '@sim result one');
    const second = await create('local', '@sim fail on purpose');
    await ended(first);
    await ended(second);
    const read = async (query: string) => {
      const answer = await ex.request(`/api/v1/agent/events?${query}`, { key });
      expect(answer.status).toBe(200);
      return (await answer.json()) as {
        events: { sequence: number; run_id: string; type: string; state: string; timestamp: string }[];
        next_since: number;
      };
    };
    const page = await read(`run_ids=${first},${second}`);
    const types = (run: string) => page.events.filter(event => event.run_id === run).map(event => event.type);
    expect(types(first)).toEqual(['run_in_progress', 'run_succeeded']);
    expect(types(second)).toEqual(['run_in_progress', 'run_failed']);
    const sequences = page.events.map(event => event.sequence);
    expect([...sequences].sort((a, b) => a - b)).toEqual(sequences);
    expect(page.next_since).toBe(sequences.at(-1));
    expect(page.events[0]).toMatchObject({ state: 'INPROGRESS', event_type: 'run_in_progress' });
    expect(Date.parse(page.events[0]!.timestamp)).not.toBeNaN();

    // Repeated run_ids work too; pages of one go on from next_since to the end.
    const walked: number[] = [];
    for (let since = 0; ;) {
      const one = await read(`run_ids=${first}&run_ids=${second}&since=${since}&limit=1`);
      if (one.events.length === 0) {
        expect(one.next_since).toBe(since);
        break;
      }
      walked.push(one.events[0]!.sequence);
      since = one.next_since;
    }
    expect(walked).toEqual(sequences);

    const stream = await ex.request(
      `/api/v1/agent/events?run_ids=${first},${second}&since=${sequences[0]}`,
      streamHeaders()
    );
    const messages = parse(await stream.text()).messages;
    expect(messages.slice(0, -1).map(message => [Number(message.id), message.event])).toEqual(
      page.events.slice(1).map(event => [event.sequence, event.type])
    );
    expect(messages.at(-1)).toMatchObject({ event: 'done' });

    const other = (await ex.key('team-b')).raw;
    const theirs = await create('local', '@sim result theirs', other);
    const hidden = await ex.request(`/api/v1/agent/events?run_ids=${first},${theirs}`, { key });
    expect(hidden.status).toBe(404);
    expect(((await hidden.json()) as { detail: string }).detail).toContain(theirs);

    for (const [query, words] of [
      [`run_ids=${first}&limit=501`, /limit.*501.*1 to 500/],
      [`run_ids=${first}&since=soon`, /since.*soon.*expected/],
      ['run_ids=', /run_ids: expected at least one run id/],
      [
        `run_ids=${Array.from({ length: 101 }, (_, n) => `r${n}`).join(',')}`,
        /101 runs; expected at most 100/
      ]
    ] as const) {
      const answer = await ex.request(`/api/v1/agent/events?${query}`, { key });
      expect(answer.status).toBe(400);
      expect(((await answer.json()) as { detail: string }).detail).toMatch(words);
    }
  });
});
