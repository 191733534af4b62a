// Creates on SQLite are group-committed: those that arrive in one turn of the event loop share one
// transaction and one fsync, each in a savepoint of its own (one that fails does not undo the
// others), and each is answered only after that commit, so an acknowledged run is as durable as
// with a commit of its own. The work of one batch shares a memo that lives as long as its
// transaction (creates keep the queue counts there, so a batch counts each queue once, not once a
// create: nothing else writes while the transaction is open).

import type { SqliteConnection } from './connection.js';

/** Values the work of one batch may keep while its transaction is open; gone at its end. */
export type BatchMemo = Map<string, number>;

interface Pending {
  work: (memo: BatchMemo) => unknown;
  resolve: (result: unknown) => void;
  reject: (error: unknown) => void;
}

export class GroupCommit {
  private pending: Pending[] = [];

  constructor(private readonly connection: SqliteConnection) {}

  /** Runs `work` in the next shared transaction; its result once that committed. */
  add<T>(work: (memo: BatchMemo) => T): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      this.pending.push({ work, resolve: resolve as (result: unknown) => void, reject });
      if (this.pending.length === 1) setImmediate(() => this.flush());
    });
  }

  private flush(): void {
    const batch = this.pending;
    this.pending = [];
    const results: ({ value: unknown } | { error: unknown })[] = [];
    const memo: BatchMemo = new Map();
    try {
      this.connection.transaction(() => {
        for (const item of batch) {
          this.connection.exec('SAVEPOINT one_write');
          try {
            results.push({ value: item.work(memo) });
            this.connection.exec('RELEASE one_write');
          } catch (error) {
            this.connection.exec('ROLLBACK TO one_write');
            this.connection.exec('RELEASE one_write');
            results.push({ error });
          }
        }
      });
    } catch (error) {
      for (const item of batch) item.reject(error);
      return;
    }
    batch.forEach((item, index) => {
      const result = results[index]!;
      if ('error' in result) item.reject(result.error);
      else item.resolve(result.value);
    });
  }
}
