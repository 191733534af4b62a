// `agent-run schedules …`, `environments` and `models` (the CLI's main, in this process) against a
// real executor on a real port: what a person sees, and what --json gives a script.

import { afterAll, beforeAll, expect, it } from '@jest/globals';
import { PassThrough } from 'node:stream';
import { main } from '../../src/cli/main.js';
import { type TestExecutor, startTestExecutor } from '../support/executor.js';

let ex: TestExecutor;
let env: NodeJS.ProcessEnv;

beforeAll(async () => {
  ex = await startTestExecutor();
  await ex.scheduler.stop();
  env = { AGENT_RUN_BASE_URL: ex.url, AGENT_RUN_API_KEY: (await ex.key('team-cli')).raw };
});
afterAll(() => ex.stop(500));

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

it('creates, lists, updates, pauses, resumes and deletes a schedule', async () => {
  const created = await cli(
    'schedules',
    'create',
    '--name',
    'nightly triage',
    '--cron',
    '0 2 * * *',
    '--environment',
    'local',
    '--prompt',
    'Triage new issues',
    '--json'
  );
  expect(created.code).toBe(0);
  const schedule = JSON.parse(created.stdout) as { id: string; history: { next_run: string } };
  expect(schedule.history.next_run).toMatch(/T02:00:00\.000Z$/);

  const list = await cli('schedules', 'list');
  expect(list.stdout).toMatch(/^NAME\s+ID\s+CRON\s+STATE\s+NEXT RUN\s+LAST RAN$/m);
  expect(list.stdout).toContain(`nightly triage  ${schedule.id}  0 2 * * *  enabled`);

  const updated = await cli(
    'schedules',
    'update',
    schedule.id,
    '--cron',
    '30 6 * * 1-5',
    '--overlap',
    'queue'
  );
  expect(updated.code).toBe(0);
  expect(updated.stdout).toMatch(/cron: +30 6 \* \* 1-5 \(UTC\)/);
  expect(updated.stdout).toMatch(/overlap: +queue/);
  expect(updated.stdout).toMatch(/prompt: +Triage new issues/);

  expect((await cli('schedules', 'pause', schedule.id)).stdout).toMatch(/state: +paused/);
  expect((await cli('schedules', 'resume', schedule.id)).stdout).toMatch(/state: +enabled/);
  expect((await cli('schedules', 'delete', schedule.id)).stdout).toMatch(
    /Deleted schedule .*runs it started stay/
  );
  const gone = await cli('schedules', 'get', schedule.id);
  expect(gone.code).not.toBe(0);
  expect(gone.stderr).toMatch(/does not exist/);
});

it('says which field is wrong, and which subcommands exist', async () => {
  const bad = await cli(
    'schedules',
    'create',
    '--name',
    'x',
    '--cron',
    '0 0 31 2 *',
    '--environment',
    'local',
    '--prompt',
    'p'
  );
  expect(bad.code).not.toBe(0);
  expect(bad.stderr).toMatch(/cron_schedule "0 0 31 2 \*": never fires/);
  const unknown = await cli('schedules', 'rename');
  expect(unknown.code).toBe(2);
  expect(unknown.stderr).toMatch(/expected one of list, create, get, update, pause, resume, delete/);
});

it('lists environments and models', async () => {
  const envs = await cli('environments');
  expect(envs.stdout).toMatch(/^ID\s+NAME\s+AGENT\s+NETWORK\s+SOURCE$/m);
  expect(envs.stdout).toMatch(/^local\s+\S.*simulated\s+none\s+\//m);
  const models = await cli('models', '--json');
  expect(JSON.parse(models.stdout)).toMatchObject({
    environments: [{ environment_id: 'local', agent_kind: 'simulated', accepts_model_id: false }]
  });
});
