// The stores of one database (Stores, stores.ts), written once for both: one class per concern
// over the one dialect (dialect.ts), which holds the connection and runs every transaction.
// sqlite.ts and postgres.ts open one.

import { ClaimSql } from './claim-sql.js';
import type { Dialect } from './dialect.js';
import { sql } from './dialect.js';
import { RunChanges } from './run-changes.js';
import { SqlAccountStore } from './sql-accounts.js';
import { SqlArtifactStore } from './sql-artifacts.js';
import { SqlClaimStore } from './sql-claims.js';
import { SqlHoldStore } from './sql-holds.js';
import { SqlNodeStore } from './sql-nodes.js';
import { SqlRunRecords } from './sql-runs.js';
import { SqlScheduleStore } from './sql-schedules.js';
import { SqlTranscriptStore } from './sql-transcript.js';
import { SqlDeliveryStore } from './sql-deliveries.js';
import { SqlWebhookStore } from './sql-webhooks.js';
import type { Stores } from './stores.js';

export class SqlStores implements Stores {
  readonly kind: 'sqlite' | 'postgres';
  readonly shared: boolean;
  readonly runs: SqlRunRecords;
  readonly claims: SqlClaimStore;
  readonly transcript: SqlTranscriptStore;
  readonly artifacts: SqlArtifactStore;
  readonly accounts: SqlAccountStore;
  readonly holds: SqlHoldStore;
  readonly nodes: SqlNodeStore;
  readonly schedules: SqlScheduleStore;
  readonly webhooks: SqlWebhookStore;
  readonly deliveries: SqlDeliveryStore;

  constructor(protected readonly d: Dialect) {
    this.kind = d.kind;
    this.shared = d.shared;
    // The runs' changes of state and the queue's statements, shared by the stores that write them.
    const changes = new RunChanges(d);
    const queue = new ClaimSql(d);
    this.runs = new SqlRunRecords(d, changes);
    this.claims = new SqlClaimStore(d, changes, queue);
    this.transcript = new SqlTranscriptStore(d);
    this.artifacts = new SqlArtifactStore(d);
    this.accounts = new SqlAccountStore(d);
    this.holds = new SqlHoldStore(d, queue);
    this.nodes = new SqlNodeStore(d);
    this.schedules = new SqlScheduleStore(d);
    this.webhooks = new SqlWebhookStore(d);
    this.deliveries = new SqlDeliveryStore(d);
  }

  /** Moves whenever a write is committed here or by another process (SQLite); undefined on PostgreSQL. */
  changeStamp(): string | undefined {
    return this.d.changeStamp();
  }

  async ping(): Promise<void> {
    await this.d.all(sql('SELECT 1 AS one'));
  }

  close(): Promise<void> {
    return this.d.close();
  }
}
