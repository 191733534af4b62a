// The RunStore interface: everything the routes and the worker need from storage. SQLite (one
// machine) and PostgreSQL (several nodes on one database) implement it; routes and worker do not
// know which. Every read and write of a run is scoped to a team, except the worker's own (it runs
// every team's work).

import type { ErrorCode, RunState } from '../../api/index.js';
import type { Outcome } from '../runs/lifecycle.js';
import type { ScheduleStore } from './schedule-types.js';
import type { WebhookStore } from './webhook-types.js';

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

export interface RunStore {
  /** 'sqlite' serves one node; 'postgres' is shared by every node on the database. */
  readonly kind: 'sqlite' | 'postgres';
  /**
   * True when other processes run work from this store too, so start-up must not fail their runs:
   * always on PostgreSQL; on SQLite when a split role (`--role api` or `worker`) opened it.
   */
  readonly shared: boolean;
  /**
   * A marker that moves whenever a write is committed to the store, by this process or any other
   * (SQLite: total_changes() with PRAGMA data_version, one statement). The server keeps serialised
   * read answers under it (server/read-cache.ts). Absent, or undefined, when the store cannot tell:
   * then nothing is kept.
   */
  changeStamp?(): string | undefined;

  // keys
  createKey(key: KeyRecord): Promise<void>;
  findKeyByHash(hash: string): Promise<KeyRecord | undefined>;
  listKeys(): Promise<KeyRecord[]>;
  revokeKey(id: string, at: string): Promise<boolean>;

  // run tokens (an orchestrate turn's credential)
  createRunToken(token: RunTokenRecord): Promise<void>;
  findRunToken(hash: string): Promise<RunTokenRecord | undefined>;
  /** Removes the run's tokens (its orchestrate turn ended). */
  deleteRunTokens(runId: string): Promise<void>;

  // dashboard sessions
  /** Stores a new session (and drops expired ones). */
  createWebSession(session: WebSession): Promise<void>;
  /** The session, only while it has not expired at `now` and its key is not revoked. */
  findWebSession(idHash: string, now: number): Promise<(WebSession & { key_name: string }) | undefined>;
  deleteWebSession(idHash: string): Promise<void>;

  // node heartbeats
  /** Records (or refreshes) a node's report, and forgets nodes silent since before `forgetBefore`. */
  reportNode(node: NodeReport, forgetBefore: number): Promise<void>;
  listNodes(): Promise<NodeReport[]>;
  removeNode(nodeId: string): Promise<void>;

  // runs, as the API sees them
  /**
   * Creates a QUEUED run unless the node's queue holds `maxQueued` runs (`queue_full`) or the team's
   * holds `maxQueuedPerTeam` (`team_queue_full`; without it, only the node's limit applies).
   */
  createRun(
    run: NewRun,
    idempotency: Idempotency | undefined,
    maxQueued: number,
    maxQueuedPerTeam?: number
  ): Promise<CreateResult>;
  getRun(team: string, runId: string): Promise<StoredRun | undefined>;
  /** For session pages, whose HMAC token already proves access. */
  getRunAnyTeam(runId: string): Promise<StoredRun | undefined>;
  listRuns(team: string, query: ListQuery): Promise<StoredRun[]>;
  /** How many of the team's runs are in each state (states with none are left out). */
  countRunsByState(team: string): Promise<Record<string, number>>;
  /**
   * `reason`, when given, ends the status message: `cancelled by a client: <reason>`. The run's
   * descendants that have not ended are cancelled with it (their message names it).
   */
  cancelRun(team: string, runId: string, at: string, reason?: string): Promise<CancelResult>;

  /** How many runs are above this one (0 for a root run, 1 for its child, …). */
  ancestorCount(team: string, runId: string): Promise<number>;
  /** Whether `runId` is below `ancestorRunId` (a child, a grandchild, …) in the team's runs. */
  isDescendant(team: string, runId: string, ancestorRunId: string): Promise<boolean>;

  /**
   * Adds a follow-up to a run's conversation (a `followup` transcript event): a queued or running
   * run keeps its state and its worker takes the message at the next turn; an ended run is queued
   * again, unless it completed before `continuableSince` (its workspace may be gone): `expired`, or
   * the queue it would join holds `queues`' limit: `queue_full` / `team_queue_full` (counted in the
   * transaction that records the message and queues the run; a refused follow-up records nothing).
   */
  submitFollowup(
    team: string,
    runId: string,
    followup: NewFollowup,
    at: string,
    continuableSince: string,
    queues?: QueueLimits
  ): Promise<FollowupResult>;

