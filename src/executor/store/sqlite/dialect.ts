// The SQL store's dialect on node:sqlite (one machine): the clock is SQLite's, writers are serial
// (BEGIN IMMEDIATE), so nothing is skipped; a run's events are numbered at insert, one past its
// last; and changes are told to this process's listeners after commit, and found by other processes
// sharing the file through PRAGMA data_version (changes.ts). List pages are kept between writes
// (page-cache.ts).

import { EventEmitter } from 'node:events';
import {
  type ChangeOptions,
  type Dialect,
  type FollowupWrite,
  type Queue,
  type Row,
  type RunInsert,
  type Statement,
  sql
} from '../dialect.js';
import { PageCache } from '../page-cache.js';
import { RUN_COLUMNS } from '../rows.js';
import type { RunChange, StoredRun } from '../types.js';
import { SqliteChanges } from './changes.js';
import type { SqliteConnection } from './connection.js';
import { type BatchMemo, GroupCommit } from './group-commit.js';

const INSERT_EVENT = `INSERT INTO events (run_id, seq, at, kind, data)
  VALUES (?, (SELECT COALESCE(MAX(seq), 0) + 1 FROM events WHERE run_id = ?), ?, ?, ?) RETURNING seq`;

/** The database's clock in milliseconds, as SQL. */
export const SQLITE_CLOCK_MS = `CAST(unixepoch('subsec') * 1000 AS INTEGER)`;

export class SqliteDialect implements Dialect {
  readonly kind = 'sqlite';
  readonly clockMs = SQLITE_CLOCK_MS;
  readonly changedAt = this.clockMs;
  readonly skipLocked = '';
  readonly numberEvent = '';
  readonly textType = 'TEXT';
  readonly noLimit = -1;
  private readonly changes: SqliteChanges;
  private readonly group: GroupCommit;
  /** Transcript appends of this process, for held transcript reads (others' are found by re-reading). */
  private readonly events = new EventEmitter().setMaxListeners(0);
  /** Recent list pages, until the next write (page-cache.ts). */
  private readonly pages = new PageCache<readonly Row[]>();
  /** The commit stamp and key_changes counter when the key cache was last known good. */
  private keysSeen: { stamp: string; changes: number } | undefined;

  constructor(
    private readonly db: SqliteConnection,
    readonly shared: boolean
  ) {
    this.group = new GroupCommit(db);
    this.changes = new SqliteChanges(
      {
        dataVersion: () => db.dataVersion(),
        changedSince: since =>
          db.all(
            'SELECT run_id, state, version, changed_at FROM runs WHERE changed_at > ? ORDER BY changed_at',
            [since]
          )
      },
      shared
    );
  }

  bytes(text: string | null): unknown {
    return text;
  }

  listHas(json: string, key: string, value: string): string {
    return `EXISTS (SELECT 1 FROM json_each(${json}, '$.${key}') WHERE json_each.value = ${value})`;
  }

  appendJson(column: string): string {
    return `json_insert(COALESCE(${column}, '[]'), '$[#]', json(?))`;
  }

  selectBytes(column: string): string {
    return column;
  }

  readBytes(value: unknown): Buffer {
    return Buffer.from(value as Uint8Array);
  }

  async all<R = Row>(statement: Statement): Promise<R[]> {
    return this.db.all<R>(statement.text, statement.values);
  }

  async run(statement: Statement): Promise<number> {
    return this.db.run(statement.text, statement.values);
  }

  async batch(statements: Statement[]): Promise<number[]> {
    return this.db.transaction(() => statements.map(s => this.db.run(s.text, s.values)));
  }

  /** The WAL-index header, which moves with every commit (connection.ts). */
  changeStamp(): string {
    return this.db.commitStamp();
  }

  /** Callers only read the rows (frozen, so a write to one fails loudly); they get their own array. */
  async list<R = Row>(statement: Statement, stopAfter?: (row: R) => boolean): Promise<R[]> {
    const key = `${statement.text}\n${JSON.stringify(statement.values)}\n${stopAfter ? 'stops' : ''}`;
    const page = this.pages.get(this.changeStamp(), key, () => {
      const rows: Row[] = [];
      // Rows are turned into objects one at a time, so a page of large runs stops being read early.
      for (const row of this.db.iterate<Row>(statement.text, statement.values)) {
        rows.push(Object.freeze(row));
        if (stopAfter?.(row as R)) break;
      }
      return Object.freeze(rows);
    });
    return page.slice() as R[];
  }

  async change(statement: Statement, event: string, options: ChangeOptions = {}): Promise<StoredRun[]> {
    const { then } = options;
    const told: StoredRun[] = [];
    const runs = this.db.transaction(() => {
      const runs = this.record(statement, event);
      told.push(...runs);
      if (then) for (const run of runs) told.push(...this.record(then.statement(run), then.event));
      return runs;
    });
    this.told(told);
    return runs;
  }

