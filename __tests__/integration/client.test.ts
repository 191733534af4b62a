// The client against a real HTTP server on a real port, with faults injected.
import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import {
  AbortError,
  AgentRunClient,
  AuthenticationError,
  ConflictError,
  InvalidRequestError,
  NotFoundError,
  RateLimitError,
  ServerError,
  TimeoutError
} from '../../src/client/index.js';
import { ContractServer } from '../support/contract-server.js';

const KEY = 'test-key-0123456789';
let server: ContractServer;
let client: AgentRunClient;

function makeClient(extra: Partial<ConstructorParameters<typeof AgentRunClient>[0]> = {}) {
  return new AgentRunClient({ baseUrl: server.url, apiKey: KEY, sleep: fastSleep, ...extra });
}
/** Backoff sleeps shortened tenfold so the suite stays quick; the delays asked for are recorded. */
const asked: number[] = [];
const fastSleep = (ms: number) => {
  asked.push(ms);
  return new Promise<void>(resolve => setTimeout(resolve, ms / 10));
};

beforeEach(async () => {
  asked.length = 0;
  server = await new ContractServer().start();
  client = makeClient();
});
afterEach(async () => {
  client.close();
  await server.stop();
});

const body = { prompt: 'Fix the flaky test', config: { environment_id: 'env-1', model_id: 'm' }, title: 'T' };