  // runs, as the worker sees them
  /**
   * Moves a QUEUED run of an environment not in `excluded` to INPROGRESS under a lease. Teams take
   * turns: of the teams with such a run, the one served longest ago (never served first), and its
   * oldest run. Runs a live hold is on are skipped, and so are teams with `maxRunningPerTeam` runs
   * INPROGRESS already (0 or absent: no cap).
   */
  claimNext(
    owner: string,
    leaseMs: number,
    excluded: string[],
    at: string,
    maxRunningPerTeam?: number
  ): Promise<StoredRun | undefined>;
  /** The INPROGRESS run leased to `owner` (a claim whose answer was lost may have committed). */
  findClaim(owner: string): Promise<StoredRun | undefined>;
  /** Extends a lease; false when the run is no longer this owner's INPROGRESS run. */
  renewLease(runId: string, owner: string, leaseMs: number): Promise<boolean>;
  /**
   * Ends a run this owner holds; false when it was no longer held (cancelled meanwhile). A run that
   * ends other than CANCELLED while a follow-up of it waits untaken (one recorded after its worker's
   * last look) is queued again in the same transaction.
   */
  finishRun(runId: string, owner: string, outcome: Outcome, at: string): Promise<StoredRun | undefined>;
  /** Fails every INPROGRESS run whose lease expired (all of them when `all`). */
  failAbandoned(all: boolean, at: string, message: string): Promise<StoredRun[]>;

  // holds: a run whose files another run reads at its start (conversation_id) must not run meanwhile
  /**
   * Holds the team's run for `holder` for `leaseMs` (the store's clock), only while the run has
   * ended and no other live hold is on it; `holder` holding it already renews the lease. While
   * held, a follow-up queues the run but no claim takes it. False when the run is not the team's,
   * has not ended, or another holder's lease has not expired.
   */
  holdRun(team: string, runId: string, holder: string, leaseMs: number): Promise<boolean>;
  /** Ends `holder`'s hold; false when it held none (never, expired and taken over, or released). */
  releaseRun(runId: string, holder: string): Promise<boolean>;
  /** The runs a live hold is on (of every team): the sweep and the LRU must leave their files. */
  heldRuns(): Promise<string[]>;

  // transcript
  appendEvent(
    runId: string,
    kind: string,
    data: Record<string, unknown>,
    at: string
  ): Promise<TranscriptEvent>;
  /** A run's events in seq order: all of them, or the page asked for. */
  listEvents(runId: string, page?: EventPage): Promise<TranscriptEvent[]>;
  /** How many of a run's events have a larger seq than `after`. */
  countEvents(runId: string, after: number): Promise<number>;
  /**
   * Called when an event is appended to a run's transcript by any writer of this store (other
   * nodes' appends by notification; a held transcript read also re-reads now and then).
   */
  onEvent(listener: (runId: string, seq: number) => void): () => void;
  /**
   * The changes of state (INPROGRESS and on) of these runs of the team with a sequence above
   * `since`, in sequence order, at most `limit`.
   */
  listStateEvents(
    team: string,
    runIds: readonly string[],
    since: number,
    limit: number
  ): Promise<StateEventRow[]>;
  /** The states of those of these runs that the team has, by run id. */
  runStates(team: string, runIds: readonly string[]): Promise<Map<string, string>>;

  // what a run produced
  /**
   * Stores a file artifact's bytes and lists it on the run's record; in the same transaction, gives
   * the run's artifacts named in `renamed` their new file name (and path), on the record too.
   */
  addArtifact(artifact: StoredArtifact, data: Buffer, renamed?: ArtifactRename[]): Promise<void>;
  /** Gives the run's artifacts named in `renamed` their new file name (and path), on the record too. */
  renameArtifacts(runId: string, renamed: ArtifactRename[]): Promise<void>;
  /** A team's artifact; undefined for unknown ones and other teams'. */
  getArtifact(team: string, uid: string): Promise<StoredArtifact | undefined>;
  /** An artifact's bytes, for its signed download link (the signature already proves access). */
  readArtifact(uid: string): Promise<{ artifact: StoredArtifact; data: Buffer } | undefined>;
  listArtifacts(team: string, runId: string): Promise<StoredArtifact[]>;
  /** Sets the run's request_usage (a JSON object). */
  setRequestUsage(runId: string, usage: string): Promise<void>;

