// Cancelling the remote run, shared by the abort path, the deadline path and the post step.
// A cancel that cannot happen is reported, never turned into a second failure.

import * as core from '@actions/core';
import {
  type AgentRunClient,
  AgentRunError,
  ConflictError,
  InvalidRequestError,
  NotFoundError
} from '../client/index.js';

export type CancelResult = 'cancelled' | 'already_finished' | 'unsupported' | 'failed';

export async function cancelRemoteRun(
  client: AgentRunClient,
  runId: string,
  why: string,
  options: { timeoutMs?: number; maxRetries?: number } = {}
): Promise<CancelResult> {
  const signal = AbortSignal.timeout(options.timeoutMs ?? 20_000);
  try {
    await client.cancelRun(runId, { signal, maxRetries: options.maxRetries });
    core.info(`Cancelled run ${runId} (${why}).`);
    return 'cancelled';
  } catch (error) {
    if (error instanceof ConflictError || (error instanceof InvalidRequestError && error.status === 400)) {
      core.info(`Run ${runId} had already finished; nothing to cancel.`);
      return 'already_finished';
    }
    if (
      (error instanceof NotFoundError && error.errorCode !== 'not_found') ||
      (error instanceof AgentRunError && (error.status === 405 || error.status === 501))
    ) {
      core.notice(`The server has no cancel endpoint (${error.status}); run ${runId} may keep running.`);
      return 'unsupported';
    }
    const message = error instanceof Error ? error.message : String(error);
    core.warning(`Could not cancel run ${runId} (${why}): ${message}`);
    return 'failed';
  }
}
