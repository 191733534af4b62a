// The step's calls to the service: the client it uses, the create, and the wait with its live
// progress (log lines, the conversation as it arrives, summary, comment, BLOCKED).

import * as core from '@actions/core';
import { formatDuration } from '../common/duration.js';
import { AbortError, AgentRunClient, type Run, type WaitResult } from '../client/index.js';
import { IdTokenSource } from './id-token.js';
import type { Connection, CreateSettings } from './inputs.js';
import { followConversation } from './live.js';
import * as log from './log.js';
import { Progress } from './progress.js';
import type { Reporter } from './report.js';

export const USER_AGENT = 'agent-run-action/0.1.0';
/** About 15 s of backoff (0.5, 1, 2, 4, 8 s) before a create gives up. */
const CREATE_RETRIES = 5;

export function createClient(connection: Connection, userAgent = USER_AGENT): AgentRunClient {
  const oidc = connection.auth === 'oidc';
  return new AgentRunClient({
    baseUrl: connection.baseUrl,
    ...(oidc
      ? {
          credential: new IdTokenSource(connection.oidcAudience).get,
          keyName: `the executor's auth.oidc rules for audience ${connection.oidcAudience} (the oidc-audience input)`
        }
      : { apiKey: connection.apiKey }),
    userAgent,
    onRetry: info =>
      log.info(
        `Retrying ${info.request} in ${(info.delayMs / 1000).toFixed(1)} s (retry ${info.retry}): ${info.reason}`
      )
  });
}

export async function createRun(
  client: AgentRunClient,
  create: CreateSettings,
  signal: AbortSignal
): Promise<string> {
  const body = {
    prompt: create.prompt,
    config: create.config,
    ...(create.title ? { title: create.title } : {}),
    ...(create.mode ? { mode: create.mode } : {}),
    ...(create.metadata ? { metadata: create.metadata } : {})
  };
  // The idempotency key makes retrying a create safe, so it gets a larger budget than other calls.
  const created = await client.runs.create(body, {
    idempotencyKey: create.idempotencyKey,
    signal,
    maxRetries: CREATE_RETRIES
  });
  log.info(`Created run ${created.run_id} in environment ${create.environmentId}.`);
  return created.run_id;
}

export interface WaitEnd {
  /** `blocked`: the run became BLOCKED and `on-blocked` is `fail`. */
  outcome: 'terminal' | 'timed_out' | 'blocked';
  run: Run | undefined;
  /** The log showed the session link while waiting. */
  linkShown: boolean;
}

/**
 * Waits for the run until the step's deadline, reporting every state change as it happens and,
 * with `log-conversation`, what the agent says and runs. BLOCKED is announced once as a warning;
 * with `on-blocked: fail` the wait ends there.
 */
export async function waitWithProgress(
  client: AgentRunClient,
  runId: string,
  options: {
    timeoutMs: number;
    startedAt: number;
    signal: AbortSignal;
    reporter: Reporter;
    logConversation?: boolean;
    onBlocked?: 'wait' | 'fail';
    /** Aborts when the step's end deadline (timeout + grace) passes: the wait and the follow end there. */
    endSignal?: AbortSignal;
    /** `poll-interval`: before the first read, and the first pause of paced reads (default 1 s). */
    pollIntervalMs?: number;
  }
): Promise<WaitEnd> {
  const { startedAt, reporter } = options;
  const endSignal = options.endSignal ?? new AbortController().signal;
  const live = options.logConversation ? followConversation(client, runId, endSignal) : undefined;
  let lastRun: Run | undefined;
  const blocked = new AbortController();
  let blockedRun: Run | undefined;
  let announced = false;
  const progress = new Progress(runId, startedAt, run => {
    lastRun = run;
    live?.onStateChange();
    if (run.state === 'BLOCKED') {
      if (!announced) {
        announced = true;
        // The log has just shown the link (progress announces it first): the warning points to it.
        const link = run.session_link ? ' Open the session (its link is in the log above) to answer.' : '';
        core.warning(`Run ${runId} is BLOCKED: the agent is waiting for user input or approval.${link}`);
      }
      if (options.onBlocked === 'fail') {
        blockedRun = run;
        blocked.abort(new Error('blocked'));
      }
    }
    void reporter.progress(runId, run);
  });
  log.info(`Waiting for run ${runId} (timeout ${formatDuration(options.timeoutMs)}).`);
  try {
    const result: WaitResult = await client.runs.wait(runId, {
      timeoutMs: options.timeoutMs - (Date.now() - startedAt),
      initialDelayMs: options.pollIntervalMs,
      signal: AbortSignal.any([options.signal, blocked.signal, endSignal]),
      onStateChange: progress.onStateChange,
      onUnknownState: progress.onUnknownState,
      onTransientError: progress.onTransientError
    });
    return { outcome: result.outcome, run: result.run, linkShown: progress.linkShown };
  } catch (error) {
    if (error instanceof AbortError && blocked.signal.aborted && !options.signal.aborted) {
      return { outcome: 'blocked', run: blockedRun, linkShown: progress.linkShown };
    }
    // Polls that hang or fail past the timeout and its grace: the deadline has passed all the same.
    if (error instanceof AbortError && endSignal.aborted && !options.signal.aborted) {
      return { outcome: 'timed_out', run: lastRun, linkShown: progress.linkShown };
    }
    throw error;
  } finally {
    progress.stop();
    // After a job cancel the seconds left belong to the cancel: the last read is not waited for.
    const finished = live?.finish();
    if (!options.signal.aborted) await finished;
  }
}
