// The dashboard's Schedules page over plain HTTP on a real executor: what it shows (next and last
// fire, state, last runs, the last spawn error), and its pause and resume buttons, refused like a
// run's cancel without the session's CSRF token or from another origin.

import { afterAll, beforeAll, expect, it } from '@jest/globals';
import { Scheduler } from '../../src/executor/schedules/scheduler.js';
import { type TestExecutor, startTestExecutor } from '../support/executor.js';

let ex: TestExecutor;
let key: string;
let session: { cookie: string; csrf: string };

beforeAll(async () => {
  ex = await startTestExecutor();
  await ex.scheduler.stop();
  key = (await ex.key('team-dash')).raw;
  const response = await fetch(`${ex.url}/sign-in`, {
    method: 'POST',
    redirect: 'manual',
    headers: { origin: ex.url, 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ api_key: key }).toString()
  });
  expect(response.status).toBe(303);
  const cookie = response.headers.get('set-cookie')!.split(';')[0]!;
  const html = await (await fetch(`${ex.url}/schedules`, { headers: { cookie } })).text();
  session = { cookie, csrf: /name="csrf" value="([^"]+)"/.exec(html)![1]! };
});
afterAll(() => ex.stop(500));

const page = async () => (await fetch(`${ex.url}/schedules`, { headers: { cookie: session.cookie } })).text();
const rowOf = (html: string, id: string) =>
  new RegExp(`<tr id="schedule-${id}">[\\s\\S]*?</tr>`).exec(html)![0];

it('shows each schedule with its state, next and last fire and last runs; pauses and resumes with the CSRF token', async () => {
  const created = await fetch(`${ex.url}/api/v1/agent/schedules`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify({
      name: 'Nightly <b>triage</b>',
      cron_schedule: '* * * * *',
      prompt: '@sim say hi',
      agent_config: { environment_id: 'local' }
    })
  });
  const schedule = (await created.json()) as { id: string; history: { next_run: string } };
  const due = Date.parse(schedule.history.next_run);
  await new Scheduler(ex.context.stores, ex.config, { now: () => due + 1000 }).tick();

  let row = rowOf(await page(), schedule.id);
  expect(row).toContain('Nightly &#60;b&#62;triage&#60;/b&#62;');
  expect(row).toContain('enabled');
  expect(row).toMatch(/<time datetime="[^"]+">/);
  expect(row).toMatch(/href="\/runs\/[0-9a-f-]{36}"/);
  expect(row).toContain(`action="/schedules/${schedule.id}/pause"`);

  const post = (action: string, origin: string | undefined, csrf: string) =>
    fetch(`${ex.url}/schedules/${schedule.id}/${action}`, {
      method: 'POST',
      redirect: 'manual',
      headers: {
        cookie: session.cookie,
        'content-type': 'application/x-www-form-urlencoded',
        ...(origin ? { origin } : {})
      },
      body: new URLSearchParams({ csrf }).toString()
    });
  expect((await post('pause', 'https://evil.example', session.csrf)).status).toBe(403);
  expect((await post('pause', ex.url, 'forged')).status).toBe(403);
  expect((await post('pause', undefined, session.csrf)).status).toBe(403);
  expect(rowOf(await page(), schedule.id)).toContain('enabled');

  const paused = await post('pause', ex.url, session.csrf);
  expect(paused.status).toBe(303);
  expect(paused.headers.get('location')).toBe('/schedules');
  row = rowOf(await page(), schedule.id);
  expect(row).toContain('paused');
  expect(row).toContain(`action="/schedules/${schedule.id}/resume"`);
  const api = (await (
    await fetch(`${ex.url}/api/v1/agent/schedules/${schedule.id}`, {
      headers: { authorization: `Bearer ${key}` }
    })
  ).json()) as { enabled: boolean };
  expect(api.enabled).toBe(false);

  expect((await post('resume', ex.url, session.csrf)).status).toBe(303);
  expect(rowOf(await page(), schedule.id)).toContain(`action="/schedules/${schedule.id}/pause"`);
});

it("answers 404 for another team's schedule", async () => {
  const other = (await ex.key('team-other')).raw;
  const created = await fetch(`${ex.url}/api/v1/agent/schedules`, {
    method: 'POST',
    headers: { authorization: `Bearer ${other}`, 'content-type': 'application/json' },
    body: JSON.stringify({
      name: 'theirs',
      cron_schedule: '0 1 * * *',
      prompt: 'p',
      agent_config: { environment_id: 'local' }
    })
  });
  const { id } = (await created.json()) as { id: string };
  expect(await page()).not.toContain(id);
  const response = await fetch(`${ex.url}/schedules/${id}/pause`, {
    method: 'POST',
    redirect: 'manual',
    headers: { cookie: session.cookie, origin: ex.url, 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ csrf: session.csrf }).toString()
  });
  expect(response.status).toBe(404);
});
