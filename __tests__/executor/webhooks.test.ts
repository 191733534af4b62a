// Webhooks by the Standard Webhooks specification: a team's endpoints get each change of its runs,
// signed, and a receiver verifying with the `standardwebhooks` package from npm accepts them. The
// executor on a real port with a real SQLite file (or PostgreSQL with
// AGENT_EXECUTOR_TEST_STORE=postgres), receivers on real ports; retries run on a compressed
// webhooks.retry_schedule. Hostile receivers (slow, huge answers, redirects, names that resolve to
// loopback) are in the last block.
import { afterAll, beforeAll, beforeEach, describe, expect, it } from '@jest/globals';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { eventually } from '../support/eventually.js';
import { type TestExecutor, startTestExecutor } from '../support/executor.js';
import { type Receiver, startReceiver } from '../support/webhook-receiver.js';
import { waitForState } from '../support/wait.js';

let ex: TestExecutor;
let key: string;
let otherKey: string;
const receivers: Receiver[] = [];

const SETTINGS = {
  allow_private_networks: true,
  retry_schedule: ['1s', '1s', '1s', '1s'],
  timeout: '2s',
  max_endpoints_per_team: 50
};

beforeAll(async () => {
  ex = await startTestExecutor({ workers: 2, webhooks: SETTINGS });
  otherKey = (await ex.key('team-other')).raw;
});
// Each test has a team of its own: a run of an earlier test that still ends sends nothing to this
// test's endpoints.
let teams = 0;
beforeEach(async () => {
  key = (await ex.key(`team-hooks-${++teams}`)).raw;
});
afterAll(async () => {
  await ex.stop(1000);
  for (const receiver of receivers) await receiver.close();
});

async function api(
  path: string,
  init: { method?: string; body?: unknown; key?: string } = {}
): Promise<{ status: number; body: Record<string, unknown> }> {
  const response = await ex.request(path, {
    method: init.method ?? (init.body === undefined ? 'GET' : 'POST'),
    key: init.key ?? key,
    body: init.body === undefined ? undefined : JSON.stringify(init.body)
  });
  const text = await response.text();
  return { status: response.status, body: text ? (JSON.parse(text) as Record<string, unknown>) : {} };
}

async function receiver(answer?: Receiver['answer']): Promise<Receiver> {
  const made = await startReceiver(answer);
  receivers.push(made);
  return made;
}

/** An endpoint for the receiver; its secret is given to the receiver's verifier. */
async function endpoint(to: Receiver, extra: Record<string, unknown> = {}, as = key) {
  const created = await api('/api/v1/agent/webhooks', { body: { url: to.url, ...extra }, key: as });
  expect(created.status).toBe(200);
  to.secrets.push(created.body.secret as string);
  return created.body as { id: string; secret: string; events: string[] };
}

async function run(prompt: string, as = key): Promise<string> {
  const created = await api('/api/v1/agent/runs', {
    body: { prompt, config: { environment_id: 'local' } },
    key: as
  });
  expect(created.status).toBe(200);
  const id = created.body.run_id as string;
  await waitForState({ on: ex, key: as, id });
  return id;
}

type Delivery = {
  id: string;
  event_type: string;
  run_id: string;
  status: string;
  attempts: number;
  last_status: number | null;
  last_error: string | null;
};

async function deliveries(webhookId: string, as = key): Promise<Delivery[]> {
  const listed = await api(`/api/v1/agent/webhooks/${webhookId}/deliveries`, { key: as });
  expect(listed.status).toBe(200);
  return listed.body.deliveries as Delivery[];
}

/** The endpoint's deliveries of a run, once none of them is pending. */
async function settled(webhookId: string, runId: string, count: number): Promise<Delivery[]> {
  return eventually(
    async () => {
      const of = (await deliveries(webhookId)).filter(d => d.run_id === runId);
      return of.length === count && of.every(d => d.status !== 'pending') ? of : undefined;
    },
    { what: `${count} settled deliveries of ${runId}`, timeoutMs: 30_000 }
  );
}

