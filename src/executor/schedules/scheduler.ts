// Fires the due schedules of every team: each node ticks about once a second and handles the
// schedules whose next due time has come. A fire is made exactly once however many nodes handle
// it at once, and across restarts: the run is created with the idempotency key
// `schedule:<id>:<due ms>`, so the runs table's unique index lets one create through and answers
// every other (another node, or this node again after a crash before it recorded the fire) with
// that same run; then a guarded UPDATE (`WHERE next_run_ms = due`) moves the schedule on, once.
//
// A fire time that passed while no node ran (earlier than this scheduler's start, by more than a
// grace) starts one run when a node comes back (catch_up, the default: a nightly job should not
// silently not happen because the machine rebooted at midnight; several missed times start one
// run, not a burst), or is skipped with `catch_up: false`, recorded in last_spawn_error. While a
// previous run of the schedule is still active, `overlap` decides: `skip` the fire (recorded),
// `queue` it (it stays due and starts once that run ended; times passing meanwhile merge into
// it), or `cancel_previous` (cancel that run, then start).

import { isTerminalState } from '../../api/index.js';
import type { ExecutorConfig } from '../config/config.js';
import type { StoredSchedule } from '../store/sql-schedules.js';
import type { StoredRun, Stores } from '../store/types.js';
import { nextFire } from './cron.js';
import { newRunId } from '../runs/run-id.js';

export interface SchedulerOptions {
  /** The clock, ms since the epoch (tests move it instead of waiting for minutes). */
  now?: () => number;
  /** How late a fire may be handled before it counts as missed (it passed before this node started). */
  graceMs?: number;
  /** Milliseconds between ticks. */
  intervalMs?: number;
  log?: { warn(object: object, message: string): void };
}

const BATCH = 50;

export class Scheduler {
  readonly now: () => number;
  private readonly startedAt: number;
  private readonly graceMs: number;
  private readonly intervalMs: number;
  private timer: NodeJS.Timeout | undefined;
  private ticking: Promise<void> | undefined;

  constructor(
    private readonly stores: Pick<Stores, 'runs' | 'schedules'>,
    private readonly config: Pick<ExecutorConfig, 'environments' | 'limits'>,
    private readonly options: SchedulerOptions = {}
  ) {
    this.now = options.now ?? Date.now;
    this.startedAt = this.now();
    this.graceMs = options.graceMs ?? 60_000;
    this.intervalMs = options.intervalMs ?? 1_000;
  }

  start(): void {
    if (this.timer) return;
    this.timer = setInterval(() => void this.tick().catch(() => undefined), this.intervalMs);
    this.timer.unref();
  }

