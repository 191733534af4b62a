// One team cannot starve another, through the API of a real executor (real port, real SQLite file,
// or PostgreSQL with AGENT_EXECUTOR_TEST_STORE=postgres): a team that fills its share of the queue
// gets 429 while another team still creates, and that team's run is claimed before the first
// team's older ones; a team at its running cap waits while other teams' runs take the free
// workers; schedules per team are capped, and a schedule fire that meets its team's queue limit is
// recorded on the schedule while another team's fire starts its run. Runs end by cancel, so no
// test waits for a clock.

import { afterEach, describe, expect, it } from '@jest/globals';
import { rmSync } from 'node:fs';
import { dirname } from 'node:path';
import { parseConfig } from '../../src/executor/config/config.js';
import { Scheduler } from '../../src/executor/schedules/scheduler.js';
import { type TestExecutor, startTestExecutor } from '../support/executor.js';
import { waitForState } from '../support/wait.js';

let ex: TestExecutor | undefined;
afterEach(async () => {
  if (!ex) return;
  const dir = dirname(ex.dataDir);
  await ex.stop(500);
  rmSync(dir, { recursive: true, force: true });
  ex = undefined;
});

interface Problem {
  error_code: string;
  detail: string;
  retryable: boolean;
}

/** A team's key and what it does through the API. */
async function team(name: string) {
  const { raw } = await ex!.key(name, 'personal', name);
  const send = (method: string, path: string, body?: unknown) =>
    ex!.request(path, { method, key: raw, body: body === undefined ? undefined : JSON.stringify(body) });
  return {
    key: raw,
    send,
    create: (prompt: string) =>
      send('POST', '/api/v1/agent/runs', { prompt, config: { environment_id: 'local' } }),
    /** Creates a run and answers its id (the create must succeed). */
    async run(prompt: string): Promise<string> {
      const response = await send('POST', '/api/v1/agent/runs', {
        prompt,
        config: { environment_id: 'local' }
      });
      expect(response.status).toBe(200);
      return ((await response.json()) as { run_id: string }).run_id;
    },
    async state(id: string): Promise<string> {
      return ((await (await send('GET', `/api/v1/agent/runs/${id}`)).json()) as { state: string }).state;
    },
    wait: (id: string, states: string[]) => waitForState({ on: ex!, key: raw, id }, states),
    cancel: (id: string) => send('POST', `/api/v1/agent/runs/${id}/cancel`)
  };
}

const LONG = '@sim sleep 600';

describe('the per-team limits in the config', () => {
  const limits = (values: Record<string, unknown>) => parseConfig({ limits: values }, '/tmp').limits;

  it('default: a tenth of the node’s queue a team (at least 100, at most all), no running cap, 100 schedules', () => {
    expect(limits({})).toMatchObject({
      maxQueuedRuns: 1000,
      maxQueuedRunsPerTeam: 100,
      maxRunningRunsPerTeam: 0,
      maxSchedulesPerTeam: 100
    });
    expect(limits({ max_queued_runs: 20 }).maxQueuedRunsPerTeam).toBe(20);
    expect(limits({ max_queued_runs: 500 }).maxQueuedRunsPerTeam).toBe(100);
    expect(limits({ max_queued_runs: 100_000 }).maxQueuedRunsPerTeam).toBe(10_000);
    expect(limits({ max_queued_runs_per_team: 5, max_running_runs_per_team: 2 })).toMatchObject({
      maxQueuedRunsPerTeam: 5,
      maxRunningRunsPerTeam: 2
    });
  });

  it('refuses bad values naming the key, the value and the expected form', () => {
    expect(() => limits({ max_queued_runs: 20, max_queued_runs_per_team: 50 })).toThrow(
      "config: limits.max_queued_runs_per_team 50: expected at most limits.max_queued_runs (20), the node's own queue"
    );
    expect(() => limits({ max_queued_runs_per_team: 0 })).toThrow(
      'limits.max_queued_runs_per_team 0: expected a whole number from 1 to 1000000000'
    );
    expect(() => limits({ max_running_runs_per_team: -1 })).toThrow(
      'limits.max_running_runs_per_team -1: expected a whole number from 0 to 1000000000'
    );
    expect(() => limits({ max_schedules_per_team: 'many' })).toThrow(
      'limits.max_schedules_per_team "many": expected a whole number from 1 to 1000000'
    );
  });
});

