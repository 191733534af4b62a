import { describe, expect, it } from '@jest/globals';
import type { PollOptions, PollResult } from '../../src/client/poll.js';
import { AuthenticationError, ServerError } from '../../src/client/errors.js';
import type { Run } from '../../src/client/parse.js';
import { waitForRun } from '../../src/client/wait.js';

/** A virtual clock: sleeping advances time; each poll costs `pollCost` ms of it. */
function harness(answer: (t: number, options: PollOptions) => PollResult | Error, pollCost = 0) {
  let t = 0;
  const sleeps: number[] = [];
  const polls: { at: number; options: PollOptions }[] = [];
  return {
    sleeps,
    polls,
    options: {
      now: () => t,
      random: () => 1,
      sleep: async (ms: number) => {
        sleeps.push(ms);
        t += ms;
      }
    },
    poller: {
      async pollRun(_id: string, options: PollOptions): Promise<PollResult> {
        polls.push({ at: t, options });
        t += pollCost;
        const result = answer(t, options);
        if (result instanceof Error) throw result;
        return result;
      }
    }
  };
}

const run = (state: string, extra: Partial<Run> = {}): Run => ({ run_id: 'r', state, ...extra });

describe('waitForRun schedule', () => {
  it('polls first after 1 s, grows ×1.5 but never past 15 % of the time waited, caps at 15 s', async () => {
    const h = harness(t => ({ run: run(t >= 600_000 ? 'SUCCEEDED' : 'INPROGRESS'), held: false, etag: 'e' }));
    const result = await waitForRun(h.poller, 'r', { ...h.options, timeoutMs: 3_600_000 });
    expect(result.outcome).toBe('terminal');
    expect(h.sleeps[0]).toBe(1000);
    const gaps = h.sleeps.slice(1);
    for (const [i, gap] of gaps.entries()) {
      const waited = h.polls[i]!.at;
      expect(gap).toBeLessThanOrEqual(Math.max(1000, 0.15 * waited) + 1e-6);
      expect(gap).toBeLessThanOrEqual(15_000);
      if (i > 0) expect(gap).toBeLessThanOrEqual(gaps[i - 1]! * 1.5 + 1e-6);
    }
    expect(Math.max(...gaps)).toBe(15_000);
    // Noticed within 15 % of the run's length.
    expect(result.elapsedMs - 600_000).toBeLessThanOrEqual(0.15 * 600_000);
  });

  it('sends the last ETag and asks the server to hold, bounded by the time left', async () => {
    const h = harness(t => ({ run: run(t > 5000 ? 'SUCCEEDED' : 'QUEUED'), held: false, etag: `e${t}` }));
    await waitForRun(h.poller, 'r', { ...h.options, timeoutMs: 30_000, holdSeconds: 50 });
    expect(h.polls[0]!.options).toMatchObject({ etag: undefined, waitSeconds: 29 });
    expect(h.polls[1]!.options.etag).toBe('e1000');
  });

  it('re-polls at once when the server holds polls, and obeys Retry-After', async () => {
    let n = 0;
    const h = harness(() => {
      n++;
      if (n === 1) return { run: run('QUEUED'), held: true, etag: 'a' };
      if (n === 2) return { held: true, etag: 'a', retryAfterMs: 7000 };
      return { run: run('SUCCEEDED'), held: true, etag: 'b' };
    }, 20_000);
    const result = await waitForRun(h.poller, 'r', { ...h.options });
    expect(result.outcome).toBe('terminal');
    expect(h.sleeps).toEqual([1000, 0, 7000]);
  });

  it('reports every state change once and each unknown state once', async () => {
    const states = ['QUEUED', 'PENDING', 'PENDING', 'BLOCKED', 'PENDING', 'INPROGRESS', 'FAILED'];
    let i = 0;
    const h = harness(() => ({ run: run(states[i++]!), held: false }));
    const changes: string[] = [];
    const unknown: string[] = [];
    const result = await waitForRun(h.poller, 'r', {
      ...h.options,
      onStateChange: (r, prev) => changes.push(`${prev?.state ?? '-'}>${r.state}`),
      onUnknownState: s => unknown.push(s)
    });
    expect(result.run?.state).toBe('FAILED');
    expect(changes).toEqual([
      '->QUEUED',
      'QUEUED>PENDING',
      'PENDING>BLOCKED',
      'BLOCKED>PENDING',
      'PENDING>INPROGRESS',
      'INPROGRESS>FAILED'
    ]);
    expect(unknown).toEqual([]);
  });

  it('treats a never-seen state as not terminal, logs it once, and is bounded by the deadline', async () => {
    const h = harness(() => ({ run: run('HIBERNATING'), held: false }));
    const unknown: string[] = [];
    const result = await waitForRun(h.poller, 'r', {
      ...h.options,
      timeoutMs: 120_000,
      onUnknownState: s => unknown.push(s)
    });
    expect(result.outcome).toBe('timed_out');
    expect(result.run?.state).toBe('HIBERNATING');
    expect(unknown).toEqual(['HIBERNATING']);
    expect(result.elapsedMs).toBe(120_000);
  });

  it('rides out up to 10 transient failures in a row, apart from the deadline', async () => {
    let n = 0;
    const h = harness(() =>
      ++n <= 10
        ? new ServerError('503', { request: 'GET', status: 503 })
        : { run: run('SUCCEEDED'), held: false }
    );
    const seen: number[] = [];
    const result = await waitForRun(h.poller, 'r', {
      ...h.options,
      onTransientError: (_e, c) => seen.push(c)
    });
    expect(result.outcome).toBe('terminal');
    expect(seen).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);
  });

  it('gives up after the 11th transient failure in a row, and at once on a fatal one', async () => {
    const h = harness(() => new ServerError('503 from GET', { request: 'GET', status: 503 }));
    await expect(waitForRun(h.poller, 'r', h.options)).rejects.toThrow('503 from GET');
    expect(h.polls).toHaveLength(11);
    const fatal = harness(() => new AuthenticationError('401', { request: 'GET', status: 401 }));
    await expect(waitForRun(fatal.poller, 'r', fatal.options)).rejects.toBeInstanceOf(AuthenticationError);
    expect(fatal.polls).toHaveLength(1);
  });

  it('stops when the signal fires', async () => {
    const controller = new AbortController();
    const poller = {
      async pollRun(): Promise<PollResult> {
        controller.abort();
        return { run: run('INPROGRESS'), held: false };
      }
    };
    await expect(waitForRun(poller, 'r', { signal: controller.signal, initialDelayMs: 1 })).rejects.toThrow(
      'waiting for run r: aborted'
    );
  });
});
