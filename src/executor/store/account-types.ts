// Who may do what (AccountStore): API keys, the credentials of orchestrate turns (run tokens), the
// dashboard's sign-in sessions, and the node's own secrets. sql-accounts.ts implements it.

import type { KeyRecord, RunTokenRecord, WebSession } from './records.js';

export interface AccountStore {
  // keys
  createKey(key: KeyRecord): Promise<void>;
  findKeyByHash(hash: string): Promise<KeyRecord | undefined>;
  listKeys(): Promise<KeyRecord[]>;
  revokeKey(id: string, at: string): Promise<boolean>;

  // run tokens (an orchestrate turn's credential)
  createRunToken(token: RunTokenRecord): Promise<void>;
  findRunToken(hash: string): Promise<RunTokenRecord | undefined>;
  /** Removes the run's tokens (its orchestrate turn ended). */
  deleteRunTokens(runId: string): Promise<void>;

  // dashboard sessions
  /** Stores a new session (and drops expired ones). */
  createWebSession(session: WebSession): Promise<void>;
  /** The session, only while it has not expired at `now` and its key is not revoked. */
  findWebSession(idHash: string, now: number): Promise<(WebSession & { key_name: string }) | undefined>;
  deleteWebSession(idHash: string): Promise<void>;

  /** The node's own secret of this name (a signing key), made by `create` on first use. */
  getSecret(name: string, create: () => string): Promise<string>;
}
