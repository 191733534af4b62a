// The store's types in one place: the rows and values (records.ts), each concern's interface
// (run-types.ts, claim-types.ts, transcript-types.ts, artifact-types.ts, account-types.ts,
// hold-types.ts, node-types.ts, schedule-types.ts, webhook-types.ts) and their bundle (stores.ts).
// Every read and write of a run is scoped to a team, except the worker's own (it runs every team's
// work).

import type { AccountStore } from './account-types.js';
import type { ArtifactStore } from './artifact-types.js';
import type { ClaimStore } from './claim-types.js';
import type { HoldStore } from './hold-types.js';
import type { NodeStore } from './node-types.js';
import type { RunRecordStore } from './run-types.js';
import type { Stores } from './stores.js';
import type { TranscriptStore } from './transcript-types.js';

export * from './records.js';
export type {
  AccountStore,
  ArtifactStore,
  ClaimStore,
  HoldStore,
  NodeStore,
  RunRecordStore,
  Stores,
  TranscriptStore
};

// Narrower views, parts of one concern's store, named by server/ (RunTokenStore by the worker too).

/** API keys (the server's authentication, the CLI's key commands). */
export type KeyStore = Pick<AccountStore, 'createKey' | 'findKeyByHash' | 'listKeys' | 'revokeKey'>;
/** The credentials of orchestrate turns. */
export type RunTokenStore = Pick<AccountStore, 'createRunToken' | 'findRunToken' | 'deleteRunTokens'>;
/** Runs as the API sees them: created, read, listed, cancelled, followed up. */
export type RunRequestStore = Pick<
  RunRecordStore,
  'createRun' | 'getRun' | 'getRunAnyTeam' | 'listRuns' | 'countRunsByState' | 'cancelRun' | 'submitFollowup'
>;
/** Hearing every change of a run, by any writer of the store. */
export type RunChangeFeed = Pick<RunRecordStore, 'onChange'>;
/** The node's own secrets (signing keys), made on first use. */
export type SecretStore = Pick<AccountStore, 'getSecret'>;
