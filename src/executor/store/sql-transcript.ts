// TranscriptStore (transcript-types.ts) for both databases: a run's events as rows of `events`,
// appended by the dialect (which numbers them and tells listeners on every node).

import type { Dialect } from './dialect.js';
import { sql } from './dialect.js';
import type { EventPage, TranscriptEvent } from './records.js';
import type { TranscriptStore } from './transcript-types.js';

export class SqlTranscriptStore implements TranscriptStore {
  constructor(private readonly d: Dialect) {}

  async appendEvent(
    runId: string,
    kind: string,
    data: Record<string, unknown>,
    at: string
  ): Promise<TranscriptEvent> {
    const seq = await this.d.appendEvent(runId, kind, JSON.stringify(data), at);
    return { ...data, seq, at, kind };
  }

  async listEvents(runId: string, page: EventPage = {}): Promise<TranscriptEvent[]> {
    const order = page.fromEnd ? 'DESC' : 'ASC';
    const kinds = page.kinds ?? [];
    const only = kinds.length > 0 ? `AND kind IN (${kinds.map(() => '?').join(', ')})` : '';
    const rows = await this.d.all<{ seq: number; at: string; kind: string; data: string }>(
      sql(
        `SELECT seq, at, kind, data FROM events WHERE run_id = ? AND seq > ? ${only} ORDER BY seq ${order} LIMIT ?`,
        runId,
        page.after ?? 0,
        ...kinds,
        page.limit ?? this.d.noLimit
      )
    );
    if (page.fromEnd) rows.reverse();
    return rows.map(row => ({
      ...(JSON.parse(row.data) as object),
      seq: row.seq,
      at: row.at,
      kind: row.kind
    }));
  }

  async countEvents(runId: string, after: number): Promise<number> {
    const [row] = await this.d.all<{ n: unknown }>(
      sql('SELECT COUNT(*) AS n FROM events WHERE run_id = ? AND seq > ?', runId, after)
    );
    return Number(row?.n ?? 0);
  }

  onEvent(listener: (runId: string, seq: number) => void): () => void {
    return this.d.onEvent(listener);
  }
}
