// A run's changes of state as statements, shared by the runs' store (sql-runs.ts: cancel, a
// follow-up's requeue) and the queue's (sql-claims.ts: claim, renew, finish, abandon): each change
// is built from the lifecycle table (runs/lifecycle.ts, through change-sql.ts) and written with its
// state event in one transaction of the dialect.

import * as lifecycle from '../runs/lifecycle.js';
import type { ChangeName } from '../runs/lifecycle.js';
import { ChangeSql, type Inputs } from './change-sql.js';
import type { ChangeOptions, Dialect, Statement } from './dialect.js';
import { sql } from './dialect.js';
import type { StoredRun } from './records.js';

export class RunChanges {
  readonly sql: ChangeSql;

  constructor(private readonly d: Dialect) {
    this.sql = new ChangeSql(d);
  }

  /** Applies a change to the runs `where` picks (among those in a state it may start from). */
  apply(name: ChangeName, inputs: Inputs, where: Statement, options?: ChangeOptions): Promise<StoredRun[]> {
    return this.d.change(this.sql.update(name, inputs, where), this.sql.event(inputs.transition), options);
  }

  /**
   * The one guard of the follow-up race (a follow-up recorded while the run's last turn ends): an
   * ended run is queued again while a follow-up of it waits that no turn took (a `turn` event lists
   * the seqs of the follow-ups it took). Both ways the race can go meet here: the follow-up's own
   * write looks after recording the message (submitFollowup), and a finish looks in its transaction
   * (finishRun), so whichever commits second queues the run, and a follow-up a turn took never does.
   */
  requeueWaiting(at: string, where: Statement): { statement: Statement; event: string } {
    const waits = `EXISTS (SELECT 1 FROM events f WHERE f.run_id = runs.run_id AND f.kind = 'followup'
      AND NOT EXISTS (SELECT 1 FROM events t WHERE t.run_id = f.run_id AND t.kind = 'turn' AND t.seq > f.seq
        AND ${this.d.listHas('t.data', 'followups', 'f.seq')}))`;
    const inputs: Inputs = { transition: lifecycle.followup(), at };
    return {
      statement: this.sql.update('followup', inputs, sql(`${where.text} AND ${waits}`, ...where.values)),
      event: this.sql.event(inputs.transition)
    };
  }
}
