// Durable delivery: the delivery rows are written in the transaction of each change, so an
// executor SIGKILLed while its deliveries are still pending (the receiver answering 503) sends them
// after it is started again on the same data dir. The executor of the source as a child process,
// a real SQLite file, a receiver verifying with the `standardwebhooks` package.
import { afterAll, expect, it } from '@jest/globals';
import { rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { eventually } from '../support/eventually.js';
import { createKeyWithCli, spawnExecutor, tempDir } from '../support/executor.js';
import { type Receiver, startReceiver } from '../support/webhook-receiver.js';
import { waitForState } from '../support/wait.js';

let receiver: Receiver;
const dir = tempDir('webhooks-restart-');
afterAll(async () => {
  await receiver?.close();
  rmSync(dir, { recursive: true, force: true });
});

it('deliveries pending when the executor is SIGKILLed are delivered after it restarts', async () => {
  let up = false;
  receiver = await startReceiver(() => ({ status: up ? 200 : 503 }));
  const dataDir = join(dir, 'data');
  writeFileSync(
    join(dir, 'agent-executor.yaml'),
    [
      'log_level: warn',
      'webhooks:',
      '  allow_private_networks: true',
      `  retry_schedule: [${Array(20).fill('3s').join(', ')}]`,
      '  timeout: 2s'
    ].join('\n')
  );
  const key = await createKeyWithCli(dir, { dataDir, team: 'team-crash' });
  const first = await spawnExecutor(['--data-dir', dataDir], { cwd: dir, source: true });
  const call = async (url: string, path: string, body?: unknown) => {
    const response = await fetch(url + path, {
      method: body === undefined ? 'GET' : 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body)
    });
    expect(response.status).toBe(200);
    return (await response.json()) as Record<string, unknown>;
  };
  const hook = await call(first.url, '/api/v1/agent/webhooks', { url: receiver.url });
  receiver.secrets.push(hook.secret as string);
  const run = await call(first.url, '/api/v1/agent/runs', {
    prompt: '@sim result before the crash',
    config: { environment_id: 'local' }
  });
  const id = run.run_id as string;
  await waitForState({ on: first, key, id });
  // Every change has been tried and refused at least once: all three are pending now.
  await eventually(() => new Set(receiver.received.map(r => r.verified?.type)).size === 3, {
    what: 'a refused attempt of each change',
    timeoutMs: 60_000
  });
  await first.stop('SIGKILL');
  const beforeRestart = receiver.received.length;
  up = true;

  const second = await spawnExecutor(['--data-dir', dataDir], { cwd: dir, source: true });
  try {
    const delivered = await eventually(
      async () => {
        const { deliveries } = (await call(
          second.url,
          `/api/v1/agent/webhooks/${String(hook.id)}/deliveries`
        )) as {
          deliveries: { event_type: string; status: string }[];
        };
        return deliveries.length === 3 && deliveries.every(d => d.status === 'succeeded')
          ? deliveries
          : undefined;
      },
      // an attempt under way at the kill holds its lease for webhooks.timeout and a minute
      { what: 'the three deliveries succeeded after the restart', timeoutMs: 150_000 }
    );
    expect(delivered.map(d => d.event_type).sort()).toEqual([
      'run.in_progress',
      'run.queued',
      'run.succeeded'
    ]);
    // each was taken (answered 200) only by the second process, each verified
    const after = receiver.received.slice(beforeRestart);
    expect(after.every(r => r.verified !== undefined)).toBe(true);
    expect(new Set(after.map(r => r.verified?.type))).toEqual(
      new Set(['run.queued', 'run.in_progress', 'run.succeeded'])
    );
    expect(after.every(r => (r.verified?.data as { run_id: string }).run_id === id)).toBe(true);
  } finally {
    await second.stop();
  }
}, 300_000);
