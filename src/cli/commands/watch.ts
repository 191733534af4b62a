// Waiting for a run from the command line, shared by `run` and `wait`: the state on stderr, the
// conversation streamed to stderr as it arrives, BLOCKED handled by --on-blocked, then the agent's
// answer on stdout (or, with --json, the record with result, structured output and artifacts).
// Ctrl-C: `run` cancels the run it created and says so; `wait` only watches, so it leaves the run
// alone. Both exit 130, the shell's code for an interrupted command.

import {
  AbortError,
  type AgentRunClient,
  type FollowPosition,
  type Run,
  RunFollower,
  type SchemaCheck,
  artifactsOf,
  finalAnswer,
  formatDuration,
  isTerminalState,
  isUnsupported,
  structuredOutput
} from '../../client/index.js';
import { CliError, EXIT, exitCodeOfState } from '../exit.js';
import type { Terminal } from '../terminal.js';

export interface WatchOptions {
  timeoutMs: number;
  onBlocked: 'fail' | 'wait';
  json: boolean;
  /** Checks the structured output at the end of the answer (`--output-schema`). */
  schema?: (value: unknown) => SchemaCheck;
  /** Show the conversation on stderr while waiting (default true). */
  live?: boolean;
  /** On Ctrl-C: cancel the run (`run`, which created it) or leave it running (`wait`, which only watches). */
  onInterrupt: 'cancel' | 'leave';
  /** Show only the progress after this point (`followup --wait`: the new turn, not the earlier ones). */
  from?: FollowPosition;
}

/** How a wait ended, by the wait's own end or by Ctrl-C or --on-blocked fail. */
type WatchOutcome = 'terminal' | 'timed_out' | 'blocked' | 'interrupted';

export async function watchRun(
  client: AgentRunClient,
  terminal: Terminal,
  runId: string,
  options: WatchOptions
): Promise<number> {
  const startedAt = Date.now();
  const waited = await followRun(client, terminal, runId, options, startedAt);
  if (waited.outcome === 'interrupted') return interruptedExit(client, terminal, runId, options);
  const run = (await client.runs.get(runId).catch(() => undefined)) ?? waited.run;
  const report = await finalReport(client, terminal, runId, run, options);
  if (options.json) terminal.json(report.json, 2);
  else if (report.answer !== undefined) terminal.out(report.answer);
  return endExit(terminal, runId, run, waited.outcome, options, Date.now() - startedAt, report);
}

/** Waits for the run, its state and conversation on stderr as they come, until it ends, the timeout, Ctrl-C or BLOCKED. */
async function followRun(
  client: AgentRunClient,
  terminal: Terminal,
  runId: string,
  options: WatchOptions,
  startedAt: number
): Promise<{ run: Run | undefined; outcome: WatchOutcome }> {
  const blocked = new AbortController();
  const interrupted = new AbortController();
  const onSignal = () => interrupted.abort(new Error('interrupted'));
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
  const follower = new RunFollower(client, runId, {
    onItems: items => {
      if (options.live === false) return;
      for (const line of terminal.renderItems(items, true)) terminal.note(line);
    },
    onNotice: message => terminal.note(message),
    from: options.from
  });
  follower.start();
  let run: Run | undefined;
  const showState = stateShower(terminal, runId, startedAt, follower, () => {
    if (options.onBlocked === 'fail') blocked.abort(new Error('blocked'));
  });
  try {
    const result = await client.runs.wait(runId, {
      timeoutMs: options.timeoutMs,
      signal: AbortSignal.any([blocked.signal, interrupted.signal]),
      onStateChange: next => {
        run = next;
        showState(next);
      },
      onUnknownState: state =>
        terminal.note(`run ${runId}: state ${state} is new to this client; still waiting`),
      onTransientError: (error, n) => terminal.note(`poll failed (${n} in a row), retrying: ${error.message}`)
    });
    return { run: result.run ?? run, outcome: result.outcome };
  } catch (error) {
    if (!(error instanceof AbortError)) throw error;
    return { run, outcome: blocked.signal.aborted ? 'blocked' : 'interrupted' };
  } finally {
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
    terminal.stopSpinner();
    await follower
      .finish()
      .catch(error => terminal.note(`could not read the last progress: ${error.message}`));
  }
}

