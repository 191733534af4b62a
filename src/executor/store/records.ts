// The rows the stores keep and the values their methods take and answer, for both databases: a
// run, its transcript events, its artifacts, keys, sessions and nodes. Each concern's interface
// (run-types.ts, claim-types.ts, …) and its SQL class (sql-runs.ts, sql-claims.ts, …) name these.

import type { ErrorCode, RunState } from '../../api/index.js';
import type { Outcome } from '../runs/lifecycle.js';

export type { Outcome };

/** A personal key acts for its user; an agent key for a service account. */
export type KeyKind = 'personal' | 'agent';

/**
 * The credential of one orchestrate turn of a run (worker/orchestrate.ts): only the SHA-256 of the
 * token the run's sandbox holds, and of the secret its proxy adds to each request it forwards.
 */
export interface RunTokenRecord {
  hash: string;
  via_hash: string;
  run_id: string;
  team: string;
  environment_id: string;
  created_at: string;
}

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
  state: RunState;
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
  error_code: ErrorCode | null;
  created_at: string;
  updated_at: string;
  started_at: string | null;
  completed_at: string | null;
  version: number;
  lease_owner: string | null;
  lease_expires_at: number | null;
  /** What the run produced, JSON array of FileArtifact (null until it has some). */
  artifacts?: string | null;
  /** The run's request_usage as its agent reported it, a JSON object (null when it did not). */
  request_usage?: string | null;
  /** The claims of the OIDC token that created the run, a JSON object (null: a key created it). */
  workload?: string | null;
}

/** A file a run produced (its changes as a patch, say), as the run record lists it. */
export interface FileArtifact {
  artifact_uid: string;
  filepath: string;
  filename: string;
  mime_type: string;
  size: number;
  description?: string;
  created_at: string;
}

/** A new file name for one of a run's artifacts (an earlier turn's `changes.patch`). */
export interface ArtifactRename {
  artifact_uid: string;
  filename: string;
}

/** A stored artifact: its description, its run and team, and (when asked for) its bytes. */
export interface StoredArtifact extends FileArtifact {
  run_id: string;
  team: string;
  /**
   * FILE; PULL_REQUEST (its bytes are the JSON {url, branch} the run record lists); or PLAN (its
   * bytes are a plan-mode turn's markdown; the record lists {document_uid, artifact_uid, title}).
   */
  artifact_type: 'FILE' | 'PULL_REQUEST' | 'PLAN';
}

