// RunRecordStore (run-types.ts) for both databases: a run's create (with its metadata and
// ancestors rows), reads, lists, counts, cancel (with its descendants), follow-ups, state events and
// prune. Its changes of state are RunChanges' (run-changes.ts); a dialect (dialect.ts) supplies the
// few pieces of SQL the databases write differently and runs the statements.

import * as lifecycle from '../runs/lifecycle.js';
import { LIFECYCLE } from '../runs/lifecycle.js';
import { cancelledWithAncestor } from '../runs/outcomes.js';
import { stateIn } from './change-sql.js';
import type { Dialect, Row, Statement } from './dialect.js';
import { sql } from './dialect.js';
import { listRunsSql } from './list-query.js';
import type {
  CancelResult,
  CreateResult,
  FollowupResult,
  Idempotency,
  ListQuery,
  NewFollowup,
  NewRun,
  QueueLimits,
  RunChange,
  StateEventRow,
  StoredRun
} from './records.js';
import { RUN_COLUMNS, runWeight, runsWithin, strip } from './rows.js';
import { RunChanges } from './run-changes.js';
import type { RunRecordStore } from './run-types.js';

/**
 * The create request's metadata pairs (kept in its extra fields) as rows of run_metadata, written
 * with the run in its transaction: the list's metadata filter looks them up by index, never parsing
 * a run's JSON. Undefined when there are none.
 */
function metadataRows(extra: Record<string, unknown>): ((run: StoredRun) => Statement) | undefined {
  const metadata = extra.metadata;
  if (metadata === null || typeof metadata !== 'object' || Array.isArray(metadata)) return undefined;
  const pairs = Object.entries(metadata).filter(([, value]) => typeof value === 'string');
  if (pairs.length === 0) return undefined;
  return run =>
    sql(
      `INSERT INTO run_metadata (run_id, team, key, value) VALUES ${pairs.map(() => '(?, ?, ?, ?)').join(', ')}`,
      ...pairs.flatMap(([key, value]) => [run.run_id, run.team, key, value])
    );
}

/**
 * A child run's ancestors as rows of run_ancestors (its parent at depth 1, the parent's ancestors
 * one deeper), written with the run: the list's ancestor_run_id filter and a cancel's cascade look
 * them up by index. The route has checked the parent is the team's. Undefined for a root run.
 */
function ancestorRows(extra: Record<string, unknown>): ((run: StoredRun) => Statement) | undefined {
  const parent = extra.parent_run_id;
  if (typeof parent !== 'string') return undefined;
  return run =>
    sql(
      `INSERT INTO run_ancestors (run_id, team, ancestor_run_id, depth)
       SELECT ?, ?, ?, 1
       UNION ALL SELECT ?, ?, ancestor_run_id, depth + 1 FROM run_ancestors WHERE run_id = ? AND team = ?`,
      run.run_id,
      run.team,
      parent,
      run.run_id,
      run.team,
      parent,
      run.team
    );
}

/** The statements a create writes beside the run; undefined when there are none (no transaction needed). */
function createRows(extraJson: string): ((run: StoredRun) => Statement[]) | undefined {
  const extra = JSON.parse(extraJson) as Record<string, unknown>;
  const makers = [metadataRows(extra), ancestorRows(extra)].filter(make => make !== undefined);
  if (makers.length === 0) return undefined;
  return run => makers.map(make => make(run));
}

export class SqlRunRecords implements RunRecordStore {
  constructor(
    private readonly d: Dialect,
    private readonly changes: RunChanges
  ) {}

  /**
   * The insert, admitted while the node's queue and the team's are under their limits (the dialect
   * counts them: in the statement on PostgreSQL, once per group commit on SQLite), with the state
   * event; the unique index settles concurrent creates with one key. A look for an earlier run with
   * the key comes first, so a replay is answered even when the queue is full.
   */
  async createRun(
    run: NewRun,
    idempotency: Idempotency | undefined,
    maxQueued: number,
    maxQueuedPerTeam = maxQueued
  ): Promise<CreateResult> {
    if (idempotency) {
      const replay = await this.replay(run.team, idempotency);
      if (replay) return replay;
    }
    const rule = LIFECYCLE.create;
    const transition = lifecycle.create();
    const own = Object.keys(rule.writes);
    const ownValues = this.changes.sql.setValues('create', { transition, at: run.created_at });
    const bytes = `CAST(? AS ${this.d.textType})`;
    // Counting stops at the limit, so a long queue does not make every create slower. Nodes count
    // at once, so on PostgreSQL the limit can be passed by the number of creates in flight.
    const { queued, teamQueued } = queueCounts(run.team, maxQueued, maxQueuedPerTeam);
    const [created] = await this.d.create({
      insert: room =>
        sql(
          `INSERT INTO runs (run_id, team, environment_id, title, prompt, config, extra, creator_type, creator_uid,
             creator_name, workload, idempotency_key, idempotency_hash, changed_at, ${own.join(', ')})
           SELECT ?, ?, ?, ${bytes}, ${bytes}, ?, ?, ?, ?, ?, ?, ?, ?, ${this.d.changedAt}, ${own.map(() => '?').join(', ')}
           WHERE ${room.text}
           ON CONFLICT (team, idempotency_key) WHERE idempotency_key IS NOT NULL DO NOTHING`,
          run.run_id,
          run.team,
          run.environment_id,
          this.d.bytes(run.title),
          this.d.bytes(run.prompt),
          run.config,
          run.extra,
          run.creator_type,
          run.creator_uid,
          run.creator_name,
          run.workload ?? null,
          idempotency?.key ?? null,
          idempotency?.requestHash ?? null,
          ...ownValues,
          ...room.values
        ),
      queues: [
        { name: 'queued', count: queued, limit: maxQueued },
        { name: `queued by team ${run.team}`, count: teamQueued, limit: maxQueuedPerTeam }
      ],
      event: this.changes.sql.event(transition),
      follow: createRows(run.extra)
    });
    if (created) return { kind: 'created', run: created };
    // Nothing inserted: a run with this key was created after our look (the unique index
    // decided), or a queue is full: the node's when it holds its limit now, else the team's.
    const replay = idempotency && (await this.replay(run.team, idempotency));
    if (replay) return replay;
    const [count] = await this.d.all<{ n: unknown }>(queued);
    return Number(count?.n ?? 0) >= maxQueued ? { kind: 'queue_full' } : { kind: 'team_queue_full' };
  }

