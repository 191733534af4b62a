// What the SQL store (sql-store.ts) needs from a database, and nothing more: the few pieces of SQL
// the two dialects write differently (the clock, skipping locked rows, user text as bytes, appending
// to a JSON list, reading bytes back), how a statement runs, and the two things each does its own way
// because its engine differs: numbering a run's transcript events and telling other processes of a
// change. Every statement is written once, with `?` placeholders; a dialect turns them into its own.
// sqlite/dialect.ts and postgres/dialect.ts implement it.

import type { RunChange, StoredRun } from './types.js';

export type Row = Record<string, unknown>;

/** One statement: SQL with `?` placeholders, and its values in order. */
export interface Statement {
  text: string;
  values: unknown[];
}

/** What else a change does in its transaction. */
export interface ChangeOptions {
  /**
   * A second change of each run the first changed, made after it (an UPDATE of runs, without
   * RETURNING, with its own state event and notice): a finished run queued again for a follow-up
   * that waits. Its runs are told to listeners after the first change's.
   */
  then?: { statement: (run: StoredRun) => Statement; event: string };
}

export interface Dialect {
  readonly kind: 'sqlite' | 'postgres';
  /** Whether other processes run work from this database too (see Stores.shared). */
  readonly shared: boolean;

  // SQL the dialects write differently
  /** Milliseconds since the epoch on the store's clock (leases are stamped and checked with it). */
  readonly clockMs: string;
  /** The value runs.changed_at gets when a run changes (other processes find changes by it). */
  readonly changedAt: string;
  /** After a sub-select picking rows to change: lock them, skipping rows another writer holds. */
  readonly skipLocked: string;
  /** SET items a recorded change adds to number its state event on the run's row (or ''). */
  readonly numberEvent: string;
  /** The type user text (title, prompt, status message) is kept as, for a CAST. */
  readonly textType: string;
  /** A user-text value as the column takes it. */
  bytes(text: string | null): unknown;
  /**
   * Whether the JSON object in the text column `json` holds, under `key`, an array with the number
   * `value` (a column or `?`): a turn event's list of the follow-ups it took.
   */
  listHas(json: string, key: string, value: string): string;
  /** The LIMIT value that means no limit. */
  readonly noLimit: unknown;
  /** `column`, a JSON array as text (or NULL), with one more entry: the JSON text of the next `?`. */
  appendJson(column: string): string;
  /** The select item reading a bytes column, and its value as bytes. */
  selectBytes(column: string): string;
  readBytes(value: unknown): Buffer;

  // running statements
  all<R = Row>(statement: Statement): Promise<R[]>;
  /** Runs one statement; how many rows it changed. */
  run(statement: Statement): Promise<number>;
  /** Runs statements in one transaction; how many rows each changed. */
  batch(statements: Statement[]): Promise<number[]>;
  /**
   * A marker that moves whenever a write is committed, by this process or another (one statement),
   * for caches kept under it; undefined where the dialect cannot tell cheaply.
   */
  changeStamp(): string | undefined;
  /**
   * A list page: may come from pages kept under the store's change marker (page-cache.ts). With
   * `stopAfter`, rows may end at the first for which it answers true.
   */
  list<R = Row>(statement: Statement, stopAfter?: (row: R) => boolean): Promise<R[]>;
  /**
   * Runs `statement` (an UPDATE of runs, without RETURNING), records a `state` event with the JSON
   * `event` on each run it changed and tells listeners here and in other processes, all in one
   * transaction; the runs as they are now (after `statement`, before `then`).
   */
  change(statement: Statement, event: string, options?: ChangeOptions): Promise<StoredRun[]>;
  /**
   * A create: the run's INSERT, admitted only while every queue it joins is under its limit, its
   * `state` event and the rows that go with it, in one transaction (on SQLite one shared with the
   * other creates of the same turn: group commit); the run, or none when a queue was full or its
   * idempotency key was taken.
   */
  create(create: RunInsert): Promise<StoredRun[]>;
  /**
   * A follow-up: its message appended to the run's transcript and the run queued again (`requeue`,
   * with its state event), in one transaction. When `ended` finds the run (queuing it again takes a
   * queue place, as a create does), only while every queue is under its limit, counted in that
   * transaction as a create counts; otherwise nothing is written (the message is not kept) and the
   * full queue is named. Tells listeners of the event and the runs requeued.
   */
  followup(write: FollowupWrite): Promise<{ seq: number; runs: StoredRun[] } | { full: string }>;
  /** Appends an event to a run's transcript and tells listeners; its seq. */
  appendEvent(runId: string, kind: string, data: string, at: string): Promise<number>;

  // what other processes did
  /** A statement telling other processes that keys changed (none where they look for themselves). */
  keysChanged(): Statement | undefined;
  /** Before a key lookup: the key cache may answer, must be emptied first, or must be passed by. */
  keyCacheState(): 'fresh' | 'stale' | 'untrusted';
  /** Calls `listener` as soon as keys may have changed in another process. */
  onKeysChanged(listener: () => void): void;
  onChange(listener: (change: RunChange) => void): () => void;
  onEvent(listener: (runId: string, seq: number) => void): () => void;
  close(): Promise<void>;
}

/** A queue a new run joins: its runs now (`count` answers `n`, at most `limit`), and the limit it must stay under. */
export interface Queue {
  /** Names the queue within one transaction (the node's, or one team's). */
  name: string;
  count: Statement;
  limit: number;
}

/** What a create writes (Dialect.create). */
export interface RunInsert {
  /** The run's INSERT … SELECT (without RETURNING), inserting only where the condition `room` holds. */
  insert: (room: Statement) => Statement;
  /** The queues the run joins as it is inserted. */
  queues: Queue[];
  /** The JSON of its first state event. */
  event: string;
  /** The rows written beside the run (its metadata and ancestors), in the same transaction. */
  follow?: (run: StoredRun) => Statement[];
}

/** What a follow-up writes (Dialect.followup). */
export interface FollowupWrite {
  runId: string;
  at: string;
  /** The JSON of the `followup` event. */
  data: string;
  /** Finds the run (any row) when it has ended: then queuing it again needs room in `queues`. */
  ended: Statement;
  queues: Queue[];
  /** The UPDATE of runs (without RETURNING) that queues it again while the message waits. */
  requeue: Statement;
  /** The JSON of the requeue's state event. */
  event: string;
}

/** A statement: `sql('… ? …', value)`. */
export function sql(text: string, ...values: unknown[]): Statement {
  return { text, values };
}
