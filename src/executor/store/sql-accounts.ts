// AccountStore (account-types.ts) for both databases: API keys (with their cache), orchestrate
// turns' run tokens, dashboard sessions and the store's secrets. A dialect (dialect.ts) runs the
// statements and tells other processes of a key write.

import type { AccountStore } from './account-types.js';
import type { Dialect, Row, Statement } from './dialect.js';
import { sql } from './dialect.js';
import { KeyCache } from './key-cache.js';
import type { KeyRecord, RunTokenRecord, WebSession } from './records.js';

export class SqlAccountStore implements AccountStore {
  private readonly keys = new KeyCache();

  constructor(private readonly d: Dialect) {
    d.onKeysChanged(() => this.keys.clear());
  }

  // keys

  async createKey(key: KeyRecord): Promise<void> {
    this.keys.clear();
    await this.withKeysChanged(
      sql(
        `INSERT INTO api_keys (id, team, kind, name, hash, hint, created_at, revoked_at)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
        key.id,
        key.team,
        key.kind,
        key.name,
        key.hash,
        key.hint,
        key.created_at,
        key.revoked_at
      )
    );
  }

  /** From the key cache while the dialect says it may be trusted. */
  async findKeyByHash(hash: string): Promise<KeyRecord | undefined> {
    const load = async () =>
      (await this.d.all<KeyRecord & Row>(sql('SELECT * FROM api_keys WHERE hash = ?', hash)))[0];
    const state = this.d.keyCacheState();
    if (state === 'untrusted') return load();
    if (state === 'stale') this.keys.clear();
    return this.keys.find(hash, load);
  }

  async listKeys(): Promise<KeyRecord[]> {
    return this.d.all<KeyRecord & Row>(sql('SELECT * FROM api_keys ORDER BY created_at, id'));
  }

  async revokeKey(id: string, at: string): Promise<boolean> {
    this.keys.clear();
    const changed = await this.withKeysChanged(
      sql('UPDATE api_keys SET revoked_at = ? WHERE id = ? AND revoked_at IS NULL', at, id)
    );
    this.keys.clear();
    return changed > 0;
  }

  // run tokens: never cached, so a token removed (its turn ended) is refused at once on every node

  async createRunToken(token: RunTokenRecord): Promise<void> {
    await this.d.run(
      sql(
        `INSERT INTO run_tokens (hash, via_hash, run_id, team, environment_id, created_at)
         VALUES (?, ?, ?, ?, ?, ?)`,
        token.hash,
        token.via_hash,
        token.run_id,
        token.team,
        token.environment_id,
        token.created_at
      )
    );
  }

  async findRunToken(hash: string): Promise<RunTokenRecord | undefined> {
    return (await this.d.all<RunTokenRecord & Row>(sql('SELECT * FROM run_tokens WHERE hash = ?', hash)))[0];
  }

  async deleteRunTokens(runId: string): Promise<void> {
    await this.d.run(sql('DELETE FROM run_tokens WHERE run_id = ?', runId));
  }

  /** A key write, and the dialect's word to other processes in the same transaction. */
  private async withKeysChanged(write: Statement): Promise<number> {
    const tell = this.d.keysChanged();
    if (!tell) return this.d.run(write);
    return (await this.d.batch([write, tell]))[0]!;
  }

  // dashboard sessions

  async createWebSession(session: WebSession): Promise<void> {
    await this.d.run(sql('DELETE FROM web_sessions WHERE expires_at <= ?', Date.now()));
    await this.d.run(
      sql(
        'INSERT INTO web_sessions (id_hash, key_id, team, created_at, expires_at) VALUES (?, ?, ?, ?, ?)',
        session.id_hash,
        session.key_id,
        session.team,
        session.created_at,
        session.expires_at
      )
    );
  }

  async findWebSession(
    idHash: string,
    now: number
  ): Promise<(WebSession & { key_name: string }) | undefined> {
    const row = (
      await this.d.all<WebSession & { key_name: string } & Row>(
        sql(
          `SELECT s.*, k.name AS key_name FROM web_sessions s JOIN api_keys k ON k.id = s.key_id
           WHERE s.id_hash = ? AND s.expires_at > ? AND k.revoked_at IS NULL AND k.team = s.team`,
          idHash,
          now
        )
      )
    )[0];
    return row && { ...row, expires_at: Number(row.expires_at) };
  }

  async deleteWebSession(idHash: string): Promise<void> {
    await this.d.run(sql('DELETE FROM web_sessions WHERE id_hash = ?', idHash));
  }

  /** The first process to ask makes it; every other one reads the same. */
  async getSecret(name: string, create: () => string): Promise<string> {
    await this.d.run(
      sql('INSERT INTO secrets (name, value) VALUES (?, ?) ON CONFLICT (name) DO NOTHING', name, create())
    );
    const [row] = await this.d.all<{ value: string }>(sql('SELECT value FROM secrets WHERE name = ?', name));
    return row!.value;
  }
}
