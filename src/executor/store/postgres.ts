// RunStore on PostgreSQL, shared by every executor node on one database. What makes several nodes
// safe together:
// - claims take the oldest QUEUED run with FOR UPDATE SKIP LOCKED, so two nodes never claim one run;
// - leases are stamped and checked with the database's clock, so nodes' clocks may disagree;
// - every change is announced with pg_notify in the transaction that makes it (sent at commit), and
//   each node LISTENs on one connection; a slow fallback poll of recently changed runs covers
//   notifications missed while that connection was down;
// - idempotency is a unique index, so concurrent creates with one key on two nodes give one run;
// - migrations run under an advisory lock, so nodes starting at once apply each exactly once.
// Connection errors become StoreUnavailableError: requests answer 503, workers pause.

import { randomUUID } from 'node:crypto';
import { EventEmitter } from 'node:events';
import pg from 'pg';
import { POSTGRES_MIGRATIONS } from './migrations.js';
import { redactUrl } from './spec.js';
import {
  CANCELLED_BY_CLIENT,
  type CancelResult,
  type CreateResult,
  type Idempotency,
  type KeyRecord,
  type ListQuery,
  type NewRun,
  type Outcome,
  type RunChange,
  type RunStore,
  type StoredRun,
  StoreUnavailableError,
  type TranscriptEvent
} from './types.js';

