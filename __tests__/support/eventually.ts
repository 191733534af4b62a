// The one way tests wait for something that happens asynchronously (a run's state, a file, a
// process ending): call a probe until it gives a value, or fail after a deadline saying what was
// awaited and what the probe last gave. Replaces the hand-written poll loops of each suite.
import { inspect } from 'node:util';

export interface EventuallyOptions {
  /** What is awaited, for the error message ("run r1 SUCCEEDED"). */
  what: string;
  /** Give up after this long (default 10 s). */
  timeoutMs?: number;
  /** Pause between calls (default 50 ms). */
  intervalMs?: number;
}

type Found<T> = Exclude<T, undefined | null | false>;

/**
 * Calls `probe` until it returns something other than undefined, null or false, and returns that.
 * Throws after `timeoutMs` (the probe's own errors end the wait at once).
 */
export async function eventually<T>(
  probe: () => T | Promise<T>,
  { what, timeoutMs = 10_000, intervalMs = 50 }: EventuallyOptions
): Promise<Found<T>> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined && value !== null && value !== false) return value as Found<T>;
    if (Date.now() >= deadline) {
      throw new Error(`timed out after ${timeoutMs} ms waiting for ${what} (last: ${inspect(value)})`);
    }
    await new Promise(resolve => setTimeout(resolve, intervalMs));
  }
}
