// The main step: read inputs → create → announce → wait → report.

import * as core from '@actions/core';
import { AbortError, AgentRunClient } from '../client/index.js';
import { cancelRemoteRun } from './cancel.js';
import { formatDuration } from '../api/index.js';
import { type Settings, readSettings } from './inputs.js';
import { postStep } from './post.js';
import { Progress } from './progress.js';
import { type Outcome, conclusionOf, durationOf, writeOutputs, writeSummary } from './report.js';
import { onTermination } from './signals.js';

export const USER_AGENT = 'agent-run-action/0.1.0';

/** Entry point of both steps: the runner calls the same bundle for `main` and `post`. */
export async function run(): Promise<void> {
  if (core.getState('isPost') === 'true') return postStep();
  core.saveState('isPost', 'true');
  return mainStep();
}

async function mainStep(): Promise<void> {
  const startedAt = Date.now();
  const rawKey = core.getInput('api-key').trim();
  if (rawKey !== '') core.setSecret(rawKey);
  let settings: Settings;
  try {
    settings = readSettings(name => core.getInput(name));
  } catch (error) {
    core.setFailed((error as Error).message);
    return;
  }
  const termination = onTermination();
  const client = createClient(settings);
  let runId = settings.runId;
  try {
    runId ??= await createRun(client, settings, termination.graceSignal);
    core.setOutput('run-id', runId);
    core.saveState('run-id', runId);
    if (!settings.wait) return await leaveRunning(client, runId, startedAt, 'wait is false');

    const progress = new Progress(runId, startedAt);
    core.info(`Waiting for run ${runId} (timeout ${formatDuration(settings.timeoutMs)}).`);
    const result = await client
      .waitForRun(runId, {
        timeoutMs: settings.timeoutMs - (Date.now() - startedAt),
        signal: termination.signal,
        onStateChange: progress.onStateChange,
        onUnknownState: progress.onUnknownState,
        onTransientError: progress.onTransientError
      })
      .finally(() => progress.stop());
    const outcome: Outcome = {
      runId,
      run: result.run,
      conclusion: result.outcome === 'timed_out' ? 'timed_out' : conclusionOf(result.run?.state),
      durationMs: durationOf(result.run, Date.now() - startedAt)
    };
    if (result.outcome === 'timed_out') await onDeadline(client, settings, outcome);
    else await report(settings, outcome);
  } catch (error) {
    if (error instanceof AbortError && termination.signal.aborted) {
      await onAbort(client, settings, runId, startedAt);
    } else {
      // The job was not cancelled: leave the run alone rather than have the post step cancel it.
      core.saveState('settled', 'true');
      core.setFailed(error instanceof Error ? error.message : String(error));
    }
  } finally {
    termination.dispose();
    client.close();
  }
}

function createClient(settings: Settings): AgentRunClient {
  return new AgentRunClient({
    baseUrl: settings.baseUrl,
    apiKey: settings.apiKey,
    userAgent: USER_AGENT,
    onRetry: info =>
      core.info(
        `Retrying ${info.request} in ${(info.delayMs / 1000).toFixed(1)} s (retry ${info.retry}): ${info.reason}`
      )
  });
}

async function createRun(client: AgentRunClient, settings: Settings, signal: AbortSignal): Promise<string> {
  const create = settings.create!;
  const body = {
    prompt: create.prompt,
    config: create.config,
    ...(create.title ? { title: create.title } : {})
  };
  const created = await client.createRun(body, { idempotencyKey: create.idempotencyKey, signal });
  core.info(`Created run ${created.run_id} in environment ${create.environmentId}.`);
  return created.run_id;
}

async function leaveRunning(client: AgentRunClient, runId: string, startedAt: number, why: string) {
  const run = await client.getRun(runId).catch(() => undefined);
  writeOutputs({ runId, run, conclusion: conclusionOf(run?.state), durationMs: Date.now() - startedAt });
  core.saveState('settled', 'true');
  core.info(`Not waiting for run ${runId} (${why}); it is ${run?.state ?? 'running'}.`);
}

async function report(settings: Settings, outcome: Outcome): Promise<void> {
  writeOutputs(outcome);
  core.saveState('settled', 'true');
  await summarise(settings, outcome);
  const run = outcome.run!;
  if (settings.failOn.includes(run.state)) {
    const code = run.error_code ? ` (${run.error_code})` : '';
    const message = run.status_message || 'the service gave no status message';
    const link = run.session_link ? `\nSession: ${run.session_link}` : '';
    core.setFailed(`Run ${outcome.runId} ended ${run.state}${code}: ${message}${link}`);
  } else {
    core.info(`Run ${outcome.runId} ended ${run.state} after ${formatDuration(outcome.durationMs)}.`);
  }
}

/** A summary that cannot be written (no GITHUB_STEP_SUMMARY, say) must not change the step's outcome. */
async function summarise(settings: Settings, outcome: Outcome): Promise<void> {
  if (!settings.summary) return;
  try {
    await writeSummary(outcome);
  } catch (error) {
    core.warning(`Could not write the job summary: ${(error as Error).message}`);
  }
}

async function onDeadline(client: AgentRunClient, settings: Settings, outcome: Outcome): Promise<void> {
  const last = outcome.run?.state ?? 'unknown';
  let what = 'left it running (on-timeout: leave-running)';
  if (settings.onTimeout === 'cancel') {
    const result = await cancelRemoteRun(client, outcome.runId, 'timeout');
    what = result === 'cancelled' ? 'cancelled it' : `could not cancel it (${result.replace('_', ' ')})`;
    outcome.run = (await client.getRun(outcome.runId).catch(() => undefined)) ?? outcome.run;
  }
  writeOutputs(outcome);
  core.saveState('settled', 'true');
  await summarise(settings, outcome);
  core.setFailed(
    `Run ${outcome.runId} did not finish within ${formatDuration(settings.timeoutMs)} (last state ${last}); ${what}.`
  );
}

async function onAbort(
  client: AgentRunClient,
  settings: Settings,
  runId: string | undefined,
  startedAt: number
) {
  if (runId === undefined) {
    core.setFailed('The job was cancelled before the run was created.');
    return;
  }
  if (!settings.cancelOnAbort) {
    core.saveState('settled', 'true');
    core.setFailed(`The job was cancelled; run ${runId} keeps running (cancel-on-abort: false).`);
    return;
  }
  // The runner kills the step about 10 s after SIGINT: one quick attempt here, the post step retries.
  const result = await cancelRemoteRun(client, runId, 'the job was cancelled', {
    timeoutMs: 5000,
    maxRetries: 1
  });
  if (result !== 'failed') core.saveState('settled', 'true');
  const run =
    result === 'cancelled'
      ? undefined
      : await client.getRun(runId, { signal: AbortSignal.timeout(2000) }).catch(() => undefined);
  const conclusion = result === 'cancelled' ? 'cancelled' : conclusionOf(run?.state);
  writeOutputs({ runId, run, conclusion, durationMs: Date.now() - startedAt });
  core.setFailed(`The job was cancelled while waiting for run ${runId}.`);
}
