// The stores on PostgreSQL, shared by every executor node on one database: the SQL stores
// (sql-stores.ts) with the PostgreSQL dialect (postgres/). What makes several nodes safe together is
// said in postgres/dialect.ts; idempotency is a unique index, so concurrent creates with one key on
// two nodes give one run; migrations run under an advisory lock (postgres/migrate.ts).

import type pg from 'pg';
import { createPool, openError } from './postgres/connection.js';
import { PostgresDialect } from './postgres/dialect.js';
import { migrate } from './postgres/migrate.js';
import { SqlStores } from './sql-stores.js';

export interface PostgresOptions {
  /** Connections in the pool (default 10). */
  poolSize?: number;
  /** How often the fallback poll looks for changes missed by LISTEN (default 2000 ms). */
  fallbackPollMs?: number;
}

export class PostgresStores extends SqlStores {
  declare readonly kind: 'postgres';
  private closed = false;

  private constructor(
    private readonly pool: pg.Pool,
    url: string,
    fallbackPollMs: number
  ) {
    super(new PostgresDialect(pool, url, fallbackPollMs));
  }

  /** Connects, and brings the schema up to date under an advisory lock. */
  static async open(url: string, options: PostgresOptions = {}): Promise<PostgresStores> {
    const pool = createPool(url, options.poolSize ?? 10);
    try {
      await migrate(pool);
    } catch (error) {
      await pool.end().catch(() => undefined);
      throw openError(url, error);
    }
    return new PostgresStores(pool, url, options.fallbackPollMs ?? 2000);
  }

  override async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await super.close();
  }
}
