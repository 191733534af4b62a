// The queue as the workers see it (ClaimStore): a run claimed under a lease, the lease renewed, the
// run finished, the runs of dead workers failed. sql-claims.ts implements it.

import type { Outcome, StoredRun } from './records.js';

export interface ClaimStore {
  /**
   * True when other processes run work from this store too, so start-up must not fail their runs:
   * always on PostgreSQL; on SQLite when a split role (`--role api` or `worker`) opened it.
   */
  readonly shared: boolean;
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
}
