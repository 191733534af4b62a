// What the store keeps of a scheduled agent and what it does with one (ScheduleStore), apart from
// the SQL (sql-schedules.ts) so that the Stores interface can name it without an import cycle.

/** A schedule's settings as the API sets them. */
export interface ScheduleSpec {
  name: string;
  cron_schedule: string;
  prompt: string;
  agent_config: Record<string, unknown> & { environment_id: string };
  time_zone: string;
  overlap: 'skip' | 'queue' | 'cancel_previous';
  catch_up: boolean;
}

export interface ScheduleCreator {
  type: 'user' | 'agent';
  uid: string;
  display_name: string;
}

export interface StoredSchedule {
  id: string;
  team: string;
  spec: ScheduleSpec;
  enabled: boolean;
  /** The next due time (ms since the epoch); null while paused or when the expression never fires again. */
  next_run_ms: number | null;
  last_ran: string | null;
  last_run_id: string | null;
  last_spawn_error: string | null;
  created_by: ScheduleCreator;
  created_at: string;
  updated_at: string;
}

/** What the scheduler writes after handling a due time. */
export interface FireRecord {
  nextRunMs: number | null;
  /** Set when a run was started (or found already started) for the fire. */
  ran?: { at: string; runId: string };
  /** The spawn error to show (null clears it; undefined leaves it). */
  error?: string | null;
}

export interface ScheduleStore {
  /** Stores a new schedule; false (nothing stored) when its team has `maxPerTeam` already. */
  createSchedule(schedule: StoredSchedule, maxPerTeam?: number): Promise<boolean>;
  getSchedule(team: string, id: string): Promise<StoredSchedule | undefined>;
  listSchedules(team: string): Promise<StoredSchedule[]>;
  /** Replaces settings, enabled and the next due time; false when the team has no such schedule. */
  updateSchedule(
    team: string,
    id: string,
    change: { spec: ScheduleSpec; enabled: boolean; nextRunMs: number | null; at: string }
  ): Promise<boolean>;
  deleteSchedule(team: string, id: string): Promise<boolean>;
  /** Enabled schedules of every team whose next due time is at or before `nowMs`. */
  dueSchedules(nowMs: number, limit: number): Promise<StoredSchedule[]>;
  /** Records a handled fire, only while the schedule is still due at `dueMs`; whether it was. */
  recordFire(id: string, dueMs: number, record: FireRecord): Promise<boolean>;
}
