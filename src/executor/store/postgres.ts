// RunStore on PostgreSQL, shared by every executor node on one database: its queries. What makes
// several nodes safe together:
// - claims take the oldest QUEUED run with FOR UPDATE SKIP LOCKED, so two nodes never claim one run;
// - leases are stamped and checked with the database's clock, so nodes' clocks may disagree;
// - every change is announced with pg_notify in the transaction that makes it (sent at commit);
//   pg-notify.ts hears other nodes' changes (LISTEN, reconnect, fallback poll);
// - idempotency is a unique index, so concurrent creates with one key on two nodes give one run;
// - migrations run under an advisory lock, so nodes starting at once apply each exactly once.
// Connections, transactions and outage classification are pg-connection.ts; the rules of each
// state change are transitions.ts.

import pg from 'pg';
import { KeyCache } from './key-cache.js';
import { listRunsSql } from './list-query.js';
import { POSTGRES_MIGRATIONS } from './migrations.js';
import {
  type Tx,
  bytes,
  createPool,
  openError,
  query as poolQuery,
  transaction as poolTransaction
} from './pg-connection.js';
import { CHANNEL, ChangeFeed, KEYS_CHANGED } from './pg-notify.js';
import { RUN_COLUMNS, runColumnsOf, strip } from './rows.js';
import * as transitions from './transitions.js';
import { CLAIMED_STATE, CREATED_STATE, TERMINAL_SQL, stateEvent } from './transitions.js';
import type {
  CancelResult,
  CreateResult,
  Idempotency,
  KeyRecord,
  NodeReport,
  WebSession,
  ListQuery,
  NewRun,
  Outcome,
  RunChange,
  RunStore,
  StoredArtifact,
  StoredRun,
  EventPage,
  TranscriptEvent
} from './types.js';
import { artifactOf, listEntryOf } from './types.js';

/** Milliseconds since the epoch on the database's clock. */
const NOW_MS = `(extract(epoch from clock_timestamp()) * 1000)::bigint`;
/** Columns of an artifact without its bytes. */
const ARTIFACT_COLUMNS = `artifact_uid, run_id, team, artifact_type, filepath, filename, mime_type, size,
  description, created_at`;

export interface PostgresOptions {
  /** Connections in the pool (default 10). */
  poolSize?: number;
  /** How often the fallback poll looks for changes missed by LISTEN (default 2000 ms). */
  fallbackPollMs?: number;
}

export class PostgresRunStore implements RunStore {
  readonly kind = 'postgres';
  readonly shared = true;
  private readonly keys = new KeyCache();
  private closed = false;
  private readonly feed: ChangeFeed;

  private constructor(
    private readonly pool: pg.Pool,
    url: string,
    options: Required<PostgresOptions>
  ) {
    this.feed = new ChangeFeed(pool, url, options.fallbackPollMs, () => this.keys.clear());
  }

  /** Connects, and brings the schema up to date under an advisory lock. */
  static async open(url: string, options: PostgresOptions = {}): Promise<PostgresRunStore> {
    const pool = createPool(url, options.poolSize ?? 10);
    const store = new PostgresRunStore(pool, url, {
      poolSize: options.poolSize ?? 10,
      fallbackPollMs: options.fallbackPollMs ?? 2000
    });
    try {
      await store.migrate();
    } catch (error) {
      await pool.end().catch(() => undefined);
      throw openError(url, error);
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

  private query<R extends pg.QueryResultRow>(text: string, values?: unknown[]): Promise<pg.QueryResult<R>> {
    return poolQuery<R>(this.pool, text, values);
  }

  private transaction<T>(work: (client: Tx) => Promise<T>): Promise<T> {
    return poolTransaction(this.pool, work);
  }

  /** Tells this process's listeners now; other nodes hear the pg_notify sent at commit. */
  private announce(runs: RunChange[]): void {
    for (const run of runs) this.feed.tell(run);
  }

  /** Inside a transaction: a state event for each run, and one notification for all of them. */
  private async recordStates(client: Tx, runs: (StoredRun & { event_seq: number })[]) {
    if (runs.length === 0) return;
    const data = runs.map(run => JSON.stringify(stateEvent(run)));
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
      runs.map(run => JSON.stringify({ n: this.feed.node, r: run.run_id, s: run.state, v: run.version }))
    ]);
  }

  async createKey(key: KeyRecord): Promise<void> {
    this.keys.clear();
    await this.query(
      `WITH created AS (
         INSERT INTO api_keys (id, team, kind, name, hash, hint, created_at, revoked_at)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8))
       SELECT pg_notify($9, $10)`,
      [
        key.id,
        key.team,
        key.kind,
        key.name,
        key.hash,
        key.hint,
        key.created_at,
        key.revoked_at,
        CHANNEL,
        KEYS_CHANGED
      ]
    );
  }

