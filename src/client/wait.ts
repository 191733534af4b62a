// Waiting for a run to end, cheaply and promptly.
//
// Every poll carries the last ETag and `Prefer: wait`, so a server that supports them holds the
// poll until the run changes: the caller hears of a new state within milliseconds and sends one
// request per change (or per hold period). A server that ignores them answers at once, and the
// schedule below paces the polls: first after ~1 s, then ×1.5 each time, never more than 15 % of
// the time waited so far (a late finish is noticed within ~15 % of the run's length) and never
// more than the cap.

import { isKnownState, isTerminalState } from '../api/index.js';
import type { PollResult, RunPoller } from './poll.js';
import { AbortError, ConflictError, ConnectionError, RateLimitError, ServerError } from './errors.js';
import { ParseError, type Run } from './parse.js';
import { abortableSleep } from './sleep.js';
import type { RunEventStream } from './stream.js';

export interface WaitOptions {
  /** Give up after this long (default 60 min); the result then says `timed_out`. */
  timeoutMs?: number;
  /** Delay before the first poll (default 1 s). */
  initialDelayMs?: number;
  /** Longest pause between polls to a server that does not hold them (default 15 s). */
  maxIntervalMs?: number;
  /** Seconds a poll asks the server to hold while the run is unchanged (default 50). */
  holdSeconds?: number;
  /** Failed polls in a row (after each poll's own retries) before giving up (default 10). */
  maxConsecutiveErrors?: number;
  signal?: AbortSignal;
  /** Sees every state change, the first read included (`previous` is then undefined). */
  onStateChange?: (run: Run, previous: Run | undefined) => void;
  /** Called once per state this client does not know; such states are not terminal. */
  onUnknownState?: (state: string, run: Run) => void;
  /** Called for each transient failure the wait rides out. */
  onTransientError?: (error: Error, consecutive: number) => void;
  /** Follow the run on the server's event stream when it offers one (default true). */
  stream?: boolean;
  /** Test seams. */
  now?: () => number;
  sleep?: (ms: number, signal?: AbortSignal) => Promise<void>;
  random?: () => number;
}

export interface WaitResult {
  outcome: 'terminal' | 'timed_out';
  /** How the run was followed: its event stream, or reads (held or paced polls). */
  via?: 'stream' | 'polls';
  /** The last record read; undefined only when no poll ever succeeded before the deadline. */
  run: Run | undefined;
  /** Polls that got an answer. */
  polls: number;
  elapsedMs: number;
}

const GROWTH = 1.5;
const ELAPSED_FRACTION = 0.15;
/** Even a holding server is never polled more often than this, in case its ETags never settle. */
const MIN_GAP_MS = 250;

export async function waitForRun(
  poller: RunPoller,
  runId: string,
  options: WaitOptions = {}
): Promise<WaitResult> {
  const now = options.now ?? Date.now;
  const start = now();
  const deadline = start + (options.timeoutMs ?? 60 * 60_000);
  const unknown = new Set<string>();
  let last: Run | undefined;
  let firstDelay = options.initialDelayMs ?? 1000;

  // A server with event streams tells of each change and of the end on one request; without one
  // (or once it keeps failing) the polls below take over from the last record it brought.
  const stream = options.stream === false ? undefined : poller.runEvents?.(runId, { signal: options.signal });
  if (stream) {
    const followed = await followStream(stream, runId, deadline - now(), options, unknown);
    last = followed.run ?? last;
    if (followed.outcome !== 'fallback')
      return { outcome: followed.outcome, run: last, polls: 0, elapsedMs: now() - start, via: 'stream' };
    // A stream that broke hands over at once; a server without streams is polled as it always was.
    if (followed.opened) firstDelay = 0;
  }
  return pollUntilEnd(poller, runId, options, { start, deadline, unknown, last, firstDelay });
}

/** Where a wait stands when the polls take over. */
interface PollStart {
  start: number;
  deadline: number;
  /** The unknown states already reported. */
  unknown: Set<string>;
  /** The last record the stream brought, if any. */
  last: Run | undefined;
  /** The pause before the first poll. */
  firstDelay: number;
}