  private async replay(team: string, idempotency: Idempotency): Promise<CreateResult | undefined> {
    const [row] = await this.d.all<StoredRun & { idempotency_hash: string } & Row>(
      sql(
        `SELECT ${RUN_COLUMNS}, idempotency_hash FROM runs WHERE team = ? AND idempotency_key = ?`,
        team,
        idempotency.key
      )
    );
    if (!row) return undefined;
    return row.idempotency_hash === idempotency.requestHash
      ? { kind: 'replayed', run: strip(row) }
      : { kind: 'key_reused' };
  }

  async getRun(team: string, runId: string): Promise<StoredRun | undefined> {
    return (
      await this.d.all<StoredRun & Row>(
        sql(`SELECT ${RUN_COLUMNS} FROM runs WHERE run_id = ? AND team = ?`, runId, team)
      )
    )[0];
  }

  async getRunAnyTeam(runId: string): Promise<StoredRun | undefined> {
    return (
      await this.d.all<StoredRun & Row>(sql(`SELECT ${RUN_COLUMNS} FROM runs WHERE run_id = ?`, runId))
    )[0];
  }

  async listRuns(team: string, query: ListQuery): Promise<StoredRun[]> {
    const { where, order, values } = listRunsSql(this.d.kind, team, query);
    const text = `SELECT ${RUN_COLUMNS} FROM runs WHERE ${where} ORDER BY ${order} LIMIT ?`;
    const max = query.maxWeight;
    if (max === undefined) return this.d.list<StoredRun & Row>(sql(text, ...values, query.limit));
    // Rows are read until their weight passes the page's and one more is seen (so the caller
    // knows there are more): large runs make short pages. The weight is in the text, so pages
    // kept for another weight are not taken for this one.
    let total = 0;
    let seen = 0;
    const weighed = sql(`${text} /* weight ${max} */`, ...values, query.limit);
    const rows = await this.d.list<StoredRun & Row>(weighed, run => {
      total += runWeight(run);
      return ++seen >= 2 && total > max;
    });
    return rows.slice(0, runsWithin(rows, max) + 1);
  }

  async countRunsByState(team: string): Promise<Record<string, number>> {
    const rows = await this.d.all<{ state: string; n: unknown }>(
      sql('SELECT state, COUNT(*) AS n FROM runs WHERE team = ? GROUP BY state', team)
    );
    return Object.fromEntries(rows.map(row => [row.state, Number(row.n)]));
  }

  /**
   * One guarded statement: a run in a state cancel starts from ends; any other is told how it is.
   * A cancelled run's descendants that have not ended are cancelled with it, their status message
   * naming it.
   */
  async cancelRun(team: string, runId: string, at: string, reason?: string): Promise<CancelResult> {
    const transition = lifecycle.cancelled(reason);
    const [cancelled] = await this.changes.apply(
      'cancel',
      { transition, at },
      sql('run_id = ? AND team = ?', runId, team)
    );
    if (cancelled) {
      await this.changes.apply(
        'cancel',
        { transition: lifecycle.finish(cancelledWithAncestor(runId)), at },
        sql(
          'run_id IN (SELECT run_id FROM run_ancestors WHERE team = ? AND ancestor_run_id = ?) AND team = ?',
          team,
          runId,
          team
        )
      );
      return { kind: 'cancelled', run: cancelled };
    }
    const run = await this.getRun(team, runId);
    return run ? { kind: 'finished', run } : { kind: 'not_found' };
  }

  async ancestorCount(team: string, runId: string): Promise<number> {
    const [row] = await this.d.all<{ n: unknown }>(
      sql('SELECT COUNT(*) AS n FROM run_ancestors WHERE run_id = ? AND team = ?', runId, team)
    );
    return Number(row?.n ?? 0);
  }

