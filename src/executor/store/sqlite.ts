// RunStore on node:sqlite: WAL with synchronous=FULL, so a run id that was answered survives a
// power cut. node:sqlite is synchronous and JavaScript runs one thing at a time, so each method is
// atomic in this process; BEGIN IMMEDIATE makes it atomic against other processes too (the CLI's
// `keys` commands write while a server runs, and `serve --role api` and `--role worker` can share
// one file). What other processes commit is noticed by PRAGMA data_version, which moves when
// another connection committed: the key cache is emptied then, and a shared store (opened by a
// split role) polls it while anyone listens (sqlite-changes.ts).

import { EventEmitter } from 'node:events';
import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import type { DatabaseSync, SQLInputValue, StatementSync } from 'node:sqlite';
import { KeyCache } from './key-cache.js';
import { listRunsSql } from './list-query.js';
import { PageCache } from './page-cache.js';
import { SQLITE_MIGRATIONS } from './migrations.js';
import { SqliteChanges } from './sqlite-changes.js';
import { RUN_COLUMNS, strip } from './rows.js';
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

type Row = Record<string, SQLInputValue>;

export interface SqliteOptions {
  /** Other processes run work on this file too (split roles): start-up fails only expired leases. */
  shared?: boolean;
}

export class SqliteRunStore implements RunStore {
  readonly kind = 'sqlite';
  private readonly changes: SqliteChanges;
  /** Transcript appends of this process, for held transcript reads (others' are found by re-reading). */
  private readonly events = new EventEmitter().setMaxListeners(0);
  private readonly statements = new Map<string, StatementSync>();
  private readonly keys = new KeyCache();
  /** PRAGMA data_version when the key cache was last known good. */
  private keysVersion = -1;
  /** Recent list pages, until the next write (page-cache.ts). */
  private readonly pages = new PageCache<readonly StoredRun[]>();
  private constructor(
    private readonly db: DatabaseSync,
    readonly shared: boolean
  ) {
    this.changes = new SqliteChanges(
      {
        dataVersion: () => this.dataVersion(),
        changedSince: since =>
          this.sql(
            'SELECT run_id, state, version, changed_at FROM runs WHERE changed_at > ? ORDER BY changed_at'
          ).all(since) as unknown as (RunChange & { changed_at: number })[]
      },
      shared
    );
  }

  /** Opens (creating when needed) the database file and brings its schema up to date. */
  static async open(path: string, options: SqliteOptions = {}): Promise<SqliteRunStore> {
    const { DatabaseSync } = await import('node:sqlite');
    if (path !== ':memory:') mkdirSync(dirname(path), { recursive: true });
    const db = new DatabaseSync(path);
    db.exec('PRAGMA busy_timeout = 10000');
    db.exec('PRAGMA journal_mode = WAL');
    db.exec('PRAGMA synchronous = FULL');
    db.exec('PRAGMA foreign_keys = ON');
    const store = new SqliteRunStore(db, options.shared ?? false);
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
    if (run) this.changes.tell(run);
    return run;
  }

  /** Moves on every write: this connection's changed rows, and other connections' commits. */
  changeStamp(): string {
    return this.writeStamp();
  }

  private writeStamp(): string {
    const row = this.sql(
      'SELECT total_changes() AS changes, data_version AS version FROM pragma_data_version'
    ).get() as {
      changes: number;
      version: number;
    };
    return `${row.changes}:${row.version}`;
  }

  /** Moves when another connection (another process) committed to the file. */
  private dataVersion(): number {
    return (this.sql('PRAGMA data_version').get() as { data_version: number }).data_version;
  }

  /** Every state change is recorded in the transcript in the same transaction as the change. */
  private recordState(run: StoredRun | undefined): StoredRun | undefined {
    if (!run) return run;
    this.insertEvent(run.run_id, 'state', stateEvent(run), run.updated_at);
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
    this.keys.clear();
    this.sql(
      `INSERT INTO api_keys (id, team, kind, name, hash, hint, created_at, revoked_at)
       VALUES (:id, :team, :kind, :name, :hash, :hint, :created_at, :revoked_at)`
    ).run(key as unknown as Row);
  }

  /** From the key cache unless another process committed since it was filled (one pragma). */
  async findKeyByHash(hash: string): Promise<KeyRecord | undefined> {
    const version = this.dataVersion();
    if (version !== this.keysVersion) {
      this.keys.clear();
      this.keysVersion = version;
    }
    return this.keys.find(
      hash,
      async () => this.sql('SELECT * FROM api_keys WHERE hash = ?').get(hash) as KeyRecord | undefined
    );
  }

