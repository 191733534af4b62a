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
  const single = state.runId();
  const fanOut = state.runIds();
  const runIds = fanOut.length > 0 ? fanOut : single === undefined ? [] : [single];
  if (runIds.length === 0 || state.settled()) return;
  if (!readPostSettings().cancelOnAbort) return;
  let client: AgentRunClient | undefined;
  try {
    for (const secret of secretInputs()) core.setSecret(secret);
    client = createClient(readConnection(), 'agent-run-action/post');
    await Promise.all(runIds.map(runId => cancelIfRunning(client!, runId)));
  } catch (error) {
    core.warning(`Post step could not check its runs: ${(error as Error).message}`);
  } finally {
    client?.close();
  }
}

async function cancelIfRunning(client: AgentRunClient, runId: string): Promise<void> {
  try {
    const run = await client.runs.get(runId, { signal: AbortSignal.timeout(30_000) });
    if (isTerminalState(run.state)) {
      log.info(`Run ${runId} already ended ${run.state}.`);
      return;
    }
    await cancelRemoteRun(client, runId, 'the main step did not finish');
  } catch (error) {
    core.warning(`Post step could not check run ${runId}: ${(error as Error).message}`);
  }
}
