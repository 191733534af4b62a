// Opens the store a spec names: the bundle of its stores, one per concern (stores.ts), which is
// what every consumer takes its stores from. `shared` tells a SQLite store that other
// processes run work from the same file (split roles on one machine); a PostgreSQL store is always
// shared.

import { type PostgresOptions, PostgresStores } from './postgres.js';
import type { StoreSpec } from './location.js';
import { type SqliteOptions, SqliteStores } from './sqlite.js';
import type { Stores } from './stores.js';

export async function openStore(
  spec: StoreSpec,
  options: PostgresOptions & SqliteOptions = {}
): Promise<Stores> {
  return spec.kind === 'sqlite'
    ? SqliteStores.open(spec.path, { shared: options.shared })
    : PostgresStores.open(spec.url, options);
}