describe('client against a contract server', () => {
  it('creates, reads, lists and cancels a run', async () => {
    const created = await client.runs.create(body, { idempotencyKey: 'k-1' });
    expect(created.state).toBe('QUEUED');
    const request = server.requests[0]!;
    expect(request.method).toBe('POST');
    expect(request.path).toBe('/api/v1/agent/runs');
    expect(request.headers.authorization).toBe(`Bearer ${KEY}`);
    expect(request.headers['content-type']).toBe('application/json');
    expect(request.headers['idempotency-key']).toBe('k-1');
    expect(JSON.parse(request.body)).toEqual(body);

    const run = await client.runs.get(created.run_id);
    expect(run).toMatchObject({ run_id: created.run_id, state: 'QUEUED', title: 'T', prompt: body.prompt });

    const page = await client.runs.list({ limit: 5 });
    expect(page.runs.map(r => r.run_id)).toEqual([created.run_id]);

    expect(await client.runs.cancel(created.run_id)).toBe(created.run_id);
    expect((await client.runs.get(created.run_id)).state).toBe('CANCELLED');
  });

  it('generates an idempotency key when none is given and reuses it on every retry', async () => {
    server.fault('POST /api/v1/agent/run', { kind: 'status', status: 503 }, 2);
    const created = await client.runs.create(body);
    const keys = server.requests.map(r => r.headers['idempotency-key']);
    expect(keys).toHaveLength(3);
    expect(new Set(keys).size).toBe(1);
    expect(keys[0]).toMatch(/^[0-9a-f-]{36}$/);
    expect(server.runs.size).toBe(1);
    expect(server.runs.has(created.run_id)).toBe(true);
  });

  it('ends with exactly one run when the connection resets after the server stored the create', async () => {
    server.fault('POST /api/v1/agent/run', { kind: 'reset-after' });
    const created = await client.runs.create(body, { idempotencyKey: 'reset-1' });
    expect(server.count('POST', '/api/v1/agent/run')).toBe(2);
    expect(server.runs.size).toBe(1);
    expect([...server.runs.keys()]).toEqual([created.run_id]);
  });

  it('honours Retry-After on 429 and retry-after-ms', async () => {
    server.fault('GET /api/v1/agent/runs', { kind: 'status', status: 429, headers: { 'retry-after': '3' } });
    server.fault('GET /api/v1/agent/runs', {
      kind: 'status',
      status: 429,
      headers: { 'retry-after-ms': '1500' }
    });
    const page = await client.runs.list();
    expect(page.runs).toEqual([]);
    expect(asked).toEqual([3000, 1500]);
  });

  it('retries a burst of 503 and gives up after two retries with a clear error', async () => {
    server.fault(
      'GET /api/v1/agent/runs',
      { kind: 'status', status: 503, body: '{"detail":"overloaded","error_code":"internal_error"}' },
      3
    );
    const error = await client.runs.list().catch(e => e);
    expect(error).toBeInstanceOf(ServerError);
    expect(error.message).toBe(
      '503 from GET /api/v1/agent/runs: the server failed; try again later (internal_error: overloaded)'
    );
    expect(server.count('GET', '/api/v1/agent/runs')).toBe(3);
  });

  it('never retries 401 and says what to do, without the key', async () => {
    const bad = makeClient({ apiKey: 'wrong-key-123' });
    const error = await bad.runs.create(body).catch(e => e);
    bad.close();
    expect(error).toBeInstanceOf(AuthenticationError);
    expect(error.message).toMatch(
      /^401 from POST \/api\/v1\/agent\/runs: the API key was rejected; check the api-key secret/
    );
    expect(error.message).not.toContain('wrong-key-123');
    expect(server.requests).toHaveLength(1);
  });

  it('believes a problem body that says retryable: false, even on 409', async () => {
    server.fault('GET /api/v1/agent/runs', {
      kind: 'status',
      status: 409,
      body: '{"error_code":"run_already_finished","retryable":false,"detail":"done"}'
    });
    await expect(client.runs.list()).rejects.toThrow('409 from GET /api/v1/agent/runs');
    expect(server.count('GET', '/api/v1/agent/runs')).toBe(1);
  });

  it('maps 404 and 422 to their own classes, unretried', async () => {
    await expect(client.runs.get('nope')).rejects.toBeInstanceOf(NotFoundError);
    const error = await client.runs.create({ prompt: 'x', config: {} as never }).catch(e => e);
    expect(error).toBeInstanceOf(InvalidRequestError);
    expect(error.errorCode).toBe('invalid_field');
    expect(error.message).toContain('config.environment_id: expected a string');
    expect(server.requests).toHaveLength(2);
  });

  it('times out a slow answer, then retries it', async () => {
    const run = await client.runs.create(body);
    const quick = makeClient({ timeoutMs: 300 });
    // A delay no test waits out: an answer can only come from the retry after the time-out.
    server.fault('GET /api/v1/agent/runs/', { kind: 'delay', ms: 600_000 });
    expect((await quick.runs.get(run.run_id)).state).toBe('QUEUED');
    server.fault('GET /api/v1/agent/runs/', { kind: 'delay', ms: 600_000 }, 3);
    const error = await quick.runs.get(run.run_id).catch(e => e);
    quick.close();
    expect(error).toBeInstanceOf(TimeoutError);
    expect(error.message).toBe(`GET /api/v1/agent/runs/${run.run_id}: no answer within 0.3 s`);
  });

  it('retries a truncated answer and a reset before any answer', async () => {
    const run = await client.runs.create(body);
    server.fault('GET /api/v1/agent/runs/', { kind: 'truncate' });
    server.fault('GET /api/v1/agent/runs/', { kind: 'reset-before' });
    expect((await client.runs.get(run.run_id)).run_id).toBe(run.run_id);
    expect(server.count('GET', `/api/v1/agent/runs/${run.run_id}`)).toBe(3);
  });

  it('pages through every run with the async iterator', async () => {
    for (let i = 0; i < 7; i++) await client.runs.create({ ...body, prompt: `p${i}` });
    const seen: string[] = [];
    for await (const run of client.runs.iterate({ limit: 3 })) seen.push(run.prompt!);
    expect(seen).toEqual(['p6', 'p5', 'p4', 'p3', 'p2', 'p1', 'p0']);
  });
});