  async isDescendant(team: string, runId: string, ancestorRunId: string): Promise<boolean> {
    const rows = await this.d.all(
      sql(
        'SELECT 1 AS one FROM run_ancestors WHERE run_id = ? AND team = ? AND ancestor_run_id = ?',
        runId,
        team,
        ancestorRunId
      )
    );
    return rows.length > 0;
  }

  /**
   * The message is recorded and the run queued again if it has ended and the message still waits
   * (requeueWaiting), in one transaction: a worker that claims it finds the message there. A queued
   * run's first turn takes it, a running run's worker takes it after its turn (worker/turns.ts), or
   * its finish queues the run again. An ended run goes back to the queue: it takes a place there as
   * a create would, counted in that same transaction (Dialect.followup), so concurrent follow-ups of
   * ended runs cannot fill the node's queue or a team's past its limit; one refused so records
   * nothing (a message once recorded is never dropped).
   */
  async submitFollowup(
    team: string,
    runId: string,
    followup: NewFollowup,
    at: string,
    continuableSince: string,
    queues?: QueueLimits
  ): Promise<FollowupResult> {
    const before = await this.getRun(team, runId);
    if (!before) return { kind: 'not_found' };
    if (
      lifecycle.allows('followup', before.state) &&
      (before.completed_at ?? before.updated_at) < continuableSince
    )
      return { kind: 'expired', run: before };
    const requeue = this.changes.requeueWaiting(at, sql('run_id = ? AND team = ?', runId, team));
    const limits = queues ? queueCounts(team, queues.maxQueued, queues.maxQueuedPerTeam) : undefined;
    const written = await this.d.followup({
      runId,
      at,
      data: JSON.stringify({ message: followup.message, mode: followup.mode }),
      ended: sql(
        `SELECT 1 AS one FROM runs WHERE run_id = ? AND team = ? AND ${stateIn(LIFECYCLE.followup.from)}`,
        runId,
        team
      ),
      queues:
        queues && limits
          ? [
              { name: 'queued', count: limits.queued, limit: queues.maxQueued },
              { name: `queued by team ${team}`, count: limits.teamQueued, limit: queues.maxQueuedPerTeam }
            ]
          : [],
      requeue: requeue.statement,
      event: requeue.event
    });
    if ('full' in written) return { kind: written.full === 'queued' ? 'queue_full' : 'team_queue_full' };
    const [run] = written.runs;
    return { kind: 'taken', run: run ?? (await this.getRun(team, runId)) ?? before };
  }

  async listStateEvents(
    team: string,
    runIds: readonly string[],
    since: number,
    limit: number
  ): Promise<StateEventRow[]> {
    if (runIds.length === 0) return [];
    const rows = await this.d.all<{ sequence: unknown; run_id: string; state: string; at: string }>(
      sql(
        `SELECT sequence, run_id, state, at FROM run_state_events
         WHERE run_id IN (${runIds.map(() => '?').join(', ')}) AND team = ? AND sequence > ?
         ORDER BY sequence LIMIT ?`,
        ...runIds,
        team,
        since,
        limit
      )
    );
    return rows.map(row => ({ ...row, sequence: Number(row.sequence) }));
  }

  async runStates(team: string, runIds: readonly string[]): Promise<Map<string, string>> {
    if (runIds.length === 0) return new Map();
    const rows = await this.d.all<{ run_id: string; state: string }>(
      sql(
        `SELECT run_id, state FROM runs WHERE run_id IN (${runIds.map(() => '?').join(', ')}) AND team = ?`,
        ...runIds,
        team
      )
    );
    return new Map(rows.map(row => [row.run_id, row.state]));
  }

  /** Deletes the runs prune may start from, completed before `before`, with their transcripts and artifacts. */
  async pruneFinished(before: string): Promise<number> {
    const filter = `${stateIn(LIFECYCLE.prune.from)} AND completed_at < ?`;
    const counts = await this.d.batch([
      sql(`DELETE FROM events WHERE run_id IN (SELECT run_id FROM runs WHERE ${filter})`, before),
      sql(`DELETE FROM artifacts WHERE run_id IN (SELECT run_id FROM runs WHERE ${filter})`, before),
      sql(`DELETE FROM runs WHERE ${filter}`, before)
    ]);
    return counts[2]!;
  }

  onChange(listener: (change: RunChange) => void): () => void {
    return this.d.onChange(listener);
  }
}

/** The statements counting the node's and a team's queued runs (each stops at its limit). */
function queueCounts(team: string, maxQueued: number, maxQueuedPerTeam: number) {
  const queuedStates = stateIn(LIFECYCLE.create.to);
  return {
    queued: sql(
      `SELECT COUNT(*) AS n FROM (SELECT 1 FROM runs WHERE ${queuedStates} LIMIT ?) AS queued`,
      maxQueued
    ),
    teamQueued: sql(
      `SELECT COUNT(*) AS n FROM (SELECT 1 FROM runs WHERE team = ? AND ${queuedStates} LIMIT ?) AS team_queued`,
      team,
      maxQueuedPerTeam
    )
  };
}
