// The SQL store's dialect on PostgreSQL, shared by every executor node on one database:
// - leases are stamped and checked with the database's clock, so nodes' clocks may disagree;
// - claims and sweeps pick rows with FOR UPDATE SKIP LOCKED, so two nodes never take one run;
// - a run's row hands out its event numbers (runs.event_seq), so writers on different nodes never
//   collide;
// - a change, its state event and its pg_notify are one statement, so one round trip and one commit;
//   the notification is sent at commit, and notify.ts hears other nodes' (LISTEN, fallback poll).
// Connections, transactions and outage classification are connection.ts.

import type pg from 'pg';
import type { ChangeOptions, Dialect, FollowupWrite, Row, RunInsert, Statement } from '../dialect.js';
import { sql } from '../dialect.js';
import { RUN_COLUMNS } from '../rows.js';
import type { RunChange, StoredRun } from '../types.js';
import { bytes, numberPlaceholders, query, transaction } from './connection.js';
import { CHANNEL, ChangeFeed, KEYS_CHANGED } from './notify.js';

/** The transaction-scoped advisory lock follow-ups that queue an ended run again take in turn. */
const FOLLOWUP_QUEUE_LOCK = 0x61726671; // 'arfq'

export class PostgresDialect implements Dialect {
  readonly kind = 'postgres';
  readonly shared = true;
  readonly clockMs = `(extract(epoch from clock_timestamp()) * 1000)::bigint`;
  readonly changedAt = 'clock_timestamp()';
  readonly skipLocked = 'FOR UPDATE SKIP LOCKED';
  readonly numberEvent = ', event_seq = event_seq + 1';
  readonly textType = 'bytea';
  readonly noLimit = null;
  private readonly feed: ChangeFeed;
  private keysListener?: () => void;

  constructor(
    private readonly pool: pg.Pool,
    url: string,
    fallbackPollMs: number
  ) {
    this.feed = new ChangeFeed(pool, url, fallbackPollMs, () => this.keysListener?.());
  }

  bytes(text: string | null): unknown {
    return bytes(text);
  }

  listHas(json: string, key: string, value: string): string {
    return `((${json})::jsonb -> '${key}') @> to_jsonb(${value})`;
  }

  appendJson(column: string): string {
    return `(COALESCE(${column}, '[]')::jsonb || jsonb_build_array(?::jsonb))::text`;
  }

  /** bytea is read back as text elsewhere in this store (see TYPES in connection.ts): these come as base64. */
  selectBytes(column: string): string {
    return `encode(${column}, 'base64') AS ${column}`;
  }

  readBytes(value: unknown): Buffer {
    return Buffer.from(value as string, 'base64');
  }

  async all<R = Row>(statement: Statement): Promise<R[]> {
    return (await query(this.pool, numberPlaceholders(statement.text), statement.values)).rows as R[];
  }

  async run(statement: Statement): Promise<number> {
    return (await query(this.pool, numberPlaceholders(statement.text), statement.values)).rowCount ?? 0;
  }

  batch(statements: Statement[]): Promise<number[]> {
    return transaction(this.pool, async client => {
      const counts: number[] = [];
      for (const s of statements)
        counts.push((await client.query(numberPlaceholders(s.text), s.values)).rowCount ?? 0);
      return counts;
    });
  }

  /** Other nodes' commits are heard only by notification, later: no marker. */
  changeStamp(): undefined {
    return undefined;
  }

  /** The rows come whole from the server; `stopAfter` is left to the caller's cut. */
  list<R = Row>(statement: Statement): Promise<R[]> {
    return this.all<R>(statement);
  }

  /** The queue counts are sub-selects of the insert's condition: one statement, counted at the insert. */
  create({ insert, queues, event, follow }: RunInsert): Promise<StoredRun[]> {
    const room = sql(
      queues.map(queue => `(${queue.count.text}) < ?`).join(' AND ') || '1 = 1',
      ...queues.flatMap(queue => [...queue.count.values, queue.limit])
    );
    return this.change(insert(room), event, { follow });
  }

