// How the main step ends, one function per way: the run ended, the deadline passed, the job was
// cancelled, or the step does not wait. Each reports from the last record it can read and marks
// the run settled when the post step has nothing left to do.

import * as core from '@actions/core';
import { formatDuration } from '../common/duration.js';
import type { AgentRunClient } from '../client/index.js';
import { cancelRemoteRun, readAfterCancel, stateAfterJobCancel } from './cancel.js';
import type { Settings } from './inputs.js';
import * as log from './log.js';
import { type Outcome, type Reporter, conclusionOf, durationOf } from './report.js';
import * as state from './state.js';

/** `wait: false`: outputs and a job summary from the record as it is now. */
export async function leaveRunning(
  client: AgentRunClient,
  reporter: Reporter,
  runId: string,
  startedAt: number
): Promise<void> {
  const run = await client.runs.get(runId, { signal: AbortSignal.timeout(30_000) }).catch(() => undefined);
  await reporter.final({
    runId,
    run,
    conclusion: conclusionOf(run?.state),
    durationMs: Date.now() - startedAt
  });
  state.markSettled();
  log.info(`Not waiting for run ${runId} (wait: false); it is ${run?.state ?? 'running'}.`);
}

/**
 * The run reached a terminal state: fail the step if `fail-on` lists it, or if it succeeded but
 * its answer does not end with a JSON object matching `output-schema`.
 */
export async function onEnd(settings: Settings, reporter: Reporter, outcome: Outcome): Promise<void> {
  const run = outcome.run!;
  const problem = outcome.produced?.structuredProblem;
  const badOutput = settings.outputSchema && problem && run.state === 'SUCCEEDED';
  const reviewProblem = outcome.produced?.reviewProblem;
  if (badOutput || reviewProblem) outcome.conclusion = 'failed';
  await reporter.final(outcome);
  state.markSettled();
  if (badOutput) {
    const what = settings.review ? 'its review findings are' : 'its structured output is';
    core.setFailed(`Run ${outcome.runId} succeeded, but ${what} missing or invalid: ${problem}`);
  } else if (reviewProblem) {
    core.setFailed(`Run ${outcome.runId} succeeded, but the step ${reviewProblem}`);
  } else if (settings.failOn.includes(run.state)) {
    const code = run.error_code ? ` (${run.error_code})` : '';
    const full = run.status_message || 'the service gave no status message';
    // The whole message is the status-message output; the annotation shows its start.
    const message = full.length > 4000 ? `${full.slice(0, 4000)}…` : full;
    const link = run.session_link && !outcome.linkShown ? `\nSession: ${run.session_link}` : '';
    core.setFailed(`Run ${outcome.runId} ended ${run.state}${code}: ${message}${link}`);
  } else {
    // The wait has logged the end state; the run's own duration is the one fact left to say.
    log.info(`The run took ${formatDuration(outcome.durationMs)}.`);
  }
}

/**
 * The run is BLOCKED and `on-blocked` is `fail`: the step ends now with the conclusion `blocked`.
 * The run is left as it is, so someone can still answer it in the session.
 */
export async function onBlocked(reporter: Reporter, outcome: Outcome): Promise<void> {
  await reporter.final(outcome);
  state.markSettled();
  const link =
    outcome.run?.session_link && !outcome.linkShown ? `\nSession: ${outcome.run.session_link}` : '';
  core.setFailed(
    `Run ${outcome.runId} is BLOCKED, waiting for user input or approval (on-blocked: fail); it is left as it is.${link}`
  );
}

/** The timeout passed: cancel the run (or leave it), then report the record as it is after that. */
export async function onDeadline(
  client: AgentRunClient,
  settings: Settings,
  reporter: Reporter,
  outcome: Outcome,
  startedAt: number,
  /** When the step's grace after the timeout ends; the cancel gets at least a few seconds anyway. */
  endBy = Date.now() + 25_000
): Promise<void> {
  // The wait may end before its first read (timeout shorter than the first poll): read it now, so the
  // message says the last state known rather than "unknown".
  outcome.run ??= await client.runs
    .get(outcome.runId, { signal: AbortSignal.timeout(5000) })
    .catch(() => undefined);
  const last = outcome.run?.state ?? 'unknown';
  let what = 'left it running (on-timeout: leave-running)';
  if (settings.onTimeout === 'cancel') {
    const reason = `timeout after ${formatDuration(settings.timeoutMs)}`;
    const left = () => Math.max(3000, endBy - Date.now());
    const result = await cancelRemoteRun(client, outcome.runId, reason, {
      timeoutMs: Math.min(20_000, left())
    });
    what = result === 'cancelled' ? 'cancelled it' : `could not cancel it (${result.replace('_', ' ')})`;
    const after = await client.runs
      .get(outcome.runId, { signal: AbortSignal.timeout(Math.min(10_000, left())) })
      .catch(() => undefined);
    outcome.run = after ?? outcome.run;
  }
  // The record read after the cancel: a cancelled run has ended, one left running has not.
  outcome.durationMs = durationOf(outcome.run, Date.now() - startedAt);
  await reporter.final(outcome);
  state.markSettled();
  core.setFailed(
    `Run ${outcome.runId} did not finish within ${formatDuration(settings.timeoutMs)} (last state ${last}); ${what}.`
  );
}

/** The job was cancelled: cancel the run quickly (the post step retries), then report. */
export async function onAbort(
  client: AgentRunClient,
  settings: Settings,
  reporter: Reporter,
  runId: string | undefined,
  startedAt: number
): Promise<void> {
  if (runId === undefined) {
    core.setFailed('The job was cancelled before the run was created.');
    return;
  }
  if (!settings.cancelOnAbort) {
    state.markSettled();
    core.setFailed(`The job was cancelled; run ${runId} keeps running (cancel-on-abort: false).`);
    return;
  }
  // The runner kills the step about 10 s after SIGINT: one quick attempt here, the post step retries.
  const result = await cancelRemoteRun(client, runId, 'the job was cancelled', {
    timeoutMs: 5000,
    maxRetries: 1
  });
  if (result !== 'failed') state.markSettled();
  const run = await readAfterCancel(client, runId);
  const conclusion = result === 'cancelled' ? 'cancelled' : conclusionOf(run?.state);
  const stateShown = stateAfterJobCancel(run, result);
  await reporter.final({
    runId,
    run,
    conclusion,
    durationMs: durationOf(run, Date.now() - startedAt),
    ...(stateShown === undefined ? {} : { stateShown })
  });
  core.setFailed(`The job was cancelled while waiting for run ${runId}.`);
}
