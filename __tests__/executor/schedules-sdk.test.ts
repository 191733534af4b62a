// The production service's official TypeScript SDK (oz-agent-sdk), unchanged, against the
// executor's schedule endpoints: what a team already scripting the service runs against its own
// executor.

import { afterAll, beforeAll, expect, it } from '@jest/globals';
import OzAPI from 'oz-agent-sdk';
import { type TestExecutor, startTestExecutor } from '../support/executor.js';

let ex: TestExecutor;
let client: OzAPI;

beforeAll(async () => {
  ex = await startTestExecutor();
  await ex.scheduler.stop();
  client = new OzAPI({ apiKey: (await ex.key('team-sdk')).raw, baseURL: `${ex.url}/api/v1`, maxRetries: 0 });
});
afterAll(() => ex.stop(500));

it('schedules.create/list/retrieve/update/pause/resume/delete work unchanged', async () => {
  const created = await client.agent.schedules.create({
    name: 'Daily review',
    cron_schedule: '0 9 * * *',
    prompt: 'Review open pull requests',
    enabled: true,
    agent_config: { environment_id: 'local', model_id: 'm1' }
  });
  expect(created).toMatchObject({ name: 'Daily review', enabled: true, cron_schedule: '0 9 * * *' });
  expect(created.history?.next_run).toMatch(/T09:00:00\.000Z$/);
  expect(created.agent_config).toMatchObject({ environment_id: 'local', model_id: 'm1' });

  const list = await client.agent.schedules.list();
  expect(list.schedules.map(s => s.id)).toEqual([created.id]);
  expect((await client.agent.schedules.retrieve(created.id)).prompt).toBe('Review open pull requests');

  const updated = await client.agent.schedules.update(created.id, {
    name: 'Weekday review',
    cron_schedule: '30 8 * * 1-5',
    enabled: true,
    prompt: 'Review again'
  });
  expect(updated).toMatchObject({ name: 'Weekday review', cron_schedule: '30 8 * * 1-5' });
  expect(updated.agent_config).toMatchObject({ environment_id: 'local' });

  expect(await client.agent.schedules.pause(created.id)).toMatchObject({ enabled: false });
  expect(await client.agent.schedules.resume(created.id)).toMatchObject({ enabled: true });
  expect(await client.agent.schedules.delete(created.id)).toEqual({ success: true });
  await expect(client.agent.schedules.retrieve(created.id)).rejects.toMatchObject({ status: 404 });
});

it('a bad cron expression is a 422 whose message names the field', async () => {
  const attempt = client.agent.schedules.create({
    name: 'bad',
    cron_schedule: '0 25 * * *',
    prompt: 'p',
    agent_config: { environment_id: 'local' }
  });
  await expect(attempt).rejects.toMatchObject({ status: 422 });
  await expect(attempt).rejects.toThrow(/cron_schedule/);
});
