// The client by resource (client.runs, client.schedules, …) against the executor on a real port
// with a real SQLite file: each resource method asks the method and path that its endpoint's entry
// in the table gives, the client reaches every endpoint a key may call, a finished run's reads
// answer the same each time, and an id that is not one path segment is refused before any
// request, naming its parameter.
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { ENDPOINTS, ENDPOINT_NAMES, type EndpointName } from '../../src/api/endpoints.js';
import { AgentRunClient, InvalidRequestError, NotFoundError } from '../../src/client/index.js';
import { type Transport, createTransport } from '../../src/client/transport.js';
import { type TestExecutor, startTestExecutor } from '../support/executor.js';

let ex: TestExecutor;
let client: AgentRunClient;
/** Every request the client sent, as `METHOD /path` (the query left out). */
const sent: string[] = [];

beforeAll(async () => {
  ex = await startTestExecutor({ webhooks: { allow_private_networks: true } });
  await ex.scheduler.stop();
  const real = createTransport('client-resources-test');
  const recording: Transport = {
    send: request => {
      sent.push(`${request.method} ${new URL(request.url).pathname}`);
      return real.send(request);
    },
    stream: request => {
      sent.push(`${request.method} ${new URL(request.url).pathname}`);
      return real.stream!(request);
    },
    close: () => real.close()
  };
  const key = (await ex.key('team-resources')).raw;
  client = new AgentRunClient({ baseUrl: ex.url, apiKey: key, transport: recording, maxRetries: 0 });
});
afterAll(async () => {
  client.close();
  await ex.stop(1000);
});

/** The request the table says endpoint `name` is, with its parameters filled in. */
function asked(name: EndpointName, params: Record<string, string> = {}): string {
  const { method, path } = ENDPOINTS[name];
  return `${method} ${path.replace(/\{([a-z_]+)\}/g, (_all, param: string) => params[param]!)}`;
}

describe('each resource method asks its endpoint of the table', () => {
  const reached = new Set<EndpointName>();
  /** Runs `call`, checks it asked endpoint `name` with these parameters, and answers what it answered. */
  async function asking<T>(name: EndpointName, params: Record<string, string>, call: () => Promise<T>) {
    const from = sent.length;
    const answer = await call();
    expect(sent.slice(from)).toContain(asked(name, params));
    reached.add(name);
    return answer;
  }
  /** The same for a call the executor refuses: answers the error. */
  const refused = (name: EndpointName, params: Record<string, string>, call: () => Promise<unknown>) =>
    asking(name, params, () =>
      call().then(
        () => undefined,
        (error: unknown) => error
      )
    );

  it('runs and events', async () => {
    const local = { environment_id: 'local' };
    const { run_id } = await asking('createRun', {}, () =>
      client.runs.create({ prompt: '@sim say hello\n@sim result done', config: local })
    );
    const one = { run_id };
    expect((await asking('getRun', one, () => client.runs.get(run_id))).run_id).toBe(run_id);
    const from = sent.length;
    expect((await client.runs.wait(run_id, { timeoutMs: 120_000 })).run?.state).toBe('SUCCEEDED');
    // The wait follows the run's event stream, or reads it where the stream is not offered.
    const followed = [asked('getRunEvents', one), asked('getRun', one)];
    expect(sent.slice(from).some(line => followed.includes(line))).toBe(true);
    reached.add('getRunEvents');
    expect((await asking('getRun', one, () => client.runs.poll(run_id, {}))).run?.state).toBe('SUCCEEDED');
    expect((await asking('listRuns', {}, () => client.runs.list({ limit: 5 }))).runs[0]?.run_id).toBe(run_id);
    const all: string[] = [];
    await asking('listRuns', {}, async () => {
      for await (const run of client.runs.iterate({ limit: 1 })) all.push(run.run_id);
    });
    expect(all).toContain(run_id);
    const page = await asking('getTranscript', one, () => client.runs.transcript(run_id));
    expect(page?.transcript.events.length).toBeGreaterThan(0);
    expect((await asking('getTranscript', one, () => client.runs.wholeTranscript(run_id)))?.has_more).toBe(
      false
    );
    const conversation = await asking('getConversation', one, () => client.runs.conversation(run_id));
    expect(conversation.steps.length).toBeGreaterThan(0);
    const events = await asking('listEvents', {}, () => client.events.list([run_id]));
    expect(events.events.map(event => event.state)).toContain('SUCCEEDED');
    // A follow-up and a cancel, on a run that is still going.
    const busy = (await client.runs.create({ prompt: '@sim sleep 30', config: local })).run_id;
    const continued = await asking('submitFollowup', { run_id: busy }, () =>
      client.runs.followUp(busy, { message: 'and then stop' })
    );
    expect(continued.state).toMatch(/^(QUEUED|INPROGRESS)$/);
    expect(
      await asking('cancelRun', { run_id: busy }, () => client.runs.cancel(busy, { reason: 'done' }))
    ).toBe(busy);
    expect((await client.runs.wait(busy, { timeoutMs: 120_000 })).run?.state).toBe('CANCELLED');
    const missing = await refused('getArtifact', { artifact_uid: 'no-such-artifact' }, () =>
      client.artifacts.get('no-such-artifact')
    );
    expect(missing).toMatchObject({ errorCode: 'artifact_not_found' });
  });

  it('schedules, environments and models', async () => {
    const settings = { cron_schedule: '0 3 * * *', prompt: '@sim say hi', enabled: true };
    const agent_config = { environment_id: 'local' };
    const created = await asking('createSchedule', {}, () =>
      client.schedules.create({ name: 'Nightly', ...settings, agent_config })
    );
    const one = { schedule_id: created.id };
    expect((await asking('listSchedules', {}, () => client.schedules.list())).map(s => s.id)).toEqual([
      created.id
    ]);
    expect((await asking('getSchedule', one, () => client.schedules.get(created.id))).name).toBe('Nightly');
    const renamed = { name: 'Nightly review', ...settings, agent_config };
    const updated = await asking('updateSchedule', one, () => client.schedules.update(created.id, renamed));
    expect(updated.name).toBe('Nightly review');
    expect((await asking('pauseSchedule', one, () => client.schedules.pause(created.id))).enabled).toBe(
      false
    );
    expect((await asking('resumeSchedule', one, () => client.schedules.resume(created.id))).enabled).toBe(
      true
    );
    await asking('deleteSchedule', one, () => client.schedules.delete(created.id));
    await expect(client.schedules.get(created.id)).rejects.toBeInstanceOf(NotFoundError);
    const environments = await asking('listEnvironments', {}, () => client.environments.list());
    expect(environments.map(environment => environment.id)).toContain('local');
    expect(await asking('listModels', {}, () => client.models.list())).toHaveProperty('environments');
  });

  it('webhooks', async () => {
    const url = 'http://127.0.0.1:9/hook';
    const created = await asking('createWebhook', {}, () => client.webhooks.create({ url }));
    expect(created.secret).toMatch(/^whsec_/);
    const one = { webhook_id: created.id };
    expect((await asking('listWebhooks', {}, () => client.webhooks.list())).map(w => w.id)).toEqual([
      created.id
    ]);
    expect((await asking('getWebhook', one, () => client.webhooks.get(created.id))).url).toBe(url);
    const rotated = await asking('rotateWebhookSecret', one, () => client.webhooks.rotateSecret(created.id));
    expect(rotated.secret).toMatch(/^whsec_/);
    expect(rotated.secret).not.toBe(created.secret);
    expect(await asking('listWebhookDeliveries', one, () => client.webhooks.deliveries(created.id))).toEqual(
      []
    );
    const retry = await refused('retryWebhookDelivery', { ...one, delivery_id: 'no-such-delivery' }, () =>
      client.webhooks.retryDelivery(created.id, 'no-such-delivery')
    );
    expect(retry).toMatchObject({ errorCode: 'not_found' });
    await asking('deleteWebhook', one, () => client.webhooks.delete(created.id));
    expect(await client.webhooks.list()).toEqual([]);
  });

  it('reaches every endpoint a key may call (the deprecated create aside)', () => {
    const keyed = ENDPOINT_NAMES.filter(name => ENDPOINTS[name].auth === 'key' && name !== 'createRunLegacy');
    expect(keyed.filter(name => !reached.has(name))).toEqual([]);
  });
});

