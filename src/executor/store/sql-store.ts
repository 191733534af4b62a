// SqlRunStore: the stores of one database (SqlStores, sql-stores.ts) with every concern's methods
// on the bundle too, delegated to the store of the concern: the server's transitional view
// (RunStore, types.ts), to be removed once server/ takes the narrow stores. Nothing else calls
// these delegates; sqlite.ts and postgres.ts open one.

import { SqlStores } from './sql-stores.js';
import type { RunStore } from './types.js';

export class SqlRunStore extends SqlStores implements RunStore {
  // runs (sql-runs.ts)
  readonly createRun = this.runs.createRun.bind(this.runs);
  readonly getRun = this.runs.getRun.bind(this.runs);
  readonly getRunAnyTeam = this.runs.getRunAnyTeam.bind(this.runs);
  readonly listRuns = this.runs.listRuns.bind(this.runs);
  readonly countRunsByState = this.runs.countRunsByState.bind(this.runs);
  readonly cancelRun = this.runs.cancelRun.bind(this.runs);
  readonly ancestorCount = this.runs.ancestorCount.bind(this.runs);
  readonly isDescendant = this.runs.isDescendant.bind(this.runs);
  readonly submitFollowup = this.runs.submitFollowup.bind(this.runs);
  readonly listStateEvents = this.runs.listStateEvents.bind(this.runs);
  readonly runStates = this.runs.runStates.bind(this.runs);
  readonly pruneFinished = this.runs.pruneFinished.bind(this.runs);
  readonly onChange = this.runs.onChange.bind(this.runs);
  // the queue (sql-claims.ts)
  readonly claimNext = this.claims.claimNext.bind(this.claims);
  readonly findClaim = this.claims.findClaim.bind(this.claims);
  readonly renewLease = this.claims.renewLease.bind(this.claims);
  readonly finishRun = this.claims.finishRun.bind(this.claims);
  readonly failAbandoned = this.claims.failAbandoned.bind(this.claims);
  // holds (sql-holds.ts)
  readonly holdRun = this.holds.holdRun.bind(this.holds);
  readonly releaseRun = this.holds.releaseRun.bind(this.holds);
  readonly heldRuns = this.holds.heldRuns.bind(this.holds);
  // the transcript (sql-transcript.ts)
  readonly appendEvent = this.transcript.appendEvent.bind(this.transcript);
  readonly listEvents = this.transcript.listEvents.bind(this.transcript);
  readonly countEvents = this.transcript.countEvents.bind(this.transcript);
  readonly onEvent = this.transcript.onEvent.bind(this.transcript);
  // artifacts (sql-artifacts.ts)
  readonly addArtifact = this.artifacts.addArtifact.bind(this.artifacts);
  readonly renameArtifacts = this.artifacts.renameArtifacts.bind(this.artifacts);
  readonly getArtifact = this.artifacts.getArtifact.bind(this.artifacts);
  readonly readArtifact = this.artifacts.readArtifact.bind(this.artifacts);
  readonly listArtifacts = this.artifacts.listArtifacts.bind(this.artifacts);
  readonly setRequestUsage = this.artifacts.setRequestUsage.bind(this.artifacts);
  // accounts (sql-accounts.ts)
  readonly createKey = this.accounts.createKey.bind(this.accounts);
  readonly findKeyByHash = this.accounts.findKeyByHash.bind(this.accounts);
  readonly listKeys = this.accounts.listKeys.bind(this.accounts);
  readonly revokeKey = this.accounts.revokeKey.bind(this.accounts);
  readonly createRunToken = this.accounts.createRunToken.bind(this.accounts);
  readonly findRunToken = this.accounts.findRunToken.bind(this.accounts);
  readonly deleteRunTokens = this.accounts.deleteRunTokens.bind(this.accounts);
  readonly createWebSession = this.accounts.createWebSession.bind(this.accounts);
  readonly findWebSession = this.accounts.findWebSession.bind(this.accounts);
  readonly deleteWebSession = this.accounts.deleteWebSession.bind(this.accounts);
  readonly getSecret = this.accounts.getSecret.bind(this.accounts);
  // nodes (sql-nodes.ts)
  readonly reportNode = this.nodes.reportNode.bind(this.nodes);
  readonly listNodes = this.nodes.listNodes.bind(this.nodes);
  readonly removeNode = this.nodes.removeNode.bind(this.nodes);
}
