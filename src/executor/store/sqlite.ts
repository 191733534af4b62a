// RunStore on node:sqlite: WAL with synchronous=FULL, so a run id that was answered survives a
// power cut. node:sqlite is synchronous and JavaScript runs one thing at a time, so each method is
// atomic in this process; BEGIN IMMEDIATE makes it atomic against other processes too (the CLI's
// `keys` commands write while a server runs).

import { EventEmitter } from 'node:events';
import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import type { DatabaseSync, SQLInputValue, StatementSync } from 'node:sqlite';
import { SQLITE_MIGRATIONS } from './migrations.js';
import type {
  CancelResult,
  CreateResult,
  Idempotency,
  KeyRecord,
  ListQuery,
  NewRun,
  Outcome,
  RunStore,
  StoredRun,
  TranscriptEvent
} from './types.js';
import { CANCELLED_BY_CLIENT } from './types.js';

const TERMINAL = `('SUCCEEDED', 'FAILED', 'ERROR', 'CANCELLED')`;

type Row = Record<string, SQLInputValue>;

export class SqliteRunStore implements RunStore {
  readonly kind = 'sqlite';
  readonly shared = false;
  private readonly changes = new EventEmitter();
  private readonly statements = new Map<string, StatementSync>();

  private constructor(private readonly db: DatabaseSync) {
    this.changes.setMaxListeners(0);
  }

  /** Opens (creating when needed) the database file and brings its schema up to date. */
  static async open(path: string): Promise<SqliteRunStore> {
    const { DatabaseSync } = await import('node:sqlite');
    if (path !== ':memory:') mkdirSync(dirname(path), { recursive: true });
    const db = new DatabaseSync(path);
    db.exec('PRAGMA busy_timeout = 10000');
    db.exec('PRAGMA journal_mode = WAL');
    db.exec('PRAGMA synchronous = FULL');
    db.exec('PRAGMA foreign_keys = ON');
    const store = new SqliteRunStore(db);
    store.migrate();
    return store;
  }

  private migrate(): void {
    this.db.exec(
      'CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, name TEXT, applied_at TEXT)'
    );
    for (const migration of SQLITE_MIGRATIONS) {
      this.transaction(() => {
        const done = this.db
          .prepare('SELECT 1 FROM schema_migrations WHERE version = ?')
          .get(migration.version);
        if (done) return;
        this.db.exec(migration.sql);
        this.db
          .prepare('INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)')
          .run(migration.version, migration.name, new Date().toISOString());
      });
    }
  }

  private sql(text: string): StatementSync {
    let statement = this.statements.get(text);
    if (!statement) {
      statement = this.db.prepare(text);
      this.statements.set(text, statement);
    }
    return statement;
  }

  private transaction<T>(work: () => T): T {
    this.db.exec('BEGIN IMMEDIATE');
    try {
      const result = work();
      this.db.exec('COMMIT');
      return result;
    } catch (error) {
      this.db.exec('ROLLBACK');
      throw error;
    }
  }

  private emit(run: StoredRun | undefined): StoredRun | undefined {
    if (run) this.changes.emit('change', { run_id: run.run_id, state: run.state, version: run.version });
    return run;
  }

  /** Every state change is recorded in the transcript in the same transaction as the change. */
  private recordState(run: StoredRun | undefined): StoredRun | undefined {
    if (!run) return run;
    const data: Record<string, unknown> = { state: run.state };
    if (run.status_message !== null && run.state !== 'QUEUED' && run.state !== 'INPROGRESS')
      data.status_message = run.status_message;
    if (run.error_code !== null) data.error_code = run.error_code;
    this.insertEvent(run.run_id, 'state', data, run.updated_at);
    return run;
  }

  private insertEvent(runId: string, kind: string, data: Record<string, unknown>, at: string): number {
    const row = this.sql(
      `INSERT INTO events (run_id, seq, at, kind, data)
       VALUES (?, (SELECT COALESCE(MAX(seq), 0) + 1 FROM events WHERE run_id = ?), ?, ?, ?)
       RETURNING seq`
    ).get(runId, runId, at, kind, JSON.stringify(data)) as { seq: number };
    return row.seq;
  }

