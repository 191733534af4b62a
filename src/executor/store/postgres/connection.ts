// The PostgreSQL store's connections: the pool and its settings, named queries, transactions, and
// the classification of failures. A failure that means the database cannot be reached (down,
// restarting, failed over, the network gone) becomes StoreUnavailableError, so requests answer 503
// and workers pause; any other error is a bug and stays as it is.

import pg from 'pg';
import { redactUrl } from '../location.js';
import { StoreUnavailableError } from '../types.js';

/** No statement of this store takes long; one without an answer this late means the server is gone. */
const QUERY_TIMEOUT_MS = 30_000;

/** Any number that fits in a JavaScript number comes back as one (ids, counts, epoch ms). */
export const TYPES = {
  getTypeParser(oid: number, format?: 'text' | 'binary') {
    if (oid === 20 && format !== 'binary') return (value: string) => Number(value);
    // bytea columns hold user text as UTF-8 (see the migration): read back as strings.
    if (oid === 17 && format !== 'binary') {
      const parse = pg.types.getTypeParser(17, 'text') as (value: string) => Buffer;
      return (value: string) => parse(value).toString('utf8');
    }
    return pg.types.getTypeParser(oid, format as 'text');
  }
};

/** A connection inside a transaction (or the pool); its queries are named (see `named`). */
export interface Tx {
  query<R extends pg.QueryResultRow = pg.QueryResultRow>(
    text: string,
    values?: unknown[]
  ): Promise<pg.QueryResult<R>>;
}

/** Connection-level failures: the database is down, restarting, or unreachable. */
export function isUnavailable(error: unknown): boolean {
  const e = error as { code?: string; message?: string } | undefined;
  if (!e) return false;
  if (typeof e.code === 'string') {
    // 08 (but 08P01, a protocol violation: a bug, not an outage): connection exception;
    // 57P01-57P03: admin shutdown, crash shutdown, cannot connect now; 57014: statement timeout;
    // 53300: too many connections; 25006: read-only (a primary demoted by a failover).
    if (e.code !== '08P01' && /^08|^57P0[1-3]$|^57014$|^53300$|^25006$/.test(e.code)) return true;
    const network = ['ECONNREFUSED', 'ECONNRESET', 'EPIPE', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENETUNREACH'];
    if ([...network, 'ENOTFOUND', 'EAI_AGAIN'].includes(e.code)) return true;
  }
  // pg's own: a connection lost or never made, every pooled connection busy past the wait, a
  // query with no answer in time.
  return /Connection terminated|connection timeout|timeout exceeded when trying to connect|Query read timeout|Client has encountered a connection error|not queryable/i.test(
    e.message ?? ''
  );
}

/** The error to throw for a failure: StoreUnavailableError for an outage, else the error itself. */
export function wrap(error: unknown): unknown {
  if (error instanceof StoreUnavailableError || !isUnavailable(error)) return error;
  // The message says nothing of the address or the driver: it can reach a run's status message.
  // The cause (in the log) has the details.
  return new StoreUnavailableError('the PostgreSQL store is unavailable', { cause: error });
}

/** A pool of `size` connections to `url`. */
export function createPool(url: string, size: number): pg.Pool {
  const pool = new pg.Pool({
    connectionString: url,
    max: size,
    connectionTimeoutMillis: 5000,
    // A silent network partition must end in an error (then 503), not a request that hangs.
    keepAlive: true,
    query_timeout: QUERY_TIMEOUT_MS,
    idleTimeoutMillis: 30_000,
    types: TYPES,
    application_name: 'agent-executor'
  });
  // An idle connection that breaks (the server restarting) must not crash the process.
  pool.on('error', () => undefined);
  return pool;
}

/** Runs a query on the pool (or a client), turning connection failures into StoreUnavailableError. */
export async function query<R extends pg.QueryResultRow>(
  on: pg.Pool | pg.PoolClient,
  text: string,
  values?: unknown[]
): Promise<pg.QueryResult<R>> {
  try {
    return await on.query<R>(named(text, values));
  } catch (error) {
    throw wrap(error);
  }
}

/** Runs `work` in one transaction on a pooled connection; a broken connection is not reused. */
export async function transaction<T>(pool: pg.Pool, work: (client: Tx) => Promise<T>): Promise<T> {
  let client: pg.PoolClient;
  try {
    client = await pool.connect();
  } catch (error) {
    throw wrap(error);
  }
  let broken = false;
  // A connection that dies between two statements reports it as an event: without a listener
  // that would end the process. The next statement fails with the same error and is handled.
  const onError = () => (broken = true);
  client.on('error', onError);
  try {
    await client.query('BEGIN');
    const result = await work({
      query: <R extends pg.QueryResultRow>(text: string, values?: unknown[]) =>
        client.query<R>(named(text, values))
    });
    await client.query('COMMIT');
    return result;
  } catch (error) {
    broken = isUnavailable(error);
    if (!broken) await client.query('ROLLBACK').catch(() => (broken = true));
    throw wrap(error);
  } finally {
    client.off('error', onError);
    client.release(broken);
  }
}

/** The error `open` throws when the store cannot be opened, the address without its password. */
export function openError(url: string, error: unknown): Error {
  return new Error(`cannot open the PostgreSQL store at ${redactUrl(url)}: ${(error as Error).message}`, {
    cause: error
  });
}

const names = new Map<string, string>();

/**
 * A named query: each connection parses and plans it once, then only binds and runs it (the hot
 * reads spend less time in the server than without a name).
 */
export function named(text: string, values?: unknown[]): pg.QueryConfig {
  // Without values, the simple protocol: it alone runs several statements (the migrations).
  if (values === undefined) return { text };
  let name = names.get(text);
  if (!name) names.set(text, (name = `q${names.size + 1}`));
  return { name, text, values };
}

/** User text as UTF-8 bytes, for the bytea columns. */
export function bytes(text: string | null): Buffer | null {
  return text === null ? null : Buffer.from(text, 'utf8');
}

/** `?` placeholders as PostgreSQL's `$1`, `$2`, … (the store's SQL has no `?` of its own). */
const numbered = new Map<string, string>();
export function numberPlaceholders(text: string): string {
  let converted = numbered.get(text);
  if (converted === undefined) {
    let n = 0;
    converted = text.replace(/\?/g, () => `$${++n}`);
    numbered.set(text, converted);
  }
  return converted;
}
