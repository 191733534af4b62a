// The statements of a fair claim and of a run's hold, for both databases (sql-store.ts runs them).
//
// Fair claim: teams take turns. team_turns keeps, per team, the number of the claim that last took
// one of its runs; a trigger of the migration moves it as a run becomes INPROGRESS, inside the
// claim's own transaction (no second statement, no second commit). The teams with a queued run
// that may go (its environment has room, no live hold is on it, the team is below its running cap)
// come in the order of that number, oldest first (a team never served first of all; a tie goes to
// the team with the older such run), and the claim takes the first team's oldest such run. The
// teams with queued runs are found by a skip over the (team, seq) index of queued runs, one probe
// per team, so a claim costs the number of teams waiting, not the length of the queue.
//
// Hold: a run whose files another run reads (a run created with its `conversation_id`) is held by
// that reader under a lease: only an ended run can be held, and a queued run (a follow-up of it)
// is not claimed while a live hold is on it. Hold and claim both change the run's row, guarded by
// its state, so on PostgreSQL the row lock orders them: whichever commits first, the other sees it.

import { CLAIMED_STATE, CREATED_STATE, TERMINAL_STATES } from '../runs/lifecycle.js';
import { stateIn } from './change-sql.js';
import type { Dialect, Statement } from './dialect.js';
import { sql } from './dialect.js';

/** At most this many teams are tried by one claim (another node may take each one's run first). */
export const CLAIM_CANDIDATES = 16;

const QUEUED = stateIn([CREATED_STATE]);
const RUNNING = stateIn([CLAIMED_STATE]);

export class ClaimSql {
  constructor(private readonly d: Dialect) {}

  /** A queued run's row may be claimed: its environment has room and no live hold is on it. */
  private eligible(excluded: string[]): Statement {
    const skip =
      excluded.length > 0 ? `AND environment_id NOT IN (${excluded.map(() => '?').join(', ')})` : '';
    return sql(`${skip} AND (held_by IS NULL OR held_until < ${this.d.clockMs})`, ...excluded);
  }

  /** Below the team's running cap (`team` is SQL naming the team); no condition when 0 (no cap). */
  private belowCap(team: string, maxRunning: number, teamValue?: string): Statement {
    if (maxRunning <= 0) return sql('');
    return sql(
      `AND (SELECT COUNT(*) FROM (SELECT 1 FROM runs WHERE team = ${team} AND ${RUNNING} LIMIT ?)
        AS running) < ?`,
      ...(teamValue === undefined ? [] : [teamValue]),
      maxRunning,
      maxRunning
    );
  }

  /**
   * The team's queued runs, oldest first, as a range over the (team, seq) index rather than `team =`:
   * PostgreSQL plans a lookup correlated to the outer team once for every team, and with `=` it may
   * walk the whole queue in seq order to find a small team's run; over the range it walks only the
   * team's own queued runs, whatever the planner thinks of the team's size.
   */
  private ofTeam(team: string): string {
    return `${QUEUED} AND team >= ${team} AND team <= ${team}`;
  }

  /** The teams whose turn it is, in order: each has a queued run that may go now. */
  candidates(excluded: string[], maxRunning: number): Statement {
    const eligible = this.eligible(excluded);
    const cap = this.belowCap('queued.team', maxRunning);
    return sql(
      `WITH RECURSIVE queued(team) AS (
         SELECT (SELECT team FROM runs WHERE ${QUEUED} ORDER BY team LIMIT 1)
         UNION ALL
         SELECT (SELECT team FROM runs WHERE ${QUEUED} AND team > queued.team ORDER BY team LIMIT 1)
           FROM queued WHERE queued.team IS NOT NULL
       ),
       waiting AS (
         SELECT queued.team AS team,
           (SELECT seq FROM runs WHERE ${this.ofTeam('queued.team')} ${eligible.text} ORDER BY team, seq LIMIT 1)
             AS first_seq
         FROM queued WHERE queued.team IS NOT NULL ${cap.text}
       )
       SELECT waiting.team AS team FROM waiting LEFT JOIN team_turns ON team_turns.team = waiting.team
       WHERE waiting.first_seq IS NOT NULL
       ORDER BY COALESCE(team_turns.turn, 0), waiting.first_seq
       LIMIT ?`,
      ...eligible.values,
      ...cap.values,
      CLAIM_CANDIDATES
    );
  }

  /** The WHERE of a claim of the team's oldest queued run that may go (rows others lock are skipped). */
  oldestOf(team: string, excluded: string[], maxRunning: number): Statement {
    const eligible = this.eligible(excluded);
    const cap = this.belowCap('?', maxRunning, team);
    return sql(
      `seq = (SELECT seq FROM runs WHERE ${this.ofTeam('?')} ${eligible.text} ${cap.text}
         ORDER BY team, seq LIMIT 1 ${this.d.skipLocked})`,
      team,
      team,
      ...eligible.values,
      ...cap.values
    );
  }

  /** Holds an ended run of the team for `holder`, unless another live hold is on it. */
  hold(team: string, runId: string, holder: string, leaseMs: number): Statement {
    const now = this.d.clockMs;
    return sql(
      `UPDATE runs SET held_by = ?, held_until = ${now} + ?
       WHERE run_id = ? AND team = ? AND ${stateIn(TERMINAL_STATES)}
         AND (held_by IS NULL OR held_by = ? OR held_until < ${now})`,
      holder,
      leaseMs,
      runId,
      team,
      holder
    );
  }

  /** Gives up `holder`'s hold of a run (one that expired and was taken by another stays theirs). */
  release(runId: string, holder: string): Statement {
    return sql(
      'UPDATE runs SET held_by = NULL, held_until = NULL WHERE run_id = ? AND held_by = ?',
      runId,
      holder
    );
  }

  /** The runs a live hold is on. */
  held(): Statement {
    return sql(
      // No ORDER BY: SQLite would walk the whole table in run_id order rather than sort the few
      // held runs the partial index finds (the caller sorts them).
      `SELECT run_id FROM runs WHERE held_by IS NOT NULL AND held_until >= ${this.d.clockMs}`
    );
  }
}