  async createKey(key: KeyRecord): Promise<void> {
    this.sql(
      `INSERT INTO api_keys (id, team, kind, name, hash, hint, created_at, revoked_at)
       VALUES (:id, :team, :kind, :name, :hash, :hint, :created_at, :revoked_at)`
    ).run(key as unknown as Row);
  }

  async findKeyByHash(hash: string): Promise<KeyRecord | undefined> {
    return this.sql('SELECT * FROM api_keys WHERE hash = ?').get(hash) as KeyRecord | undefined;
  }

  async listKeys(): Promise<KeyRecord[]> {
    return this.sql('SELECT * FROM api_keys ORDER BY created_at, id').all() as unknown as KeyRecord[];
  }

  async revokeKey(id: string, at: string): Promise<boolean> {
    const result = this.sql('UPDATE api_keys SET revoked_at = ? WHERE id = ? AND revoked_at IS NULL').run(
      at,
      id
    );
    return Number(result.changes) > 0;
  }

  /**
   * Creates are group-committed: those that arrive in one turn of the event loop share one
   * transaction and one fsync, and each is answered only after that commit, so an acknowledged run
   * is as durable as before.
   */
  createRun(run: NewRun, idempotency: Idempotency | undefined, maxQueued: number): Promise<CreateResult> {
    return new Promise((resolve, reject) => {
      this.pendingCreates.push({ run, idempotency, maxQueued, resolve, reject });
      if (this.pendingCreates.length === 1) setImmediate(() => this.flushCreates());
    });
  }

  private pendingCreates: {
    run: NewRun;
    idempotency: Idempotency | undefined;
    maxQueued: number;
    resolve: (result: CreateResult) => void;
    reject: (error: unknown) => void;
  }[] = [];

  private flushCreates(): void {
    const batch = this.pendingCreates;
    this.pendingCreates = [];
    const results: (CreateResult | { error: unknown })[] = [];
    try {
      this.transaction(() => {
        for (const item of batch) {
          this.db.exec('SAVEPOINT one_create');
          try {
            results.push(this.createOne(item.run, item.idempotency, item.maxQueued));
            this.db.exec('RELEASE one_create');
          } catch (error) {
            this.db.exec('ROLLBACK TO one_create');
            this.db.exec('RELEASE one_create');
            results.push({ error });
          }
        }
      });
    } catch (error) {
      for (const item of batch) item.reject(error);
      return;
    }
    // Answer every request first; a listener that throws must not leave one unanswered.
    batch.forEach((item, index) => {
      const result = results[index]!;
      if ('error' in result) item.reject(result.error);
      else item.resolve(result);
    });
    for (const result of results) {
      if ('kind' in result && result.kind === 'created') {
        try {
          this.emit(result.run);
        } catch {
          // a change listener failed; the run is stored and the worker's timer will claim it
        }
      }
    }
  }

  private createOne(run: NewRun, idempotency: Idempotency | undefined, maxQueued: number): CreateResult {
    if (idempotency) {
      const existing = this.sql('SELECT * FROM runs WHERE team = ? AND idempotency_key = ?').get(
        run.team,
        idempotency.key
      ) as (StoredRun & { idempotency_hash: string }) | undefined;
      if (existing) {
        return existing.idempotency_hash === idempotency.requestHash
          ? { kind: 'replayed', run: existing }
          : { kind: 'key_reused' };
      }
    }
    // Counting stops at the limit, so a long queue does not make every create slower.
    const queued = this.sql(
      `SELECT COUNT(*) AS n FROM (SELECT 1 FROM runs WHERE state = 'QUEUED' LIMIT ?)`
    ).get(maxQueued) as { n: number };
    if (queued.n >= maxQueued) return { kind: 'queue_full' };
    const inserted = this.sql(
      `INSERT INTO runs (run_id, team, environment_id, state, title, prompt, config, extra, creator_type,
         creator_uid, creator_name, created_at, updated_at, idempotency_key, idempotency_hash)
       VALUES (:run_id, :team, :environment_id, 'QUEUED', :title, :prompt, :config, :extra, :creator_type,
         :creator_uid, :creator_name, :created_at, :created_at, :idempotency_key, :idempotency_hash)
       RETURNING *`
    ).get({
      ...run,
      idempotency_key: idempotency?.key ?? null,
      idempotency_hash: idempotency?.requestHash ?? null
    } as unknown as Row) as unknown as StoredRun;
    this.recordState(inserted);
    return { kind: 'created', run: inserted };
  }