  /** From the key cache while notifications are heard (a revocation on any node empties it). */
  async findKeyByHash(hash: string): Promise<KeyRecord | undefined> {
    const load = async () =>
      (await this.query<KeyRecord>('SELECT * FROM api_keys WHERE hash = $1', [hash])).rows[0];
    if (!this.feed.connected) return load();
    return this.keys.find(hash, load);
  }

  async listKeys(): Promise<KeyRecord[]> {
    return (await this.query<KeyRecord>('SELECT * FROM api_keys ORDER BY created_at, id')).rows;
  }

  async createWebSession(session: WebSession): Promise<void> {
    await this.query(
      `WITH expired AS (DELETE FROM web_sessions WHERE expires_at <= $6)
       INSERT INTO web_sessions (id_hash, key_id, team, created_at, expires_at) VALUES ($1, $2, $3, $4, $5)`,
      [session.id_hash, session.key_id, session.team, session.created_at, session.expires_at, Date.now()]
    );
  }

  async findWebSession(
    idHash: string,
    now: number
  ): Promise<(WebSession & { key_name: string }) | undefined> {
    const row = (
      await this.query<WebSession & { key_name: string }>(
        `SELECT s.*, k.name AS key_name FROM web_sessions s JOIN api_keys k ON k.id = s.key_id
         WHERE s.id_hash = $1 AND s.expires_at > $2 AND k.revoked_at IS NULL AND k.team = s.team`,
        [idHash, now]
      )
    ).rows[0];
    return row && { ...row, expires_at: Number(row.expires_at) };
  }

  async deleteWebSession(idHash: string): Promise<void> {
    await this.query('DELETE FROM web_sessions WHERE id_hash = $1', [idHash]);
  }

  async reportNode(node: NodeReport, forgetBefore: number): Promise<void> {
    await this.query(
      `WITH forgotten AS (DELETE FROM nodes WHERE seen_at < $7)
       INSERT INTO nodes (node_id, role, workers, busy, started_at, seen_at) VALUES ($1, $2, $3, $4, $5, $6)
       ON CONFLICT (node_id) DO UPDATE SET workers = excluded.workers, busy = excluded.busy, seen_at = excluded.seen_at`,
      [node.node_id, node.role, node.workers, node.busy, node.started_at, node.seen_at, forgetBefore]
    );
  }

  async listNodes(): Promise<NodeReport[]> {
    const rows = (await this.query<NodeReport>('SELECT * FROM nodes ORDER BY started_at, node_id')).rows;
    return rows.map(row => ({ ...row, seen_at: Number(row.seen_at) }));
  }

  async removeNode(nodeId: string): Promise<void> {
    await this.query('DELETE FROM nodes WHERE node_id = $1', [nodeId]);
  }

  async countRunsByState(team: string): Promise<Record<string, number>> {
    const rows = (
      await this.query<{ state: string; n: string }>(
        'SELECT state, COUNT(*) AS n FROM runs WHERE team = $1 GROUP BY state',
        [team]
      )
    ).rows;
    return Object.fromEntries(rows.map(row => [row.state, Number(row.n)]));
  }

