// The stores of one database, one per concern, as openStore gives them (Stores): each consumer
// takes the ones it uses (`Pick<Stores, 'claims' | 'transcript'>`, or one store alone). They share
// the database's one connection and its transactions (the dialect, dialect.ts).

import type { AccountStore } from './account-types.js';
import type { ArtifactStore } from './artifact-types.js';
import type { ClaimStore } from './claim-types.js';
import type { HoldStore } from './hold-types.js';
import type { NodeStore } from './node-types.js';
import type { RunRecordStore } from './run-types.js';
import type { ScheduleStore } from './schedule-types.js';
import type { TranscriptStore } from './transcript-types.js';
import type { DeliveryStore, WebhookStore } from './webhook-types.js';

export interface Stores {
  /** 'sqlite' serves one node; 'postgres' is shared by every node on the database. */
  readonly kind: 'sqlite' | 'postgres';
  /**
   * True when other processes run work from this store too, so start-up must not fail their runs:
   * always on PostgreSQL; on SQLite when a split role (`--role api` or `worker`) opened it.
   */
  readonly shared: boolean;
  /** Runs as the API sees them: created, read, listed, cancelled, followed up, heard (sql-runs.ts). */
  readonly runs: RunRecordStore;
  /** The queue: claims under a lease, renewed, finished, failed when abandoned (sql-claims.ts). */
  readonly claims: ClaimStore;
  /** Runs' transcripts (sql-transcript.ts). */
  readonly transcript: TranscriptStore;
  /** What runs produced (sql-artifacts.ts). */
  readonly artifacts: ArtifactStore;
  /** Keys, run tokens, dashboard sessions and secrets (sql-accounts.ts). */
  readonly accounts: AccountStore;
  /** Holds on ended runs whose files another run reads at its start (sql-holds.ts). */
  readonly holds: HoldStore;
  /** Nodes' heartbeats (sql-nodes.ts). */
  readonly nodes: NodeStore;
  /** The scheduled agents (sql-schedules.ts). */
  readonly schedules: ScheduleStore;
  /** Teams' webhook endpoints (sql-webhooks.ts). */
  readonly webhooks: WebhookStore;
  /** The deliveries to them (sql-deliveries.ts). */
  readonly deliveries: DeliveryStore;
  /**
   * A marker that moves whenever a write is committed to the store, by this process or any other
   * (SQLite: total_changes() with PRAGMA data_version, one statement). The server keeps serialised
   * read answers under it (server/read-cache.ts). Absent, or undefined, when the store cannot tell:
   * then nothing is kept.
   */
  changeStamp?(): string | undefined;
  /** Cheap liveness query, for /readyz. */
  ping(): Promise<void>;
  close(): Promise<void>;
}
