// The bundled action follows a run on the executor's event stream: however many events the run
// has, the whole run costs a handful of requests (counted at a proxy in front of the executor),
// and every event still reaches the live log. Against a server without the stream (the proxy
// answers 404 or 406 for it) the action falls back to held reads and shows the same log.

import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { type CountingProxy, startCountingProxy } from '../support/counting-proxy.js';
import { type TestExecutor, startTestExecutor } from '../support/executor.js';
import { runAction } from '../support/runner.js';

let ex: TestExecutor;
let key: string;

beforeAll(async () => {
  ex = await startTestExecutor({ workers: 2 });
  key = (await ex.key()).raw;
});
afterAll(async () => {
  await ex?.stop(1000);
});

const LINES = 200;
const prompt = Array.from({ length: LINES }, (_, n) => `@sim say line ${n + 1} of the run`).join('\n');

async function followed(proxy: CountingProxy) {
  const result = await runAction({
    prompt,
    'environment-id': 'local',
    'api-key': key,
    'base-url': proxy.url
  });
  expect(result.code).toBe(0);
  expect(result.outputs.state).toBe('SUCCEEDED');
  // The live log shows every one of the run's messages, in order, once.
  const shown = [...result.stdout.matchAll(/line (\d+) of the run/g)].map(match => Number(match[1]));
  const firsts = shown.filter((n, index) => shown.indexOf(n) === index);
  expect(firsts).toEqual(Array.from({ length: LINES }, (_, n) => n + 1));
  return result;
}

describe('the action on the event stream', () => {
  it(`spends at most 4 requests on a run of ${LINES} events`, async () => {
    const proxy = await startCountingProxy(ex.url);
    try {
      await followed(proxy);
      const requests = proxy.requests.map(request => `${request.method} ${request.url.split('?')[0]}`);
      expect(requests.length).toBeLessThanOrEqual(4);
      expect(requests[0]).toBe('POST /api/v1/agent/runs');
      expect(requests.filter(request => request.endsWith('/events'))).toHaveLength(1);
    } finally {
      await proxy.close();
    }
  });

  for (const status of [404, 406]) {
    it(`falls back to held reads when the server answers ${status} for the stream`, async () => {
      const proxy = await startCountingProxy(ex.url);
      proxy.refuse(request => request.url.split('?')[0]!.endsWith('/events'), status);
      try {
        await followed(proxy);
        const paths = proxy.requests.map(request => request.url.split('?')[0]!);
        expect(paths.filter(path => path.endsWith('/events'))).toHaveLength(1);
        expect(paths.some(path => path.endsWith('/transcript'))).toBe(true);
        // What the stream saves: followed by reads, the same run takes more than 4 requests.
        expect(paths.length).toBeGreaterThan(4);
      } finally {
        await proxy.close();
      }
    });
  }
});
