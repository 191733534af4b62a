// Holds (HoldStore): a run whose files another run reads at its start (conversation_id) must not
// run meanwhile. sql-holds.ts implements it.

export interface HoldStore {
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
}
