// The retry policy, in one place: which failures are worth repeating and how long to wait first.

export interface RetryOptions {
  /** Retries after the first attempt (default 2). */
  maxRetries: number;
  /** First backoff (default 500 ms), doubled on every retry. */
  baseDelayMs: number;
  /** Backoff cap (default 8 s). */
  maxDelayMs: number;
}

export const DEFAULT_RETRY: RetryOptions = { maxRetries: 2, baseDelayMs: 500, maxDelayMs: 8000 };

/** A server-suggested delay is obeyed only within this range; anything else falls back to backoff. */
const MAX_SERVER_DELAY_MS = 60_000;

const RETRYABLE_STATUSES = new Set([408, 409, 429]);

export type HeaderLookup = (name: string) => string | undefined;

/**
 * Whether an answer with this status (or no answer at all, `status` undefined) should be retried.
 * A response header `x-should-retry: true|false` overrides the status-based rule.
 */
export function shouldRetry(status: number | undefined, header: HeaderLookup = () => undefined): boolean {
  const override = header('x-should-retry');
  if (override === 'true') return true;
  if (override === 'false') return false;
  if (status === undefined) return true;
  return RETRYABLE_STATUSES.has(status) || status >= 500;
}

/**
 * The delay before retry number `retry` (1-based): the server's `retry-after-ms` or `Retry-After`
 * when it lies in 0–60 s, otherwise exponential backoff with up to 25 % jitter taken off.
 */
export function retryDelayMs(
  retry: number,
  header: HeaderLookup,
  options: RetryOptions = DEFAULT_RETRY,
  random: () => number = Math.random,
  now: () => number = Date.now
): number {
  const suggested = serverDelayMs(header, now);
  if (suggested !== undefined) return suggested;
  const backoff = Math.min(options.baseDelayMs * 2 ** (retry - 1), options.maxDelayMs);
  return Math.round(backoff * (1 - 0.25 * random()));
}

/** The delay a server asked for with `retry-after-ms` or `Retry-After` (seconds or HTTP date), if sane. */
export function serverDelayMs(header: HeaderLookup, now: () => number = Date.now): number | undefined {
  const ms = header('retry-after-ms');
  if (ms !== undefined && /^\d+(\.\d+)?$/.test(ms.trim())) {
    const value = Number(ms);
    if (value <= MAX_SERVER_DELAY_MS) return Math.round(value);
  }
  const after = header('retry-after');
  if (after === undefined) return undefined;
  const trimmed = after.trim();
  let value: number;
  if (/^\d+(\.\d+)?$/.test(trimmed)) value = Number(trimmed) * 1000;
  else {
    const date = Date.parse(trimmed);
    if (Number.isNaN(date)) return undefined;
    value = Math.max(0, date - now());
  }
  return value <= MAX_SERVER_DELAY_MS ? Math.round(value) : undefined;
}
