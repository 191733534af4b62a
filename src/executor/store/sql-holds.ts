// HoldStore (hold-types.ts) for both databases: the hold's statements are claim-sql.ts's, as the
// claim that skips held runs is.

import type { ClaimSql } from './claim-sql.js';
import type { Dialect } from './dialect.js';
import type { HoldStore } from './hold-types.js';

export class SqlHoldStore implements HoldStore {
  constructor(
    private readonly d: Dialect,
    private readonly queue: ClaimSql
  ) {}

  async holdRun(team: string, runId: string, holder: string, leaseMs: number): Promise<boolean> {
    return (await this.d.run(this.queue.hold(team, runId, holder, leaseMs))) > 0;
  }

  async releaseRun(runId: string, holder: string): Promise<boolean> {
    return (await this.d.run(this.queue.release(runId, holder))) > 0;
  }

  async heldRuns(): Promise<string[]> {
    return (await this.d.all<{ run_id: string }>(this.queue.held())).map(row => row.run_id).sort();
  }
}
