// `client.events`: the events cursor, the changes of state of several runs of the team in the order
// they happened (GET /agent/events).

import { describeValue } from '../../api/index.js';
import type { ClientCore } from '../core.js';
import { ParseError } from '../parse.js';
import type { CallOptions } from '../poll.js';

/** A page of the events cursor (GET /agent/events). */
export interface EventsPage {
  events: { sequence: number; run_id: string; type: string; state: string; timestamp: string }[];
  next_since: number;
}

export class Events {
  constructor(private readonly core: ClientCore) {}

  /**
   * One page of the events cursor: the changes of state of these runs (of the key's team) after
   * `since`, in the order they happened, and the `next_since` to read on from.
   */
  async list(
    runIds: readonly string[],
    options: CallOptions & { since?: number; limit?: number } = {}
  ): Promise<EventsPage> {
    const ids = runIds.map(id => this.core.id('run_id', id));
    const query = new URLSearchParams({ run_ids: ids.join(',') });
    if (options.since !== undefined) query.set('since', String(options.since));
    if (options.limit !== undefined) query.set('limit', String(options.limit));
    const page = await this.core.object('listEvents', { query, signal: options.signal });
    if (!Array.isArray(page.events) || typeof page.next_since !== 'number')
      throw new ParseError(
        `${this.core.label('listEvents', this.core.path('listEvents'))}: expected {events: [...], next_since}, got ${describeValue(page)}`
      );
    return page as unknown as EventsPage;
  }
}
