// Cancelling the remote run, shared by the abort path, the deadline path and the post step.
// A cancel that cannot happen is reported, never turned into a second failure. The reason goes
// to the service, which puts it in the run's status message.
//
// The production service refuses a cancel with 409 while the run is PENDING (the client retries
// those) and with 400 once it ended or while it is BLOCKED (waiting for a person, not cancellable):
// after a refusal the run is read again, and the step says what it really is.

import * as core from '@actions/core';
import {
  AbortError,
  type AgentRunClient,
  AgentRunError,
  ConflictError,
  InvalidRequestError,
  NotFoundError,
  type Run,
  isTerminalState
} from '../client/index.js';
import * as log from './log.js';

export type CancelResult = 'cancelled' | 'already_finished' | 'not_cancellable' | 'unsupported' | 'failed';

export async function cancelRemoteRun(
  client: AgentRunClient,
  runId: string,
  why: string,
  options: { timeoutMs?: number; maxRetries?: number } = {}
): Promise<CancelResult> {
  const timeoutMs = options.timeoutMs ?? 20_000;
  const signal = AbortSignal.timeout(timeoutMs);
  try {
    await client.runs.cancel(runId, { reason: why, signal, maxRetries: options.maxRetries });
    log.info(`Cancelled run ${runId} (${why}).`);
    return 'cancelled';
  } catch (error) {
    if (error instanceof ConflictError || (error instanceof InvalidRequestError && error.status === 400)) {
      return afterRefusal(client, runId, why, error.message);
    }
    // Still refused (409 while PENDING) or unanswered when the time for cancelling ran out: say what
    // the run is now rather than only "aborted".
    if (error instanceof AbortError && signal.aborted) {
      return afterRefusal(client, runId, why, `no cancel was accepted within ${timeoutMs / 1000} s`);
    }
    if (
      (error instanceof NotFoundError && error.errorCode !== 'not_found') ||
      (error instanceof AgentRunError && (error.status === 405 || error.status === 501))
    ) {
      core.notice(`The server has no cancel endpoint (${error.status}); run ${runId} may keep running.`);
      return 'unsupported';
    }
    core.warning(`Could not cancel run ${runId} (${why}): ${messageOf(error)}`);
    return 'failed';
  }
}

/** How long the run is read once after the job's cancel: the runner kills the step soon after. */
const READ_AFTER_CANCEL_MS = 2000;

/**
 * After the job was cancelled and the step cancelled its run: the run read once, bounded in time,
 * so the summary shows the state the cancel brought it to, not the last one seen while waiting.
 * Undefined when it could not be read in time.
 */
export function readAfterCancel(client: AgentRunClient, runId: string): Promise<Run | undefined> {
  return client.runs.get(runId, { signal: AbortSignal.timeout(READ_AFTER_CANCEL_MS) }).catch(() => undefined);
}

/**
 * The state the job summary shows for a run the step cancelled as the job was cancelled: the state
 * read after the cancel when it is final, else that the job cancelled it (and what was last read).
 */
export function stateAfterJobCancel(run: Run | undefined, result: CancelResult): string | undefined {
  if (run && isTerminalState(run.state)) return run.state;
  if (result !== 'cancelled') return run?.state;
  return `cancelled by the job${run ? ` (last read: ${run.state})` : ''}`;
}

/** The service refused the cancel: read the run again and say what it is. */
async function afterRefusal(
  client: AgentRunClient,
  runId: string,
  why: string,
  refusal: string
): Promise<CancelResult> {
  const run = await client.runs.get(runId, { signal: AbortSignal.timeout(5000) }).catch(() => undefined);
  if (run && isTerminalState(run.state)) {
    log.info(`Run ${runId} had already finished (${run.state}); nothing to cancel.`);
    return 'already_finished';
  }
  if (run?.state === 'BLOCKED') {
    const link = run.session_link ? ` at ${run.session_link}` : '';
    core.warning(
      `Run ${runId} is BLOCKED (waiting for a person${link}) and cannot be cancelled; it may go on afterwards.`
    );
    return 'not_cancellable';
  }
  const now = run ? `it is ${run.state}` : 'it could not be read again';
  core.warning(`Could not cancel run ${runId} (${why}): ${refusal}; ${now}.`);
  return 'failed';
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
