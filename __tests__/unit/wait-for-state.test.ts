// The tests' waitForState (support/wait.ts) against a real server that speaks the run contract:
// by default it ends at any terminal state of src/api, ERROR included (the production service's
// state the executor never sets), and it follows the run with held reads, so it asks again when
// the run changed, not on a clock.

import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { ContractServer } from '../support/contract-server.js';
import { waitForRead, waitForState } from '../support/wait.js';

const KEY = 'test-key-0123456789';
let server: ContractServer;

beforeAll(async () => {
  server = await new ContractServer().start();
});
afterAll(() => server.stop());

async function createRun(): Promise<string> {
  const response = await fetch(`${server.url}/api/v1/agent/run`, {
    method: 'POST',
    headers: { authorization: `Bearer ${KEY}`, 'content-type': 'application/json' },
    body: JSON.stringify({ prompt: 'p', config: { environment_id: 'env' } })
  });
  expect(response.status).toBe(200);
  return ((await response.json()) as { run_id: string }).run_id;
}

describe('waitForState', () => {
  it('ends at ERROR by default, after a handful of held reads rather than a poll per interval', async () => {
    const id = await createRun();
    server.script(id, [
      [300, { state: 'INPROGRESS' }],
      [1500, { state: 'ERROR', status_message: 'infrastructure failed' }]
    ]);
    const run = await waitForState({ on: server, key: KEY, id });
    expect(run).toMatchObject({ state: 'ERROR', status_message: 'infrastructure failed' });
    // The first read, one held read per change (QUEUED → INPROGRESS → ERROR), and at most a few
    // more for a change heard twice: a 50 ms poll over the same 1.5 s would have asked about 30 times.
    expect(server.count('GET', `/api/v1/agent/runs/${id}`)).toBeLessThanOrEqual(5);
  });

  it('waits for a named state and answers its ETag', async () => {
    const id = await createRun();
    server.script(id, [[200, { state: 'INPROGRESS' }]]);
    const { run, etag } = await waitForRead({ on: server, key: KEY, id }, ['INPROGRESS']);
    expect(run.state).toBe('INPROGRESS');
    expect(etag).not.toBe('');
  });

  it('names the run, the states awaited and the last state seen when the time is up', async () => {
    const id = await createRun();
    await expect(
      waitForState({ on: server, key: KEY, id }, ['SUCCEEDED'], { timeoutMs: 1500 })
    ).rejects.toThrow(`waiting for run ${id} to reach SUCCEEDED (last: QUEUED)`);
  });

  it('stops at once on a read the server refuses', async () => {
    await expect(waitForState({ on: server, key: KEY, id: 'no-such-run' })).rejects.toThrow(
      /waiting for run no-such-run: GET answered 404/
    );
  });
});
