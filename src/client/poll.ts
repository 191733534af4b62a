// The shape of one conditional read of a run: what the wait loop asks for and what it gets back.
// Its own module so the client (which makes the request) and the wait loop (which schedules it)
// both depend on it, and not on each other.

import type { Run } from './parse.js';
import type { RunEventStream } from './stream.js';

export interface CallOptions {
  signal?: AbortSignal;
}

export interface PollOptions extends CallOptions {
  /** ETag of the record the caller already has; the server may answer 304 while it is current. */
  etag?: string;
  /** Asks the server to hold the answer up to this many seconds while the run is unchanged. */
  waitSeconds?: number;
}

export interface PollResult {
  /** The new record, absent on 304 Not Modified. */
  run?: Run;
  etag?: string;
  /** The server applied `Prefer: wait` (it holds polls), so the caller need not pace itself. */
  held: boolean;
  /** The server's suggested delay before the next poll. */
  retryAfterMs?: number;
}

/** Anything that can read a run conditionally: the client, or a test double of it. */
export interface RunPoller {
  pollRun(runId: string, options: PollOptions): Promise<PollResult>;
  /** The run's live event stream, when the server may offer one (the wait then follows it first). */
  runEvents?(runId: string, options?: CallOptions): RunEventStream | undefined;
}
