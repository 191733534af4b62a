// The main step: read inputs → trust gate → create → wait → collect what the agent made → report.

import * as core from '@actions/core';
import { formatDuration } from '../common/duration.js';
import { AbortError, type AgentRunClient } from '../client/index.js';
import { StickyComment } from './comment.js';
import { type EventContext, readEventContext } from './context.js';
import { leaveRunning, onAbort, onBlocked, onDeadline, onEnd } from './endings.js';
import { type Admitted, admit } from './gate.js';
import { fanOutStep } from './fan-out.js';
import { secretInputs } from './inputs.js';
import { setOutput } from './step-outputs.js';
import { postStep } from './post.js';
import { collectProducedSafely } from './produced.js';
import { readPlan } from './plan-approval.js';
import { createClient, waitWithProgress } from './remote.js';
import { type Outcome, Reporter, conclusionOf, durationOf } from './report.js';
import { type Termination, onTermination } from './signals.js';
import * as state from './state.js';
import { NothingToDo, type Turn, startTurn } from './thread.js';
import { type Finding, type ReviewContext, postReview, readReviewContext } from './review.js';
import type { Produced } from './produced.js';
import type { FanOutSettings, Settings } from './inputs.js';
import type { GitHubApi } from './github.js';

/**
 * After `timeout`, reading what the run made (the rest of the conversation, the answer, the patch)
 * and, at a timeout, cancelling the run share `timeout-grace` (default 30 s), and no more: a slow
 * service cannot keep the step alive. At a timeout, this much of the grace (at most a third of it)
 * is kept for the cancel.
 */
const CANCEL_RESERVE_MS = 10_000;

/** Entry point of both steps: the runner calls the same bundle for `main` and `post`. */
export async function run(): Promise<void> {
  if (state.isPost()) return postStep();
  state.markPost();
  return mainStep();
}

/** The progress comment of the step, when it writes one. */
type ProgressComment = ReturnType<typeof progressComment>;

/** What following one run's turn needs: the step's parts, set up once by `mainStep`. */
interface StepParts {
  admitted: Admitted;
  client: AgentRunClient;
  reporter: Reporter;
  termination: Termination;
  comment: ProgressComment;
  startedAt: number;
}

async function mainStep(): Promise<void> {
  const startedAt = Date.now();
  for (const secret of secretInputs()) core.setSecret(secret);
  const event = readEventContext();
  const admitted = await admit(event);
  if (!admitted) return;
  const { settings } = admitted;
  const comment = progressComment(admitted, event);
  const reporter = new Reporter(settings.summary, startedAt, comment);
  const termination = onTermination();
  const client = createClient(settings);
  if (settings.fanOut) return fanOutMain(client, settings, settings.fanOut, startedAt, termination, comment);
  let runId: string | undefined;
  try {
    const reviewContext = settings.review && (await reviewBase(admitted, event));
    const turn = await startTurn(client, settings, event, comment?.writer, termination.graceSignal);
    runId = turn.runId;
    if (comment) comment.writer.mode = turn.mode;
    setOutput('run-id', runId);
    state.saveRunId(runId);
    if (!settings.wait) return await leaveRunning(client, reporter, runId, startedAt);
    await followTurn({ admitted, client, reporter, termination, comment, startedAt }, turn, reviewContext);
  } catch (error) {
    await stepFailed(error, client, settings, reporter, runId, startedAt, termination);
  } finally {
    termination.dispose();
    client.close();
  }
}

/** A fan-out step: its runs followed by fan-out.ts; any error fails the step. */
async function fanOutMain(
  client: AgentRunClient,
  settings: Settings,
  fanOut: FanOutSettings,
  startedAt: number,
  termination: Termination,
  comment: ProgressComment
): Promise<void> {
  try {
    return await fanOutStep(client, settings, fanOut, startedAt, termination, comment);
  } catch (error) {
    core.setFailed(error instanceof Error ? error.message : String(error));
    return;
  } finally {
    termination.dispose();
    client.close();
  }
}

/**
 * Waits for the turn's run until the step's deadline, reads what it made (and posts the review or
 * reads the plan), then ends the step as the run ended, timed out or was blocked.
 */
