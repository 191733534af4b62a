// The SQLite store's connection: the file opened with WAL and synchronous=FULL (a run id that was
// answered survives a power cut), its schema brought up to date, prepared statements kept, and
// transactions. node:sqlite is synchronous and JavaScript runs one thing at a time, so a
// transaction's work cannot interleave with other work of this process; BEGIN IMMEDIATE makes it
// atomic against other processes too (the CLI's `keys` commands write while a server runs, and
// `serve --role api` and `--role worker` can share one file). The file is 0600 before SQLite opens
// it, whatever the umask: SQLite gives the -wal and -shm files it makes the database file's mode,
// and ones an older executor left are made 0600 after the open (private-files.ts).

import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import type { DatabaseSync, SQLInputValue, StatementSync } from 'node:sqlite';
import { PRIVATE_DIR_MODE, privateFile, tightenFile } from '../../sandbox/private-files.js';
import { SQLITE_MIGRATIONS } from '../migrations.js';

export class SqliteConnection {
  private readonly statements = new Map<string, StatementSync>();

  private constructor(private readonly db: DatabaseSync) {}

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
    const connection = new SqliteConnection(db);
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

  /** Moves on every write: this connection's changed rows, and other connections' commits. */
  writeStamp(): string {
    const row = this.prepare(
      'SELECT total_changes() AS changes, data_version AS version FROM pragma_data_version'
    ).get() as { changes: number; version: number };
    return `${row.changes}:${row.version}`;
  }

  close(): void {
    this.statements.clear();
    if (this.db.isOpen) this.db.close();
  }
}