describe('the create path', () => {
  async function legacyServer(): Promise<void> {
    client.close();
    await server.stop();
    server = await new ContractServer({ legacyCreateOnly: true }).start();
    client = makeClient();
  }

  it('falls back to the deprecated POST /agent/run once, and remembers it', async () => {
    await legacyServer();
    const first = await client.runs.create(body, { idempotencyKey: 'legacy-1' });
    const second = await client.runs.create(body, { idempotencyKey: 'legacy-2' });
    expect(server.runs.has(first.run_id) && server.runs.has(second.run_id)).toBe(true);
    expect(server.requests.map(r => `${r.method} ${r.path}`)).toEqual([
      'POST /api/v1/agent/runs',
      'POST /api/v1/agent/run',
      'POST /api/v1/agent/run'
    ]);
    expect(server.requests[1]!.headers['idempotency-key']).toBe('legacy-1');
  });

  it('falls back on 405 and on a 404 without an error code', async () => {
    server.fault('POST /api/v1/agent/runs', { kind: 'status', status: 405, body: '' });
    await client.runs.create(body);
    const other = makeClient();
    server.fault('POST /api/v1/agent/runs', { kind: 'status', status: 404, body: '{"title":"Not Found"}' });
    await other.runs.create(body);
    other.close();
    expect(server.requests.map(r => r.path)).toEqual([
      '/api/v1/agent/runs',
      '/api/v1/agent/run',
      '/api/v1/agent/runs',
      '/api/v1/agent/run'
    ]);
    expect(server.runs.size).toBe(2);
  });

  it('does not fall back on a 404 about the request (environment_not_found)', async () => {
    server.fault('POST /api/v1/agent/runs', {
      kind: 'status',
      status: 404,
      body: '{"error_code":"environment_not_found","detail":"environment \\"env-1\\" does not exist"}'
    });
    const error = await client.runs.create(body).catch(e => e);
    expect(error).toBeInstanceOf(NotFoundError);
    expect(error.errorCode).toBe('environment_not_found');
    expect(server.requests.map(r => r.path)).toEqual(['/api/v1/agent/runs']);
    // Still on the current path afterwards.
    await client.runs.create(body);
    expect(server.requests.at(-1)!.path).toBe('/api/v1/agent/runs');
  });
});

describe('cancel against the production service', () => {
  beforeEach(async () => {
    client.close();
    await server.stop();
    server = await new ContractServer({ cancelStyle: 'service' }).start();
    client = makeClient();
  });

  it('sends the reason in the body', async () => {
    const { run_id } = await client.runs.create(body);
    await client.runs.cancel(run_id, { reason: 'the job was cancelled' });
    const request = server.requests.at(-1)!;
    expect(JSON.parse(request.body)).toEqual({ reason: 'the job was cancelled' });
    expect(server.runs.get(run_id)!.status_message).toBe('cancelled by a client: the job was cancelled');
  });

  it('retries a 409 while the run is PENDING, with backoff, until it can cancel', async () => {
    const { run_id } = await client.runs.create(body);
    server.update(run_id, { state: 'PENDING' });
    setTimeout(() => server.update(run_id, { state: 'INPROGRESS' }), 150);
    expect(await client.runs.cancel(run_id)).toBe(run_id);
    const cancels = server.count('POST', `/api/v1/agent/runs/${run_id}/cancel`);
    expect(cancels).toBeGreaterThanOrEqual(2);
    expect(asked.slice(0, 2)).toEqual([expect.any(Number), expect.any(Number)]);
    expect(asked[1]!).toBeGreaterThan(asked[0]!);
    expect(server.runs.get(run_id)!.state).toBe('CANCELLED');
  });

  it('gives up on a run that stays PENDING after a bounded number of retries', async () => {
    const { run_id } = await client.runs.create(body);
    server.update(run_id, { state: 'PENDING' });
    const error = await client.runs.cancel(run_id, { maxRetries: 3 }).catch(e => e);
    expect(error).toBeInstanceOf(ConflictError);
    expect(server.count('POST', `/api/v1/agent/runs/${run_id}/cancel`)).toBe(4);
  });

  it('does not retry a 409 that says the run already ended', async () => {
    const { run_id } = await client.runs.create(body);
    server.fault(`POST /api/v1/agent/runs/${run_id}/cancel`, {
      kind: 'status',
      status: 409,
      body: '{"error_code":"run_already_finished","detail":"run already ended SUCCEEDED"}'
    });
    const error = await client.runs.cancel(run_id).catch(e => e);
    expect(error).toBeInstanceOf(ConflictError);
    expect(server.count('POST', `/api/v1/agent/runs/${run_id}/cancel`)).toBe(1);
  });

  it('answers 400 for a BLOCKED run, unretried', async () => {
    const { run_id } = await client.runs.create(body);
    server.update(run_id, { state: 'BLOCKED' });
    const error = await client.runs.cancel(run_id).catch(e => e);
    expect(error).toBeInstanceOf(InvalidRequestError);
    expect(error.status).toBe(400);
    expect(server.count('POST', `/api/v1/agent/runs/${run_id}/cancel`)).toBe(1);
  });
});