describe('delivery', () => {
  it('each state change of a run reaches every endpoint exactly once, signed so a Standard Webhooks verifier accepts it', async () => {
    const all = await receiver();
    const ends = await receiver();
    const everything = await endpoint(all, { description: 'all events' });
    const onlyEnds = await endpoint(ends, { events: ['run.succeeded', 'run.failed'] });
    expect(everything.secret).toMatch(/^whsec_[A-Za-z0-9+/]+=*$/);
    expect(onlyEnds.events).toEqual(['run.succeeded', 'run.failed']);

    const id = await run('@sim result all good');
    await settled(everything.id, id, 3);
    await settled(onlyEnds.id, id, 1);

    const mine = all.received.filter(r => (r.verified?.data as { run_id?: string })?.run_id === id);
    expect(mine.map(r => r.verified?.type).sort()).toEqual([
      'run.in_progress',
      'run.queued',
      'run.succeeded'
    ]);
    expect(all.received.every(r => r.verified !== undefined)).toBe(true);
    // exactly once: one request per delivery id, each answered 200 once
    expect(new Set(mine.map(r => r.headers['webhook-id'])).size).toBe(3);
    const started = mine.find(r => r.verified?.type === 'run.in_progress')!;
    expect(started.verified!.data).toMatchObject({
      run_id: id,
      state: 'INPROGRESS',
      previous_state: 'QUEUED',
      environment_id: 'local'
    });
    expect(typeof (started.verified!.data as Record<string, unknown>).session_link).toBe('string');
    const done = mine.find(r => r.verified?.type === 'run.succeeded')!;
    expect(done.verified!.data).toMatchObject({ state: 'SUCCEEDED', previous_state: 'INPROGRESS' });
    expect(done.headers['content-type']).toBe('application/json');
    expect(done.headers['user-agent']).toMatch(/agent-executor/);
    expect(Buffer.byteLength(done.body)).toBeLessThan(20 * 1024);
    // the filtered endpoint got the end alone
    expect(ends.received.map(r => r.verified?.type)).toEqual(['run.succeeded']);
  }, 120_000);

  it('a receiver answering 500 twice then 200 gets the same delivery retried until it takes it', async () => {
    const flaky = await receiver((_request, index) => ({ status: index < 2 ? 500 : 200 }));
    const hook = await endpoint(flaky, { events: ['run.succeeded'] });
    const id = await run('@sim result retried');
    const [delivery] = await settled(hook.id, id, 1);
    expect(delivery).toMatchObject({ status: 'succeeded', attempts: 3, last_status: 200 });
    expect(flaky.received).toHaveLength(3);
    expect(new Set(flaky.received.map(r => r.headers['webhook-id']))).toEqual(new Set([delivery!.id]));
    expect(flaky.received.every(r => r.verified?.type === 'run.succeeded')).toBe(true);
  }, 120_000);

  it('a delivery that runs out of retries is failed, and POST …/retry sends it once more', async () => {
    let accept = false;
    const down = await receiver(() => ({ status: accept ? 204 : 503 }));
    const hook = await endpoint(down, { events: ['run.failed'] });
    const id = await run('@sim fail on purpose');
    const [failed] = await settled(hook.id, id, 1);
    expect(failed).toMatchObject({ status: 'failed', attempts: 5, last_status: 503 });
    accept = true;
    const retried = await api(`/api/v1/agent/webhooks/${hook.id}/deliveries/${failed!.id}/retry`, {
      body: {}
    });
    expect(retried.status).toBe(200);
    const [delivered] = await eventually(
      async () => {
        const of = (await deliveries(hook.id)).filter(d => d.run_id === id);
        return of[0]?.status === 'succeeded' ? of : undefined;
      },
      { what: 'the retried delivery', timeoutMs: 30_000 }
    );
    expect(delivered).toMatchObject({ attempts: 6, last_status: 204 });
  }, 120_000);

  it('410 Gone disables the endpoint: its record says so and later runs send it nothing', async () => {
    const gone = await receiver(() => ({ status: 410 }));
    const hook = await endpoint(gone, { events: ['run.succeeded'] });
    const first = await run('@sim result first');
    const [delivery] = await settled(hook.id, first, 1);
    expect(delivery).toMatchObject({ status: 'failed', attempts: 1, last_status: 410 });
    const record = await api(`/api/v1/agent/webhooks/${hook.id}`);
    expect(record.body.disabled_at).toEqual(expect.any(String));
    expect(record.body.disabled_reason).toMatch(/410/);
    const second = await run('@sim result second');
    expect((await deliveries(hook.id)).filter(d => d.run_id === second)).toEqual([]);
    expect(gone.received).toHaveLength(1);
  }, 120_000);

  it('a follow-up accepted is sent as run.followup', async () => {
    const got = await receiver();
    const hook = await endpoint(got, { events: ['run.followup'] });
    const id = await run('@sim result first turn');
    const followup = await api(`/api/v1/agent/runs/${id}/followups`, {
      body: { message: '@sim result again' }
    });
    expect(followup.status).toBe(200);
    await waitForState({ on: ex, key, id });
    await settled(hook.id, id, 1);
    expect(got.received.map(r => r.verified?.type)).toEqual(['run.followup']);
  }, 120_000);
});