/** Polls the run until it ends or the deadline passes, paced by the schedule at the top of this file. */
async function pollUntilEnd(
  poller: RunPoller,
  runId: string,
  options: WaitOptions,
  { start, deadline, unknown, last: fromStream, firstDelay }: PollStart
): Promise<WaitResult> {
  const now = options.now ?? Date.now;
  const hold = options.holdSeconds ?? 50;
  const maxErrors = options.maxConsecutiveErrors ?? 10;
  const nextInterval = pollSchedule(options, start);
  let last = fromStream;
  let etag: string | undefined;
  let polls = 0;
  let errors = 0;
  let delay = firstDelay;

  const result = (outcome: WaitResult['outcome']): WaitResult => ({
    outcome,
    run: last,
    polls,
    elapsedMs: now() - start,
    via: 'polls'
  });

  for (;;) {
    if (now() >= deadline) return result('timed_out');
    await pause(options, Math.min(delay, deadline - now()), runId);
    const remaining = deadline - now();
    if (remaining <= 0) return result('timed_out');

    const sent = now();
    let answer: PollResult;
    try {
      answer = await poller.pollRun(runId, {
        etag,
        waitSeconds: Math.min(hold, Math.floor(remaining / 1000)),
        signal: options.signal
      });
    } catch (error) {
      if (!isTransient(error)) throw error;
      errors++;
      options.onTransientError?.(error as Error, errors);
      if (errors > maxErrors) throw error;
      delay = nextInterval();
      continue;
    }
    errors = 0;
    polls++;

    if (answer.run) {
      const run = answer.run;
      etag = answer.etag;
      noteUnknown(run, options, unknown);
      const previous = last;
      last = run;
      if (previous?.state !== run.state) options.onStateChange?.(run, previous);
      if (isTerminalState(run.state)) return result('terminal');
    }
    delay = nextDelay(answer, now() - sent, nextInterval());
  }
}

/**
 * The schedule of polls to a server that does not hold them: each call gives the next pause,
 * ×1.5 the last, at most the cap and 15 % of the time waited so far, and up to 20 % shorter at random.
 */
function pollSchedule(options: WaitOptions, start: number): () => number {
  const now = options.now ?? Date.now;
  const random = options.random ?? Math.random;
  const initial = options.initialDelayMs ?? 1000;
  const cap = Math.max(initial, options.maxIntervalMs ?? 15_000);
  let interval = initial;
  return () => {
    const byElapsed = Math.max(initial, ELAPSED_FRACTION * (now() - start));
    interval = Math.min(cap, interval * GROWTH, byElapsed);
    return interval * (0.8 + 0.2 * random());
  };
}

/** Sleeps before a poll; the caller's abort ends the wait with an AbortError. */
async function pause(options: WaitOptions, ms: number, runId: string): Promise<void> {
  const sleep = options.sleep ?? abortableSleep;
  try {
    await sleep(ms, options.signal);
  } catch (error) {
    throw new AbortError(`waiting for run ${runId}: aborted`, { request: `wait ${runId}`, cause: error });
  }
}

/** The pause before the next poll: the server's word, a holding server's minimum gap, or the schedule's. */
function nextDelay(answer: PollResult, spent: number, paced: number): number {
  if (answer.retryAfterMs !== undefined) return answer.retryAfterMs;
  if (answer.held) return Math.max(0, MIN_GAP_MS - spent);
  return Math.max(0, paced - spent);
}

/** Tells `onUnknownState` of a state this client does not know, once per state. */
function noteUnknown(run: Run, options: WaitOptions, unknown: Set<string>): void {
  if (!isKnownState(run.state) && !unknown.has(run.state)) {
    unknown.add(run.state);
    options.onUnknownState?.(run.state, run);
  }
}

/** Follows the run on its stream until it ends, the time is up, or the stream is not (or no longer) there. */
async function followStream(
  stream: RunEventStream,
  runId: string,
  ms: number,
  options: WaitOptions,
  unknown: Set<string>
): Promise<{ outcome: WaitResult['outcome'] | 'fallback'; run?: Run; opened?: boolean }> {
  let last: Run | undefined;
  const seen = (run: Run) => {
    noteUnknown(run, options, unknown);
    const previous = last;
    last = run;
    if (previous?.state !== run.state) options.onStateChange?.(run, previous);
  };
  const release = stream.subscribe({ run: seen });
  let timer: ReturnType<typeof setTimeout> | undefined;
  let onAbort: (() => void) | undefined;
  try {
    const ended = await Promise.race([
      stream.ended,
      new Promise<'timed_out'>(resolve => (timer = setTimeout(() => resolve('timed_out'), Math.max(0, ms)))),
      new Promise<'aborted'>(resolve => {
        onAbort = () => resolve('aborted');
        if (options.signal?.aborted) onAbort();
        else options.signal?.addEventListener('abort', onAbort, { once: true });
      })
    ]);
    if (ended === 'aborted')
      throw new AbortError(`waiting for run ${runId}: aborted`, {
        request: `wait ${runId}`,
        cause: options.signal?.reason
      });
    if (ended === 'timed_out') return { outcome: 'timed_out', run: last };
    if (ended.outcome === 'done' && last && isTerminalState(last.state))
      return { outcome: 'terminal', run: last };
    return { outcome: 'fallback', run: last, opened: ended.outcome !== 'unavailable' };
  } finally {
    clearTimeout(timer);
    if (onAbort) options.signal?.removeEventListener('abort', onAbort);
    release();
  }
}

/** Failures a wait rides out: the next poll may well succeed. */
function isTransient(error: unknown): boolean {
  if (error instanceof AbortError) return false;
  return (
    error instanceof ConnectionError ||
    error instanceof ServerError ||
    error instanceof RateLimitError ||
    error instanceof ConflictError ||
    error instanceof ParseError
  );
}
