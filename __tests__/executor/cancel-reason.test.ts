// A cancel may say why: `{"reason": "…"}` ends up in the run's status message. The typed client
// against the executor on a real port with a real SQLite file.
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { AgentRunClient } from '../../src/client/index.js';
import { type TestExecutor, startTestExecutor } from '../support/executor.js';
import { waitForState } from '../support/wait.js';

let ex: TestExecutor;
let client: AgentRunClient;
let key: string;

beforeAll(async () => {
  ex = await startTestExecutor();
  key = (await ex.key('team-a', 'personal', 'alice')).raw;
  client = new AgentRunClient({ baseUrl: ex.url, apiKey: key });
});
afterAll(async () => {
  client.close();
  await ex.stop(1000);
});

async function sleepingRun(): Promise<string> {
  const { run_id } = await client.runs.create({
    prompt: '@sim sleep 30',
    config: { environment_id: 'local' }
  });
  return run_id;
}

const settled = (id: string) => waitForState({ on: ex, key, id }, ['CANCELLED']);

describe('cancel with a reason', () => {
  it('puts the reason in the status message', async () => {
    const id = await sleepingRun();
    expect(await client.runs.cancel(id, { reason: 'timeout after 45m' })).toBe(id);
    expect(await settled(id)).toMatchObject({
      status_message: 'cancelled by a client: timeout after 45m',
      error_code: 'cancelled'
    });
  });

  it('keeps the plain message without a body or without a reason', async () => {
    const bare = await sleepingRun();
    await client.runs.cancel(bare);
    expect((await settled(bare)).status_message).toBe('cancelled by a client');
    const empty = await sleepingRun();
    const response = await ex.request(`/api/v1/agent/runs/${empty}/cancel`, {
      method: 'POST',
      key,
      body: '{}'
    });
    expect(response.status).toBe(200);
    expect((await settled(empty)).status_message).toBe('cancelled by a client');
  });

  it('refuses a reason that is not a short string with 422 invalid_field naming reason', async () => {
    const id = await sleepingRun();
    for (const body of [{ reason: 7 }, { reason: 'x'.repeat(501) }, { reason: '  ' }]) {
      const response = await ex.request(`/api/v1/agent/runs/${id}/cancel`, {
        method: 'POST',
        key,
        body: JSON.stringify(body)
      });
      expect(response.status).toBe(422);
      const problem = (await response.json()) as Record<string, unknown>;
      expect(problem).toMatchObject({ error_code: 'invalid_field' });
      expect(problem.detail).toMatch(/^reason: expected a string of 1–500 characters, got /);
    }
    expect((await client.runs.get(id)).state).not.toBe('CANCELLED');
    await client.runs.cancel(id, { reason: 'x'.repeat(500) });
    expect((await settled(id)).status_message).toBe(`cancelled by a client: ${'x'.repeat(500)}`);
  });
});
