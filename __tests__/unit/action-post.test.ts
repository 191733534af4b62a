// The post step with @actions/core mocked, against a real contract server: it cancels only a run
// the main step left unsettled, with a reason, and never fails the job.
import { afterAll, beforeAll, beforeEach, describe, expect, it, jest } from '@jest/globals';
import { createFakeCore } from '../__fixtures__/core.js';
import { ContractServer } from '../support/contract-server.js';

const core = createFakeCore();
jest.unstable_mockModule('@actions/core', () => core);
const { postStep } = await import('../../src/action/post.js');

const KEY = 'test-key-0123456789';
let server: ContractServer;
let inputs: Record<string, string>;

beforeAll(async () => {
  server = await new ContractServer({ apiKey: KEY }).start();
});
afterAll(() => server.stop());
beforeEach(() => {
  inputs = { 'api-key': KEY, 'base-url': server.url };
});

async function queuedRun(): Promise<string> {
  const response = await fetch(`${server.url}/api/v1/agent/runs`, {
    method: 'POST',
    headers: { authorization: `Bearer ${KEY}`, 'content-type': 'application/json' },
    body: JSON.stringify({ prompt: 'p', config: { environment_id: 'env-1' } })
  });
  return ((await response.json()) as { run_id: string }).run_id;
}

describe('post step', () => {
  it('cancels a run the main step did not settle, saying why', async () => {
    const runId = await queuedRun();
    core.reset(inputs, { isPost: 'true', 'run-id': runId });
    await postStep();
    expect(core.record.info).toContain(`Cancelled run ${runId} (the main step did not finish).`);
    expect(core.record.secrets).toEqual([KEY]);
    expect(server.runs.get(runId)).toMatchObject({
      state: 'CANCELLED',
      status_message: 'cancelled by a client: the main step did not finish'
    });
  });

  it('leaves a settled run, a run without id and cancel-on-abort: false alone', async () => {
    const runId = await queuedRun();
    const before = server.requests.length;
    for (const [extra, state] of [
      [{}, { isPost: 'true', 'run-id': runId, settled: 'true' }],
      [{}, { isPost: 'true' }],
      [{ 'cancel-on-abort': 'false' }, { isPost: 'true', 'run-id': runId }]
    ] as const) {
      core.reset({ ...inputs, ...extra }, state);
      await postStep();
      expect(core.record.info).toEqual([]);
    }
    expect(server.requests.length).toBe(before);
    expect(server.runs.get(runId)!.state).toBe('QUEUED');
  });

  it('says a run that already ended needs nothing', async () => {
    const runId = await queuedRun();
    server.update(runId, { state: 'SUCCEEDED' });
    core.reset(inputs, { isPost: 'true', 'run-id': runId });
    await postStep();
    expect(core.record.info).toEqual([`Run ${runId} already ended SUCCEEDED.`]);
    expect(server.count('POST', `/api/v1/agent/runs/${runId}/cancel`)).toBe(0);
  });

  it('warns, never fails, when the service cannot be reached', async () => {
    core.reset({ ...inputs, 'base-url': 'http://127.0.0.1:9' }, { isPost: 'true', 'run-id': 'r-1' });
    await postStep();
    expect(core.record.failures).toEqual([]);
    expect(core.record.warnings[0]).toMatch(
      /^Post step could not check run r-1: GET \/api\/v1\/agent\/runs\/r-1: /
    );
  });
});