  async getRun(team: string, runId: string): Promise<StoredRun | undefined> {
    return this.sql('SELECT * FROM runs WHERE run_id = ? AND team = ?').get(runId, team) as
      StoredRun | undefined;
  }

  async getRunAnyTeam(runId: string): Promise<StoredRun | undefined> {
    return this.sql('SELECT * FROM runs WHERE run_id = ?').get(runId) as StoredRun | undefined;
  }

  async listRuns(team: string, query: ListQuery): Promise<StoredRun[]> {
    const where = ['team = ?'];
    const params: SQLInputValue[] = [team];
    if (query.beforeSeq !== undefined) {
      where.push('seq < ?');
      params.push(query.beforeSeq);
    }
    if (query.states && query.states.length > 0) {
      where.push(`state IN (${query.states.map(() => '?').join(', ')})`);
      params.push(...query.states);
    }
    if (query.environmentId !== undefined) {
      where.push('environment_id = ?');
      params.push(query.environmentId);
    }
    if (query.createdAfter !== undefined) {
      where.push('created_at > ?');
      params.push(query.createdAfter);
    }
    if (query.createdBefore !== undefined) {
      where.push('created_at < ?');
      params.push(query.createdBefore);
    }
    params.push(query.limit);
    const text = `SELECT * FROM runs WHERE ${where.join(' AND ')} ORDER BY seq DESC LIMIT ?`;
    return this.sql(text).all(...params) as unknown as StoredRun[];
  }

  async cancelRun(
    team: string,
    runId: string,
    at: string,
    message = CANCELLED_BY_CLIENT
  ): Promise<CancelResult> {
    const result = this.transaction((): CancelResult => {
      const run = this.sql('SELECT * FROM runs WHERE run_id = ? AND team = ?').get(runId, team) as
        StoredRun | undefined;
      if (!run) return { kind: 'not_found' };
      if (['SUCCEEDED', 'FAILED', 'ERROR', 'CANCELLED'].includes(run.state)) return { kind: 'finished', run };
      const updated = this.sql(
        `UPDATE runs SET state = 'CANCELLED', status_message = ?, error_code = 'cancelled',
           completed_at = ?, updated_at = ?, version = version + 1, lease_owner = NULL, lease_expires_at = NULL
         WHERE run_id = ? RETURNING *`
      ).get(message, at, at, runId) as unknown as StoredRun;
      this.recordState(updated);
      return { kind: 'cancelled', run: updated };
    });
    if (result.kind === 'cancelled') this.emit(result.run);
    return result;
  }

  async claimNext(
    owner: string,
    leaseMs: number,
    excluded: string[],
    at: string
  ): Promise<StoredRun | undefined> {
    const skip =
      excluded.length > 0 ? `AND environment_id NOT IN (${excluded.map(() => '?').join(', ')})` : '';
    const run = this.transaction(() =>
      this.recordState(
        this.sql(
          `UPDATE runs SET state = 'INPROGRESS', started_at = ?, updated_at = ?, version = version + 1,
             lease_owner = ?, lease_expires_at = ?
           WHERE seq = (SELECT seq FROM runs WHERE state = 'QUEUED' ${skip} ORDER BY seq LIMIT 1)
           RETURNING *`
        ).get(at, at, owner, Date.now() + leaseMs, ...excluded) as StoredRun | undefined
      )
    );
    return this.emit(run);
  }

