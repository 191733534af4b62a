// The post step runs after the job, also when it was cancelled. If the main step was stopped before
// it could settle the run (killed by the runner, say), cancel the run here so no agent is left behind.

import * as core from '@actions/core';
import { type AgentRunClient, isTerminalState } from '../client/index.js';
import { cancelRemoteRun } from './cancel.js';
import { readConnection, readPostSettings, secretInputs } from './inputs.js';
import * as log from './log.js';
import { createClient } from './remote.js';
import * as state from './state.js';

export async function postStep(): Promise<void> {
  const runId = state.runId();
  if (runId === undefined || state.settled()) return;
  if (!readPostSettings().cancelOnAbort) return;
  let client: AgentRunClient | undefined;
  try {
    for (const secret of secretInputs()) core.setSecret(secret);
    client = createClient(readConnection(), 'agent-run-action/post');
    const run = await client.getRun(runId, { signal: AbortSignal.timeout(30_000) });
    if (isTerminalState(run.state)) {
      log.info(`Run ${runId} already ended ${run.state}.`);
      return;
    }
    await cancelRemoteRun(client, runId, 'the main step did not finish');
  } catch (error) {
    core.warning(`Post step could not check run ${runId}: ${(error as Error).message}`);
  } finally {
    client?.close();
  }
}