  /**
   * In the turn's shared transaction (group-commit.ts): each queue is counted once a batch, and the
   * batch's memo adds the runs the batch inserted, so every create is checked against the queues as
   * they are at its insert, as a count of its own would find them.
   */
  async create({ insert, queues, event, follow }: RunInsert): Promise<StoredRun[]> {
    const runs = await this.group.add(memo => {
      const counts = queues.map(queue => this.queueCount(queue, memo));
      if (queues.some((queue, index) => counts[index]! >= queue.limit)) return [];
      const runs = this.record(insert(sql('1 = 1')), event, follow);
      queues.forEach((queue, index) => memo.set(queue.name, counts[index]! + runs.length));
      return runs;
    });
    return this.told(runs);
  }

  /** A queue's runs now, counted once a batch (the memo keeps it, with the batch's own inserts). */
  private queueCount(queue: Queue, memo: BatchMemo): number {
    const known = memo.get(queue.name);
    if (known !== undefined) return known;
    const [row] = this.db.all<{ n: unknown }>(queue.count.text, queue.count.values);
    const n = Number(row?.n ?? 0);
    memo.set(queue.name, n);
    return n;
  }

  /**
   * In the turn's shared transaction, as a create: the queues counted (or known from the batch's
   * memo) only when the run has ended, and the memo told of the run queued again, so the creates
   * and follow-ups of one batch all see each other.
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
    const written = await this.group.add(memo => {
      if (this.db.all(ended.text, ended.values).length > 0) {
        const full = queues.find(queue => this.queueCount(queue, memo) >= queue.limit);
        if (full) return { full: full.name };
      }
      const [added] = this.db.all<{ seq: number }>(INSERT_EVENT, [runId, runId, at, 'followup', data]);
      const runs = this.record(requeue, event);
      // Counts the batch knows take the run queued again; the others are read afresh when needed.
      for (const queue of queues) {
        const known = memo.get(queue.name);
        if (known !== undefined) memo.set(queue.name, known + runs.length);
      }
      return { seq: added!.seq, runs };
    });
    if ('full' in written) return written;
    this.events.emit('event', runId, written.seq);
    this.told(written.runs);
    return written;
  }

  /** Runs a change of runs and records its state event on each (and `follow`'s rows), in the open transaction. */
  private record(statement: Statement, event: string, follow?: (run: StoredRun) => Statement[]): StoredRun[] {
    const runs = this.db.all<StoredRun>(`${statement.text} RETURNING ${RUN_COLUMNS}`, statement.values);
    for (const run of runs) {
      this.db.all(INSERT_EVENT, [run.run_id, run.run_id, run.updated_at, 'state', event]);
      for (const more of follow?.(run) ?? []) this.db.run(more.text, more.values);
    }
    return runs;
  }

  /** Tells this process's listeners (and, by the file, others) of committed changes. */
  private told(runs: StoredRun[]): StoredRun[] {
    for (const run of runs) {
      try {
        this.changes.tell(run);
      } catch {
        // a change listener failed; the change is stored, and timers catch up
      }
    }
    return runs;
  }

  async appendEvent(runId: string, kind: string, data: string, at: string): Promise<number> {
    const [row] = this.db.all<{ seq: number }>(INSERT_EVENT, [runId, runId, at, kind, data]);
    this.events.emit('event', runId, row!.seq);
    return row!.seq;
  }

  keysChanged(): undefined {
    return undefined;
  }

  /**
   * Stale when a key was written since the last look, here or in another process: every write to
   * api_keys moves the key_changes counter (a trigger, migration 13). While nothing at all was
   * committed to the file (the commit stamp, one read of the -shm header) the counter is not read.
   * The stamp is read first: a commit between the two reads moves the stamp kept, so the next look
   * reads the counter again.
   */
  keyCacheState(): 'fresh' | 'stale' {
    const stamp = this.db.commitStamp();
    const seen = this.keysSeen;
    if (seen?.stamp === stamp) return 'fresh';
    const [row] = this.db.all<{ changes: number }>('SELECT changes FROM key_changes WHERE id = 1', []);
    const changes = Number(row?.changes ?? -1);
    this.keysSeen = { stamp, changes };
    return seen !== undefined && seen.changes === changes ? 'fresh' : 'stale';
  }

  onKeysChanged(): void {
    // other processes' key writes are found by keyCacheState
  }

  onChange(listener: (change: RunChange) => void): () => void {
    return this.changes.onChange(listener);
  }

  onEvent(listener: (runId: string, seq: number) => void): () => void {
    this.events.on('event', listener);
    return () => this.events.off('event', listener);
  }

  async close(): Promise<void> {
    this.changes.close();
    this.db.close();
  }
}