/** How the run record's `artifacts` lists an artifact: a file's description, a pull request's data. */
export function listEntryOf(artifact: StoredArtifact, data: Buffer): Record<string, unknown> {
  const { run_id: _run, team: _team, artifact_type, created_at, ...file } = artifact;
  if (artifact_type === 'FILE') return { ...file, created_at };
  if (artifact_type === 'PLAN')
    return {
      artifact_type,
      created_at,
      data: {
        document_uid: file.artifact_uid,
        artifact_uid: file.artifact_uid,
        title: file.description ?? 'Plan'
      }
    };
  return { artifact_type, created_at, data: JSON.parse(data.toString('utf8')) as unknown };
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
> &
  Partial<Pick<StoredRun, 'workload'>>;

export interface Idempotency {
  key: string;
  /** SHA-256 of the canonical request body. */
  requestHash: string;
}

export type CreateResult =
  | { kind: 'created'; run: StoredRun }
  | { kind: 'replayed'; run: StoredRun }
  | { kind: 'key_reused' }
  | { kind: 'queue_full' }
  | { kind: 'team_queue_full' };

export type ListSort = 'created_at' | 'updated_at';
export type ListOrder = 'asc' | 'desc';

export interface ListQuery {
  limit: number;
  /**
   * The page's runs may weigh this much in all (rows.ts runWeight): the store may stop reading
   * after the first run that passes it; the caller cuts the page there (runsWithin).
   */
  maxWeight?: number;
  /** Only runs with seq below this (keyset paging, newest first). */
  beforeSeq?: number;
  states?: RunState[];
  environmentId?: string;
  createdAfter?: string;
  createdBefore?: string;
  updatedAfter?: string;
  creatorUid?: string;
  /** Text in the title or prompt; ASCII letters match either case. */
  search?: string;
  /** config.name and config.model_id of the run. */
  name?: string;
  modelId?: string;
  artifactType?: string;
  /** Pairs the create request's metadata must all have (metadata[key]=value). */
  metadata?: [string, string][];
  /** Only runs below this run (its children, their children, …: rows of run_ancestors). */
  ancestorRunId?: string;
  /** Only runs a schedule started (extra.schedule_id). */
  scheduleId?: string;
  /** Default created_at (the store's insertion order, seq), newest first. */
  sortBy?: ListSort;
  sortOrder?: ListOrder;
  /** Keyset paging for any sort: only runs after this one in the chosen order. */
  after?: { seq: number; updatedAt?: string };
}

export interface TranscriptEvent {
  seq: number;
  at: string;
  kind: string;
  [field: string]: unknown;
}

/** Which of a run's events a read wants: a page after a cursor, or the last ones. */
export interface EventPage {
  /** Only events with a larger seq. */
  after?: number;
  /** At most this many events (every one when absent). */
  limit?: number;
  /** The last `limit` events after `after` instead of the first ones; still in seq order. */
  fromEnd?: boolean;
  /** Only events of these kinds (the worker's look for follow-ups, without the run's output). */
  kinds?: readonly string[];
}

/** A run's change of state, numbered by its team's sequence (the events cursor). */
export interface StateEventRow {
  sequence: number;
  run_id: string;
  state: string;
  at: string;
}

export type CancelResult =
  { kind: 'cancelled'; run: StoredRun } | { kind: 'finished'; run: StoredRun } | { kind: 'not_found' };

/** A follow-up's answer: taken (the run as it is now), too late to continue, or no such run. */
export type FollowupResult =
  | { kind: 'taken'; run: StoredRun }
  | { kind: 'expired'; run: StoredRun }
  | { kind: 'not_found' }
  /** The run had ended, and going back to the queue would pass the node's or the team's limit. */
  | { kind: 'queue_full' }
  | { kind: 'team_queue_full' };

/** The queue limits a run that goes back to the queue must stay under (as a create must). */
export interface QueueLimits {
  maxQueued: number;
  maxQueuedPerTeam: number;
}

/** A follow-up as the store takes it: the message and the mode of the turn it asks for. */
export interface NewFollowup {
  message: string;
  mode: string;
}

/**
 * A dashboard sign-in: the hash of the cookie's random id (the id itself is never stored), the key
 * it was made from and that key's team. A session lives until `expires_at` (ms since the epoch), a
 * sign-out, or the revocation of its key, whichever is first.
 */
export interface WebSession {
  id_hash: string;
  key_id: string;
  team: string;
  created_at: string;
  expires_at: number;
}

/** An executor process as it last reported itself (its heartbeat), for the dashboard. */
export interface NodeReport {
  /** Unique per process start: host, pid and a random part. */
  node_id: string;
  role: string;
  /** Runs it executes at once (0 on an `api` node), and how many it is executing. */
  workers: number;
  busy: number;
  started_at: string;
  /** When it last reported, ms since the epoch. */
  seen_at: number;
}

/** What a change listener hears: which run changed and the state it has now. */
export interface RunChange {
  run_id: string;
  state: RunState;
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

/** An artifact row as the store's callers see it (no null description). */
export function artifactOf(row: StoredArtifact & { description?: string | null }): StoredArtifact {
  const { description, ...rest } = row;
  const artifact: StoredArtifact = { ...rest, size: Number(rest.size) };
  if (description !== null && description !== undefined) artifact.description = description;
  return artifact;
}