describe('rotation', () => {
  it('sends two signatures during the grace period, each verifiable on its own', async () => {
    const got = await receiver();
    const hook = await endpoint(got, { events: ['run.succeeded'] });
    const rotated = await api(`/api/v1/agent/webhooks/${hook.id}/rotate`, { body: {} });
    expect(rotated.status).toBe(200);
    const fresh = rotated.body.secret as string;
    expect(fresh).toMatch(/^whsec_/);
    expect(fresh).not.toBe(hook.secret);
    const id = await run('@sim result rotated');
    await settled(hook.id, id, 1);
    const [request] = got.received;
    expect(String(request!.headers['webhook-signature']).split(' ')).toHaveLength(2);
    expect(got.verifiedWith(fresh, request!)).toBe(true);
    expect(got.verifiedWith(hook.secret, request!)).toBe(true);
    // the secret is shown on create and rotate only
    const read = await api(`/api/v1/agent/webhooks/${hook.id}`);
    expect(JSON.stringify(read.body)).not.toContain(fresh.slice(6));
    const listed = await api('/api/v1/agent/webhooks');
    expect(JSON.stringify(listed.body)).not.toContain(fresh.slice(6));
  }, 120_000);
});

describe('teams and input', () => {
  it("another team's webhook answers 404 on every endpoint, and its runs send nothing to it", async () => {
    const got = await receiver();
    const hook = await endpoint(got);
    const base = `/api/v1/agent/webhooks/${hook.id}`;
    for (const [path, method] of [
      [base, 'GET'],
      [base, 'DELETE'],
      [`${base}/rotate`, 'POST'],
      [`${base}/deliveries`, 'GET'],
      [`${base}/deliveries/msg_x/retry`, 'POST']
    ] as const) {
      const answer = await api(path, { method, key: otherKey, body: method === 'POST' ? {} : undefined });
      expect([path, method, answer.status, answer.body.error_code]).toEqual([path, method, 404, 'not_found']);
    }
    expect((await api('/api/v1/agent/webhooks', { key: otherKey })).body.webhooks).toEqual([]);
    await run('@sim result theirs', otherKey);
    expect(await deliveries(hook.id)).toEqual([]);
    // still there for its own team
    expect((await api(base)).status).toBe(200);
    expect((await api(base, { method: 'DELETE' })).body).toEqual({ success: true });
    expect((await api(base)).status).toBe(404);
  }, 120_000);

  it('refuses bad bodies naming the field and the expected form', async () => {
    const cases: [unknown, RegExp][] = [
      [{ url: 'ftp://example.com/x' }, /scheme ftp .*expected http or https/],
      [{ url: 'not a url' }, /not a URL; expected an http or https URL/],
      [{ url: 'http://127.0.0.1:1/x', events: ['run.exploded'] }, /events/],
      [{ url: 'https://user:pw@example.com/' }, /credentials/]
    ];
    for (const [body, detail] of cases) {
      const answer = await api('/api/v1/agent/webhooks', { body });
      expect([answer.status, answer.body.detail]).toEqual([
        expect.any(Number),
        expect.stringMatching(detail)
      ]);
      expect([400, 422]).toContain(answer.status);
    }
  });

  it('bounds the endpoints of a team (webhooks.max_endpoints_per_team)', async () => {
    const small = await startTestExecutor({ webhooks: { ...SETTINGS, max_endpoints_per_team: 2 } });
    try {
      const own = (await small.key('team-small')).raw;
      const make = () =>
        small.request('/api/v1/agent/webhooks', {
          method: 'POST',
          key: own,
          body: JSON.stringify({ url: 'http://127.0.0.1:9/x' })
        });
      expect((await make()).status).toBe(200);
      expect((await make()).status).toBe(200);
      const third = await make();
      expect(third.status).toBe(409);
      expect(((await third.json()) as { error_code: string }).error_code).toBe('webhook_limit_reached');
    } finally {
      await small.stop(500);
    }
  });
});

