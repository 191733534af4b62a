// Wakes held reads (`Prefer: wait`) the moment their run changes: one store listener, dispatched
// by run id, so a thousand held reads cost nothing per unrelated change.

import type { RunChange, RunStore } from '../store/types.js';

export class ChangeHub {
  private readonly waiters = new Map<string, Set<() => void>>();
  private readonly unsubscribe: () => void;

  constructor(store: RunStore) {
    this.unsubscribe = store.onChange((change: RunChange) => {
      const set = this.waiters.get(change.run_id);
      if (set) for (const wake of [...set]) wake();
    });
  }

  /** Resolves when the run changes, after `ms`, or when `signal` fires, whichever is first. */
  wait(runId: string, ms: number, signal: AbortSignal): Promise<void> {
    return new Promise(resolve => {
      let set = this.waiters.get(runId);
      if (!set) this.waiters.set(runId, (set = new Set()));
      const wake = () => {
        clearTimeout(timer);
        signal.removeEventListener('abort', wake);
        set.delete(wake);
        if (set.size === 0) this.waiters.delete(runId);
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
  }

  close(): void {
    this.wakeAll();
    this.unsubscribe();
  }
}
