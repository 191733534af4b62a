// The RunStore interface: everything the routes and the worker need from storage. SQLite (one
// machine) and PostgreSQL (several nodes on one database) implement it; routes and worker do not
// know which. Every read and write of a run is scoped to a team, except the worker's own (it runs
// every team's work).

import type { KeyKind } from '../keys.js';

/** The status message of a run a client cancelled without giving a reason. */
export const CANCELLED_BY_CLIENT = 'cancelled by a client';

export interface KeyRecord {
  id: string;
  team: string;
  kind: KeyKind;
  name: string;
  /** SHA-256 of the raw key, hex. */
  hash: string;
  /** First characters of the key, for people to recognise it. */
  hint: string;
  created_at: string;
  revoked_at: string | null;
}

export interface StoredRun {
  seq: number;
  run_id: string;
  team: string;
  environment_id: string;
  state: string;
  title: string | null;
  prompt: string;
  /** The config as sent, JSON. */
  config: string;
  /** Other fields of the create body, JSON object. */
  extra: string;
  creator_type: string;
  creator_uid: string;
  creator_name: string;
  status_message: string | null;
  error_code: string | null;
  created_at: string;
  updated_at: string;
  started_at: string | null;
  completed_at: string | null;
  version: number;
  lease_owner: string | null;
  lease_expires_at: number | null;
}

/** What a create stores; every other field of the run is the store's to set. */
export type NewRun = Pick<
  StoredRun,
  | 'run_id'
  | 'team'
  | 'environment_id'
  | 'title'
  | 'prompt'
  | 'config'
  | 'extra'
  | 'creator_type'
  | 'creator_uid'
  | 'creator_name'
  | 'created_at'
>;

export interface Idempotency {
  key: string;
  /** SHA-256 of the canonical request body. */
  requestHash: string;
}

export type CreateResult =
  | { kind: 'created'; run: StoredRun }
  | { kind: 'replayed'; run: StoredRun }
  | { kind: 'key_reused' }
  | { kind: 'queue_full' };

export interface ListQuery {
  limit: number;
  /** Only runs with seq below this (keyset paging, newest first). */
  beforeSeq?: number;
  states?: string[];
  environmentId?: string;
  createdAfter?: string;
  createdBefore?: string;
}

export interface TranscriptEvent {
  seq: number;
  at: string;
  kind: string;
  [field: string]: unknown;
}

export interface Outcome {
  state: 'SUCCEEDED' | 'FAILED' | 'CANCELLED';
  status_message?: string;
  error_code?: string;
}

export type CancelResult =
  { kind: 'cancelled'; run: StoredRun } | { kind: 'finished'; run: StoredRun } | { kind: 'not_found' };

/** What a change listener hears: which run changed and the state it has now. */
export interface RunChange {
  run_id: string;
  state: string;
  version: number;
}

/**
 * The store cannot be reached (PostgreSQL restarting, the network down). Requests answer 503 with
 * Retry-After; workers pause and try again. The message never holds the store's address.
 */
export class StoreUnavailableError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'StoreUnavailableError';
  }
}

export interface RunStore {
  /** 'sqlite' serves one node; 'postgres' is shared by every node on the database. */
  readonly kind: 'sqlite' | 'postgres';
  /** True when other processes run work from this store too (so start-up must not fail their runs). */
  readonly shared: boolean;

  // keys
  createKey(key: KeyRecord): Promise<void>;
  findKeyByHash(hash: string): Promise<KeyRecord | undefined>;
  listKeys(): Promise<KeyRecord[]>;
  revokeKey(id: string, at: string): Promise<boolean>;

  // runs, as the API sees them
  createRun(run: NewRun, idempotency: Idempotency | undefined, maxQueued: number): Promise<CreateResult>;
  getRun(team: string, runId: string): Promise<StoredRun | undefined>;
  /** For session pages, whose HMAC token already proves access. */
  getRunAnyTeam(runId: string): Promise<StoredRun | undefined>;
  listRuns(team: string, query: ListQuery): Promise<StoredRun[]>;
  /** `message` is the status message (default `cancelled by a client`). */
  cancelRun(team: string, runId: string, at: string, message?: string): Promise<CancelResult>;

  // runs, as the worker sees them
  /** Moves the oldest QUEUED run of an environment not in `excluded` to INPROGRESS under a lease. */
  claimNext(owner: string, leaseMs: number, excluded: string[], at: string): Promise<StoredRun | undefined>;
  /** The INPROGRESS run leased to `owner` (a claim whose answer was lost may have committed). */
  findClaim(owner: string): Promise<StoredRun | undefined>;
  /** Extends a lease; false when the run is no longer this owner's INPROGRESS run. */
  renewLease(runId: string, owner: string, leaseMs: number): Promise<boolean>;
  /** Ends a run this owner holds; false when it was no longer held (cancelled meanwhile). */
  finishRun(runId: string, owner: string, outcome: Outcome, at: string): Promise<StoredRun | undefined>;
  /** Fails every INPROGRESS run whose lease expired (all of them when `all`). */
  failAbandoned(all: boolean, at: string, message: string): Promise<StoredRun[]>;

  // transcript
  appendEvent(
    runId: string,
    kind: string,
    data: Record<string, unknown>,
    at: string
  ): Promise<TranscriptEvent>;
  listEvents(runId: string): Promise<TranscriptEvent[]>;

  /** Deletes finished runs (and their transcripts) completed before `before`. */
  pruneFinished(before: string): Promise<number>;
  getSecret(name: string, create: () => string): Promise<string>;
  /** Cheap liveness query, for /readyz. */
  ping(): Promise<void>;
  /**
   * Called on every change of a run by any writer of this store: at once for this process's own
   * writes, by notification for other nodes' writes (with a bounded fallback poll behind it). A
   * change may be heard more than once; listeners re-read what they need.
   */
  onChange(listener: (change: RunChange) => void): () => void;
  close(): Promise<void>;
}
