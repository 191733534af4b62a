// The main step: read inputs → trust gate → create → announce → wait → report.

import * as core from '@actions/core';
import { formatDuration } from '../api/index.js';
import { AbortError, AgentRunClient } from '../client/index.js';
import { cancelRemoteRun } from './cancel.js';
import { StickyComment } from './comment.js';
import { type EventContext, readEventContext } from './context.js';
import { type GitHubApi, createGitHubApi } from './github.js';
import { type Settings, readSettings } from './inputs.js';
import { postStep } from './post.js';
import { Progress } from './progress.js';
import { type Outcome, Reporter, conclusionOf, durationOf, writeOutputs } from './report.js';
import { onTermination } from './signals.js';
import { checkTrust } from './trust.js';

export const USER_AGENT = 'agent-run-action/0.1.0';
/** About 15 s of backoff (0.5, 1, 2, 4, 8 s) before a create gives up. */
const CREATE_RETRIES = 5;

/** Entry point of both steps: the runner calls the same bundle for `main` and `post`. */
export async function run(): Promise<void> {
  if (core.getState('isPost') === 'true') return postStep();
  core.saveState('isPost', 'true');
  return mainStep();
}

async function mainStep(): Promise<void> {
  const startedAt = Date.now();
  for (const secret of ['api-key', 'github-token']) {
    const value = core.getInput(secret).trim();
    if (value !== '') core.setSecret(value);
  }
  const event = readEventContext();
  const settings = prepare(event);
  if (!settings) return;
  const github = lazyGitHub(settings, event);
  const verdict = await checkTrust(settings.trust, event, github);
  if (!verdict.run) return skip(settings, `Not starting the agent: ${verdict.why}.`);
  if (verdict.why) core.info(`Trust gate passed: ${verdict.why}.`);
  for (const note of settings.promptNotes) core.notice(`Prompt: ${note}.`);

  const comment =
    settings.comment !== 'off' && event.number !== undefined
      ? { mode: settings.comment, writer: new StickyComment(github, event.number, commentIdentity()) }
      : undefined;
  const reporter = new Reporter(settings.summary, startedAt, comment);
  const termination = onTermination();
  const client = createClient(settings);
  let runId = settings.runId;
  try {
    runId ??= await createRun(client, settings, termination.graceSignal);
    core.setOutput('run-id', runId);
    core.saveState('run-id', runId);
    if (!settings.wait) return await leaveRunning(client, runId, startedAt);

    const id = runId;
    const progress = new Progress(runId, startedAt, run => void reporter.progress(id, run));
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
    if (result.outcome === 'timed_out') await onDeadline(client, settings, reporter, outcome);
    else await onEnd(settings, reporter, outcome);
  } catch (error) {
    if (error instanceof AbortError && termination.signal.aborted) {
      await onAbort(client, settings, reporter, runId, startedAt);
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

/** Reads the inputs; a fork or Dependabot without secrets is skipped, not failed. */
function prepare(event: EventContext): Settings | undefined {
  const noKey = core.getInput('api-key').trim() === '';
  if (noKey && (event.pr?.fromFork || event.actor === 'dependabot[bot]')) {
    const who = event.pr?.fromFork
      ? `pull request #${event.pr.number} comes from a fork`
      : 'Dependabot triggered it';
    const onUntrusted = core.getInput('on-untrusted').trim().toLowerCase();
    skip(
      { onUntrusted: onUntrusted === 'fail' ? 'fail' : 'skip' },
      `Not starting the agent: ${who}, and GitHub gives such workflows no secrets, so api-key is empty.`
    );
    return undefined;
  }
  try {
    return readSettings(name => core.getInput(name), process.env, undefined, event);
  } catch (error) {
    core.setFailed((error as Error).message);
    return undefined;
  }
}

function skip(settings: Pick<Settings, 'onUntrusted'>, message: string): void {
  core.setOutput('conclusion', 'skipped');
  core.saveState('settled', 'true');
  if (settings.onUntrusted === 'fail') core.setFailed(message);
  else core.notice(message);
}

function lazyGitHub(settings: Settings, event: EventContext): () => Promise<GitHubApi> {
  let api: Promise<GitHubApi> | undefined;
  return () => {
    if (!settings.githubToken) return Promise.reject(new Error('github-token is empty'));
    api ??= createGitHubApi(settings.githubToken, event.repo);
    return api;
  };
}

/** One comment per workflow, job and step, found again on later runs of the same step. */
function commentIdentity(): string {
  return [process.env.GITHUB_WORKFLOW, process.env.GITHUB_JOB, process.env.GITHUB_ACTION].join('/');
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
  // The idempotency key makes retrying a create safe, so it gets a larger budget than other calls.
  const created = await client.createRun(body, {
    idempotencyKey: create.idempotencyKey,
    signal,
    maxRetries: CREATE_RETRIES
  });
  core.info(`Created run ${created.run_id} in environment ${create.environmentId}.`);
  return created.run_id;
}

async function leaveRunning(client: AgentRunClient, runId: string, startedAt: number): Promise<void> {
  const run = await client.getRun(runId).catch(() => undefined);
  writeOutputs({ runId, run, conclusion: conclusionOf(run?.state), durationMs: Date.now() - startedAt });
  core.saveState('settled', 'true');
  core.info(`Not waiting for run ${runId} (wait: false); it is ${run?.state ?? 'running'}.`);
}

async function onEnd(settings: Settings, reporter: Reporter, outcome: Outcome): Promise<void> {
  await reporter.final(outcome);
  core.saveState('settled', 'true');
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

async function onDeadline(client: AgentRunClient, settings: Settings, reporter: Reporter, outcome: Outcome) {
  const last = outcome.run?.state ?? 'unknown';
  let what = 'left it running (on-timeout: leave-running)';
  if (settings.onTimeout === 'cancel') {
    const result = await cancelRemoteRun(client, outcome.runId, 'timeout');
    what = result === 'cancelled' ? 'cancelled it' : `could not cancel it (${result.replace('_', ' ')})`;
    outcome.run = (await client.getRun(outcome.runId).catch(() => undefined)) ?? outcome.run;
  }
  await reporter.final(outcome);
  core.saveState('settled', 'true');
  core.setFailed(
    `Run ${outcome.runId} did not finish within ${formatDuration(settings.timeoutMs)} (last state ${last}); ${what}.`
  );
}

async function onAbort(
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
  const run = await client.getRun(runId, { signal: AbortSignal.timeout(2000) }).catch(() => undefined);
  const conclusion = result === 'cancelled' ? 'cancelled' : conclusionOf(run?.state);
  await reporter.final({ runId, run, conclusion, durationMs: Date.now() - startedAt });
  core.setFailed(`The job was cancelled while waiting for run ${runId}.`);
}