describe('the queue, shared by teams', () => {
  it("a team at its queue limit gets 429 naming it; another team still creates, and its run goes before the first team's older ones", async () => {
    ex = await startTestExecutor({
      workers: 1,
      limits: { max_queued_runs: 10, max_queued_runs_per_team: 2 }
    });
    const a = await team('team-a');
    const b = await team('team-b');
    const a1 = await a.run(LONG);
    await a.wait(a1, ['INPROGRESS']);
    const a2 = await a.run(LONG);
    const a3 = await a.run(LONG);
    const refused = await a.create(LONG);
    expect(refused.status).toBe(429);
    expect(refused.headers.get('retry-after')).toBe('10');
    expect((await refused.json()) as Problem).toMatchObject({
      error_code: 'resource_unavailable',
      retryable: true,
      detail: "this team's queued runs reached its limit, limits.max_queued_runs_per_team: 2; retry later"
    });

    const b1 = await b.run(LONG);
    // The one worker comes free: B's run, queued last, goes before A's two older ones.
    await a.cancel(a1);
    await b.wait(b1, ['INPROGRESS']);
    expect([await a.state(a2), await a.state(a3)]).toEqual(['QUEUED', 'QUEUED']);
    // Then A's, oldest first.
    await b.cancel(b1);
    await a.wait(a2, ['INPROGRESS']);
    expect(await a.state(a3)).toBe('QUEUED');
    for (const id of [a2, a3]) await a.cancel(id);
  });

  it('a follow-up that would queue an ended run again takes a queue place as a create does: 429 at the limit, nothing recorded', async () => {
    ex = await startTestExecutor({
      workers: 1,
      limits: { max_queued_runs: 10, max_queued_runs_per_team: 2 }
    });
    const a = await team('team-a');
    const done = await a.run('@sim result done');
    await a.wait(done, ['SUCCEEDED']);
    const a1 = await a.run(LONG);
    await a.wait(a1, ['INPROGRESS']);
    const a2 = await a.run(LONG);
    const a3 = await a.run(LONG);
    const refused = await a.send('POST', `/api/v1/agent/runs/${done}/followups`, { message: 'and again' });
    expect(refused.status).toBe(429);
    expect(refused.headers.get('retry-after')).toBe('10');
    expect((await refused.json()) as Problem).toMatchObject({
      error_code: 'resource_unavailable',
      detail: `run ${done} has ended, and continuing it would queue it again: this team's queued runs reached its limit, limits.max_queued_runs_per_team: 2; retry later`
    });
    expect(await a.state(done)).toBe('SUCCEEDED');
    const events = (await (await a.send('GET', `/api/v1/agent/runs/${done}/transcript`)).json()) as {
      events: { kind: string }[];
    };
    expect(events.events.some(event => event.kind === 'followup')).toBe(false);
    // A place comes free: the same follow-up is taken.
    await a.cancel(a3);
    const taken = await a.send('POST', `/api/v1/agent/runs/${done}/followups`, { message: 'and again' });
    expect(taken.status).toBe(200);
    expect(((await taken.json()) as { state: string }).state).toBe('QUEUED');
    for (const id of [a1, a2, done]) await a.cancel(id);
  });

  it('a team at its running cap waits while other teams’ runs take the free workers', async () => {
    ex = await startTestExecutor({ workers: 4, limits: { max_running_runs_per_team: 1 } });
    const a = await team('team-a');
    const b = await team('team-b');
    const c = await team('team-c');
    const a1 = await a.run(LONG);
    await a.wait(a1, ['INPROGRESS']);
    const a2 = await a.run(LONG);
    const b1 = await b.run(LONG);
    const c1 = await c.run(LONG);
    await b.wait(b1, ['INPROGRESS']);
    await c.wait(c1, ['INPROGRESS']);
    // A fourth worker is free, and A's second run is the only one queued: A is at its cap.
    expect(ex.pool.runningCount).toBe(3);
    expect(await a.state(a2)).toBe('QUEUED');
    await a.cancel(a1);
    await a.wait(a2, ['INPROGRESS']);
    for (const [t, id] of [
      [a, a2],
      [b, b1],
      [c, c1]
    ] as const)
      await t.cancel(id);
  });
});

