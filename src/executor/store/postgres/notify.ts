// How one PostgreSQL node hears the others' changes: LISTEN on a connection of its own (reconnected
// with backoff when it drops), and a slow fallback poll of recently changed runs behind it, for
// notifications missed while that connection was down. Writers send pg_notify in the transaction
// that makes a change, so a notification never announces what did not commit.
// Key changes (create, revoke) are announced on the same channel: the key cache trusts itself only
// while this connection listens, and is emptied by each key notification and each reconnect.

import { randomUUID } from 'node:crypto';
import { EventEmitter } from 'node:events';
import pg from 'pg';
import { TYPES } from './connection.js';
import type { RunChange } from '../types.js';

export const CHANNEL = 'agent_executor_runs';
/** The payload of a key change: no run, only "empty your key cache". */
export const KEYS_CHANGED = JSON.stringify({ k: 1 });

export class ChangeFeed {
  /** This process's name in notifications, so it skips its own (it already told its listeners). */
  readonly node = randomUUID();
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
  private polling = false;

  constructor(
    private readonly pool: pg.Pool,
    private readonly url: string,
    private readonly fallbackPollMs: number,
    /** Called when keys may have changed elsewhere (a key notification, or one possibly missed). */
    private readonly keysChanged: () => void
  ) {
    this.changes.setMaxListeners(0);
  }

  /** Whether notifications are being received now (so a cache may trust them). */
  get connected(): boolean {
    return this.listener !== undefined && !this.closed;
  }

  /** Tells the listeners of a change, unless this process already told them of that version. */
  tell(run: RunChange): void {
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

  /** Tells the listeners of a transcript event (held transcript reads). */
  tellEvent(runId: string, seq: number): void {
    try {
      this.changes.emit('event', runId, seq);
    } catch {
      // a listener failed; held transcript reads re-read on their own
    }
  }

  onEvent(listener: (runId: string, seq: number) => void): () => void {
    this.changes.on('event', listener);
    this.start();
    return () => this.changes.off('event', listener);
  }

  onChange(listener: (change: RunChange) => void): () => void {
    this.changes.on('change', listener);
    this.start();
    return () => this.changes.off('change', listener);
  }

  /** Other nodes' changes: LISTEN on a connection of its own, reconnecting with backoff. */
  start(): void {
    if (this.listening) return;
    this.listening = true;
    void this.connectListener(100);
    this.pollTimer = setInterval(() => void this.poll(), this.fallbackPollMs);
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
      this.keysChanged();
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
      // A key revoked while no one listened is not in the cache after this.
      this.keysChanged();
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
    let message: { n?: string; r: string; s: string; v: number; k?: number; e?: number };
    try {
      message = JSON.parse(payload) as typeof message;
    } catch {
      return;
    }
    if (message.k !== undefined) return this.keysChanged();
    if (message.n === this.node) return;
    if (typeof message.e === 'number') return this.tellEvent(message.r, message.e);
    this.tell({ run_id: message.r, state: message.s, version: message.v });
  }

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
    const listener = this.listener;
    this.listener = undefined;
    await listener?.end().catch(() => undefined);
  }
}
