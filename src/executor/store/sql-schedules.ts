// The schedules table, for both databases: a schedule's settings as one JSON column (`spec`), its
// state (enabled, the next due time in ms) and its history (last fire, last run, last spawn
// error). Every read and write a team makes is scoped to the team; the scheduler reads due
// schedules of every team. A due time is moved on by a guarded UPDATE (`WHERE next_run_ms = the
// due time`), so of several nodes handling the same fire only one records it; the run itself is
// made exactly once by the runs table's idempotency index (scheduler.ts).

import type { Dialect } from './dialect.js';
import { sql } from './dialect.js';
import type {
  FireRecord,
  ScheduleCreator,
  ScheduleSpec,
  ScheduleStore,
  StoredSchedule
} from './schedule-types.js';

export type { FireRecord, ScheduleCreator, ScheduleSpec, ScheduleStore, StoredSchedule };

const COLUMNS = `id, team, spec, enabled, next_run_ms, last_ran, last_run_id, last_spawn_error, created_by,
  created_at, updated_at`;

interface ScheduleRow {
  id: string;
  team: string;
  spec: string;
  enabled: unknown;
  next_run_ms: unknown;
  last_ran: string | null;
  last_run_id: string | null;
  last_spawn_error: string | null;
  created_by: string;
  created_at: string;
  updated_at: string;
}

function scheduleOf(row: ScheduleRow): StoredSchedule {
  return {
    ...row,
    spec: JSON.parse(row.spec) as ScheduleSpec,
    enabled: Number(row.enabled) === 1,
    next_run_ms: row.next_run_ms === null ? null : Number(row.next_run_ms),
    created_by: JSON.parse(row.created_by) as ScheduleCreator
  };
}

export class SqlScheduleStore implements ScheduleStore {
  constructor(private readonly d: Dialect) {}

  /** One statement counts the team's schedules and inserts (several nodes may pass it by creates in flight). */
  async createSchedule(s: StoredSchedule, maxPerTeam = Number.MAX_SAFE_INTEGER): Promise<boolean> {
    const inserted = await this.d.run(
      sql(
        `INSERT INTO schedules (${COLUMNS}) SELECT ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?
         WHERE (SELECT COUNT(*) FROM (SELECT 1 FROM schedules WHERE team = ? LIMIT ?) AS kept) < ?`,
        s.id,
        s.team,
        JSON.stringify(s.spec),
        s.enabled ? 1 : 0,
        s.next_run_ms,
        s.last_ran,
        s.last_run_id,
        s.last_spawn_error,
        JSON.stringify(s.created_by),
        s.created_at,
        s.updated_at,
        s.team,
        maxPerTeam,
        maxPerTeam
      )
    );
    return inserted > 0;
  }

  async getSchedule(team: string, id: string): Promise<StoredSchedule | undefined> {
    const [row] = await this.d.all<ScheduleRow>(
      sql(`SELECT ${COLUMNS} FROM schedules WHERE id = ? AND team = ?`, id, team)
    );
    return row && scheduleOf(row);
  }

  async listSchedules(team: string): Promise<StoredSchedule[]> {
    const rows = await this.d.all<ScheduleRow>(sql(`SELECT ${COLUMNS} FROM schedules WHERE team = ?`, team));
    return rows
      .map(scheduleOf)
      .sort((a, b) => a.spec.name.localeCompare(b.spec.name) || a.id.localeCompare(b.id));
  }

  async updateSchedule(
    team: string,
    id: string,
    change: { spec: ScheduleSpec; enabled: boolean; nextRunMs: number | null; at: string }
  ): Promise<boolean> {
    const changed = await this.d.run(
      sql(
        'UPDATE schedules SET spec = ?, enabled = ?, next_run_ms = ?, updated_at = ? WHERE id = ? AND team = ?',
        JSON.stringify(change.spec),
        change.enabled ? 1 : 0,
        change.nextRunMs,
        change.at,
        id,
        team
      )
    );
    return changed > 0;
  }

  async deleteSchedule(team: string, id: string): Promise<boolean> {
    return (await this.d.run(sql('DELETE FROM schedules WHERE id = ? AND team = ?', id, team))) > 0;
  }

  async dueSchedules(nowMs: number, limit: number): Promise<StoredSchedule[]> {
    const rows = await this.d.all<ScheduleRow>(
      sql(
        `SELECT ${COLUMNS} FROM schedules WHERE enabled = 1 AND next_run_ms <= ? ORDER BY next_run_ms LIMIT ?`,
        nowMs,
        limit
      )
    );
    return rows.map(scheduleOf);
  }

  async recordFire(id: string, dueMs: number, record: FireRecord): Promise<boolean> {
    const sets = ['next_run_ms = ?'];
    const values: unknown[] = [record.nextRunMs];
    if (record.ran) {
      sets.push('last_ran = ?', 'last_run_id = ?');
      values.push(record.ran.at, record.ran.runId);
    }
    if (record.error !== undefined) {
      sets.push('last_spawn_error = ?');
      values.push(record.error);
    }
    const changed = await this.d.run(
      sql(
        `UPDATE schedules SET ${sets.join(', ')} WHERE id = ? AND enabled = 1 AND next_run_ms = ?`,
        ...values,
        id,
        dueMs
      )
    );
    return changed > 0;
  }
}
