// ClaimStore (claim-types.ts) for both databases: which run a worker claims next (the teams'
// turns are claim-sql.ts), its lease renewed, its finish (queued again when a follow-up waits), and
// the runs of dead workers failed. Its changes of state are RunChanges' (run-changes.ts).

import * as lifecycle from '../runs/lifecycle.js';
import { CLAIMED_STATE, LIFECYCLE } from '../runs/lifecycle.js';
import { stateIn } from './change-sql.js';
import type { ClaimSql } from './claim-sql.js';
import type { ClaimStore } from './claim-types.js';
import type { Dialect, Row } from './dialect.js';
import { sql } from './dialect.js';
import type { Outcome, StoredRun } from './records.js';
import { RUN_COLUMNS } from './rows.js';
import type { RunChanges } from './run-changes.js';

export class SqlClaimStore implements ClaimStore {
  readonly shared: boolean;

  constructor(
    private readonly d: Dialect,
    private readonly changes: RunChanges,
    private readonly queue: ClaimSql
  ) {
    this.shared = d.shared;
  }

  /**
   * Teams take turns (claim-sql.ts): the oldest claimable run of the first team in turn order. When
   * another node takes that run first (PostgreSQL skips rows others lock), the next team is tried.
   */
  async claimNext(
    owner: string,
    leaseMs: number,
    excluded: string[],
    at: string,
    maxRunningPerTeam = 0
  ): Promise<StoredRun | undefined> {
    const teams = await this.d.all<{ team: string }>(this.queue.candidates(excluded, maxRunningPerTeam));
    for (const { team } of teams) {
      const [run] = await this.changes.apply(
        'claim',
        { transition: lifecycle.claim(), at, owner, leaseMs },
        this.queue.oldestOf(team, excluded, maxRunningPerTeam)
      );
      if (run) return run;
    }
    return undefined;
  }

  async findClaim(owner: string): Promise<StoredRun | undefined> {
    return (
      await this.d.all<StoredRun & Row>(
        sql(`SELECT ${RUN_COLUMNS} FROM runs WHERE state = '${CLAIMED_STATE}' AND lease_owner = ?`, owner)
      )
    )[0];
  }

  async renewLease(runId: string, owner: string, leaseMs: number): Promise<boolean> {
    const changed = await this.d.run(
      this.changes.sql.update(
        'renew',
        { transition: lifecycle.claim(), at: '', leaseMs },
        sql('run_id = ? AND lease_owner = ?', runId, owner)
      )
    );
    return changed > 0;
  }

  async finishRun(
    runId: string,
    owner: string,
    outcome: Outcome,
    at: string
  ): Promise<StoredRun | undefined> {
    const transition = lifecycle.finish(outcome);
    // A run that ends other than cancelled is queued again at once if a follow-up waits.
    const requeue = this.changes.requeueWaiting(at, sql('run_id = ?', runId));
    const [run] = await this.changes.apply(
      'finish',
      { transition, at },
      sql('run_id = ? AND lease_owner = ?', runId, owner),
      outcome.state === 'CANCELLED'
        ? {}
        : { then: { statement: () => requeue.statement, event: requeue.event } }
    );
    return run;
  }

  async failAbandoned(all: boolean, at: string, message: string): Promise<StoredRun[]> {
    const from = stateIn(LIFECYCLE.abandon.from);
    // Every node sweeps every second or so; almost always there is nothing to sweep, and one
    // indexed look is cheaper than the change.
    if (!all) {
      const expired = await this.d.all(
        sql(`SELECT 1 AS one FROM runs WHERE ${from} AND lease_expires_at < ${this.d.clockMs} LIMIT 1`)
      );
      if (expired.length === 0) return [];
    }
    // Skipping locked rows: a run its worker is finishing right now is not abandoned, and two
    // nodes sweeping at once do not wait on each other.
    return this.changes.apply(
      'abandon',
      { transition: lifecycle.abandon(message), at },
      sql(
        `seq IN (SELECT seq FROM runs WHERE ${from} AND (? = 1 OR lease_expires_at < ${this.d.clockMs}) ${this.d.skipLocked})`,
        all ? 1 : 0
      )
    );
  }
}