  async findClaim(owner: string): Promise<StoredRun | undefined> {
    return this.sql(`SELECT * FROM runs WHERE state = 'INPROGRESS' AND lease_owner = ?`).get(owner) as
      StoredRun | undefined;
  }

  async renewLease(runId: string, owner: string, leaseMs: number): Promise<boolean> {
    const result = this.sql(
      `UPDATE runs SET lease_expires_at = ? WHERE run_id = ? AND lease_owner = ? AND state = 'INPROGRESS'`
    ).run(Date.now() + leaseMs, runId, owner);
    return Number(result.changes) > 0;
  }

  async finishRun(
    runId: string,
    owner: string,
    outcome: Outcome,
    at: string
  ): Promise<StoredRun | undefined> {
    const run = this.transaction(() =>
      this.recordState(
        this.sql(
          `UPDATE runs SET state = ?, status_message = ?, error_code = ?, completed_at = ?, updated_at = ?,
             version = version + 1, lease_owner = NULL, lease_expires_at = NULL
           WHERE run_id = ? AND lease_owner = ? AND state = 'INPROGRESS'
           RETURNING *`
        ).get(
          outcome.state,
          outcome.status_message ?? null,
          outcome.error_code ?? null,
          at,
          at,
          runId,
          owner
        ) as StoredRun | undefined
      )
    );
    return this.emit(run);
  }

  async failAbandoned(all: boolean, at: string, message: string): Promise<StoredRun[]> {
    const runs = this.transaction(() =>
      this.sql(
        `UPDATE runs SET state = 'FAILED', status_message = ?, error_code = 'executor_restarted',
             completed_at = ?, updated_at = ?, version = version + 1, lease_owner = NULL, lease_expires_at = NULL
           WHERE state = 'INPROGRESS' AND (? OR lease_expires_at < ?)
           RETURNING *`
      )
        .all(message, at, at, all ? 1 : 0, Date.now())
        .map(row => this.recordState(row as unknown as StoredRun)!)
    );
    for (const run of runs) this.emit(run);
    return runs;
  }

  async appendEvent(
    runId: string,
    kind: string,
    data: Record<string, unknown>,
    at: string
  ): Promise<TranscriptEvent> {
    return { ...data, seq: this.insertEvent(runId, kind, data, at), at, kind };
  }

  async listEvents(runId: string): Promise<TranscriptEvent[]> {
    const rows = this.sql('SELECT seq, at, kind, data FROM events WHERE run_id = ? ORDER BY seq').all(
      runId
    ) as {
      seq: number;
      at: string;
      kind: string;
      data: string;
    }[];
    return rows.map(row => ({
      ...(JSON.parse(row.data) as object),
      seq: row.seq,
      at: row.at,
      kind: row.kind
    }));
  }

  async pruneFinished(before: string): Promise<number> {
    return this.transaction(() => {
      const filter = `state IN ${TERMINAL} AND completed_at < ?`;
      this.sql(`DELETE FROM events WHERE run_id IN (SELECT run_id FROM runs WHERE ${filter})`).run(before);
      return Number(this.sql(`DELETE FROM runs WHERE ${filter}`).run(before).changes);
    });
  }

  async getSecret(name: string, create: () => string): Promise<string> {
    return this.transaction(() => {
      const row = this.sql('SELECT value FROM secrets WHERE name = ?').get(name) as
        { value: string } | undefined;
      if (row) return row.value;
      const value = create();
      this.sql('INSERT INTO secrets (name, value) VALUES (?, ?)').run(name, value);
      return value;
    });
  }

  async ping(): Promise<void> {
    this.sql('SELECT 1').get();
  }

  onChange(listener: (run: StoredRun) => void): () => void {
    this.changes.on('change', listener);
    return () => this.changes.off('change', listener);
  }

  async close(): Promise<void> {
    this.statements.clear();
    if (this.db.isOpen) this.db.close();
  }
}