  async listKeys(): Promise<KeyRecord[]> {
    return this.sql('SELECT * FROM api_keys ORDER BY created_at, id').all() as unknown as KeyRecord[];
  }

  async createWebSession(session: WebSession): Promise<void> {
    this.sql('DELETE FROM web_sessions WHERE expires_at <= ?').run(Date.now());
    this.sql(
      `INSERT INTO web_sessions (id_hash, key_id, team, created_at, expires_at)
       VALUES (:id_hash, :key_id, :team, :created_at, :expires_at)`
    ).run(session as unknown as Row);
  }

  async findWebSession(
    idHash: string,
    now: number
  ): Promise<(WebSession & { key_name: string }) | undefined> {
    return this.sql(
      `SELECT s.*, k.name AS key_name FROM web_sessions s JOIN api_keys k ON k.id = s.key_id
       WHERE s.id_hash = ? AND s.expires_at > ? AND k.revoked_at IS NULL AND k.team = s.team`
    ).get(idHash, now) as (WebSession & { key_name: string }) | undefined;
  }

  async deleteWebSession(idHash: string): Promise<void> {
    this.sql('DELETE FROM web_sessions WHERE id_hash = ?').run(idHash);
  }

  async reportNode(node: NodeReport, forgetBefore: number): Promise<void> {
    this.sql('DELETE FROM nodes WHERE seen_at < ?').run(forgetBefore);
    this.sql(
      `INSERT INTO nodes (node_id, role, workers, busy, started_at, seen_at) VALUES (:node_id, :role, :workers, :busy, :started_at, :seen_at)
       ON CONFLICT (node_id) DO UPDATE SET workers = excluded.workers, busy = excluded.busy, seen_at = excluded.seen_at`
    ).run(node as unknown as Row);
  }

  async listNodes(): Promise<NodeReport[]> {
    return this.sql('SELECT * FROM nodes ORDER BY started_at, node_id').all() as unknown as NodeReport[];
  }

  async removeNode(nodeId: string): Promise<void> {
    this.sql('DELETE FROM nodes WHERE node_id = ?').run(nodeId);
  }

  async countRunsByState(team: string): Promise<Record<string, number>> {
    const rows = this.sql('SELECT state, COUNT(*) AS n FROM runs WHERE team = ? GROUP BY state').all(
      team
    ) as { state: string; n: number }[];
    return Object.fromEntries(rows.map(row => [row.state, Number(row.n)]));
  }

