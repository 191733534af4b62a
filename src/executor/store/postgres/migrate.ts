// Brings a PostgreSQL database's schema up to date at open: the migrations it lacks, all in one
// transaction, under an advisory lock so nodes starting at once apply each exactly once. A database
// that has them all is only read, so a role without the right to create tables can open it.

import type pg from 'pg';
import { POSTGRES_MIGRATIONS } from '../migrations.js';
import { transaction } from './connection.js';

export async function migrate(pool: pg.Pool): Promise<void> {
  await transaction(pool, async client => {
    // One lock for every node of every version: the second node waits, then finds nothing to do.
    await client.query(`SELECT pg_advisory_xact_lock(hashtext('agent-executor schema'))`);
    const exists = await client.query<{ table: string | null }>(
      `SELECT to_regclass('agent_executor_migrations')::text AS table`
    );
    if (exists.rows[0]!.table === null) {
      await client.query(
        'CREATE TABLE agent_executor_migrations (version INTEGER PRIMARY KEY, name TEXT, applied_at TEXT)'
      );
    }
    const applied = await client.query<{ version: number }>('SELECT version FROM agent_executor_migrations');
    const done = new Set(applied.rows.map(row => row.version));
    for (const migration of POSTGRES_MIGRATIONS) {
      if (done.has(migration.version)) continue;
      await client.query(migration.sql);
      await client.query(
        'INSERT INTO agent_executor_migrations (version, name, applied_at) VALUES ($1, $2, $3)',
        [migration.version, migration.name, new Date().toISOString()]
      );
    }
  });
}
