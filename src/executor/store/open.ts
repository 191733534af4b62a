// Opens the store a spec names: the bundle of its stores, one per concern (stores.ts), which is
// also the server's transitional RunStore (types.ts). `shared` tells a SQLite store that other
// processes run work from the same file (split roles on one machine); a PostgreSQL store is always
// shared.

import { type PostgresOptions, PostgresRunStore } from './postgres.js';
import type { StoreSpec } from './location.js';
import { type SqliteOptions, SqliteRunStore } from './sqlite.js';
import type { RunStore } from './types.js';

export async function openStore(
  spec: StoreSpec,
  options: PostgresOptions & SqliteOptions = {}
): Promise<RunStore> {
  return spec.kind === 'sqlite'
    ? SqliteRunStore.open(spec.path, { shared: options.shared })
    : PostgresRunStore.open(spec.url, options);
}