describe('hostile receivers', () => {
  it('a receiver that never answers times out and holds nothing: another endpoint of the team is served meanwhile', async () => {
    const slow = await receiver(() => 'hang');
    const quick = await receiver();
    const stuck = await endpoint(slow, { events: ['run.succeeded'] });
    const served = await endpoint(quick, { events: ['run.succeeded'] });
    const id = await run('@sim result slow one');
    await settled(served.id, id, 1);
    expect(quick.received).toHaveLength(1);
    const attempt = await eventually(
      async () => (await deliveries(stuck.id)).find(d => d.run_id === id && d.attempts >= 1 && d.last_error),
      { what: 'the timed-out attempt', timeoutMs: 30_000 }
    );
    expect(attempt.last_error).toMatch(/no answer within 2000 ms/);
    expect(attempt.last_status).toBeNull();
  }, 120_000);

  it('a redirect is not followed, not even to an address of this machine', async () => {
    const target = await receiver();
    const redirecting = await receiver(() => ({ status: 302, headers: { location: target.url } }));
    const hook = await endpoint(redirecting, { events: ['run.succeeded'] });
    const id = await run('@sim result redirected');
    const attempt = await eventually(
      async () => (await deliveries(hook.id)).find(d => d.run_id === id && d.last_status === 302),
      { what: 'the redirected attempt', timeoutMs: 30_000 }
    );
    expect(attempt.last_error).toMatch(/redirects are not followed/);
    expect(target.received).toEqual([]);
  }, 120_000);

  it('a huge answer is not read: the attempt counts by its status and the connection is closed', async () => {
    let closed = false;
    let sent = 0;
    const huge = createServer((request, response) => {
      request.resume();
      response.writeHead(200, { 'content-type': 'application/octet-stream' });
      const chunk = Buffer.alloc(64 * 1024, 120);
      const pump = () => {
        while (!closed && sent < 1024 ** 3) {
          sent += chunk.length;
          if (!response.write(chunk)) return void response.once('drain', pump);
        }
        response.end();
      };
      response.on('close', () => (closed = true));
      pump();
    });
    await new Promise<void>(resolve => huge.listen(0, '127.0.0.1', resolve));
    try {
      const url = `http://127.0.0.1:${(huge.address() as AddressInfo).port}/`;
      const created = await api('/api/v1/agent/webhooks', { body: { url, events: ['run.succeeded'] } });
      expect(created.status).toBe(200);
      const id = await run('@sim result huge');
      const [delivery] = await settled(created.body.id as string, id, 1);
      expect(delivery).toMatchObject({ status: 'succeeded', last_status: 200 });
      await eventually(() => closed, { what: 'the receiver’s connection closed' });
      expect(sent).toBeLessThan(1024 ** 3);
    } finally {
      huge.closeAllConnections();
      await new Promise(resolve => huge.close(resolve));
    }
  }, 120_000);
});

describe('without webhooks.allow_private_networks', () => {
  it('refuses loopback, private and metadata URLs on create, and a declared name that resolves to 127.0.0.1 at delivery', async () => {
    const local = await receiver();
    process.env.TEST_DECLARED_WEBHOOK_SECRET = 'whsec_' + Buffer.alloc(24, 7).toString('base64');
    const strict = await startTestExecutor({
      webhooks: {
        retry_schedule: [],
        endpoints: [
          {
            team: 'team-strict',
            url: `http://localhost:${local.port}/declared`,
            secret_env: 'TEST_DECLARED_WEBHOOK_SECRET',
            events: ['run.succeeded']
          }
        ]
      }
    });
    try {
      const own = (await strict.key('team-strict')).raw;
      const call = async (path: string, init: { method?: string; body?: unknown } = {}) => {
        const response = await strict.request(path, {
          method: init.method ?? (init.body === undefined ? 'GET' : 'POST'),
          key: own,
          body: init.body === undefined ? undefined : JSON.stringify(init.body)
        });
        return { status: response.status, body: (await response.json()) as Record<string, unknown> };
      };
      for (const url of [
        local.url,
        `http://localhost:${local.port}/hooks`,
        'http://[::1]:9/x',
        'http://[::ffff:127.0.0.1]:9/x',
        'http://10.1.2.3/x',
        'http://169.254.169.254/latest/meta-data/'
      ]) {
        const answer = await call('/api/v1/agent/webhooks', { body: { url } });
        expect([url, answer.status, answer.body.error_code]).toEqual([url, 422, 'invalid_field']);
        expect(answer.body.detail).toMatch(/not public .*allow_private_networks/);
      }
      // the operator's endpoint is listed, read-only
      const [declared] = (await call('/api/v1/agent/webhooks')).body.webhooks as {
        id: string;
        source: string;
      }[];
      expect(declared).toMatchObject({ source: 'config' });
      const removal = await call(`/api/v1/agent/webhooks/${declared!.id}`, { method: 'DELETE' });
      expect([removal.status, removal.body.error_code]).toEqual([409, 'webhook_declared_in_config']);
      // its name resolves to loopback when a delivery is attempted: refused, nothing sent
      const created = await call('/api/v1/agent/runs', {
        body: { prompt: '@sim result strict', config: { environment_id: 'local' } }
      });
      const id = created.body.run_id as string;
      await waitForState({ on: strict, key: own, id });
      const refused = await eventually(
        async () => {
          const listed = (await call(`/api/v1/agent/webhooks/${declared!.id}/deliveries`)).body
            .deliveries as Delivery[];
          return listed.find(d => d.run_id === id && d.status === 'failed');
        },
        { what: 'the refused delivery', timeoutMs: 30_000 }
      );
      expect(refused.last_error).toMatch(
        /refused: localhost resolves only to addresses that are not public \(127\.0\.0\.1/
      );
      expect(local.received).toEqual([]);
    } finally {
      delete process.env.TEST_DECLARED_WEBHOOK_SECRET;
      await strict.stop(500);
    }
  }, 120_000);
});
