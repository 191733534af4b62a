// The stores on node:sqlite, for one machine: the SQL stores (sql-stores.ts) with the SQLite dialect
// (sqlite/). What other processes commit to the file is noticed by PRAGMA data_version, which a
// shared store (opened by a split role) polls while anyone listens; the key cache is emptied by a
// key write anywhere (the key_changes counter, moved by triggers on api_keys).

import { SqliteConnection } from './sqlite/connection.js';
import { SqliteDialect } from './sqlite/dialect.js';
import { SqlStores } from './sql-stores.js';

export interface SqliteOptions {
  /** Other processes run work on this file too (split roles): start-up fails only expired leases. */
  shared?: boolean;
}

export class SqliteStores extends SqlStores {
  declare readonly kind: 'sqlite';

  /** Opens (creating when needed) the database file and brings its schema up to date. */
  static async open(path: string, options: SqliteOptions = {}): Promise<SqliteStores> {
    const connection = await SqliteConnection.open(path);
    return new SqliteStores(new SqliteDialect(connection, options.shared ?? false));
  }
}
