// The SQLite store's connection: the file opened with WAL and synchronous=FULL (a run id that was
// answered survives a power cut), its schema brought up to date, prepared statements kept, and
// transactions. node:sqlite is synchronous and JavaScript runs one thing at a time, so a
// transaction's work cannot interleave with other work of this process; BEGIN IMMEDIATE makes it
// atomic against other processes too (the CLI's `keys` commands write while a server runs, and
// `serve --role api` and `--role worker` can share one file). The file is 0600 before SQLite opens
// it, whatever the umask: SQLite gives the -wal and -shm files it makes the database file's mode,
// and ones an older executor left are made 0600 after the open (private-files.ts).

import { closeSync, mkdirSync, openSync, readSync } from 'node:fs';
import { dirname } from 'node:path';
import type { DatabaseSync, SQLInputValue, StatementSync } from 'node:sqlite';
import { PRIVATE_DIR_MODE, privateFile, tightenFile } from '../../sandbox/private-files.js';
import { SQLITE_MIGRATIONS } from '../migrations.js';

/**
 * Bytes of the WAL-index header at the start of the -shm file (https://www.sqlite.org/walformat.html):
 * its change counter and last committed frame move with every commit, by any connection.
 */
const WAL_INDEX_HEADER_BYTES = 48;

export class SqliteConnection {
  private readonly statements = new Map<string, StatementSync>();
  /** The -shm file, opened for commitStamp (undefined: not looked for yet; null: there is none). */
  private walIndex: { fd: number; header: Buffer } | null | undefined;

  private constructor(
    private readonly db: DatabaseSync,
    private readonly path: string
  ) {}

  /** Opens (creating when needed) the database file and brings its schema up to date. */
  static async open(path: string): Promise<SqliteConnection> {
    const { DatabaseSync } = await import('node:sqlite');
    const file = path !== ':memory:';
    if (file) {
      mkdirSync(dirname(path), { recursive: true, mode: PRIVATE_DIR_MODE });
      privateFile(path);
    }
    const db = new DatabaseSync(path);
    db.exec('PRAGMA busy_timeout = 10000');
    db.exec('PRAGMA journal_mode = WAL');
    if (file) for (const suffix of ['-wal', '-shm']) tightenFile(path + suffix);
    db.exec('PRAGMA synchronous = FULL');
    db.exec('PRAGMA foreign_keys = ON');
    const connection = new SqliteConnection(db, path);
    connection.migrate();
    return connection;
  }

  private migrate(): void {
    this.db.exec(
      'CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, name TEXT, applied_at TEXT)'
    );
    for (const migration of SQLITE_MIGRATIONS) {
      this.transaction(() => {
        if (this.prepare('SELECT 1 FROM schema_migrations WHERE version = ?').get(migration.version)) return;
        this.db.exec(migration.sql);
        this.prepare('INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)').run(
          migration.version,
          migration.name,
          new Date().toISOString()
        );
      });
    }
  }

  /** The prepared statement for `text`, prepared once. */
  prepare(text: string): StatementSync {
    let statement = this.statements.get(text);
    if (!statement) {
      statement = this.db.prepare(text);
      this.statements.set(text, statement);
    }
    return statement;
  }

  all<R>(text: string, values: readonly unknown[]): R[] {
    return this.prepare(text).all(...(values as SQLInputValue[])) as R[];
  }

  /** The rows one at a time; leaving the loop early reads no more of them. */
  iterate<R>(text: string, values: readonly unknown[]): Iterable<R> {
    return this.prepare(text).iterate(...(values as SQLInputValue[])) as Iterable<R>;
  }

  run(text: string, values: readonly unknown[]): number {
    return Number(this.prepare(text).run(...(values as SQLInputValue[])).changes);
  }

  exec(text: string): void {
    this.db.exec(text);
  }

  transaction<T>(work: () => T): T {
    this.db.exec('BEGIN IMMEDIATE');
    try {
      const result = work();
      this.db.exec('COMMIT');
      return result;
    } catch (error) {
      this.db.exec('ROLLBACK');
      throw error;
    }
  }

  /** Moves when another connection (another process) committed to the file. */
  dataVersion(): number {
    return (this.prepare('PRAGMA data_version').get() as { data_version: number }).data_version;
  }

  /**
   * Moves on every write: this connection's changed rows (inside its transactions too), and other
   * connections' commits. One statement.
   */
  writeStamp(): string {
    const row = this.prepare(
      'SELECT total_changes() AS changes, data_version AS version FROM pragma_data_version'
    ).get() as { changes: number; version: number };
    return `${row.changes}:${row.version}`;
  }

  /**
   * Moves on every commit to the file, this connection's and others' (not inside a transaction of
   * this one: see writeStamp). One read of the WAL-index header from the -shm file, where SQLite's
   * readers find the last commit too: a system call, where a statement takes and drops locks (three).
   * A header caught while a writer updates it reads as a new stamp, so the caches under it are
   * dropped once more than needed, never kept past a commit. Without a -shm file (an in-memory
   * database), writeStamp.
   */
  commitStamp(): string {
    if (this.walIndex === undefined) this.walIndex = this.openWalIndex();
    if (this.walIndex === null) return this.writeStamp();
    const { fd, header } = this.walIndex;
    if (readSync(fd, header, 0, WAL_INDEX_HEADER_BYTES, 0) !== WAL_INDEX_HEADER_BYTES)
      return this.writeStamp();
    return header.toString('latin1');
  }

  private openWalIndex(): { fd: number; header: Buffer } | null {
    if (this.path === ':memory:') return null;
    // A read makes SQLite map the -shm file (made at the WAL switch in open()).
    this.dataVersion();
    try {
      return { fd: openSync(`${this.path}-shm`, 'r'), header: Buffer.alloc(WAL_INDEX_HEADER_BYTES) };
    } catch {
      return null;
    }
  }

  close(): void {
    if (this.walIndex) closeSync(this.walIndex.fd);
    this.walIndex = null;
    this.statements.clear();
    if (this.db.isOpen) this.db.close();
  }
}