describe('waitForRun against a contract server', () => {
  it('hears of the end within a fraction of a second when the server holds polls', async () => {
    const { run_id } = await client.runs.create(body);
    server.script(run_id, [
      [1500, { state: 'INPROGRESS', session_link: 'http://x/s' }],
      [3000, { state: 'SUCCEEDED', completed_at: new Date().toISOString() }]
    ]);
    let endedAt = 0;
    server.onCreate = () => {};
    const changes: string[] = [];
    const result = await client.runs.wait(run_id, {
      onStateChange: r => {
        changes.push(r.state);
        if (r.state === 'SUCCEEDED') endedAt = Date.now();
      }
    });
    const updated = Date.parse(String(result.run?.updated_at));
    expect(result.outcome).toBe('terminal');
    expect(changes).toEqual(['QUEUED', 'INPROGRESS', 'SUCCEEDED']);
    expect(endedAt).toBeGreaterThanOrEqual(updated);
    // First read, then one held poll per change: no busy polling (how soon is in bench/).
    const reads = server.requests.filter(
      r => r.method === 'GET' && r.path === `/api/v1/agent/runs/${run_id}`
    );
    expect(reads).toHaveLength(3);
    // This server has no event stream: asked once (404), then the run is read as before.
    expect(server.count('GET', `/api/v1/agent/runs/${run_id}/events`)).toBe(1);
    expect(server.requests.at(-1)!.headers.prefer).toMatch(/^wait=\d+$/);
    expect(server.requests.at(-1)!.headers['if-none-match']).toBeTruthy();
  });

  it('paces itself against a server that ignores Prefer: wait, and reads unknown states and object messages', async () => {
    await server.stop();
    server = await new ContractServer({ supportsWait: false }).start();
    client.close();
    client = makeClient({ sleep: undefined });
    const { run_id } = await client.runs.create(body);
    server.script(run_id, [
      [200, { state: 'WARMING_UP' }],
      [
        1800,
        {
          state: 'ERROR',
          status_message: { message: 'platform failed', error_code: 'internal', retryable: true }
        }
      ]
    ]);
    const unknown: string[] = [];
    const result = await client.runs.wait(run_id, {
      initialDelayMs: 500,
      onUnknownState: s => unknown.push(s)
    });
    expect(result.run).toMatchObject({
      state: 'ERROR',
      status_message: 'platform failed',
      error_code: 'internal',
      retryable: true
    });
    expect(unknown).toEqual(['WARMING_UP']);
    const polls = server.count('GET', `/api/v1/agent/runs/${run_id}`);
    expect(polls).toBeGreaterThanOrEqual(3);
    expect(polls).toBeLessThanOrEqual(6);
  });

  it('stops a held poll at once when aborted', async () => {
    const { run_id } = await client.runs.create(body);
    const controller = new AbortController();
    setTimeout(() => controller.abort(), 1500);
    const started = Date.now();
    const error = await client.runs
      .wait(run_id, { signal: controller.signal, holdSeconds: 60 })
      .catch(e => e);
    expect(error).toBeInstanceOf(AbortError);
    // Stopped by the abort, not by the held poll running out.
    expect(Date.now() - started).toBeLessThan(60_000);
  });

  it('times out at the deadline with the last state', async () => {
    const { run_id } = await client.runs.create(body);
    const result = await client.runs.wait(run_id, { timeoutMs: 2500, holdSeconds: 60 });
    expect(result.outcome).toBe('timed_out');
    expect(result.run?.state).toBe('QUEUED');
    expect(result.elapsedMs).toBeGreaterThanOrEqual(2500);
    // The held poll is cut to the deadline: it does not run its 60 s.
    expect(result.elapsedMs).toBeLessThan(60_000);
  });

  it('lets a RateLimitError through when a server keeps refusing a create', async () => {
    server.fault(
      'POST /api/v1/agent/run',
      { kind: 'status', status: 429, headers: { 'retry-after': '0' } },
      3
    );
    await expect(client.runs.create(body)).rejects.toBeInstanceOf(RateLimitError);
    expect(server.runs.size).toBe(0);
  });
});

describe('create retry budget', () => {
  it('lets one create retry more than the client default, with the same key every time', async () => {
    server.fault('POST /api/v1/agent/run', { kind: 'status', status: 503 }, 4);
    const created = await client.runs.create(body, { idempotencyKey: 'budget-1', maxRetries: 5 });
    expect(server.count('POST', '/api/v1/agent/run')).toBe(5);
    expect(new Set(server.requests.map(r => r.headers['idempotency-key']))).toEqual(new Set(['budget-1']));
    expect(server.runs.has(created.run_id)).toBe(true);
  });
});