const CHANNEL = 'agent_executor_runs';
/** No statement of this store takes long; one without an answer this late means the server is gone. */
const QUERY_TIMEOUT_MS = 30_000;
/** Milliseconds since the epoch on the database's clock. */
const NOW_MS = `(extract(epoch from clock_timestamp()) * 1000)::bigint`;
/** Any number that fits in a JavaScript number comes back as one (ids, counts, epoch ms). */
const TYPES = {
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
/** Columns of a run as the API and the worker see them (not the store's own bookkeeping). */
const RUN_COLUMNS = `seq, run_id, team, environment_id, state, title, prompt, config, extra, creator_type,
  creator_uid, creator_name, status_message, error_code, created_at, updated_at, started_at, completed_at,
  version, lease_owner, lease_expires_at`;
const RUN_COLUMNS_OF = (alias: string) =>
  RUN_COLUMNS.split(',')
    .map(column => `${alias}.${column.trim()}`)
    .join(', ');

type Queryable = pg.Pool | pg.PoolClient;

/** A connection inside a transaction; its queries are named (see `named`). */
interface Tx {
  query<R extends pg.QueryResultRow = pg.QueryResultRow>(
    text: string,
    values?: unknown[]
  ): Promise<pg.QueryResult<R>>;
}

export interface PostgresOptions {
  /** Connections in the pool (default 10). */
  poolSize?: number;
  /** How often the fallback poll looks for changes missed by LISTEN (default 2000 ms). */
  fallbackPollMs?: number;
}

/** Connection-level failures: the database is down, restarting, or unreachable. */
function isUnavailable(error: unknown): boolean {
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

export class PostgresRunStore implements RunStore {
  readonly kind = 'postgres';
  readonly shared = true;
  /** This process's name in notifications, so it skips its own (it already told its listeners). */
  private readonly node = randomUUID();
  private readonly changes = new EventEmitter();
  private listener?: pg.Client;
  private listening = false;
  private closed = false;
  private pollTimer?: NodeJS.Timeout;
  private reconnectTimer?: NodeJS.Timeout;
  /** Database time of the last successful fallback poll. */
  private polledUpTo?: string;
  /** run_id → the newest version this process has announced, to skip the poll's repeats. */
  private readonly heard = new Map<string, { version: number; at: number }>();

  private constructor(
    private readonly pool: pg.Pool,
    private readonly url: string,
    private readonly options: Required<PostgresOptions>
  ) {
    this.changes.setMaxListeners(0);
  }

  /** Connects, and brings the schema up to date under an advisory lock. */
  static async open(url: string, options: PostgresOptions = {}): Promise<PostgresRunStore> {
    const pool = new pg.Pool({
      connectionString: url,
      max: options.poolSize ?? 10,
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
    const store = new PostgresRunStore(pool, url, {
      poolSize: options.poolSize ?? 10,
      fallbackPollMs: options.fallbackPollMs ?? 2000
    });
    try {
      await store.migrate();
    } catch (error) {
      await pool.end().catch(() => undefined);
      throw new Error(`cannot open the PostgreSQL store at ${redactUrl(url)}: ${(error as Error).message}`, {
        cause: error
      });
    }
    return store;
  }

  /**
   * Applies the migrations this database lacks, all in one transaction. A database that has them
   * all is only read, so a role without the right to create tables can open a migrated database.
   */
  private async migrate(): Promise<void> {
    await this.transaction(async client => {
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
      const applied = await client.query<{ version: number }>(
        'SELECT version FROM agent_executor_migrations'
      );
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

  /** Runs a query, turning connection failures into StoreUnavailableError. */
  private async query<R extends pg.QueryResultRow>(
    text: string,
    values?: unknown[],
    on: Queryable = this.pool
  ): Promise<pg.QueryResult<R>> {
    try {
      return await on.query<R>(named(text, values));
    } catch (error) {
      throw this.wrap(error);
    }
  }

  private wrap(error: unknown): unknown {
    if (error instanceof StoreUnavailableError || !isUnavailable(error)) return error;
    // The message says nothing of the address or the driver: it can reach a run's status message.
    // The cause (in the log) has the details.
    return new StoreUnavailableError('the PostgreSQL store is unavailable', { cause: error });
  }

  private async transaction<T>(work: (client: Tx) => Promise<T>): Promise<T> {
    let client: pg.PoolClient;
    try {
      client = await this.pool.connect();
    } catch (error) {
      throw this.wrap(error);
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
      throw this.wrap(error);
    } finally {
      client.off('error', onError);
      client.release(broken);
    }
  }

  /** Tells this process's listeners now; other nodes hear the pg_notify sent at commit. */
  private announce(runs: RunChange[]): void {
    for (const run of runs) this.tell(run);
  }

  /** Tells the listeners of a change, unless this process already told them of that version. */
  private tell(run: RunChange): void {
    if (!this.remember(run)) return;
    try {
      this.changes.emit('change', { run_id: run.run_id, state: run.state, version: run.version });
    } catch {
      // a listener failed; the change is stored, and timers catch up
    }
  }

  private remember(run: RunChange): boolean {
    const seen = this.heard.get(run.run_id);
    if (seen && seen.version >= run.version) return false;
    this.heard.set(run.run_id, { version: run.version, at: Date.now() });
    return true;
  }

  /** Inside a transaction: a state event for each run, and one notification for all of them. */
  private async recordStates(client: Tx, runs: (StoredRun & { event_seq: number })[]) {
    if (runs.length === 0) return;
    const data = runs.map(run => {
      const event: Record<string, unknown> = { state: run.state };
      if (run.status_message !== null && run.state !== 'QUEUED' && run.state !== 'INPROGRESS')
        event.status_message = run.status_message;
      if (run.error_code !== null) event.error_code = run.error_code;
      return JSON.stringify(event);
    });
    await client.query(
      `INSERT INTO events (run_id, seq, at, kind, data)
       SELECT * FROM unnest($1::text[], $2::int[], $3::text[], $4::text[], $5::text[])`,
      [
        runs.map(run => run.run_id),
        runs.map(run => run.event_seq),
        runs.map(run => run.updated_at),
        runs.map(() => 'state'),
        data
      ]
    );
    await client.query(`SELECT pg_notify($1, payload) FROM unnest($2::text[]) AS payload`, [
      CHANNEL,
      runs.map(run => JSON.stringify({ n: this.node, r: run.run_id, s: run.state, v: run.version }))
    ]);
  }

  async createKey(key: KeyRecord): Promise<void> {
    await this.query(
      `INSERT INTO api_keys (id, team, kind, name, hash, hint, created_at, revoked_at)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`,
      [key.id, key.team, key.kind, key.name, key.hash, key.hint, key.created_at, key.revoked_at]
    );
  }

  async findKeyByHash(hash: string): Promise<KeyRecord | undefined> {
    return (await this.query<KeyRecord>('SELECT * FROM api_keys WHERE hash = $1', [hash])).rows[0];
  }

  async listKeys(): Promise<KeyRecord[]> {
    return (await this.query<KeyRecord>('SELECT * FROM api_keys ORDER BY created_at, id')).rows;
  }

  async revokeKey(id: string, at: string): Promise<boolean> {
    const result = await this.query(
      'UPDATE api_keys SET revoked_at = $1 WHERE id = $2 AND revoked_at IS NULL',
      [at, id]
    );
    return (result.rowCount ?? 0) > 0;
  }

  /**
   * One statement, so one round trip and one commit: the queue count, the insert (which the unique
   * index settles against concurrent creates with the same key), the state event and the
   * notification. A look for an earlier run with the key comes first, so a replay is answered
   * even when the queue is full.
   */
  async createRun(
    run: NewRun,
    idempotency: Idempotency | undefined,
    maxQueued: number
  ): Promise<CreateResult> {
    const pool: Tx = { query: (text, values) => this.query(text, values) };
    if (idempotency) {
      const replay = await this.replay(pool, run.team, idempotency);
      if (replay) return replay;
    }
    // Counting stops at the limit, so a long queue does not make every create slower. Nodes
    // count at once, so the limit can be passed by the number of creates in flight.
    const inserted = await this.query<StoredRun & { event_seq: number }>(
      `WITH queued AS (SELECT COUNT(*) AS n FROM (SELECT 1 FROM runs WHERE state = 'QUEUED' LIMIT $14) AS q),
       created AS (
         INSERT INTO runs (run_id, team, environment_id, state, title, prompt, config, extra, creator_type,
           creator_uid, creator_name, created_at, updated_at, idempotency_key, idempotency_hash)
         SELECT $1::text, $2::text, $3::text, 'QUEUED', $4::bytea, $5::bytea, $6::text, $7::text, $8::text,
           $9::text, $10::text, $11::text, $11::text, $12::text, $13::text
         WHERE (SELECT n FROM queued) < $14
         ON CONFLICT (team, idempotency_key) WHERE idempotency_key IS NOT NULL DO NOTHING
         RETURNING ${RUN_COLUMNS}, event_seq),
       event AS (
         INSERT INTO events (run_id, seq, at, kind, data)
         SELECT run_id, event_seq, updated_at, 'state', '{"state":"QUEUED"}' FROM created)
       SELECT created.*, pg_notify($15, json_build_object('n', $16::text, 'r', run_id, 's', state, 'v', version)::text)
       FROM created`,
      [
        run.run_id,
        run.team,
        run.environment_id,
        bytes(run.title),
        bytes(run.prompt),
        run.config,
        run.extra,
        run.creator_type,
        run.creator_uid,
        run.creator_name,
        run.created_at,
        idempotency?.key ?? null,
        idempotency?.requestHash ?? null,
        maxQueued,
        CHANNEL,
        this.node
      ]
    );
    const created = inserted.rows[0] as (StoredRun & { event_seq: number; pg_notify?: unknown }) | undefined;
    if (!created) {
      // Nothing inserted: another node created a run with this key after our look (the unique
      // index decided), or the queue is full.
      const replay = idempotency && (await this.replay(pool, run.team, idempotency));
      return replay || { kind: 'queue_full' };
    }
    delete created.pg_notify;
    const result = { kind: 'created' as const, run: strip(created) };
    this.announce([result.run]);
    return result;
  }

  private async replay(
    client: Tx,
    team: string,
    idempotency: Idempotency
  ): Promise<CreateResult | undefined> {
    const existing = await client.query<StoredRun & { idempotency_hash: string }>(
      `SELECT ${RUN_COLUMNS}, idempotency_hash FROM runs WHERE team = $1 AND idempotency_key = $2`,
      [team, idempotency.key]
    );
    const row = existing.rows[0];
    if (!row) return undefined;
    return row.idempotency_hash === idempotency.requestHash
      ? { kind: 'replayed', run: strip(row) }
      : { kind: 'key_reused' };
  }

  async getRun(team: string, runId: string): Promise<StoredRun | undefined> {
    return (
      await this.query<StoredRun>(`SELECT ${RUN_COLUMNS} FROM runs WHERE run_id = $1 AND team = $2`, [
        runId,
        team
      ])
    ).rows[0];
  }

  async getRunAnyTeam(runId: string): Promise<StoredRun | undefined> {
    return (await this.query<StoredRun>(`SELECT ${RUN_COLUMNS} FROM runs WHERE run_id = $1`, [runId]))
      .rows[0];
  }

  async listRuns(team: string, query: ListQuery): Promise<StoredRun[]> {
    const values: unknown[] = [team];
    const where = ['team = $1'];
    const add = (condition: (placeholder: string) => string, value: unknown) => {
      values.push(value);
      where.push(condition(`$${values.length}`));
    };
    if (query.beforeSeq !== undefined) add(p => `seq < ${p}`, query.beforeSeq);
    if (query.states && query.states.length > 0) add(p => `state = ANY(${p}::text[])`, query.states);
    if (query.environmentId !== undefined) add(p => `environment_id = ${p}`, query.environmentId);
    if (query.createdAfter !== undefined) add(p => `created_at > ${p}`, query.createdAfter);
    if (query.createdBefore !== undefined) add(p => `created_at < ${p}`, query.createdBefore);
    values.push(query.limit);
    return (
      await this.query<StoredRun>(
        `SELECT ${RUN_COLUMNS} FROM runs WHERE ${where.join(' AND ')} ORDER BY seq DESC LIMIT $${values.length}`,
        values
      )
    ).rows;
  }

  async cancelRun(
    team: string,
    runId: string,
    at: string,
    message = CANCELLED_BY_CLIENT
  ): Promise<CancelResult> {
    const result = await this.transaction(async (client): Promise<CancelResult> => {
      const found = await client.query<StoredRun>(
        `SELECT ${RUN_COLUMNS} FROM runs WHERE run_id = $1 AND team = $2 FOR UPDATE`,
        [runId, team]
      );
      const run = found.rows[0];
      if (!run) return { kind: 'not_found' };
      if (['SUCCEEDED', 'FAILED', 'ERROR', 'CANCELLED'].includes(run.state)) return { kind: 'finished', run };
      const updated = await client.query<StoredRun & { event_seq: number }>(
        `UPDATE runs SET state = 'CANCELLED', status_message = convert_to($3, 'UTF8'),
           error_code = 'cancelled',
           completed_at = $1, updated_at = $1, version = version + 1, lease_owner = NULL,
           lease_expires_at = NULL, event_seq = event_seq + 1, changed_at = clock_timestamp()
         WHERE run_id = $2 RETURNING ${RUN_COLUMNS}, event_seq`,
        [at, runId, message]
      );
      await this.recordStates(client, updated.rows);
      return { kind: 'cancelled', run: strip(updated.rows[0]!) };
    });
    if (result.kind === 'cancelled') this.announce([result.run]);
    return result;
  }

  async claimNext(
    owner: string,
    leaseMs: number,
    excluded: string[],
    at: string
  ): Promise<StoredRun | undefined> {
    const run = await this.transaction(async client => {
      const claimed = await client.query<StoredRun & { event_seq: number }>(
        `WITH next AS (
           SELECT seq FROM runs WHERE state = 'QUEUED' AND NOT (environment_id = ANY($4::text[]))
           ORDER BY seq LIMIT 1 FOR UPDATE SKIP LOCKED)
         UPDATE runs AS r SET state = 'INPROGRESS', started_at = $1, updated_at = $1, version = r.version + 1,
           lease_owner = $2, lease_expires_at = ${NOW_MS} + $3, event_seq = r.event_seq + 1,
           changed_at = clock_timestamp()
         FROM next WHERE r.seq = next.seq
         RETURNING ${RUN_COLUMNS_OF('r')}, r.event_seq`,
        [at, owner, leaseMs, excluded]
      );
      await this.recordStates(client, claimed.rows);
      return claimed.rows[0] && strip(claimed.rows[0]);
    });
    if (run) this.announce([run]);
    return run;
  }

  async findClaim(owner: string): Promise<StoredRun | undefined> {
    return (
      await this.query<StoredRun>(
        `SELECT ${RUN_COLUMNS} FROM runs WHERE state = 'INPROGRESS' AND lease_owner = $1`,
        [owner]
      )
    ).rows[0];
  }

  async renewLease(runId: string, owner: string, leaseMs: number): Promise<boolean> {
    const result = await this.query(
      `UPDATE runs SET lease_expires_at = ${NOW_MS} + $3
       WHERE run_id = $1 AND lease_owner = $2 AND state = 'INPROGRESS'`,
      [runId, owner, leaseMs]
    );
    return (result.rowCount ?? 0) > 0;
  }

  async finishRun(
    runId: string,
    owner: string,
    outcome: Outcome,
    at: string
  ): Promise<StoredRun | undefined> {
    const run = await this.transaction(async client => {
      const finished = await client.query<StoredRun & { event_seq: number }>(
        `UPDATE runs SET state = $1, status_message = $2, error_code = $3, completed_at = $4, updated_at = $4,
           version = version + 1, lease_owner = NULL, lease_expires_at = NULL, event_seq = event_seq + 1,
           changed_at = clock_timestamp()
         WHERE run_id = $5 AND lease_owner = $6 AND state = 'INPROGRESS'
         RETURNING ${RUN_COLUMNS}, event_seq`,
        [outcome.state, bytes(outcome.status_message ?? null), outcome.error_code ?? null, at, runId, owner]
      );
      await this.recordStates(client, finished.rows);
      return finished.rows[0] && strip(finished.rows[0]);
    });
    if (run) this.announce([run]);
    return run;
  }

  async failAbandoned(all: boolean, at: string, message: string): Promise<StoredRun[]> {
    // Every node sweeps every second or so; almost always there is nothing to sweep, and one
    // indexed look costs one round trip instead of a transaction's four.
    if (!all) {
      const expired = await this.query(
        `SELECT 1 FROM runs WHERE state = 'INPROGRESS' AND lease_expires_at < ${NOW_MS} LIMIT 1`,
        []
      );
      if (expired.rowCount === 0) return [];
    }
    const runs = await this.transaction(async client => {
      // SKIP LOCKED: a run its worker is finishing right now is not abandoned, and two nodes
      // sweeping at once do not wait on each other.
      const failed = await client.query<StoredRun & { event_seq: number }>(
        `UPDATE runs SET state = 'FAILED', status_message = $1, error_code = 'executor_restarted',
           completed_at = $2, updated_at = $2, version = version + 1, lease_owner = NULL,
           lease_expires_at = NULL, event_seq = event_seq + 1, changed_at = clock_timestamp()
         WHERE seq IN (SELECT seq FROM runs WHERE state = 'INPROGRESS' AND ($3 OR lease_expires_at < ${NOW_MS})
                       FOR UPDATE SKIP LOCKED)
         RETURNING ${RUN_COLUMNS}, event_seq`,
        [bytes(message), at, all]
      );
      await this.recordStates(client, failed.rows);
      return failed.rows.map(strip);
    });
    this.announce(runs);
    return runs;
  }

  async appendEvent(
    runId: string,
    kind: string,
    data: Record<string, unknown>,
    at: string
  ): Promise<TranscriptEvent> {
    // The run's row hands out event numbers, so writers on different nodes never collide.
    const result = await this.query<{ seq: number }>(
      `WITH next AS (UPDATE runs SET event_seq = event_seq + 1 WHERE run_id = $1 RETURNING event_seq)
       INSERT INTO events (run_id, seq, at, kind, data) SELECT $1, event_seq, $2, $3, $4 FROM next
       RETURNING seq`,
      [runId, at, kind, JSON.stringify(data)]
    );
    const seq = result.rows[0]?.seq;
    if (seq === undefined) throw new Error(`run ${runId} does not exist`);
    return { ...data, seq, at, kind };
  }

  async listEvents(runId: string): Promise<TranscriptEvent[]> {
    const result = await this.query<{ seq: number; at: string; kind: string; data: string }>(
      'SELECT seq, at, kind, data FROM events WHERE run_id = $1 ORDER BY seq',
      [runId]
    );
    return result.rows.map(row => ({
      ...(JSON.parse(row.data) as object),
      seq: row.seq,
      at: row.at,
      kind: row.kind
    }));
  }

  async pruneFinished(before: string): Promise<number> {
    return this.transaction(async client => {
      const filter = `state IN ('SUCCEEDED', 'FAILED', 'ERROR', 'CANCELLED') AND completed_at < $1`;
      await client.query(`DELETE FROM events WHERE run_id IN (SELECT run_id FROM runs WHERE ${filter})`, [
        before
      ]);
      return (await client.query(`DELETE FROM runs WHERE ${filter}`, [before])).rowCount ?? 0;
    });
  }

  async getSecret(name: string, create: () => string): Promise<string> {
    // The first node to ask makes it; every other node reads the same one.
    await this.query('INSERT INTO secrets (name, value) VALUES ($1, $2) ON CONFLICT (name) DO NOTHING', [
      name,
      create()
    ]);
    const row = await this.query<{ value: string }>('SELECT value FROM secrets WHERE name = $1', [name]);
    return row.rows[0]!.value;
  }

  async ping(): Promise<void> {
    await this.query('SELECT 1');
  }

  onChange(listener: (change: RunChange) => void): () => void {
    this.changes.on('change', listener);
    this.startListening();
    return () => this.changes.off('change', listener);
  }

  /** Other nodes' changes: LISTEN on a connection of its own, reconnecting with backoff. */
  private startListening(): void {
    if (this.listening) return;
    this.listening = true;
    void this.connectListener(100);
    this.pollTimer = setInterval(() => void this.poll(), this.options.fallbackPollMs);
    this.pollTimer.unref();
  }

  private async connectListener(delayMs: number): Promise<void> {
    if (this.closed) return;
    const client = new pg.Client({
      connectionString: this.url,
      types: TYPES,
      keepAlive: true,
      connectionTimeoutMillis: 5000
    });
    client.on('notification', message => this.onNotification(message.payload));
    let retried = false;
    const retry = () => {
      if (retried || this.closed) return;
      retried = true;
      if (this.listener === client) this.listener = undefined;
      client.end().catch(() => undefined);
      this.reconnectTimer = setTimeout(() => void this.connectListener(Math.min(delayMs * 2, 2000)), delayMs);
      this.reconnectTimer.unref();
    };
    client.on('error', retry);
    client.on('end', retry);
    try {
      await client.connect();
      await client.query(`LISTEN ${CHANNEL}`);
      if (this.closed) {
        await client.end();
        return;
      }
      this.listener = client;
      // Whatever changed while no one listened is found by the next poll (it starts where the last
      // successful one ended); run it now rather than wait for the timer.
      void this.poll();
    } catch {
      retry();
    }
  }

  private onNotification(payload: string | undefined): void {
    if (!payload) return;
    let message: { n: string; r: string; s: string; v: number };
    try {
      message = JSON.parse(payload) as typeof message;
    } catch {
      return;
    }
    if (message.n === this.node) return;
    this.tell({ run_id: message.r, state: message.s, version: message.v });
  }

  private polling = false;

  /**
   * The fallback: runs changed since the last poll (on the database's clock, with a margin for
   * transactions that committed late), announced unless this process already heard that version.
   */
  private async poll(): Promise<void> {
    if (this.polling || this.closed) return;
    this.polling = true;
    try {
      const result = await this.pool.query<{ run_id: string; state: string; version: number; now: string }>(
        `SELECT run_id, state, version, NULL AS now FROM runs
         WHERE $1::timestamptz IS NOT NULL AND changed_at > $1::timestamptz - interval '5 seconds'
         UNION ALL SELECT NULL, NULL, NULL, clock_timestamp()::text`,
        [this.polledUpTo ?? null]
      );
      const rows = result.rows;
      this.polledUpTo = rows.find(row => row.run_id === null)!.now;
      for (const row of rows) if (row.run_id !== null) this.tell(row);
      const forget = Date.now() - 60_000;
      for (const [runId, seen] of this.heard) if (seen.at < forget) this.heard.delete(runId);
    } catch {
      // unreachable: the next poll starts where the last good one ended
    } finally {
      this.polling = false;
    }
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    clearInterval(this.pollTimer);
    clearTimeout(this.reconnectTimer);
    await this.listener?.end().catch(() => undefined);
    await this.pool.end();
  }
}

const names = new Map<string, string>();

/**
 * A named query: each connection parses and plans it once, then only binds and runs it (the hot
 * reads spend less time in the server than without a name).
 */
function named(text: string, values?: unknown[]): pg.QueryConfig {
  // Without values, the simple protocol: it alone runs several statements (the migrations).
  if (values === undefined) return { text };
  let name = names.get(text);
  if (!name) names.set(text, (name = `q${names.size + 1}`));
  return { name, text, values };
}

/** User text as UTF-8 bytes, for the bytea columns. */
function bytes(text: string | null): Buffer | null {
  return text === null ? null : Buffer.from(text, 'utf8');
}

/** The run without the store's bookkeeping columns. */
function strip<T extends StoredRun>(row: T): StoredRun {
  const {
    event_seq: _seq,
    idempotency_hash: _hash,
    ...run
  } = row as T & {
    event_seq?: number;
    idempotency_hash?: string;
  };
  return run;
}
