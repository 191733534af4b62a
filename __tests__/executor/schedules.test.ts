// Scheduled agents on a real executor (real port, real SQLite file, or PostgreSQL with
// AGENT_EXECUTOR_TEST_STORE=postgres): the endpoints and their checks, and firing driven by
// schedulers with a moved clock (no test waits for a real minute): each due time fires once even
// with two store handles ticking at once, pause and resume, the three overlap policies, a node
// that starts after missed due times (catch_up on and off), and the catalogue reads.

import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { randomUUID } from 'node:crypto';
import { Scheduler } from '../../src/executor/schedules/scheduler.js';
import type { Stores } from '../../src/executor/store/types.js';
import { type TestExecutor, startTestExecutor } from '../support/executor.js';
import { waitForState } from '../support/wait.js';

let ex: TestExecutor;
let key: string;
let keyB: string;
const extraStores: Stores[] = [];

beforeAll(async () => {
  ex = await startTestExecutor({ workers: 4 });
  // The node's own scheduler ticks on the real clock: these tests drive their own.
  await ex.scheduler.stop();
  key = (await ex.key('team-a', 'personal', 'alice')).raw;
  keyB = (await ex.key('team-b', 'personal', 'bob')).raw;
});
afterAll(async () => {
  for (const store of extraStores) await store.close();
  await ex.stop(500);
});

interface Schedule {
  id: string;
  name: string;
  enabled: boolean;
  cron_schedule: string;
  history: { last_ran: string | null; next_run: string | null };
  last_spawn_error: string | null;
  last_run_id: string | null;
  overlap: string;
  catch_up: boolean;
  time_zone: string;
}
interface Run {
  run_id: string;
  state: string;
  title: string;
  schedule_id?: string;
  scheduled_for?: string;
}

const send = (method: string, path: string, body?: unknown, k = key) =>
  ex.request(path, { method, key: k, body: body === undefined ? undefined : JSON.stringify(body) });

async function createSchedule(fields: Record<string, unknown> = {}, k = key): Promise<Schedule> {
  const response = await send(
    'POST',
    '/api/v1/agent/schedules',
    {
      name: 'nightly',
      cron_schedule: '* * * * *',
      prompt: '@sim say scheduled hello',
      agent_config: { environment_id: 'local' },
      ...fields
    },
    k
  );
  expect(response.status).toBe(200);
  return (await response.json()) as Schedule;
}

async function readSchedule(id: string): Promise<Schedule> {
  const response = await send('GET', `/api/v1/agent/schedules/${id}`);
  expect(response.status).toBe(200);
  return (await response.json()) as Schedule;
}

async function runsOf(id: string): Promise<Run[]> {
  const response = await send('GET', `/api/v1/agent/runs?schedule_id=${id}&limit=100`);
  expect(response.status).toBe(200);
  return ((await response.json()) as { runs: Run[] }).runs;
}

/** A scheduler on its own clock (and, when given, its own store handle, as another node). */
function schedulerAt(clock: { ms: number }, store: Stores = ex.context.stores, graceMs = 60_000) {
  return new Scheduler(store, ex.config, { now: () => clock.ms, graceMs });
}

const due = (schedule: Schedule) => Date.parse(schedule.history.next_run!);