describe('a client signed in by a credential function (an OIDC token) instead of a key', () => {
  it('follows a run on its event stream with that credential, as its requests do', async () => {
    const key = (await ex.key('team-credential')).raw;
    const real = createTransport('client-credential-test');
    const streams: number[] = [];
    const transport: Transport = {
      send: request => real.send(request),
      stream: async request => {
        const response = await real.stream!(request);
        streams.push(response.status);
        return response;
      },
      close: () => real.close()
    };
    const signedIn = new AgentRunClient({
      baseUrl: ex.url,
      credential: async () => key,
      transport,
      maxRetries: 0
    });
    try {
      const { run_id } = await signedIn.runs.create({
        prompt: '@sim result done',
        config: { environment_id: 'local' }
      });
      expect((await signedIn.runs.wait(run_id, { timeoutMs: 120_000 })).run?.state).toBe('SUCCEEDED');
      // The stream answered 200: before, it was opened with the (empty) static key and refused with 401.
      expect(streams[0]).toBe(200);
      expect(streams).not.toContain(401);
    } finally {
      signedIn.close();
    }
  });
});

describe('the resource methods that replaced the flat ones', () => {
  it('answer the same when read twice', async () => {
    const { run_id } = await client.runs.create({
      prompt: '@sim say flat',
      config: { environment_id: 'local' }
    });
    expect((await client.runs.wait(run_id, { timeoutMs: 120_000 })).run?.state).toBe('SUCCEEDED');
    expect(await client.runs.get(run_id)).toEqual(await client.runs.get(run_id));
    expect(await client.runs.conversation(run_id)).toEqual(await client.runs.conversation(run_id));
    expect(await client.environments.list()).toEqual(await client.environments.list());
    expect(await client.models.list()).toEqual(await client.models.list());
    expect(await client.schedules.list()).toEqual(await client.schedules.list());
    expect(await client.webhooks.list()).toEqual(await client.webhooks.list());
  });
});

describe('ids in a path', () => {
  it.each([
    ['run id', () => client.runs.get('../runs')],
    ['run id', () => client.runs.cancel('a/b')],
    ['run id', () => client.events.list(['ok', '..'])],
    ['artifact uid', () => client.artifacts.get('..')],
    ['schedule id', () => client.schedules.pause('x/../y')],
    ['webhook id', () => client.webhooks.deliveries('')],
    ['delivery id', () => client.webhooks.retryDelivery('hook-1', '.')]
  ])('a bad %s is refused before any request, naming it', async (what, call) => {
    const before = sent.length;
    const error = await call().then(
      () => undefined,
      (caught: unknown) => caught
    );
    expect(error).toBeInstanceOf(InvalidRequestError);
    expect((error as Error).message).toMatch(new RegExp(`^${what} ".*": expected 1–200 letters`));
    expect(sent.length).toBe(before);
  });
});
