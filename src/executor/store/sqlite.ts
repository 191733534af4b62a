// RunStore on node:sqlite, for one machine: the SQL store (sql-store.ts) with the SQLite dialect
// (sqlite/). What other processes commit to the file is noticed by PRAGMA data_version, which a
// shared store (opened by a split role) polls while anyone listens; the key cache is emptied by a
// key write anywhere (the key_changes counter, moved by triggers on api_keys).

import { SqliteConnection } from './sqlite/connection.js';
import { SqliteDialect } from './sqlite/dialect.js';
import { SqlRunStore } from './sql-store.js';

export interface SqliteOptions {
  /** Other processes run work on this file too (split roles): start-up fails only expired leases. */
  shared?: boolean;
}

export class SqliteRunStore extends SqlRunStore {
  declare readonly kind: 'sqlite';

  /** Opens (creating when needed) the database file and brings its schema up to date. */
  static async open(path: string, options: SqliteOptions = {}): Promise<SqliteRunStore> {
    const connection = await SqliteConnection.open(path);
    return new SqliteRunStore(new SqliteDialect(connection, options.shared ?? false));
  }
}
