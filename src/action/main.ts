// The main step: read inputs → trust gate → create → wait → collect what the agent made → report.

import * as core from '@actions/core';
import { AbortError } from '../client/index.js';
import { StickyComment } from './comment.js';
import { type EventContext, readEventContext } from './context.js';
import { leaveRunning, onAbort, onBlocked, onDeadline, onEnd } from './endings.js';
import { type Admitted, admit } from './gate.js';
import { secretInputs } from './inputs.js';
import { postStep } from './post.js';
import { collectProducedSafely } from './produced.js';
import { createClient, createRun, waitWithProgress } from './remote.js';
import { type Outcome, Reporter, conclusionOf, durationOf } from './report.js';
import { onTermination } from './signals.js';
import * as state from './state.js';

/** Entry point of both steps: the runner calls the same bundle for `main` and `post`. */
export async function run(): Promise<void> {
  if (state.isPost()) return postStep();
  state.markPost();
  return mainStep();
}

async function mainStep(): Promise<void> {
  const startedAt = Date.now();
  for (const secret of secretInputs()) core.setSecret(secret);
  const event = readEventContext();
  const admitted = await admit(event);
  if (!admitted) return;
  const { settings } = admitted;
  const reporter = new Reporter(settings.summary, startedAt, progressComment(admitted, event));
  const termination = onTermination();
  const client = createClient(settings);
  let runId: string | undefined;
  try {
    runId = settings.create
      ? await createRun(client, settings.create, termination.graceSignal)
      : settings.runId;
    core.setOutput('run-id', runId);
    state.saveRunId(runId);
    if (!settings.wait) return await leaveRunning(client, reporter, runId, startedAt);

    const { timeoutMs } = settings;
    const result = await waitWithProgress(client, runId, {
      timeoutMs,
      startedAt,
      signal: termination.signal,
      reporter,
      logConversation: settings.logConversation,
      onBlocked: settings.onBlocked
    });
    const outcome: Outcome = {
      runId,
      run: result.run,
      conclusion: result.outcome === 'terminal' ? conclusionOf(result.run?.state) : result.outcome,
      durationMs: durationOf(result.run, Date.now() - startedAt)
    };
    outcome.produced = await collectProducedSafely(client, runId, result.run, {
      prompt: settings.create?.prompt,
      schema: settings.outputSchema,
      signal: termination.signal
    });
    if (result.outcome === 'timed_out') await onDeadline(client, settings, reporter, outcome, startedAt);
    else if (result.outcome === 'blocked') await onBlocked(reporter, outcome);
    else await onEnd(settings, reporter, outcome);
  } catch (error) {
    if (error instanceof AbortError && termination.signal.aborted) {
      await onAbort(client, settings, reporter, runId, startedAt);
    } else {
      // The job was not cancelled: leave the run alone rather than have the post step cancel it.
      state.markSettled();
      core.setFailed(error instanceof Error ? error.message : String(error));
    }
  } finally {
    termination.dispose();
    client.close();
  }
}

/** The progress comment on the pull request or issue, when asked for and there is one. */
function progressComment({ settings, github }: Admitted, event: EventContext) {
  if (settings.comment === 'off' || event.number === undefined) return undefined;
  // One comment per workflow, job and step, found again on later runs of the same step.
  const identity = [process.env.GITHUB_WORKFLOW, process.env.GITHUB_JOB, process.env.GITHUB_ACTION].join('/');
  return { mode: settings.comment, writer: new StickyComment(github, event.number, identity) };
}