describe('schedules, per team', () => {
  const schedule = (name: string) => ({
    name,
    cron_schedule: '* * * * *',
    prompt: LONG,
    agent_config: { environment_id: 'local' }
  });

  it('a team at its schedule limit gets 409 naming it; another team still creates; a deletion makes room', async () => {
    ex = await startTestExecutor({ limits: { max_schedules_per_team: 2 } });
    await ex.scheduler.stop();
    const a = await team('team-a');
    const b = await team('team-b');
    const first = await a.send('POST', '/api/v1/agent/schedules', schedule('one'));
    expect(first.status).toBe(200);
    expect((await a.send('POST', '/api/v1/agent/schedules', schedule('two'))).status).toBe(200);
    const refused = await a.send('POST', '/api/v1/agent/schedules', schedule('three'));
    expect(refused.status).toBe(409);
    expect((await refused.json()) as Problem).toMatchObject({
      error_code: 'schedule_limit_reached',
      retryable: false,
      detail:
        'this team has 2 schedules, the limit of limits.max_schedules_per_team; delete one to create another'
    });
    expect((await b.send('POST', '/api/v1/agent/schedules', schedule('b-one'))).status).toBe(200);
    const { id } = (await first.json()) as { id: string };
    expect((await a.send('DELETE', `/api/v1/agent/schedules/${id}`)).status).toBe(200);
    expect((await a.send('POST', '/api/v1/agent/schedules', schedule('three'))).status).toBe(200);
    const listed = (await (await a.send('GET', '/api/v1/agent/schedules')).json()) as {
      schedules: { name: string }[];
    };
    expect(listed.schedules.map(s => s.name)).toEqual(['three', 'two']);
  });

  it("a fire that meets its team's queue limit records last_spawn_error; another team's fire starts its run", async () => {
    ex = await startTestExecutor({
      workers: 1,
      limits: { max_queued_runs: 10, max_queued_runs_per_team: 1 }
    });
    await ex.scheduler.stop();
    const a = await team('team-a');
    const b = await team('team-b');
    // A fills its share: one run on the worker, one queued.
    const a1 = await a.run(LONG);
    await a.wait(a1, ['INPROGRESS']);
    const a2 = await a.run(LONG);
    const made = async (t: typeof a, name: string) => {
      const response = await t.send('POST', '/api/v1/agent/schedules', schedule(name));
      expect(response.status).toBe(200);
      return (await response.json()) as { id: string; history: { next_run: string } };
    };
    const sa = await made(a, 'a-every-minute');
    const sb = await made(b, 'b-every-minute');
    const dueAt = Math.max(Date.parse(sa.history.next_run), Date.parse(sb.history.next_run));
    await new Scheduler(ex.context.stores, ex.config, { now: () => dueAt + 1000 }).tick();

    const read = async (t: typeof a, id: string) =>
      (await (await t.send('GET', `/api/v1/agent/schedules/${id}`)).json()) as {
        last_spawn_error: string | null;
        last_run_id: string | null;
      };
    const afterA = await read(a, sa.id);
    expect(afterA.last_run_id).toBeNull();
    expect(afterA.last_spawn_error).toMatch(
      /^the fire at \S+ started no run: the team's queued runs reached its limit, limits\.max_queued_runs_per_team: 1$/
    );
    const afterB = await read(b, sb.id);
    expect(afterB.last_spawn_error).toBeNull();
    expect(afterB.last_run_id).not.toBeNull();
    expect(await b.state(afterB.last_run_id!)).toBe('QUEUED');
    // B's run is next on the worker, before A's older queued one.
    await a.cancel(a1);
    await b.wait(afterB.last_run_id!, ['INPROGRESS']);
    expect(await a.state(a2)).toBe('QUEUED');
    await a.cancel(a2);
    await b.cancel(afterB.last_run_id!);
  });
});
