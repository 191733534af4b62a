// The tests' one way to wait for a run's state, and their one `sleep`. waitForState follows the
// run with the API's own held reads (If-None-Match + Prefer: wait), so it wakes when the run
// changes instead of polling on a clock; its default is the terminal set of src/api (ERROR
// included), so a run that ends in a way the test did not expect ends the wait at once and the
// test's assertion names the state, rather than a timeout.

import { TERMINAL_STATES } from '../../src/api/index.js';

/** Pauses for `ms` (for what no event announces: a process that should NOT do something meanwhile). */
export const sleep = (ms: number): Promise<void> => new Promise(resolve => setTimeout(resolve, ms));

/** A run on an executor: its API's base URL (a TestExecutor or a spawned executor has `url`), a key, the id. */
export interface RunRef {
  on: { url: string };
  key: string;
  id: string;
}

export interface WaitOptions {
  /** Give up after this long (default 90 s: generous, the wait itself ends at the state). */
  timeoutMs?: number;
}

/** The run record as read (the fields tests look at most; tests narrow it further). */
export interface SeenRun {
  run_id: string;
  state: string;
  status_message?: string;
  error_code?: string;
  session_link?: string;
  [field: string]: unknown;
}

/** Longest a single held read waits, in seconds (the server caps it at 60). */
const HOLD_SECONDS = 20;
/** Pause between reads that are not held (an ended run awaited in another state, no ETag, the last second). */
const SHORT_PAUSE_MS = 50;

/**
 * Reads the run until its state is one of `states`; answers the record and its ETag. Throws on a
 * read the API refuses (a 404 names the run) and after `timeoutMs`, naming the last state seen.
 */
export async function waitForRead<R extends SeenRun = SeenRun>(
  run: RunRef,
  states: readonly string[] = TERMINAL_STATES,
  { timeoutMs = 90_000 }: WaitOptions = {}
): Promise<{ run: R; etag: string }> {
  const deadline = Date.now() + timeoutMs;
  const url = `${run.on.url}/api/v1/agent/runs/${encodeURIComponent(run.id)}`;
  let seen: R | undefined;
  let etag = '';
  for (;;) {
    const hold = Math.min(HOLD_SECONDS, Math.floor((deadline - Date.now()) / 1000));
    const headers: Record<string, string> = { authorization: `Bearer ${run.key}` };
    if (seen) headers['if-none-match'] = etag;
    if (seen && hold > 0) headers.prefer = `wait=${hold}`;
    const response = await fetch(url, { headers });
    if (response.status === 200) {
      seen = (await response.json()) as R;
      etag = response.headers.get('etag') ?? '';
      if (states.includes(seen.state)) return { run: seen, etag };
    } else if (response.status !== 304) {
      throw new Error(`waiting for run ${run.id}: GET answered ${response.status}: ${await response.text()}`);
    }
    if (Date.now() >= deadline)
      throw new Error(
        `timed out after ${timeoutMs} ms waiting for run ${run.id} to reach ${states.join(' or ')} (last: ${seen?.state})`
      );
    // An ended run answers a held read at once (only a follow-up moves it again), a server without
    // ETags cannot hold one, and under a second from the deadline nothing is held: a short pause
    // between those reads.
    if (seen && (hold <= 0 || etag === '' || TERMINAL_STATES.includes(seen.state as never)))
      await sleep(Math.min(SHORT_PAUSE_MS, Math.max(0, deadline - Date.now())));
  }
}

/** The run's record once its state is one of `states` (default: any terminal state, ERROR included). */
export async function waitForState<R extends SeenRun = SeenRun>(
  run: RunRef,
  states: readonly string[] = TERMINAL_STATES,
  options: WaitOptions = {}
): Promise<R> {
  return (await waitForRead<R>(run, states, options)).run;
}
