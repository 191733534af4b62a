// The post step runs after the job, also when it was cancelled. If the main step was stopped before
// it could settle the run (killed by the runner, say), cancel the run here so no agent is left behind.

import * as core from '@actions/core';
import { AgentRunClient, isTerminalState } from '../client/index.js';
import { cancelRemoteRun } from './cancel.js';
import { readConnection } from './inputs.js';

export async function postStep(): Promise<void> {
  const runId = core.getState('run-id');
  if (runId === '' || core.getState('settled') === 'true') return;
  if (core.getInput('cancel-on-abort').trim().toLowerCase() === 'false') return;
  let client: AgentRunClient | undefined;
  try {
    const rawKey = core.getInput('api-key').trim();
    if (rawKey !== '') core.setSecret(rawKey);
    client = new AgentRunClient({
      ...readConnection(name => core.getInput(name)),
      userAgent: 'agent-run-action/post'
    });
    const run = await client.getRun(runId, { signal: AbortSignal.timeout(30_000) });
    if (isTerminalState(run.state)) {
      core.info(`Run ${runId} already ended ${run.state}.`);
      return;
    }
    await cancelRemoteRun(client, runId, 'the main step did not finish');
  } catch (error) {
    core.warning(`Post step could not check run ${runId}: ${(error as Error).message}`);
  } finally {
    client?.close();
  }
}
