// The runs as the API sees them (RunRecordStore): created, read, listed, counted, cancelled and
// followed up, their changes of state read and heard, the ended ones pruned. Every read and write
// is scoped to a team, except the prune's and the change feed's. sql-runs.ts implements it.

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

export interface RunRecordStore {
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
  /** Deletes finished runs (and their transcripts) completed before `before`. */
  pruneFinished(before: string): Promise<number>;
  /**
   * Called on every change of a run by any writer of this store: at once for this process's own
   * writes; for other processes' writes, by notification on PostgreSQL (with a bounded fallback
   * poll behind it) and by a 50 ms look at PRAGMA data_version on a shared SQLite file. A change
   * may be heard more than once; listeners re-read what they need.
   */
  onChange(listener: (change: RunChange) => void): () => void;
}
