// The step's calls to the service: the client it uses, the create, and the wait with its live
// progress (log lines, summary, comment).

import * as core from '@actions/core';
import { formatDuration } from '../api/index.js';
import { AgentRunClient, type WaitResult } from '../client/index.js';
import type { CreateSettings, Settings } from './inputs.js';
import { Progress } from './progress.js';
import type { Reporter } from './report.js';

export const USER_AGENT = 'agent-run-action/0.1.0';
/** About 15 s of backoff (0.5, 1, 2, 4, 8 s) before a create gives up. */
const CREATE_RETRIES = 5;

export function createClient(
  connection: Pick<Settings, 'baseUrl' | 'apiKey'>,
  userAgent = USER_AGENT
): AgentRunClient {
  return new AgentRunClient({
    baseUrl: connection.baseUrl,
    apiKey: connection.apiKey,
    userAgent,
    onRetry: info =>
      core.info(
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
    ...(create.title ? { title: create.title } : {})
  };
  // The idempotency key makes retrying a create safe, so it gets a larger budget than other calls.
  const created = await client.createRun(body, {
    idempotencyKey: create.idempotencyKey,
    signal,
    maxRetries: CREATE_RETRIES
  });
  core.info(`Created run ${created.run_id} in environment ${create.environmentId}.`);
  return created.run_id;
}

/** Waits for the run until the step's deadline, reporting every state change as it happens. */
export async function waitWithProgress(
  client: AgentRunClient,
  runId: string,
  options: { timeoutMs: number; startedAt: number; signal: AbortSignal; reporter: Reporter }
): Promise<WaitResult> {
  const { startedAt, reporter } = options;
  const progress = new Progress(runId, startedAt, run => void reporter.progress(runId, run));
  core.info(`Waiting for run ${runId} (timeout ${formatDuration(options.timeoutMs)}).`);
  return client
    .waitForRun(runId, {
      timeoutMs: options.timeoutMs - (Date.now() - startedAt),
      signal: options.signal,
      onStateChange: progress.onStateChange,
      onUnknownState: progress.onUnknownState,
      onTransientError: progress.onTransientError
    })
    .finally(() => progress.stop());
}