/** Shows each change of state (the session link once, BLOCKED with a warning, which calls `onBlocked`). */
function stateShower(
  terminal: Terminal,
  runId: string,
  startedAt: number,
  follower: RunFollower,
  onBlocked: () => void
): (next: Run) => void {
  let sessionShown = false;
  return next => {
    // The terminal state is said once, by the last line; the session link once, when first known.
    if (isTerminalState(next.state)) terminal.stopSpinner();
    else terminal.showState(runId, next.state, startedAt);
    if (next.session_link && !sessionShown) {
      sessionShown = true;
      terminal.note(`Session: ${next.session_link}`);
    }
    void follower.onStateChange().catch(() => undefined);
    if (next.state === 'BLOCKED') {
      const link = next.session_link ? ` Approve or answer it at ${next.session_link}` : '';
      terminal.warn(`run ${runId} is BLOCKED: it waits for a person's input or approval.${link}`);
      onBlocked();
    }
  };
}

/** Ctrl-C: `wait` leaves the run running, `run` cancels it; both exit 130. */
async function interruptedExit(
  client: AgentRunClient,
  terminal: Terminal,
  runId: string,
  options: WatchOptions
): Promise<number> {
  if (options.onInterrupt === 'leave') {
    terminal.note(
      `Interrupted: stopped watching; run ${runId} keeps running (agent-run cancel ${runId} stops it).`
    );
    return EXIT.interrupted;
  }
  await client.runs.cancel(runId, { maxRetries: 1, reason: 'agent-run was interrupted' }).then(
    () => terminal.note(`Interrupted: cancelled run ${runId}.`),
    (error: Error) => terminal.warn(`Interrupted, and could not cancel run ${runId}: ${error.message}`)
  );
  return EXIT.interrupted;
}

/** The exit code of a wait that ended, said on stderr; a structured output that does not match throws. */
function endExit(
  terminal: Terminal,
  runId: string,
  run: Run | undefined,
  outcome: Exclude<WatchOutcome, 'interrupted'>,
  options: WatchOptions,
  waitedMs: number,
  report: FinalReport
): number {
  const elapsed = formatDuration(waitedMs);
  if (outcome === 'timed_out') {
    terminal.error(
      `run ${runId} did not end within ${formatDuration(options.timeoutMs)} (last state ${run?.state ?? 'unknown'}); ` +
        `it keeps running: agent-run cancel ${runId}`
    );
    return EXIT.timedOut;
  }
  if (outcome === 'blocked') {
    terminal.error(
      `run ${runId} is BLOCKED after ${elapsed} (--on-blocked fail); it keeps waiting for a person`
    );
    return EXIT.blocked;
  }
  const code = exitCodeOfState(run);
  if (code !== EXIT.ok) {
    const why = run?.status_message ? `: ${String(run.status_message)}` : '';
    const errorCode = run?.error_code ? ` (${run.error_code})` : '';
    terminal.error(`run ${runId} ended ${run?.state ?? 'unknown'}${errorCode}${why}`);
    return code;
  }
  terminal.note(`run ${runId} ended SUCCEEDED${took(run, waitedMs)}.`);
  if (report.structuredProblem)
    throw new CliError(`structured output: ${report.structuredProblem}`, EXIT.failed);
  return EXIT.ok;
}

/**
 * How long the run took, from its own record (as `get` shows it); the time this command waited only
 * when the record has no duration, or when it is much longer (the run queued long).
 */
export function took(run: Run | undefined, waitedMs: number): string {
  const start = Date.parse(run?.started_at ?? '');
  const end = Date.parse(run?.completed_at ?? '');
  if (Number.isNaN(start) || Number.isNaN(end) || end < start) return ` after ${formatDuration(waitedMs)}`;
  const durationMs = end - start;
  // Waiting less than the run took (it was already going) says nothing; waiting much longer (a
  // long queue) does.
  const differs = waitedMs - durationMs >= Math.max(2000, 0.2 * durationMs);
  return ` in ${formatDuration(durationMs)}${differs ? ` (waited ${formatDuration(waitedMs)})` : ''}`;
}

interface FinalReport {
  answer?: string;
  structuredProblem?: string;
  json: Record<string, unknown>;
}

/** The answer from the conversation, its structured output, and the record for --json. */
async function finalReport(
  client: AgentRunClient,
  terminal: Terminal,
  runId: string,
  run: Run | undefined,
  options: WatchOptions
): Promise<FinalReport> {
  let answer: string | undefined;
  try {
    answer = finalAnswer(await client.runs.conversation(runId));
  } catch (error) {
    if (!isUnsupported(error)) throw error;
    terminal.note('This service has no conversation endpoint, so there is no answer to print.');
  }
  let structured: Record<string, unknown> | null = null;
  let structuredProblem: string | undefined;
  if (options.schema) {
    const checked = structuredOutput(answer, options.schema);
    if (checked.ok) structured = checked.value;
    else structuredProblem = checked.reason;
  }
  return {
    answer,
    structuredProblem,
    json: {
      ...(run ?? { run_id: runId }),
      result: answer ?? null,
      structured_output: structured,
      artifacts: artifactsOf(run)
    }
  };
}