  /** Deletes finished runs (and their transcripts) completed before `before`. */
  pruneFinished(before: string): Promise<number>;
  getSecret(name: string, create: () => string): Promise<string>;
  /** Cheap liveness query, for /readyz. */
  ping(): Promise<void>;
  /** The scheduled agents (sql-schedules.ts). */
  readonly schedules: ScheduleStore;
  /** Teams' webhook endpoints and the deliveries to them (sql-webhooks.ts). */
  readonly webhooks: WebhookStore;
  /**
   * Called on every change of a run by any writer of this store: at once for this process's own
   * writes; for other processes' writes, by notification on PostgreSQL (with a bounded fallback
   * poll behind it) and by a 50 ms look at PRAGMA data_version on a shared SQLite file. A change
   * may be heard more than once; listeners re-read what they need.
   */
  onChange(listener: (change: RunChange) => void): () => void;
  close(): Promise<void>;
}

// The store as each consumer sees it: one narrow view per concern, cut from RunStore (which the SQL
// store implements whole), so that a file names only the part of the store it uses. A new store
// method goes in RunStore and in the view of the concern it serves (or a new view).

/** API keys (the server's authentication, the CLI's key commands). */
export type KeyStore = Pick<RunStore, 'createKey' | 'findKeyByHash' | 'listKeys' | 'revokeKey'>;
/** The credentials of orchestrate turns. */
export type RunTokenStore = Pick<RunStore, 'createRunToken' | 'findRunToken' | 'deleteRunTokens'>;
/** The dashboard's sign-in sessions. */
export type WebSessionStore = Pick<RunStore, 'createWebSession' | 'findWebSession' | 'deleteWebSession'>;
/** Who may do what: keys and the dashboard's sessions. */
export type AccountStore = KeyStore & WebSessionStore;
/** Nodes' heartbeats (telemetry/heartbeat.ts, the nodes page). */
export type NodeStore = Pick<RunStore, 'reportNode' | 'listNodes' | 'removeNode'>;
/** Runs as the API sees them: created, read, listed, cancelled, followed up. */
export type RunRequestStore = Pick<
  RunStore,
  'createRun' | 'getRun' | 'getRunAnyTeam' | 'listRuns' | 'countRunsByState' | 'cancelRun' | 'submitFollowup'
>;
/** Runs as the worker sees them: claimed under a lease, renewed, finished, failed when abandoned. */
export type RunClaimStore = Pick<
  RunStore,
  'shared' | 'claimNext' | 'findClaim' | 'renewLease' | 'finishRun' | 'failAbandoned'
>;
/** Holds on ended runs whose files another run reads at its start. */
export type RunHoldStore = Pick<RunStore, 'holdRun' | 'releaseRun' | 'heldRuns'>;
/** A run's transcript: appended, read, counted, heard. */
export type TranscriptStore = Pick<RunStore, 'appendEvent' | 'listEvents' | 'countEvents' | 'onEvent'>;
/** What a run produced: its artifacts and its request usage. */
export type ArtifactStore = Pick<
  RunStore,
  'addArtifact' | 'renameArtifacts' | 'getArtifact' | 'readArtifact' | 'listArtifacts' | 'setRequestUsage'
>;
/** Hearing every change of a run, by any writer of the store. */
export type RunChangeFeed = Pick<RunStore, 'onChange'>;
/** The node's own secrets (signing keys), made on first use. */
export type SecretStore = Pick<RunStore, 'getSecret'>;
/** The scheduled agents. */
export type ScheduleOwner = Pick<RunStore, 'schedules'>;
/** Deleting what has outlived its keeping. */
export type PruneStore = Pick<RunStore, 'pruneFinished'>;

/** An artifact row as the store's callers see it (no null description). */
export function artifactOf(row: StoredArtifact & { description?: string | null }): StoredArtifact {
  const { description, ...rest } = row;
  const artifact: StoredArtifact = { ...rest, size: Number(rest.size) };
  if (description !== null && description !== undefined) artifact.description = description;
  return artifact;
}
