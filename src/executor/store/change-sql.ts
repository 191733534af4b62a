// A change of a run as one SQL statement, built from the lifecycle table (runs/lifecycle.ts): the
// SET list from the columns the change writes (and the store's bookkeeping when the transcript
// records it), the WHERE from the states it may start from. Each change's SET list is built once.

import { type ChangeName, LIFECYCLE, type Transition, stateEvent } from '../runs/lifecycle.js';
import type { Dialect, Statement } from './dialect.js';
import { sql } from './dialect.js';

/** `state IN (…)` for a change's starting states; they are the code's own constants, written as literals. */
export function stateIn(states: readonly string[]): string {
  return states.length === 1
    ? `state = '${states[0]}'`
    : `state IN (${states.map(s => `'${s}'`).join(', ')})`;
}

/** What fills a change's columns: its transition, the caller's time, the claiming worker, the lease. */
export interface Inputs {
  transition: Transition;
  at: string;
  owner?: string;
  leaseMs?: number;
}

export class ChangeSql {
  private readonly setLists = new Map<ChangeName, string>();

  constructor(private readonly d: Dialect) {}

  /** `UPDATE runs …` for a change of the runs `where` picks, among those in a state it may start from. */
  update(name: ChangeName, inputs: Inputs, where: Statement): Statement {
    return sql(
      `UPDATE runs SET ${this.setList(name)} WHERE ${stateIn(LIFECYCLE[name].from)} AND ${where.text}`,
      ...this.setValues(name, inputs),
      ...where.values
    );
  }

  /** The state event's JSON for a transition. */
  event(transition: Transition): string {
    return JSON.stringify(stateEvent(transition));
  }

  /** The SET list of a change: the columns it writes, and the store's bookkeeping for a recorded one. */
  setList(name: ChangeName): string {
    let text = this.setLists.get(name);
    if (text === undefined) {
      const items = Object.entries(LIFECYCLE[name].writes).map(([column, source]) => {
        if (source === 'null') return `${column} = NULL`;
        if (source === 'next') return `${column} = ${column} + 1`;
        if (source === 'lease') return `${column} = ${this.d.clockMs} + ?`;
        return `${column} = ?`;
      });
      if (LIFECYCLE[name].recorded) items.push(`changed_at = ${this.d.changedAt}${this.d.numberEvent}`);
      this.setLists.set(name, (text = items.join(', ')));
    }
    return text;
  }

  /** The values of a change's SET list, in its order. */
  setValues(name: ChangeName, inputs: Inputs): unknown[] {
    const values: unknown[] = [];
    for (const source of Object.values(LIFECYCLE[name].writes)) {
      if (source === 'state') values.push(inputs.transition.state);
      else if (source === 'message') values.push(this.d.bytes(inputs.transition.status_message));
      else if (source === 'code') values.push(inputs.transition.error_code);
      else if (source === 'at') values.push(inputs.at);
      else if (source === 'owner') values.push(inputs.owner);
      else if (source === 'lease') values.push(inputs.leaseMs);
    }
    return values;
  }
}