  async revokeKey(id: string, at: string): Promise<boolean> {
    this.keys.clear();
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
      const existing = this.sql(
        `SELECT ${RUN_COLUMNS}, idempotency_hash FROM runs WHERE team = ? AND idempotency_key = ?`
      ).get(run.team, idempotency.key) as (StoredRun & { idempotency_hash: string }) | undefined;
      if (existing) {
        return existing.idempotency_hash === idempotency.requestHash
          ? { kind: 'replayed', run: strip(existing) }
          : { kind: 'key_reused' };
      }
    }
    // Counting stops at the limit, so a long queue does not make every create slower.
    const queued = this.sql(`SELECT COUNT(*) AS n FROM (SELECT 1 FROM runs WHERE state = ? LIMIT ?)`).get(
      CREATED_STATE,
      maxQueued
    ) as { n: number };
    if (queued.n >= maxQueued) return { kind: 'queue_full' };
    const inserted = this.sql(
      `INSERT INTO runs (run_id, team, environment_id, state, title, prompt, config, extra, creator_type,
         creator_uid, creator_name, created_at, updated_at, idempotency_key, idempotency_hash, changed_at)
       VALUES (:run_id, :team, :environment_id, :state, :title, :prompt, :config, :extra, :creator_type,
         :creator_uid, :creator_name, :created_at, :created_at, :idempotency_key, :idempotency_hash, :changed_at)
       RETURNING ${RUN_COLUMNS}`
    ).get({
      ...run,
      state: CREATED_STATE,
      changed_at: Date.now(),
      idempotency_key: idempotency?.key ?? null,
      idempotency_hash: idempotency?.requestHash ?? null
    } as unknown as Row) as unknown as StoredRun;
    this.recordState(inserted);
    return { kind: 'created', run: inserted };
  }

  async getRun(team: string, runId: string): Promise<StoredRun | undefined> {
    return this.sql(`SELECT ${RUN_COLUMNS} FROM runs WHERE run_id = ? AND team = ?`).get(runId, team) as
      StoredRun | undefined;
  }

  async getRunAnyTeam(runId: string): Promise<StoredRun | undefined> {
    return this.sql(`SELECT ${RUN_COLUMNS} FROM runs WHERE run_id = ?`).get(runId) as StoredRun | undefined;
  }

  async listRuns(team: string, query: ListQuery): Promise<StoredRun[]> {
    const { where, order, values } = listRunsSql('sqlite', team, query);
    const text = `SELECT ${RUN_COLUMNS} FROM runs WHERE ${where} ORDER BY ${order} LIMIT ?`;
    const args = [...(values as SQLInputValue[]), query.limit];
    // Callers only read the rows (frozen, so a write to one fails loudly); they get their own array.
    return this.pages
      .get(this.writeStamp(), `${text}\n${JSON.stringify(args)}`, () =>
        Object.freeze((this.sql(text).all(...args) as unknown as StoredRun[]).map(row => Object.freeze(row)))
      )
      .slice();
  }

  async cancelRun(team: string, runId: string, at: string, reason?: string): Promise<CancelResult> {
    const result = this.transaction((): CancelResult => {
      const run = this.sql(`SELECT ${RUN_COLUMNS} FROM runs WHERE run_id = ? AND team = ?`).get(
        runId,
        team
      ) as StoredRun | undefined;
      if (!run) return { kind: 'not_found' };
      const change = transitions.cancel(run.state, reason);
      if (!change) return { kind: 'finished', run };
      const updated = this.sql(
        `UPDATE runs SET state = ?, status_message = ?, error_code = ?,
           completed_at = ?, updated_at = ?, version = version + 1, lease_owner = NULL, lease_expires_at = NULL,
           changed_at = ?
         WHERE run_id = ? RETURNING ${RUN_COLUMNS}`
      ).get(
        change.state,
        change.status_message,
        change.error_code,
        at,
        at,
        Date.now(),
        runId
      ) as unknown as StoredRun;
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
          `UPDATE runs SET state = ?, started_at = ?, updated_at = ?, version = version + 1,
             lease_owner = ?, lease_expires_at = ?, changed_at = ?
           WHERE seq = (SELECT seq FROM runs WHERE state = ? ${skip} ORDER BY seq LIMIT 1)
           RETURNING ${RUN_COLUMNS}`
        ).get(CLAIMED_STATE, at, at, owner, Date.now() + leaseMs, Date.now(), CREATED_STATE, ...excluded) as
          StoredRun | undefined
      )
    );
    return this.emit(run);
  }

  async findClaim(owner: string): Promise<StoredRun | undefined> {
    return this.sql(`SELECT ${RUN_COLUMNS} FROM runs WHERE state = ? AND lease_owner = ?`).get(
      CLAIMED_STATE,
      owner
    ) as StoredRun | undefined;
  }

  async renewLease(runId: string, owner: string, leaseMs: number): Promise<boolean> {
    const result = this.sql(
      `UPDATE runs SET lease_expires_at = ? WHERE run_id = ? AND lease_owner = ? AND state = ?`
    ).run(Date.now() + leaseMs, runId, owner, CLAIMED_STATE);
    return Number(result.changes) > 0;
  }

  async finishRun(
    runId: string,
    owner: string,
    outcome: Outcome,
    at: string
  ): Promise<StoredRun | undefined> {
    const change = transitions.finish(outcome);
    const run = this.transaction(() =>
      this.recordState(
        this.sql(
          `UPDATE runs SET state = ?, status_message = ?, error_code = ?, completed_at = ?, updated_at = ?,
             version = version + 1, lease_owner = NULL, lease_expires_at = NULL, changed_at = ?
           WHERE run_id = ? AND lease_owner = ? AND state = ?
           RETURNING ${RUN_COLUMNS}`
        ).get(
          change.state,
          change.status_message,
          change.error_code,
          at,
          at,
          Date.now(),
          runId,
          owner,
          CLAIMED_STATE
        ) as StoredRun | undefined
      )
    );
    return this.emit(run);
  }

  async failAbandoned(all: boolean, at: string, message: string): Promise<StoredRun[]> {
    const change = transitions.abandon(message);
    const runs = this.transaction(() =>
      this.sql(
        `UPDATE runs SET state = ?, status_message = ?, error_code = ?,
             completed_at = ?, updated_at = ?, version = version + 1, lease_owner = NULL, lease_expires_at = NULL,
             changed_at = ?
           WHERE state = ? AND (? OR lease_expires_at < ?)
           RETURNING ${RUN_COLUMNS}`
      )
        .all(
          change.state,
          change.status_message,
          change.error_code,
          at,
          at,
          Date.now(),
          CLAIMED_STATE,
          all ? 1 : 0,
          Date.now()
        )
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
    const seq = this.insertEvent(runId, kind, data, at);
    this.events.emit('event', runId, seq);
    return { ...data, seq, at, kind };
  }

  async listEvents(runId: string, page: EventPage = {}): Promise<TranscriptEvent[]> {
    const order = page.fromEnd ? 'DESC' : 'ASC';
    const rows = this.sql(
      `SELECT seq, at, kind, data FROM events WHERE run_id = ? AND seq > ? ORDER BY seq ${order} LIMIT ?`
    ).all(runId, page.after ?? 0, page.limit ?? -1) as {
      seq: number;
      at: string;
      kind: string;
      data: string;
    }[];
    if (page.fromEnd) rows.reverse();
    return rows.map(row => ({
      ...(JSON.parse(row.data) as object),
      seq: row.seq,
      at: row.at,
      kind: row.kind
    }));
  }

  async countEvents(runId: string, after: number): Promise<number> {
    const row = this.sql('SELECT COUNT(*) AS n FROM events WHERE run_id = ? AND seq > ?').get(
      runId,
      after
    ) as {
      n: number;
    };
    return Number(row.n);
  }

  onEvent(listener: (runId: string, seq: number) => void): () => void {
    this.events.on('event', listener);
    return () => this.events.off('event', listener);
  }

  async addArtifact(artifact: StoredArtifact, data: Buffer): Promise<void> {
    const { run_id, team, artifact_type, created_at, ...file } = artifact;
    this.transaction(() => {
      this.sql(
        `INSERT INTO artifacts (artifact_uid, run_id, team, artifact_type, filepath, filename, mime_type, size,
           description, created_at, data) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`
      ).run(
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
      );
      const row = this.sql('SELECT artifacts FROM runs WHERE run_id = ?').get(run_id) as
        { artifacts: string | null } | undefined;
      const list = JSON.parse(row?.artifacts ?? '[]') as unknown[];
      list.push(listEntryOf(artifact, data));
      this.sql('UPDATE runs SET artifacts = ? WHERE run_id = ?').run(JSON.stringify(list), run_id);
    });
  }

  async getArtifact(team: string, uid: string): Promise<StoredArtifact | undefined> {
    const row = this.sql(
      `SELECT artifact_uid, run_id, team, artifact_type, filepath, filename, mime_type, size, description,
         created_at FROM artifacts WHERE artifact_uid = ? AND team = ?`
    ).get(uid, team) as (StoredArtifact & { description: string | null }) | undefined;
    return row && artifactOf(row);
  }

  async readArtifact(uid: string): Promise<{ artifact: StoredArtifact; data: Buffer } | undefined> {
    const row = this.sql('SELECT * FROM artifacts WHERE artifact_uid = ?').get(uid) as
      (StoredArtifact & { data: Uint8Array }) | undefined;
    if (!row) return undefined;
    const { data, ...artifact } = row;
    return { artifact: artifactOf(artifact), data: Buffer.from(data) };
  }

  async listArtifacts(team: string, runId: string): Promise<StoredArtifact[]> {
    const rows = this.sql(
      `SELECT artifact_uid, run_id, team, artifact_type, filepath, filename, mime_type, size, description,
         created_at FROM artifacts WHERE run_id = ? AND team = ? ORDER BY created_at, artifact_uid`
    ).all(runId, team) as unknown as (StoredArtifact & { description: string | null })[];
    return rows.map(artifactOf);
  }

  async setRequestUsage(runId: string, usage: string): Promise<void> {
    this.sql('UPDATE runs SET request_usage = ? WHERE run_id = ?').run(usage, runId);
  }

  async pruneFinished(before: string): Promise<number> {
    return this.transaction(() => {
      const filter = `state IN ${TERMINAL_SQL} AND completed_at < ?`;
      this.sql(`DELETE FROM events WHERE run_id IN (SELECT run_id FROM runs WHERE ${filter})`).run(before);
      this.sql(`DELETE FROM artifacts WHERE run_id IN (SELECT run_id FROM runs WHERE ${filter})`).run(before);
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

  onChange(listener: (change: RunChange) => void): () => void {
    return this.changes.onChange(listener);
  }

  async close(): Promise<void> {
    this.changes.close();
    this.statements.clear();
    if (this.db.isOpen) this.db.close();
  }
}
