// Opens the store a spec names.

import { type PostgresOptions, PostgresRunStore } from './postgres.js';
import type { StoreSpec } from './spec.js';
import { SqliteRunStore } from './sqlite.js';
import type { RunStore } from './types.js';

export async function openStore(spec: StoreSpec, options: PostgresOptions = {}): Promise<RunStore> {
  return spec.kind === 'sqlite' ? SqliteRunStore.open(spec.path) : PostgresRunStore.open(spec.url, options);
}