async function followTurn(
  parts: StepParts,
  turn: Turn,
  reviewContext: ReviewContext | undefined
): Promise<void> {
  const { admitted, client, reporter, termination, comment, startedAt } = parts;
  const { settings } = admitted;
  const runId = turn.runId;
  const { timeoutMs, graceMs } = settings;
  const endBy = startedAt + timeoutMs + graceMs;
  const deadlineNote = `the step's deadline (timeout ${formatDuration(timeoutMs)} + ${graceMs / 1000} s) passed`;
  const until = (reserveMs = 0) =>
    AbortSignal.any([termination.signal, AbortSignal.timeout(Math.max(0, endBy - reserveMs - Date.now()))]);
  const result = await waitWithProgress(client, runId, {
    endSignal: until(),
    timeoutMs,
    startedAt,
    signal: termination.signal,
    reporter,
    logConversation: settings.logConversation,
    onBlocked: settings.onBlocked,
    pollIntervalMs: settings.pollIntervalMs
  });
  const outcome: Outcome = {
    runId,
    run: result.run,
    conclusion: result.outcome === 'terminal' ? conclusionOf(result.run?.state) : result.outcome,
    // A follow-up's record spans every turn: this turn is what the step measured.
    durationMs: turn.followup ? Date.now() - startedAt : durationOf(result.run, Date.now() - startedAt),
    linkShown: result.linkShown
  };
  const timedOut = result.outcome === 'timed_out';
  outcome.produced = await collectProducedSafely(client, runId, result.run, {
    prompt: turn.request,
    schema: settings.outputSchema,
    signal: until(timedOut ? Math.min(CANCEL_RESERVE_MS, graceMs / 3) : 0),
    deadlineNote
  });
  if (reviewContext && result.outcome === 'terminal' && result.run?.state === 'SUCCEEDED')
    await review(admitted, reviewContext, outcome.produced, until(0), deadlineNote);
  if (turn.mode === 'plan' && comment && result.run?.state === 'SUCCEEDED')
    comment.writer.plan = await readPlan(client, result.run, until(0));
  if (timedOut) await onDeadline(client, settings, reporter, outcome, startedAt, endBy);
  else if (result.outcome === 'blocked') await onBlocked(reporter, outcome);
  else await onEnd(settings, reporter, outcome);
}

/** How a single-run step that threw ends: nothing to do, the job's cancel, or a failure. */
async function stepFailed(
  error: unknown,
  client: AgentRunClient,
  settings: Settings,
  reporter: Reporter,
  runId: string | undefined,
  startedAt: number,
  termination: Termination
): Promise<void> {
  if (error instanceof NothingToDo) {
    setOutput('conclusion', 'skipped');
    state.markSettled();
    core.notice(error.message);
  } else if (error instanceof AbortError && termination.signal.aborted) {
    await onAbort(client, settings, reporter, runId, startedAt);
  } else {
    // The job was not cancelled: leave the run alone rather than have the post step cancel it.
    state.markSettled();
    core.setFailed(error instanceof Error ? error.message : String(error));
  }
}

/** The pull request's head and diff, read before the run starts; the step fails if they cannot be. */
async function reviewBase({ settings, github }: Admitted, event: EventContext): Promise<ReviewContext> {
  try {
    const api = await github();
    return await readReviewContext(api, settings.review!, event.pr?.headSha);
  } catch (error) {
    throw new Error(
      `review: inline could not read pull request #${settings.review!.pullNumber}'s files (${(error as Error).message}). The workflow needs \`permissions: pull-requests: write\` to review.`
    );
  }
}

/** Posts the findings of a run that succeeded with a valid findings object as the review. */
async function review(
  { settings, github }: { settings: Settings; github: () => Promise<GitHubApi> },
  context: ReviewContext,
  produced: Produced | undefined,
  deadline: AbortSignal,
  deadlineNote: string
): Promise<void> {
  if (!produced?.structured) return;
  try {
    const value = JSON.parse(produced.structured) as { summary: string; findings: Finding[] };
    // The step's deadline bounds the review too: GitHub stalling never holds the job.
    const passed = new Promise<never>((_, reject) => {
      const refuse = () => reject(new Error(deadlineNote));
      if (deadline.aborted) refuse();
      else deadline.addEventListener('abort', refuse, { once: true });
    });
    produced.review = await Promise.race([
      (async () =>
        postReview(await github(), settings.review!, value, context, message => core.notice(message)))(),
      passed
    ]);
  } catch (error) {
    produced.reviewProblem = `could not post the review on #${settings.review!.pullNumber}: ${(error as Error).message}`;
  }
}

/** The progress comment on the pull request or issue, when asked for and there is one. */
function progressComment({ settings, github }: Admitted, event: EventContext) {
  if (settings.comment === 'off' || event.number === undefined) return undefined;
  // One comment per workflow, job and step, found again on later runs of the same step.
  const identity = [process.env.GITHUB_WORKFLOW, process.env.GITHUB_JOB, process.env.GITHUB_ACTION].join('/');
  const writer = new StickyComment(github, event.number, identity);
  writer.approvePhrase = settings.thread.approvePhrase;
  writer.showSessionLink = settings.commentSessionLink;
  return { mode: settings.comment, writer };
}
