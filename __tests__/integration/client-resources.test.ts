// The client by resource (client.runs, client.schedules, …) against the executor on a real port
// with a real SQLite file: each resource method asks the method and path that its endpoint's entry
// in the table gives, the client reaches every endpoint a key may call, the flat methods of earlier
// versions answer as the resource methods do, and an id that is not one path segment is refused
// before any request, naming its parameter.
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

/** Runs `call` and answers the requests it sent. */
async function requestsOf(call: () => Promise<unknown>): Promise<string[]> {
  const from = sent.length;
  await call();
  return sent.slice(from);
}

describe('each resource method asks its endpoint of the table', () => {
  const reached = new Set<EndpointName>();
  const expectAsked = async (call: () => Promise<unknown>, name: EndpointName, params = {}) => {
    expect(await requestsOf(call)).toContain(asked(name, params));
    reached.add(name);
  };

  it('runs and events', async () => {
    const body = { prompt: '@sim say hello\n@sim result done', config: { environment_id: 'local' } };
    let runId = '';
    await expectAsked(async () => ({ run_id: runId } = await client.runs.create(body)), 'createRun');
    const run_id = runId;
    await expectAsked(async () => expect((await client.runs.get(run_id)).run_id).toBe(run_id), 'getRun', {
      run_id
    });
    const waited = await requestsOf(async () => {
      expect((await client.runs.wait(run_id, { timeoutMs: 120_000 })).run?.state).toBe('SUCCEEDED');
    });
    // The wait follows the run's event stream, or reads it where the stream is not offered.
    expect(
      waited.some(line => [asked('getRunEvents', { run_id }), asked('getRun', { run_id })].includes(line))
    ).toBe(true);
    reached.add('getRunEvents');
    await expectAsked(
      async () => expect((await client.runs.poll(run_id, {})).run?.state).toBe('SUCCEEDED'),
      'getRun',
      { run_id }
    );
    await expectAsked(
      async () => expect((await client.runs.list({ limit: 5 })).runs.map(r => r.run_id)).toContain(run_id),
      'listRuns'
    );
    await expectAsked(async () => {
      const all: string[] = [];
      for await (const run of client.runs.iterate({ limit: 1 })) all.push(run.run_id);
      expect(all).toContain(run_id);
    }, 'listRuns');
    await expectAsked(
      async () => expect((await client.runs.transcript(run_id))?.transcript.events.length).toBeGreaterThan(0),
      'getTranscript',
      { run_id }
    );
    await expectAsked(
      async () => expect((await client.runs.wholeTranscript(run_id))?.has_more).toBe(false),
      'getTranscript',
      { run_id }
    );
    await expectAsked(
      async () => expect((await client.runs.conversation(run_id)).steps.length).toBeGreaterThan(0),
      'getConversation',
      { run_id }
    );
    await expectAsked(
      async () =>
        expect((await client.events.list([run_id])).events.map(e => e.state)).toContain('SUCCEEDED'),
      'listEvents'
    );
    // A follow-up and a cancel, on a run that is still going.
    const busy = (await client.runs.create({ prompt: '@sim sleep 30', config: { environment_id: 'local' } }))
      .run_id;
    await expectAsked(
      async () =>
        expect((await client.runs.followUp(busy, { message: 'and then stop' })).state).toMatch(
          /^(QUEUED|INPROGRESS)$/
        ),
      'submitFollowup',
      { run_id: busy }
    );
    await expectAsked(
      async () => expect(await client.runs.cancel(busy, { reason: 'done with it' })).toBe(busy),
      'cancelRun',
      { run_id: busy }
    );
    expect((await client.runs.wait(busy, { timeoutMs: 120_000 })).run?.state).toBe('CANCELLED');
    await expectAsked(
      () =>
        expect(client.artifacts.get('no-such-artifact')).rejects.toMatchObject({
          errorCode: 'artifact_not_found'
        }),
      'getArtifact',
      { artifact_uid: 'no-such-artifact' }
    );
  });

  it('schedules, environments and models', async () => {
    const agent_config = { environment_id: 'local' };
    let id = '';
    await expectAsked(async () => {
      id = (
        await client.schedules.create({
          name: 'Nightly',
          cron_schedule: '0 3 * * *',
          prompt: '@sim say hi',
          enabled: true,
          agent_config
        })
      ).id;
    }, 'createSchedule');
    const schedule_id = id;
    await expectAsked(
      async () => expect((await client.schedules.list()).map(s => s.id)).toEqual([schedule_id]),
      'listSchedules'
    );
    await expectAsked(
      async () => expect((await client.schedules.get(schedule_id)).name).toBe('Nightly'),
      'getSchedule',
      { schedule_id }
    );
    await expectAsked(
      async () =>
        expect(
          (
            await client.schedules.update(schedule_id, {
              name: 'Nightly review',
              cron_schedule: '0 4 * * *',
              prompt: '@sim say hi',
              enabled: true,
              agent_config
            })
          ).name
        ).toBe('Nightly review'),
      'updateSchedule',
      { schedule_id }
    );
    await expectAsked(
      async () => expect((await client.schedules.pause(schedule_id)).enabled).toBe(false),
      'pauseSchedule',
      { schedule_id }
    );
    await expectAsked(
      async () => expect((await client.schedules.resume(schedule_id)).enabled).toBe(true),
      'resumeSchedule',
      { schedule_id }
    );
    await expectAsked(() => client.schedules.delete(schedule_id), 'deleteSchedule', { schedule_id });
    await expect(client.schedules.get(schedule_id)).rejects.toBeInstanceOf(NotFoundError);
    await expectAsked(
      async () => expect((await client.environments.list()).map(e => e.id)).toContain('local'),
      'listEnvironments'
    );
    await expectAsked(
      async () => expect(await client.models.list()).toHaveProperty('environments'),
      'listModels'
    );
  });

  it('webhooks', async () => {
    let id = '';
    await expectAsked(async () => {
      const created = await client.webhooks.create({ url: 'http://127.0.0.1:9/hook' });
      expect(created.secret).toMatch(/^whsec_/);
      id = created.id;
    }, 'createWebhook');
    const webhook_id = id;
    await expectAsked(
      async () => expect((await client.webhooks.list()).map(w => w.id)).toEqual([webhook_id]),
      'listWebhooks'
    );
    await expectAsked(
      async () => expect((await client.webhooks.get(webhook_id)).url).toBe('http://127.0.0.1:9/hook'),
      'getWebhook',
      { webhook_id }
    );
    await expectAsked(
      async () => expect((await client.webhooks.rotateSecret(webhook_id)).secret).toMatch(/^whsec_/),
      'rotateWebhookSecret',
      { webhook_id }
    );
    await expectAsked(
      async () => expect(await client.webhooks.deliveries(webhook_id)).toEqual([]),
      'listWebhookDeliveries',
      { webhook_id }
    );
    await expectAsked(
      () =>
        expect(client.webhooks.retryDelivery(webhook_id, 'no-such-delivery')).rejects.toMatchObject({
          errorCode: 'not_found'
        }),
      'retryWebhookDelivery',
      { webhook_id, delivery_id: 'no-such-delivery' }
    );
    await expectAsked(() => client.webhooks.delete(webhook_id), 'deleteWebhook', { webhook_id });
    expect(await client.webhooks.list()).toEqual([]);
  });

  it('reaches every endpoint a key may call (the deprecated create aside)', () => {
    const keyed = ENDPOINT_NAMES.filter(name => ENDPOINTS[name].auth === 'key' && name !== 'createRunLegacy');
    expect(keyed.filter(name => !reached.has(name))).toEqual([]);
  });
});

describe('the flat methods of earlier versions', () => {
  it('answer as the resource methods they delegate to', async () => {
    const { run_id } = await client.createRun({
      prompt: '@sim say flat',
      config: { environment_id: 'local' }
    });
    expect((await client.waitForRun(run_id, { timeoutMs: 120_000 })).run?.state).toBe('SUCCEEDED');
    expect(await client.getRun(run_id)).toEqual(await client.runs.get(run_id));
    expect(await client.getConversation(run_id)).toEqual(await client.runs.conversation(run_id));
    expect(await client.listEnvironments()).toEqual(await client.environments.list());
    expect(await client.listModels()).toEqual(await client.models.list());
    expect(await client.listSchedules()).toEqual(await client.schedules.list());
    expect(await client.listWebhooks()).toEqual(await client.webhooks.list());
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