describe('schedule endpoints', () => {
  it('create, get, list, update, pause, resume and delete, in the service’s shapes', async () => {
    const created = await createSchedule({ name: 'b-review', time_zone: 'Europe/Berlin' });
    expect(created).toMatchObject({
      name: 'b-review',
      enabled: true,
      cron_schedule: '* * * * *',
      time_zone: 'Europe/Berlin',
      overlap: 'skip',
      catch_up: true,
      last_spawn_error: null,
      scope: { type: 'Team', uid: 'team-a' },
      history: { last_ran: null }
    });
    expect(due(created)).toBeGreaterThan(Date.now() - 1000);
    await createSchedule({ name: 'a-first' });
    const list = (await (await send('GET', '/api/v1/agent/schedules')).json()) as { schedules: Schedule[] };
    const names = list.schedules.map(s => s.name);
    expect(names.indexOf('a-first')).toBeLessThan(names.indexOf('b-review'));

    const updated = await send('PUT', `/api/v1/agent/schedules/${created.id}`, {
      name: 'b-review',
      cron_schedule: '0 9 * * 1-5',
      prompt: 'review',
      enabled: true,
      overlap: 'queue'
    });
    expect(updated.status).toBe(200);
    const after = (await updated.json()) as Schedule & { agent_config: { environment_id: string } };
    expect(after).toMatchObject({
      cron_schedule: '0 9 * * 1-5',
      overlap: 'queue',
      time_zone: 'Europe/Berlin'
    });
    expect(after.agent_config.environment_id).toBe('local');
    // 09:00 in Berlin is 07:00 or 08:00 UTC
    expect([7, 8]).toContain(new Date(after.history.next_run!).getUTCHours());

    const paused = (await (
      await send('POST', `/api/v1/agent/schedules/${created.id}/pause`)
    ).json()) as Schedule;
    expect(paused).toMatchObject({ enabled: false, history: { next_run: null } });
    const resumed = (await (
      await send('POST', `/api/v1/agent/schedules/${created.id}/resume`)
    ).json()) as Schedule;
    expect(resumed.enabled).toBe(true);
    expect(resumed.history.next_run).not.toBeNull();

    expect(await (await send('DELETE', `/api/v1/agent/schedules/${created.id}`)).json()).toEqual({
      success: true
    });
    expect((await send('GET', `/api/v1/agent/schedules/${created.id}`)).status).toBe(404);
  });

  it('answers 422 naming the field and the expected form', async () => {
    const cases: [Record<string, unknown>, RegExp][] = [
      [{ cron_schedule: '61 * * * *' }, /cron_schedule "61 \* \* \* \*".*expected five fields/],
      [{ cron_schedule: '0 0 31 2 *' }, /cron_schedule "0 0 31 2 \*": never fires/],
      [{ cron_schedule: 'every day' }, /cron_schedule "every day": expected five fields/],
      [{ agent_config: {} }, /agent_config\.environment_id: missing; expected the id of an environment/],
      [
        { agent_config: { environment_id: 'nope' } },
        /agent_config\.environment_id "nope": no such environment; expected one of local/
      ],
      [{ time_zone: 'Mars/Olympus' }, /time_zone "Mars\/Olympus": expected an IANA time zone/],
      [{ overlap: 'sometimes' }, /overlap.*expected skip, queue or cancel_previous/],
      [{ name: '' }, /name/]
    ];
    for (const [fields, detail] of cases) {
      const response = await send('POST', '/api/v1/agent/schedules', {
        name: 'x',
        cron_schedule: '* * * * *',
        prompt: 'p',
        agent_config: { environment_id: 'local' },
        ...fields
      });
      const body = (await response.json()) as { error_code: string; detail: string };
      expect({ status: response.status, code: body.error_code }).toEqual({
        status: 422,
        code: 'invalid_field'
      });
      expect(body.detail).toMatch(detail);
    }
    const noPrompt = await send('POST', '/api/v1/agent/schedules', { name: 'x', cron_schedule: '* * * * *' });
    expect(noPrompt.status).toBe(422);
    expect(((await noPrompt.json()) as { detail: string }).detail).toMatch(/prompt/);
  });

  it("answers 404 for another team's schedule, and lists only the team's own", async () => {
    const mine = await createSchedule({ name: 'team-a-only' });
    for (const [method, path] of [
      ['GET', ''],
      ['DELETE', ''],
      ['POST', '/pause'],
      ['POST', '/resume']
    ] as const) {
      const response = await send(method, `/api/v1/agent/schedules/${mine.id}${path}`, undefined, keyB);
      expect(response.status).toBe(404);
    }
    const put = await send(
      'PUT',
      `/api/v1/agent/schedules/${mine.id}`,
      { name: 'x', cron_schedule: '* * * * *', prompt: 'p', enabled: true },
      keyB
    );
    expect(put.status).toBe(404);
    const listB = (await (await send('GET', '/api/v1/agent/schedules', undefined, keyB)).json()) as {
      schedules: Schedule[];
    };
    expect(listB.schedules.map(s => s.id)).not.toContain(mine.id);
    expect((await readSchedule(mine.id)).enabled).toBe(true);
  });
});

