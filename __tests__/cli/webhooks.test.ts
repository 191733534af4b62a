// `agent-run webhooks …` (the CLI's main, in this process) against a real executor on a real port
// and a receiver verifying with the `standardwebhooks` package: what a person sees, the secret
// printed once, the delivery log, and what --json gives a script.

import { afterAll, beforeAll, expect, it } from '@jest/globals';
import { PassThrough } from 'node:stream';
import { main } from '../../src/cli/main.js';
import { eventually } from '../support/eventually.js';
import { type TestExecutor, startTestExecutor } from '../support/executor.js';
import { type Receiver, startReceiver } from '../support/webhook-receiver.js';
import { waitForState } from '../support/wait.js';

let ex: TestExecutor;
let env: NodeJS.ProcessEnv;
let receiver: Receiver;

beforeAll(async () => {
  ex = await startTestExecutor({ webhooks: { allow_private_networks: true, retry_schedule: ['1s'] } });
  receiver = await startReceiver();
  env = { AGENT_RUN_BASE_URL: ex.url, AGENT_RUN_API_KEY: (await ex.key('team-cli-hooks')).raw };
});
afterAll(async () => {
  await ex.stop(500);
  await receiver.close();
});

async function cli(...argv: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  const stdout = new PassThrough();
  const stderr = new PassThrough();
  let out = '';
  let err = '';
  stdout.on('data', chunk => (out += String(chunk)));
  stderr.on('data', chunk => (err += String(chunk)));
  const code = await main(argv, { stdout, stderr, env });
  return { code, stdout: out, stderr: err };
}

it('creates an endpoint (printing its secret once), lists it, shows its deliveries, rotates and deletes it', async () => {
  const created = await cli('webhooks', 'create', '--url', receiver.url, '--events', 'run.succeeded');
  expect(created.code).toBe(0);
  const secret = /secret:\s+(whsec_\S+)/.exec(created.stdout)![1]!;
  const id = /^(wh_[0-9a-f]+)/m.exec(created.stdout)![1]!;
  receiver.secrets.push(secret);

  const list = await cli('webhooks', 'list');
  expect(list.stdout).toMatch(/^ID\s+URL\s+EVENTS\s+STATE$/m);
  expect(list.stdout).toContain(`${id}  ${receiver.url}  run.succeeded  enabled`);
  expect(list.stdout).not.toContain(secret);
  expect((await cli('webhooks', 'get', id)).stdout).not.toContain(secret);

  const run = await ex.request('/api/v1/agent/runs', {
    method: 'POST',
    key: env.AGENT_RUN_API_KEY,
    body: JSON.stringify({ prompt: '@sim result from the cli test', config: { environment_id: 'local' } })
  });
  const runId = ((await run.json()) as { run_id: string }).run_id;
  await waitForState({ on: ex, key: env.AGENT_RUN_API_KEY!, id: runId });
  await eventually(() => receiver.received.some(r => r.verified?.type === 'run.succeeded'), {
    what: 'the delivery',
    timeoutMs: 30_000
  });
  const log = await eventually(
    async () => {
      const shown = await cli('webhooks', 'deliveries', id);
      return shown.stdout.includes('succeeded') ? shown.stdout : undefined;
    },
    { what: 'the delivery logged', timeoutMs: 30_000 }
  );
  expect(log).toMatch(/^ID\s+EVENT\s+RUN\s+STATUS\s+ATTEMPTS\s+LAST\s+NEXT ATTEMPT$/m);
  expect(log).toMatch(
    new RegExp(`msg_[0-9a-f]+\\s+run\\.succeeded\\s+${runId}\\s+succeeded\\s+1\\s+200\\s+-`)
  );

  const rotated = await cli('webhooks', 'rotate', id, '--json');
  expect(rotated.code).toBe(0);
  expect((JSON.parse(rotated.stdout) as { secret: string }).secret).toMatch(/^whsec_/);

  const bad = await cli('webhooks', 'create', '--url', receiver.url, '--events', 'run.exploded');
  expect(bad.code).toBe(2);
  expect(bad.stderr).toMatch(/--events "run.exploded": expected one of run.queued/);

  const deleted = await cli('webhooks', 'delete', id);
  expect(deleted.stdout).toContain(`Deleted webhook ${id}`);
  const gone = await cli('webhooks', 'get', id);
  expect(gone.code).not.toBe(0);
  expect(gone.stderr).toMatch(/does not exist/);
}, 120_000);
