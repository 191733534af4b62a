// Wakes held reads (`Prefer: wait`) the moment their run changes: one store listener, dispatched
// by run id, so a thousand held reads cost nothing per unrelated change. It remembers the newest
// version heard of each recently changed run: a change heard between a read's look at the run and
// its wait (another node's notification can arrive then) ends the wait at once instead of being
// missed.

import type { RunChange, RunChangeFeed, TranscriptStore } from '../store/types.js';

export class ChangeHub {
  private readonly waiters = new Map<string, Set<() => void>>();
  private readonly heard = new Map<string, { version: number; at: number }>();
  private changes = 0;
  private readonly unsubscribe: () => void;
  /** Held transcript reads, by run id, and the newest event number heard of each run. */
  private readonly eventWaiters = new Map<string, Set<() => void>>();
  private readonly heardEvents = new Map<string, { seq: number; at: number }>();
  private readonly unsubscribeEvents: () => void;

  constructor(stores: { runs: RunChangeFeed; transcript: Pick<TranscriptStore, 'onEvent'> }) {
    this.unsubscribe = stores.runs.onChange((change: RunChange) => {
      const seen = this.heard.get(change.run_id);
      if (!seen || seen.version < change.version)
        this.heard.set(change.run_id, { version: change.version, at: Date.now() });
      if (++this.changes % 1000 === 0) this.forget();
      const set = this.waiters.get(change.run_id);
      if (set) for (const wake of [...set]) wake();
      // A change of state is also an event of the transcript.
      this.wakeEvents(change.run_id);
    });
    this.unsubscribeEvents = stores.transcript.onEvent((runId, seq) => {
      const seen = this.heardEvents.get(runId);
      if (!seen || seen.seq < seq) this.heardEvents.set(runId, { seq, at: Date.now() });
      if (++this.changes % 1000 === 0) this.forget();
      this.wakeEvents(runId);
    });
  }

  private wakeEvents(runId: string): void {
    const set = this.eventWaiters.get(runId);
    if (set) for (const wake of [...set]) wake();
  }

  /**
   * Resolves when an event is appended to the run's transcript or the run changes (at once if an
   * event newer than `afterSeq` was already heard), after `ms`, or when `signal` fires.
   */
  waitEvent(runId: string, afterSeq: number, ms: number, signal: AbortSignal): Promise<void> {
    if ((this.heardEvents.get(runId)?.seq ?? 0) > afterSeq) return Promise.resolve();
    return this.hold(this.eventWaiters, runId, ms, signal);
  }

  /**
   * Calls `wake` on every event appended to any of these runs and every change of them, until the
   * returned function is called: an event stream's lifelong subscription (event-stream.ts).
   */
  watch(runIds: readonly string[], wake: () => void): () => void {
    for (const runId of runIds) {
      let set = this.eventWaiters.get(runId);
      if (!set) this.eventWaiters.set(runId, (set = new Set()));
      set.add(wake);
    }
    return () => {
      for (const runId of runIds) {
        const set = this.eventWaiters.get(runId);
        set?.delete(wake);
        if (set?.size === 0) this.eventWaiters.delete(runId);
      }
    };
  }

  /** A held read lasts at most a minute: what is older than that can no longer matter. */
  private forget(): void {
    const before = Date.now() - 120_000;
    for (const [runId, seen] of this.heard) if (seen.at < before) this.heard.delete(runId);
    for (const [runId, seen] of this.heardEvents) if (seen.at < before) this.heardEvents.delete(runId);
  }

  /**
   * Resolves when the run changes past `version` (at once if that was already heard), after `ms`,
   * or when `signal` fires, whichever is first.
   */
  wait(runId: string, version: number, ms: number, signal: AbortSignal): Promise<void> {
    if ((this.heard.get(runId)?.version ?? 0) > version) return Promise.resolve();
    return this.hold(this.waiters, runId, ms, signal);
  }

  private hold(
    waiters: Map<string, Set<() => void>>,
    runId: string,
    ms: number,
    signal: AbortSignal
  ): Promise<void> {
    return new Promise(resolve => {
      let set = waiters.get(runId);
      if (!set) waiters.set(runId, (set = new Set()));
      const wake = () => {
        clearTimeout(timer);
        signal.removeEventListener('abort', wake);
        set.delete(wake);
        if (set.size === 0) waiters.delete(runId);
        resolve();
      };
      const timer = setTimeout(wake, ms);
      set.add(wake);
      if (signal.aborted) wake();
      else signal.addEventListener('abort', wake, { once: true });
    });
  }

  /** Releases every held read (at shutdown). */
  wakeAll(): void {
    for (const set of [...this.waiters.values()]) for (const wake of [...set]) wake();
    for (const set of [...this.eventWaiters.values()]) for (const wake of [...set]) wake();
  }

  close(): void {
    this.wakeAll();
    this.unsubscribe();
    this.unsubscribeEvents();
  }
}