describe('firing', () => {
  it('fires at its times, once each, with two store handles ticking at once; runs carry schedule_id and title', async () => {
    const schedule = await createSchedule({ name: 'twice-safe' });
    const other = await ex.openStore();
    extraStores.push(other);
    const clock = { ms: due(schedule) + 1000 };
    const a = schedulerAt(clock);
    const b = schedulerAt(clock, other);
    for (let fire = 0; fire < 3; fire++) {
      await Promise.all([a.tick(), b.tick(), a.tick(), b.tick()]);
      const runs = await runsOf(schedule.id);
      expect(runs).toHaveLength(fire + 1);
      for (const run of runs) await waitForState({ on: ex, key, id: run.run_id }, ['SUCCEEDED']);
      clock.ms += 60_000;
    }
    const runs = await runsOf(schedule.id);
    expect(runs.every(run => run.schedule_id === schedule.id && run.title === 'twice-safe')).toBe(true);
    expect(new Set(runs.map(run => run.scheduled_for)).size).toBe(3);
    const after = await readSchedule(schedule.id);
    expect(after.last_run_id).toBe(runs[0]!.run_id);
    expect(after.history.last_ran).not.toBeNull();
    expect(due(after)).toBe(due(schedule) + 3 * 60_000);
    // half a minute after the last fire: not due again yet
    clock.ms = due(schedule) + 2 * 60_000 + 30_000;
    await Promise.all([a.tick(), b.tick()]);
    expect(await runsOf(schedule.id)).toHaveLength(3);
  });

  it('a fire whose run was made but not recorded (the node died between the two) is not started again', async () => {
    const schedule = await createSchedule({ name: 'half-done' });
    const at = due(schedule);
    // What a node that died right after creating the fire's run leaves behind.
    const key = `schedule:${schedule.id}:${at}`;
    const runId = randomUUID();
    await ex.context.stores.runs.createRun(
      {
        run_id: runId,
        team: 'team-a',
        environment_id: 'local',
        title: 'half-done',
        prompt: '@sim say hi',
        config: JSON.stringify({ environment_id: 'local' }),
        extra: JSON.stringify({ schedule_id: schedule.id, scheduled_for: new Date(at).toISOString() }),
        creator_type: 'user',
        creator_uid: 'k',
        creator_name: 'alice',
        created_at: new Date().toISOString()
      },
      { key, requestHash: key },
      1000
    );
    await schedulerAt({ ms: at + 1000 }).tick();
    expect((await runsOf(schedule.id)).map(run => run.run_id)).toEqual([runId]);
    const after = await readSchedule(schedule.id);
    expect(after.last_run_id).toBe(runId);
    expect(due(after)).toBe(at + 60_000);
  });

  it("another key of the team cannot take a fire's idempotency key, so the fire still starts its own run", async () => {
    const schedule = await createSchedule({ name: 'nightly-own' });
    const at = due(schedule);
    const ci = (await ex.key('team-a', 'agent', 'ci')).raw;
    const taken = await ex.request('/api/v1/agent/runs', {
      method: 'POST',
      key: ci,
      headers: { 'idempotency-key': `schedule:${schedule.id}:${at}` },
      body: JSON.stringify({ prompt: '@sim say not the schedule', config: { environment_id: 'local' } })
    });
    expect(taken.status).toBe(400);
    expect(((await taken.json()) as { detail: string }).detail).toContain('"schedule:"');
    await schedulerAt({ ms: at + 1000 }).tick();
    const runs = await runsOf(schedule.id);
    expect(runs).toHaveLength(1);
    expect((await readSchedule(schedule.id)).last_run_id).toBe(runs[0]!.run_id);
  });

  it('does not fire while paused, and resumes from the next due time', async () => {
    const schedule = await createSchedule({ name: 'pausable' });
    const clock = { ms: due(schedule) + 1000 };
    const scheduler = schedulerAt(clock);
    await send('POST', `/api/v1/agent/schedules/${schedule.id}/pause`);
    await scheduler.tick();
    clock.ms += 5 * 60_000;
    await scheduler.tick();
    expect(await runsOf(schedule.id)).toHaveLength(0);
    const resumed = (await (
      await send('POST', `/api/v1/agent/schedules/${schedule.id}/resume`)
    ).json()) as Schedule;
    clock.ms = due(resumed) + 1000;
    await scheduler.tick();
    expect(await runsOf(schedule.id)).toHaveLength(1);
  });

  it('overlap skip: a fire while the previous run runs starts nothing and says why', async () => {
    const schedule = await createSchedule({ name: 'slow-skip', prompt: '@sim sleep 120' });
    const clock = { ms: due(schedule) + 1000 };
    const scheduler = schedulerAt(clock);
    await scheduler.tick();
    const [first] = await runsOf(schedule.id);
    clock.ms += 60_000;
    await scheduler.tick();
    expect(await runsOf(schedule.id)).toHaveLength(1);
    const after = await readSchedule(schedule.id);
    expect(after.last_spawn_error).toMatch(
      new RegExp(`skipped the fire at .*: run ${first!.run_id} .* still`)
    );
    expect(due(after)).toBe(due(schedule) + 120_000);
    await send('POST', `/api/v1/agent/runs/${first!.run_id}/cancel`);
  });

  it('overlap queue: the fire waits for the previous run to end, then starts once', async () => {
    const schedule = await createSchedule({ name: 'slow-queue', prompt: '@sim sleep 120', overlap: 'queue' });
    const clock = { ms: due(schedule) + 1000 };
    const scheduler = schedulerAt(clock);
    await scheduler.tick();
    const [first] = await runsOf(schedule.id);
    clock.ms += 60_000;
    await scheduler.tick();
    clock.ms += 60_000;
    await scheduler.tick();
    expect(await runsOf(schedule.id)).toHaveLength(1);
    await send('POST', `/api/v1/agent/runs/${first!.run_id}/cancel`);
    await waitForState({ on: ex, key, id: first!.run_id }, ['CANCELLED']);
    await scheduler.tick();
    const runs = await runsOf(schedule.id);
    expect(runs).toHaveLength(2);
    await scheduler.tick();
    expect(await runsOf(schedule.id)).toHaveLength(2);
    await send('POST', `/api/v1/agent/runs/${runs[0]!.run_id}/cancel`);
  });

  it('overlap cancel_previous: the previous run is cancelled and the new one starts', async () => {
    const schedule = await createSchedule({
      name: 'slow-cancel',
      prompt: '@sim sleep 120',
      overlap: 'cancel_previous'
    });
    const clock = { ms: due(schedule) + 1000 };
    const scheduler = schedulerAt(clock);
    await scheduler.tick();
    const [first] = await runsOf(schedule.id);
    clock.ms += 60_000;
    await scheduler.tick();
    const cancelled = await waitForState({ on: ex, key, id: first!.run_id }, ['CANCELLED']);
    expect(cancelled.status_message).toMatch(/superseded by the schedule's fire/);
    const runs = await runsOf(schedule.id);
    expect(runs).toHaveLength(2);
    expect(runs[0]!.state).not.toBe('CANCELLED');
    await send('POST', `/api/v1/agent/runs/${runs[0]!.run_id}/cancel`);
  });

  it('a node starting after missed due times starts one run (catch_up), or none with catch_up: false', async () => {
    const catchUp = await createSchedule({ name: 'catch-up' });
    const noCatchUp = await createSchedule({ name: 'no-catch-up', catch_up: false });
    // every node was down for three due times; a node comes back five minutes later
    const clock = { ms: due(catchUp) + 5 * 60_000 };
    const restarted = await ex.openStore();
    extraStores.push(restarted);
    const scheduler = schedulerAt(clock, restarted);
    await scheduler.tick();
    await scheduler.tick();
    expect(await runsOf(catchUp.id)).toHaveLength(1);
    expect(await runsOf(noCatchUp.id)).toHaveLength(0);
    const skipped = await readSchedule(noCatchUp.id);
    expect(skipped.last_spawn_error).toMatch(/passed while no executor ran; skipped \(catch_up: false\)/);
    expect(due(skipped)).toBeGreaterThan(clock.ms);
    expect(due(await readSchedule(catchUp.id))).toBeGreaterThan(clock.ms);
  });

  it('deleting a schedule leaves the runs it started, and it fires no more', async () => {
    const schedule = await createSchedule({ name: 'deleted' });
    const clock = { ms: due(schedule) + 1000 };
    const scheduler = schedulerAt(clock);
    await scheduler.tick();
    expect(await runsOf(schedule.id)).toHaveLength(1);
    await send('DELETE', `/api/v1/agent/schedules/${schedule.id}`);
    clock.ms += 60_000;
    await scheduler.tick();
    const runs = await runsOf(schedule.id);
    expect(runs).toHaveLength(1);
    expect((await send('GET', `/api/v1/agent/runs/${runs[0]!.run_id}`)).status).toBe(200);
  });

  it('a create body cannot pass a run off as a schedule’s', async () => {
    const schedule = await createSchedule({ name: 'forged' });
    const response = await send('POST', '/api/v1/agent/runs', {
      prompt: 'p',
      config: { environment_id: 'local' },
      schedule_id: schedule.id
    });
    expect(response.status).toBe(200);
    expect(await runsOf(schedule.id)).toHaveLength(0);
  });
});

describe('catalogue', () => {
  it('lists the environments without variables, and the models per environment', async () => {
    const envs = (await (await send('GET', '/api/v1/agent/environments')).json()) as {
      environments: Record<string, unknown>[];
    };
    expect(envs.environments).toEqual([
      expect.objectContaining({ id: 'local', agent_kind: 'simulated', network: [], setup_commands: [] })
    ]);
    expect(JSON.stringify(envs)).not.toMatch(/"env"/);
    const models = (await (await send('GET', '/api/v1/agent/models')).json()) as Record<string, unknown>;
    expect(models).toEqual({
      default_model_id: null,
      models: [],
      environments: [
        { environment_id: 'local', agent_kind: 'simulated', default_model_id: null, accepts_model_id: false }
      ]
    });
  });
});