  async revokeKey(id: string, at: string): Promise<boolean> {
    this.keys.clear();
    const result = await this.query<{ id: string }>(
      `WITH revoked AS (UPDATE api_keys SET revoked_at = $1 WHERE id = $2 AND revoked_at IS NULL RETURNING id)
       SELECT id, pg_notify($3, $4) FROM revoked`,
      [at, id, CHANNEL, KEYS_CHANGED]
    );
    this.keys.clear();
    return result.rows.length > 0;
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
      `WITH queued AS (SELECT COUNT(*) AS n FROM (SELECT 1 FROM runs WHERE state = '${CREATED_STATE}' LIMIT $14) AS q),
       created AS (
         INSERT INTO runs (run_id, team, environment_id, state, title, prompt, config, extra, creator_type,
           creator_uid, creator_name, created_at, updated_at, idempotency_key, idempotency_hash)
         SELECT $1::text, $2::text, $3::text, '${CREATED_STATE}', $4::bytea, $5::bytea, $6::text, $7::text, $8::text,
           $9::text, $10::text, $11::text, $11::text, $12::text, $13::text
         WHERE (SELECT n FROM queued) < $14
         ON CONFLICT (team, idempotency_key) WHERE idempotency_key IS NOT NULL DO NOTHING
         RETURNING ${RUN_COLUMNS}, event_seq),
       event AS (
         INSERT INTO events (run_id, seq, at, kind, data)
         SELECT run_id, event_seq, updated_at, 'state', $17::text FROM created)
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
        this.feed.node,
        JSON.stringify(stateEvent({ state: CREATED_STATE, status_message: null, error_code: null }))
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
    const { where, order, values } = listRunsSql('postgres', team, query);
    values.push(query.limit);
    const text = `SELECT ${RUN_COLUMNS} FROM runs WHERE ${where} ORDER BY ${order} LIMIT $${values.length}`;
    return (await this.query<StoredRun>(text, values)).rows;
  }

  async cancelRun(team: string, runId: string, at: string, reason?: string): Promise<CancelResult> {
    const result = await this.transaction(async (client): Promise<CancelResult> => {
      const found = await client.query<StoredRun>(
        `SELECT ${RUN_COLUMNS} FROM runs WHERE run_id = $1 AND team = $2 FOR UPDATE`,
        [runId, team]
      );
      const run = found.rows[0];
      if (!run) return { kind: 'not_found' };
      const change = transitions.cancel(run.state, reason);
      if (!change) return { kind: 'finished', run };
      const updated = await client.query<StoredRun & { event_seq: number }>(
        `UPDATE runs SET state = $3, status_message = $4, error_code = $5,
           completed_at = $1, updated_at = $1, version = version + 1, lease_owner = NULL,
           lease_expires_at = NULL, event_seq = event_seq + 1, changed_at = clock_timestamp()
         WHERE run_id = $2 RETURNING ${RUN_COLUMNS}, event_seq`,
        [at, runId, change.state, bytes(change.status_message), change.error_code]
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
           SELECT seq FROM runs WHERE state = '${CREATED_STATE}' AND NOT (environment_id = ANY($4::text[]))
           ORDER BY seq LIMIT 1 FOR UPDATE SKIP LOCKED)
         UPDATE runs AS r SET state = '${CLAIMED_STATE}', started_at = $1, updated_at = $1, version = r.version + 1,
           lease_owner = $2, lease_expires_at = ${NOW_MS} + $3, event_seq = r.event_seq + 1,
           changed_at = clock_timestamp()
         FROM next WHERE r.seq = next.seq
         RETURNING ${runColumnsOf('r')}, r.event_seq`,
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
        `SELECT ${RUN_COLUMNS} FROM runs WHERE state = '${CLAIMED_STATE}' AND lease_owner = $1`,
        [owner]
      )
    ).rows[0];
  }

  async renewLease(runId: string, owner: string, leaseMs: number): Promise<boolean> {
    const result = await this.query(
      `UPDATE runs SET lease_expires_at = ${NOW_MS} + $3
       WHERE run_id = $1 AND lease_owner = $2 AND state = '${CLAIMED_STATE}'`,
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
    const change = transitions.finish(outcome);
    const run = await this.transaction(async client => {
      const finished = await client.query<StoredRun & { event_seq: number }>(
        `UPDATE runs SET state = $1, status_message = $2, error_code = $3, completed_at = $4, updated_at = $4,
           version = version + 1, lease_owner = NULL, lease_expires_at = NULL, event_seq = event_seq + 1,
           changed_at = clock_timestamp()
         WHERE run_id = $5 AND lease_owner = $6 AND state = '${CLAIMED_STATE}'
         RETURNING ${RUN_COLUMNS}, event_seq`,
        [change.state, bytes(change.status_message), change.error_code, at, runId, owner]
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
        `SELECT 1 FROM runs WHERE state = '${CLAIMED_STATE}' AND lease_expires_at < ${NOW_MS} LIMIT 1`,
        []
      );
      if (expired.rowCount === 0) return [];
    }
    const change = transitions.abandon(message);
    const runs = await this.transaction(async client => {
      // SKIP LOCKED: a run its worker is finishing right now is not abandoned, and two nodes
      // sweeping at once do not wait on each other.
      const failed = await client.query<StoredRun & { event_seq: number }>(
        `UPDATE runs SET state = $4, status_message = $1, error_code = $5,
           completed_at = $2, updated_at = $2, version = version + 1, lease_owner = NULL,
           lease_expires_at = NULL, event_seq = event_seq + 1, changed_at = clock_timestamp()
         WHERE seq IN (SELECT seq FROM runs WHERE state = '${CLAIMED_STATE}' AND ($3 OR lease_expires_at < ${NOW_MS})
                       FOR UPDATE SKIP LOCKED)
         RETURNING ${RUN_COLUMNS}, event_seq`,
        [bytes(change.status_message), at, all, change.state, change.error_code]
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
    // Other nodes hear of the event by a notification sent at commit (held transcript reads).
    const result = await this.query<{ seq: number }>(
      `WITH next AS (UPDATE runs SET event_seq = event_seq + 1 WHERE run_id = $1 RETURNING event_seq),
         added AS (INSERT INTO events (run_id, seq, at, kind, data) SELECT $1, event_seq, $2, $3, $4 FROM next
           RETURNING seq)
       SELECT seq, pg_notify($5, json_build_object('n', $6::text, 'r', $1::text, 'e', seq)::text) FROM added`,
      [runId, at, kind, JSON.stringify(data), CHANNEL, this.feed.node]
    );
    const seq = result.rows[0]?.seq;
    if (seq === undefined) throw new Error(`run ${runId} does not exist`);
    this.feed.tellEvent(runId, seq);
    return { ...data, seq, at, kind };
  }

  async listEvents(runId: string, page: EventPage = {}): Promise<TranscriptEvent[]> {
    const order = page.fromEnd ? 'DESC' : 'ASC';
    const result = await this.query<{ seq: number; at: string; kind: string; data: string }>(
      `SELECT seq, at, kind, data FROM events WHERE run_id = $1 AND seq > $2 ORDER BY seq ${order} LIMIT $3`,
      [runId, page.after ?? 0, page.limit ?? null]
    );
    const rows = page.fromEnd ? result.rows.reverse() : result.rows;
    return rows.map(row => ({
      ...(JSON.parse(row.data) as object),
      seq: row.seq,
      at: row.at,
      kind: row.kind
    }));
  }

  async countEvents(runId: string, after: number): Promise<number> {
    const result = await this.query<{ n: string }>(
      'SELECT COUNT(*) AS n FROM events WHERE run_id = $1 AND seq > $2',
      [runId, after]
    );
    return Number(result.rows[0]?.n ?? 0);
  }

  onEvent(listener: (runId: string, seq: number) => void): () => void {
    return this.feed.onEvent(listener);
  }

  async addArtifact(artifact: StoredArtifact, data: Buffer): Promise<void> {
    const { run_id, team, artifact_type, created_at, ...file } = artifact;
    await this.transaction(async client => {
      await client.query(
        `INSERT INTO artifacts (artifact_uid, run_id, team, artifact_type, filepath, filename, mime_type, size,
           description, created_at, data) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)`,
        [
          artifact.artifact_uid,
          run_id,
          team,
          artifact_type,
          file.filepath,
          file.filename,
          file.mime_type,
          file.size,
          file.description ?? null,
          created_at,
          data
        ]
      );
      await client.query(
        `UPDATE runs SET artifacts = (COALESCE(artifacts, '[]')::jsonb || jsonb_build_array($2::jsonb))::text
         WHERE run_id = $1`,
        [run_id, JSON.stringify(listEntryOf(artifact, data))]
      );
    });
  }

  async getArtifact(team: string, uid: string): Promise<StoredArtifact | undefined> {
    const result = await this.query<StoredArtifact>(
      `SELECT ${ARTIFACT_COLUMNS} FROM artifacts WHERE artifact_uid = $1 AND team = $2`,
      [uid, team]
    );
    return result.rows[0] && artifactOf(result.rows[0]);
  }

  async readArtifact(uid: string): Promise<{ artifact: StoredArtifact; data: Buffer } | undefined> {
    // bytea is read back as text elsewhere in this store (see TYPES in pg-connection.ts): these bytes come as base64.
    const result = await this.query<StoredArtifact & { data: string }>(
      `SELECT ${ARTIFACT_COLUMNS}, encode(data, 'base64') AS data FROM artifacts WHERE artifact_uid = $1`,
      [uid]
    );
    const row = result.rows[0];
    if (!row) return undefined;
    const { data, ...artifact } = row;
    return { artifact: artifactOf(artifact), data: Buffer.from(data, 'base64') };
  }

  async listArtifacts(team: string, runId: string): Promise<StoredArtifact[]> {
    const result = await this.query<StoredArtifact>(
      `SELECT ${ARTIFACT_COLUMNS} FROM artifacts WHERE run_id = $1 AND team = $2
       ORDER BY created_at, artifact_uid`,
      [runId, team]
    );
    return result.rows.map(artifactOf);
  }

  async setRequestUsage(runId: string, usage: string): Promise<void> {
    await this.query('UPDATE runs SET request_usage = $2 WHERE run_id = $1', [runId, usage]);
  }

  async pruneFinished(before: string): Promise<number> {
    return this.transaction(async client => {
      const filter = `state IN ${TERMINAL_SQL} AND completed_at < $1`;
      await client.query(`DELETE FROM events WHERE run_id IN (SELECT run_id FROM runs WHERE ${filter})`, [
        before
      ]);
      await client.query(`DELETE FROM artifacts WHERE run_id IN (SELECT run_id FROM runs WHERE ${filter})`, [
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
    return this.feed.onChange(listener);
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.feed.close();
    await this.pool.end();
  }
}