  /**
   * One transaction. Follow-ups that queue an ended run again take the queue lock first (a
   * transaction-scoped advisory lock), so they count one after another, each seeing the runs the
   * one before it queued: N at once cannot pass a limit by N. The message and the requeue follow
   * in the same transaction, or neither when a queue is full.
   */
  async followup({
    runId,
    at,
    data,
    ended,
    queues,
    requeue,
    event
  }: FollowupWrite): Promise<{ seq: number; runs: StoredRun[] } | { full: string }> {
    type Changed = StoredRun & Row & { event_seq?: number; notified?: unknown };
    const written = await transaction(this.pool, async client => {
      const run = async <R extends Row>(made: Statement) =>
        (await client.query<R>(numberPlaceholders(made.text), made.values)).rows;
      // Looked at again once locked (a follow-up just before may have queued the run already), and
      // counted only under the lock.
      if ((await run(ended)).length > 0) {
        await run(sql('SELECT pg_advisory_xact_lock(?)', FOLLOWUP_QUEUE_LOCK));
        if ((await run(ended)).length > 0) {
          for (const queue of queues) {
            const [row] = await run<{ n: unknown }>(queue.count);
            if (Number(row?.n ?? 0) >= queue.limit) return { full: queue.name };
          }
        }
      }
      const [added] = await run<{ seq: number }>(this.appending(runId, 'followup', data, at));
      if (added === undefined) throw new Error(`run ${runId} does not exist`);
      const runs = await run<Changed>(this.changing(requeue, event));
      return { seq: added.seq, runs };
    });
    if ('full' in written) return written;
    const strip = ({ event_seq: _seq, notified: _notified, ...run }: Changed): StoredRun => run;
    this.feed.tellEvent(runId, written.seq);
    const runs = written.runs.map(strip);
    for (const changed of runs) this.feed.tell(changed);
    return { seq: written.seq, runs };
  }

  /** A change with its state event and its notification, as one statement. */
  private changing(statement: Statement, event: string): Statement {
    return sql(
      `WITH changed AS (${statement.text} RETURNING ${RUN_COLUMNS}, event_seq),
       event AS (INSERT INTO events (run_id, seq, at, kind, data)
         SELECT run_id, event_seq, updated_at, 'state', ? FROM changed)
       SELECT changed.*, pg_notify(?, json_build_object('n', ?::text, 'r', run_id, 's', state, 'v', version)::text)
         AS notified
       FROM changed`,
      ...statement.values,
      event,
      CHANNEL,
      this.feed.node
    );
  }

  async change(
    statement: Statement,
    event: string,
    options: ChangeOptions & Pick<RunInsert, 'follow'> = {}
  ): Promise<StoredRun[]> {
    const { follow, then } = options;
    type Changed = StoredRun & { event_seq?: number; notified?: unknown };
    const changing = this.changing(statement, event);
    const told: Changed[] = [];
    // A statement to follow or a change after makes it a transaction of its own (one round trip more each way).
    const rows =
      !follow && !then
        ? await this.all<Changed>(changing)
        : await transaction(this.pool, async client => {
            const run = async (made: Statement) =>
              (await client.query<Changed>(numberPlaceholders(made.text), made.values)).rows;
            const rows = await run(changing);
            told.push(...rows);
            for (const row of rows) {
              for (const more of follow?.(row) ?? []) await run(more);
              if (then) told.push(...(await run(this.changing(then.statement(row), then.event))));
            }
            return rows;
          });
    const strip = ({ event_seq: _seq, notified: _notified, ...run }: Changed): StoredRun => run;
    // This process's listeners now; other nodes hear the pg_notify sent at commit.
    for (const run of told.length > 0 ? told : rows) this.feed.tell(strip(run));
    return rows.map(strip);
  }

  async appendEvent(runId: string, kind: string, data: string, at: string): Promise<number> {
    // Other nodes hear of the event by a notification sent at commit (held transcript reads).
    const [row] = await this.all<{ seq: number }>(this.appending(runId, kind, data, at));
    if (row === undefined) throw new Error(`run ${runId} does not exist`);
    this.feed.tellEvent(runId, row.seq);
    return row.seq;
  }

  /** An event appended to a run's transcript, numbered on the run's row, with its notification. */
  private appending(runId: string, kind: string, data: string, at: string): Statement {
    return sql(
      `WITH next AS (UPDATE runs SET event_seq = event_seq + 1 WHERE run_id = ? RETURNING run_id, event_seq),
         added AS (INSERT INTO events (run_id, seq, at, kind, data) SELECT run_id, event_seq, ?, ?, ? FROM next
           RETURNING run_id, seq)
       SELECT seq, pg_notify(?, json_build_object('n', ?::text, 'r', run_id, 'e', seq)::text) FROM added`,
      runId,
      at,
      kind,
      data,
      CHANNEL,
      this.feed.node
    );
  }

  keysChanged(): Statement {
    return sql('SELECT pg_notify(?, ?)', CHANNEL, KEYS_CHANGED);
  }

  /** Trusted while notifications are heard (a key change on any node empties the cache). */
  keyCacheState(): 'fresh' | 'untrusted' {
    return this.feed.connected ? 'fresh' : 'untrusted';
  }

  onKeysChanged(listener: () => void): void {
    this.keysListener = listener;
  }

  onChange(listener: (change: RunChange) => void): () => void {
    return this.feed.onChange(listener);
  }

  onEvent(listener: (runId: string, seq: number) => void): () => void {
    return this.feed.onEvent(listener);
  }

  async close(): Promise<void> {
    await this.feed.close();
    await this.pool.end();
  }
}
