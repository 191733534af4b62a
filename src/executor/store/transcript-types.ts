// A run's transcript (TranscriptStore): its events appended, read, counted and heard.
// sql-transcript.ts implements it.

import type { EventPage, TranscriptEvent } from './records.js';

export interface TranscriptStore {
  appendEvent(
    runId: string,
    kind: string,
    data: Record<string, unknown>,
    at: string
  ): Promise<TranscriptEvent>;
  /** A run's events in seq order: all of them, or the page asked for. */
  listEvents(runId: string, page?: EventPage): Promise<TranscriptEvent[]>;
  /** How many of a run's events have a larger seq than `after`. */
  countEvents(runId: string, after: number): Promise<number>;
  /**
   * Called when an event is appended to a run's transcript by any writer of this store (other
   * nodes' appends by notification; a held transcript read also re-reads now and then).
   */
  onEvent(listener: (runId: string, seq: number) => void): () => void;
}
