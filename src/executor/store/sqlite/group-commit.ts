// Creates on SQLite are group-committed: those that arrive in one turn of the event loop share one
// transaction and one fsync, and each is answered only after that commit, so an acknowledged run
// is as durable as with a commit of its own. A batch first runs without savepoints (two
// statements fewer a write); when one of its writes fails, the whole transaction is rolled back and
// the batch runs again with each write in a savepoint of its own, so one that fails does not undo
// the others. The work of a batch shares a memo (creates keep the queue counts
// there, so a queue is counted once, not once a create). It is kept from one batch to the next
// while nothing else wrote to the file in between: the connection's write stamp (its own changed
// rows and other connections' commits, connection.ts) read at the start of a batch's transaction
// is the one read at the end of the last batch's. Anything else, here or in another process, and
// the next batch starts with an empty memo.

import type { SqliteConnection } from './connection.js';

/** Values the work of a batch may keep, true while no other write comes between batches. */
export type BatchMemo = Map<string, number>;

/** Entries the memo holds at most (a queue count per team that created lately). */
const MAX_MEMO = 10_000;

type Outcome = { value: unknown } | { error: unknown };

interface Pending {
  work: (memo: BatchMemo) => unknown;
  resolve: (result: unknown) => void;
  reject: (error: unknown) => void;
}

export class GroupCommit {
  private pending: Pending[] = [];
  private memo: BatchMemo = new Map();
  /** The write stamp after the last batch committed (undefined: the memo is not to be trusted). */
  private memoStamp: string | undefined;

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
    let results: Outcome[];
    try {
      // Most batches fail nowhere: they run without savepoints. One that fails is rolled back whole
      // and run again with a savepoint for each write, so only the failing write is undone.
      results = this.attempt(batch, false) ?? this.attempt(batch, true)!;
    } catch (error) {
      this.memoStamp = undefined;
      for (const item of batch) item.reject(error);
      return;
    }
    batch.forEach((item, index) => {
      const result = results[index]!;
      if ('error' in result) item.reject(result.error);
      else item.resolve(result.value);
    });
  }

  /**
   * The batch in one transaction; each write's outcome once it committed. Without savepoints, the
   * first failure rolls everything back and gives undefined (nothing was kept, the memo is dropped).
   */
  private attempt(batch: Pending[], savepoints: boolean): Outcome[] | undefined {
    const results: Outcome[] = [];
    let failed = false;
    try {
      this.connection.transaction(() => {
        if (savepoints || this.connection.writeStamp() !== this.memoStamp || this.memo.size > MAX_MEMO)
          this.memo = new Map();
        const memo = this.memo;
        for (const item of batch) {
          if (!savepoints) {
            try {
              results.push({ value: item.work(memo) });
            } catch (error) {
              failed = true;
              throw error;
            }
            continue;
          }
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
        // Read before the commit, while no other connection can commit: one that commits after
        // ours moves the stamp the next batch reads.
        this.memoStamp = this.connection.writeStamp();
      });
    } catch (error) {
      if (!failed) throw error;
      this.memoStamp = undefined;
      return undefined;
    }
    return results;
  }
}
