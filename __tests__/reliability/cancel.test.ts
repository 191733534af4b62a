// Cancellation: SIGINT or SIGTERM reaches the bundled action at a random moment (as when a job is
// cancelled). The remote run must end CANCELLED within 10 s, or have finished already; the post step
// then has nothing to do. Quick form here; long form: `npm run reliability:cancel`.
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { eventually } from '../support/eventually.js';
import { type ExecutorProcess, spawnExecutorWithKey } from '../support/executor.js';
import { runAction, startAction } from '../support/runner.js';

const TRIALS = Number(process.env.CANCEL_TRIALS ?? 8);
let executor: ExecutorProcess;
let key: string;

beforeAll(async () => {
  const started = await spawnExecutorWithKey({ prefix: 'cancel-', name: 'cancel' });
  ({ key } = started);
  executor = started;
});
afterAll(() => executor.stop());

async function read(runId: string): Promise<{ state: string }> {
  const response = await fetch(`${executor.url}/api/v1/agent/runs/${runId}`, {
    headers: { authorization: `Bearer ${key}` }
  });
  return (await response.json()) as { state: string };
}

async function trial(n: number) {
  const inputs = {
    prompt: `@sim sleep ${(1 + Math.random() * 2).toFixed(2)}\ntrial ${n}`,
    'environment-id': 'local',
    'api-key': key,
    'base-url': executor.url
  };
  const action = startAction(inputs);
  const signal = n % 2 === 0 ? 'SIGINT' : 'SIGTERM';
  await new Promise(resolve => setTimeout(resolve, Math.random() * 3000));
  const sentAt = Date.now();
  action.child.kill(signal);
  const result = await action.done;
  const runId = result.outputs['run-id'] || result.state['run-id'];
  if (!runId) return { n, signal, outcome: 'before-create', code: result.code };
  let state = '';
  const ended = async () =>
    ['SUCCEEDED', 'CANCELLED', 'FAILED'].includes((state = (await read(runId)).state));
  const what = `run ${runId} to end`;
  await eventually(ended, { what, timeoutMs: 10_000 - (Date.now() - sentAt), intervalMs: 100 }).catch(
    () => undefined
  );
  const post = await runAction(inputs, { state: result.state });
  return { n, signal, outcome: state, withinMs: Date.now() - sentAt, postOut: post.stdout, post: post.code };
}

describe('cancellation', () => {
  it(
    `${TRIALS} signals at random moments: each run ends CANCELLED within 10 s or had already finished`,
    async () => {
      const results: Awaited<ReturnType<typeof trial>>[] = [];
      for (let start = 0; start < TRIALS; start += 8) {
        results.push(
          ...(await Promise.all(
            Array.from({ length: Math.min(8, TRIALS - start) }, (_, i) => trial(start + i))
          ))
        );
      }
      for (const result of results) {
        expect(['CANCELLED', 'SUCCEEDED', 'before-create']).toContain(result.outcome);
        if (result.outcome === 'CANCELLED') expect(result.withinMs).toBeLessThan(10_000);
        if (result.outcome !== 'before-create') {
          expect(result.post).toBe(0);
          // The main step settled the run, so the post step neither reads nor cancels it.
          expect(result.postOut).not.toContain('Cancelled run');
        }
      }
      expect(results.filter(result => result.outcome === 'CANCELLED').length).toBeGreaterThan(0);
      const count = (outcome: string) => results.filter(result => result.outcome === outcome).length;
      console.log(
        `cancellation: ${TRIALS} trials, ${count('CANCELLED')} cancelled, ${count('SUCCEEDED')} already finished, ${count('before-create')} stopped before create; slowest cancel ${Math.max(...results.map(r => r.withinMs ?? 0))} ms`
      );
    },
    60_000 + TRIALS * 3000
  );
});
