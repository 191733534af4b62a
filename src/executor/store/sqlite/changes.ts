// How a SQLite store tells its listeners of changes: at once for its own writes, and, when the file
// is shared with another process (`serve --role api` beside `--role worker`), by looking at PRAGMA
// data_version every 50 ms while anyone listens. The pragma is one cheap read that moves only when
// another connection committed; when it moved, the runs whose changed_at is recent are read and
// announced, each version at most once per process.

import { EventEmitter } from 'node:events';
import type { RunChange } from '../types.js';

/** How often a shared store looks for other processes' commits while anyone listens. */
const POLL_MS = 50;
/** Changes are looked for this far behind the newest one seen: a commit can carry an older time. */
const MARGIN_MS = 2000;

export interface SqliteChangeSource {
  /** PRAGMA data_version of the store's connection. */
  dataVersion(): number;
  /** Runs whose changed_at (epoch ms) is after `since`. */
  changedSince(since: number): (RunChange & { changed_at: number })[];
}

export class SqliteChanges {
  private readonly emitter = new EventEmitter();
  /** run_id → the newest version announced (kept only when shared, where repeats can happen). */
  private readonly heard = new Map<string, { version: number; at: number }>();
  private pollTimer?: NodeJS.Timeout;
  private seenVersion = -1;
  private changedUpTo = 0;

  constructor(
    private readonly source: SqliteChangeSource,
    private readonly shared: boolean
  ) {
    this.emitter.setMaxListeners(0);
  }

  /** Tells the listeners of a change, unless this process already told them of that version. */
  tell(run: RunChange): void {
    const seen = this.heard.get(run.run_id);
    if (seen && seen.version >= run.version) return;
    if (this.shared) this.heard.set(run.run_id, { version: run.version, at: Date.now() });
    this.emitter.emit('change', { run_id: run.run_id, state: run.state, version: run.version });
  }

  onChange(listener: (change: RunChange) => void): () => void {
    this.emitter.on('change', listener);
    if (this.shared && !this.pollTimer) {
      this.seenVersion = this.source.dataVersion();
      this.changedUpTo = Date.now();
      this.pollTimer = setInterval(() => {
        try {
          this.poll();
        } catch {
          // busy or closing: the next tick looks again
        }
      }, POLL_MS);
      this.pollTimer.unref();
    }
    return () => {
      this.emitter.off('change', listener);
      if (this.emitter.listenerCount('change') === 0) this.close();
    };
  }

  private poll(): void {
    const version = this.source.dataVersion();
    if (version === this.seenVersion) return;
    this.seenVersion = version;
    for (const row of this.source.changedSince(this.changedUpTo - MARGIN_MS)) {
      this.changedUpTo = Math.max(this.changedUpTo, row.changed_at);
      try {
        this.tell({ run_id: row.run_id, state: row.state, version: row.version });
      } catch {
        // a listener failed; the change is stored, and timers catch up
      }
    }
    const forget = Date.now() - 60_000;
    if (this.heard.size > 1000)
      for (const [runId, seen] of this.heard) if (seen.at < forget) this.heard.delete(runId);
  }

  close(): void {
    clearInterval(this.pollTimer);
    this.pollTimer = undefined;
  }
}
