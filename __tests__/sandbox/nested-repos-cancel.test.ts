// Adopted from the review of the post-run git (issue 21): a run whose nested `.git/HEAD` is a FIFO blocks the
// executor's `git add --all` (which runs outside the sandbox with no time limit) for good. Even
// after the run is cancelled, its worker never comes back: on a one-worker executor the next run
// stays queued. A failing test here is a finding of the review.

import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { TERMINAL_STATES } from '../../src/api/index.js';
import { waitForState } from '../support/wait.js';
import { join } from 'node:path';
import { type TestExecutor, startTestExecutor, tempDir } from '../support/executor.js';
import { createRun, releaseFifo, requireBubblewrap, transcript } from './support.js';

let ex: TestExecutor;
let key: string;

beforeAll(async () => {
  requireBubblewrap();
  const source = tempDir('review-hang-source-');
  const agent = { kind: 'command', command: ['/bin/sh', '-c', 'cat > /tmp/a.sh && sh -e /tmp/a.sh'] };
  ex = await startTestExecutor({ workers: 1, environments: [{ id: 'plain', source, agent }] });
  key = (await ex.key()).raw;
}, 120_000);

afterAll(() => ex?.stop(1000), 120_000);

describe('a run that blocks the post-run git on a FIFO', () => {
  it('once cancelled, leaves its worker free for the next run', async () => {
    const id = await createRun(ex, key, 'plain', 'mkdir -p n/.git/objects n/.git/refs\nmkfifo n/.git/HEAD\n');
    const fifo = join(ex.dataDir, 'workspaces', id, 'n', '.git', 'HEAD');
    let next: string | undefined;
    try {
      // The agent has ended (its exit is recorded): the executor is in its post-run steps.
      for (let i = 0; i < 600; i++) {
        if ((await transcript(ex, key, id)).some(event => event.kind === 'exit')) break;
        await new Promise(resolve => setTimeout(resolve, 100));
      }
      const cancel = await ex.request(`/api/v1/agent/runs/${id}/cancel`, { method: 'POST', key });
      // Accepted, or refused because the run has already ended: the post-run git never blocks.
      expect([200, 202, 409]).toContain(cancel.status);
      next = await createRun(ex, key, 'plain', 'echo hello\n');
      const run = await waitForState({ on: ex, key, id: next }, TERMINAL_STATES, { timeoutMs: 120_000 });
      expect(run.state).toBe('SUCCEEDED');
    } finally {
      for (let tries = 0; tries < 300; tries++) {
        releaseFifo(fifo);
        const done = next
          ? await waitForState({ on: ex, key, id: next }, ['SUCCEEDED', 'FAILED'], { timeoutMs: 200 }).catch(
              () => undefined
            )
          : true;
        if (done) break;
      }
    }
  }, 240_000);
});