  /** Stops ticking and waits for a tick under way. */
  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
    await this.ticking?.catch(() => undefined);
  }

  /** Handles every schedule due now (one tick at a time in this process). */
  tick(): Promise<void> {
    this.ticking ??= this.handleDue().finally(() => (this.ticking = undefined));
    return this.ticking;
  }

  private async handleDue(): Promise<void> {
    const nowMs = this.now();
    const handled = new Set<string>();
    for (;;) {
      const due = (await this.stores.schedules.dueSchedules(nowMs, BATCH + handled.size)).filter(
        s => !handled.has(s.id)
      );
      if (due.length === 0) return;
      for (const schedule of due) {
        handled.add(schedule.id);
        try {
          await this.fire(schedule, nowMs);
        } catch (error) {
          this.options.log?.warn({ err: error, schedule_id: schedule.id }, 'schedule fire failed');
        }
      }
    }
  }

  private async fire(schedule: StoredSchedule, nowMs: number): Promise<void> {
    const { id, spec } = schedule;
    const due = schedule.next_run_ms!;
    const dueAt = new Date(due).toISOString();
    const next = nextFire(spec.cron_schedule, spec.time_zone, Math.max(due, nowMs));
    const record = (error: string) => this.stores.schedules.recordFire(id, due, { nextRunMs: next, error });

    if (due < this.startedAt - this.graceMs && !spec.catch_up) {
      await record(`the fire at ${dueAt} passed while no executor ran; skipped (catch_up: false)`);
      return;
    }
    const environment = spec.agent_config.environment_id;
    if (!this.config.environments.some(env => env.id === environment)) {
      await record(
        `the fire at ${dueAt} started no run: environment ${JSON.stringify(environment)} is not served`
      );
      return;
    }
    if (!(await this.overlapAllows(schedule, due, nowMs, record))) return;
    // Paused, changed or handled by another node since it was read: leave it.
    const current = await this.stores.schedules.getSchedule(schedule.team, id);
    if (!current?.enabled || current.next_run_ms !== due) return;
    await this.startRun(schedule, due, nowMs, next, record);
  }

  /**
   * What the schedule's `overlap` says of runs of earlier fires that are still active (a run of
   * this very fire is not "previous": another node may have just started it): skip this fire
   * (recorded), queue it (it stays due; it starts once the previous run ended), or cancel them.
   * True when the fire goes on.
   */
  private async overlapAllows(
    { id, team, spec }: StoredSchedule,
    due: number,
    nowMs: number,
    record: (error: string) => Promise<unknown>
  ): Promise<boolean> {
    const dueAt = new Date(due).toISOString();
    const active = (await this.stores.runs.listRuns(team, { limit: 100, scheduleId: id })).filter(
      run => !isTerminalState(run.state) && scheduledFor(run) < due
    );
    if (active.length === 0) return true;
    const previous = active[0]!;
    if (spec.overlap === 'skip') {
      await record(
        `skipped the fire at ${dueAt}: run ${previous.run_id} of this schedule is still ${previous.state} (overlap: skip)`
      );
      return false;
    }
    if (spec.overlap === 'queue') return false;
    const at = new Date(nowMs).toISOString();
    for (const run of active)
      await this.stores.runs.cancelRun(team, run.run_id, at, `superseded by the schedule's fire at ${dueAt}`);
    return true;
  }

  /**
   * Creates the fire's run (its idempotency key makes it once, whichever nodes handle the fire) and
   * records the fire: its run, or why it started none.
   */
  private async startRun(
    schedule: StoredSchedule,
    due: number,
    nowMs: number,
    next: number | null,
    record: (error: string) => Promise<unknown>
  ): Promise<void> {
    const { id, team, spec } = schedule;
    const dueAt = new Date(due).toISOString();
    const key = `schedule:${id}:${due}`;
    const { maxQueuedRuns, maxQueuedRunsPerTeam } = this.config.limits;
    const result = await this.stores.runs.createRun(
      {
        run_id: newRunId(),
        team,
        environment_id: spec.agent_config.environment_id,
        title: spec.name,
        prompt: spec.prompt,
        config: JSON.stringify(spec.agent_config),
        extra: JSON.stringify({ schedule_id: id, scheduled_for: dueAt }),
        creator_type: schedule.created_by.type,
        creator_uid: schedule.created_by.uid,
        creator_name: schedule.created_by.display_name,
        created_at: new Date(nowMs).toISOString()
      },
      { key, requestHash: key },
      maxQueuedRuns,
      maxQueuedRunsPerTeam
    );
    if (result.kind === 'created' || result.kind === 'replayed') {
      await this.stores.schedules.recordFire(id, due, {
        nextRunMs: next,
        ran: { at: result.run.created_at, runId: result.run.run_id },
        error: null
      });
      return;
    }
    await record(
      result.kind === 'queue_full'
        ? `the fire at ${dueAt} started no run: the queue holds ${maxQueuedRuns} runs, its limit`
        : result.kind === 'team_queue_full'
          ? `the fire at ${dueAt} started no run: the team's queued runs reached its limit, limits.max_queued_runs_per_team: ${maxQueuedRunsPerTeam}`
          : `the fire at ${dueAt} started no run: its idempotency key ${key} was used by another request`
    );
  }
}

/** The due time (ms) of the fire that started a run; 0 for runs no schedule started. */
function scheduledFor(run: StoredRun): number {
  const extra = JSON.parse(run.extra) as { scheduled_for?: unknown };
  return typeof extra.scheduled_for === 'string' ? Date.parse(extra.scheduled_for) : 0;
}
