// A fan-out step: one run per `fan-out` item, at most `max-parallel` in flight, all followed
// together until the step's timeout; then the gathered `runs` output, one row per item in the job
// summary and the progress comment (rewritten as the runs move), and the step's verdict from `fan-out-require` and `fail-on`. Each item's create carries its own
// idempotency key (inputs.ts), so a retried step finds its runs again instead of making more.

import * as core from '@actions/core';
import { isTerminalState } from '../api/index.js';
import { formatDuration } from '../common/duration.js';
import { AbortError, type AgentRunClient, type Run } from '../client/index.js';
import { cancelRemoteRun, readAfterCancel, stateAfterJobCancel } from './cancel.js';
import type { FanOutRow, StickyComment } from './comment.js';
import type { FanOutItem, FanOutSettings, Settings } from './inputs.js';
import * as log from './log.js';
import { code, escapeHtml, inert, link } from './markup.js';
import { capBytes, setOutput, toJson } from './step-outputs.js';
import { type Produced, collectProducedSafely } from './produced.js';
import { createRun } from './remote.js';
import { type Conclusion, conclusionOf, durationOf } from './report.js';
import type { Termination } from './signals.js';
import * as state from './state.js';

/** What reading what a run made may take after the run ended (or after the timeout's cancel). */
const READ_GRACE_MS = 30_000;
/** The `runs` output's budget; each item's answer gets its share of it. */
const RUNS_OUTPUT_BYTES = 900 * 1024;
/** Characters of an item's title or status message the summary shows. */
const SUMMARY_FIELD = 300;

/** How one item ended. */
export interface ItemEnd {
  item: FanOutItem;
  runId?: string;
  run?: Run;
  conclusion: Conclusion;
  durationMs: number;
  /** When the item's create was sent, and whether the item is over (its run ended, or never will). */
  startedAt?: number;
  over?: boolean;
  produced?: Produced;
  /** Why the run was never created or followed (the service refused the create, say). */
  problem?: string;
  /** The state shown for a run the job's cancel stopped (stateAfterJobCancel). */
  stateShown?: string;
}

/** What each item's run shares with the others: the client, the step's settings, its deadline and its progress. */
interface FanOutRun {
  client: AgentRunClient;
  settings: Settings;
  termination: Termination;
  /** Fires at the job's cancel or the step's timeout: items not started by then never are. */
  stop: AbortSignal;
  deadline: number;
  /** The ids of the runs created so far, saved for the post step. */
  runIds: string[];
  /** Rewrites the summary (and a sticky comment) as the runs move. */
  showProgress: () => void;
}

export async function fanOutStep(
  client: AgentRunClient,
  settings: Settings,
  fanOut: FanOutSettings,
  startedAt: number,
  termination: Termination,
  comment?: { mode: 'sticky' | 'final'; writer: StickyComment }
): Promise<void> {
  const deadline = startedAt + settings.timeoutMs;
  const timedOut = AbortSignal.timeout(Math.max(0, deadline - Date.now()));
  const stop = AbortSignal.any([termination.signal, timedOut]);
  const ends: ItemEnd[] = fanOut.items.map(item => ({ item, conclusion: '', durationMs: 0 }));
  const summary = new FanOutSummary(settings.summary, ends);
  // The comment follows the runs (sticky) or is written once at the end (final).
  const showProgress = () => {
    void summary.write();
    if (comment?.mode === 'sticky') void comment.writer.updateFanOut(rowsOf(ends), Date.now() - startedAt);
  };
  log.info(
    `Fan-out: ${fanOut.items.length} runs, at most ${fanOut.maxParallel} at once (fan-out-require: ${fanOut.require}).`
  );
  const step: FanOutRun = { client, settings, termination, stop, deadline, runIds: [], showProgress };

  // max-parallel workers take the items in order: a run is created as soon as one is free.
  let next = 0;
  const worker = async () => {
    while (next < ends.length) await runItem(step, ends[next++]!);
  };
  await Promise.all(Array.from({ length: Math.min(fanOut.maxParallel, ends.length) }, worker));

  if (termination.signal.aborted) await cancelAll(client, settings, ends);
  const verdict = judge(ends, fanOut, settings, termination.signal.aborted);
  writeFanOutOutputs(ends, verdict.conclusion, settings, Date.now() - startedAt);
  await summary.write(verdict.conclusion);
  await comment?.writer.updateFanOut(rowsOf(ends), Date.now() - startedAt, verdict.conclusion);
  state.markSettled();
  if (verdict.failure) core.setFailed(verdict.failure);
  else log.info(`Fan-out ${verdict.conclusion}: ${verdict.count}.`);
}

/** One item: creates its run (unless the step already ended), follows it and records how it ended. */
async function runItem(step: FanOutRun, end: ItemEnd): Promise<void> {
  const { client, termination } = step;
  const name = nameOf(end.item);
  const itemStart = Date.now();
  end.startedAt = itemStart;
  if (step.stop.aborted) {
    end.conclusion = termination.signal.aborted ? 'cancelled' : 'timed_out';
    end.problem = 'not started: the step ended first';
    return;
  }
  try {
    end.runId = await createRun(client, end.item.create, termination.graceSignal);
    step.runIds.push(end.runId);
    state.saveRunIds(step.runIds);
    if (end.item.index === 0) setOutput('run-id', end.runId);
    log.info(`${name}: run ${end.runId} created.`);
    await followItem(step, end, end.runId, name);
  } catch (error) {
    if (error instanceof AbortError && termination.signal.aborted) end.conclusion = 'cancelled';
    else {
      end.conclusion = end.conclusion || 'failed';
      end.problem = (error as Error).message;
      log.info(`${name}: ${end.problem}`);
    }
  } finally {
    end.durationMs = durationOf(end.run, Date.now() - itemStart);
    end.over = true;
    step.showProgress();
  }
}

/** Waits for an item's run until the step's deadline (cancelling it then, when asked) and reads what it made. */
async function followItem(step: FanOutRun, end: ItemEnd, runId: string, name: string): Promise<void> {
  const { client, settings, termination } = step;
  const result = await client.runs.wait(runId, {
    timeoutMs: Math.max(0, step.deadline - Date.now()),
    initialDelayMs: settings.pollIntervalMs,
    signal: termination.signal,
    onStateChange: run => {
      end.run = run;
      log.info(`${name}: run ${runId} is ${run.state}${run.session_link ? ` (${run.session_link})` : ''}.`);
      step.showProgress();
    }
  });
  end.run = result.run ?? end.run;
  if (result.outcome === 'timed_out') {
    end.conclusion = 'timed_out';
    if (settings.onTimeout === 'cancel') {
      await cancelRemoteRun(client, runId, `timeout after ${formatDuration(settings.timeoutMs)}`);
      end.run =
        (await client.runs.get(runId, { signal: AbortSignal.timeout(10_000) }).catch(() => undefined)) ??
        end.run;
    }
  } else end.conclusion = conclusionOf(end.run?.state);
  end.produced = await collectProducedSafely(client, runId, end.run, {
    prompt: end.item.create.prompt,
    schema: settings.outputSchema,
    signal: AbortSignal.any([termination.signal, AbortSignal.timeout(READ_GRACE_MS)]),
    deadlineNote: `reading what the run made took longer than ${READ_GRACE_MS / 1000} s`
  });
  if (settings.outputSchema && end.run?.state === 'SUCCEEDED' && end.produced?.structuredProblem)
    end.conclusion = 'failed';
}

/** The job was cancelled: every run still going is cancelled at once (the post step retries). */
async function cancelAll(client: AgentRunClient, settings: Settings, ends: ItemEnd[]): Promise<void> {
  if (!settings.cancelOnAbort) return;
  await Promise.all(
    ends
      .filter(end => end.runId !== undefined && !isTerminalState(end.run?.state ?? ''))
      .map(async end => {
        const result = await cancelRemoteRun(client, end.runId!, 'the job was cancelled', {
          timeoutMs: 5000,
          maxRetries: 1
        });
        end.conclusion = 'cancelled';
        // Read once, bounded: the table shows the state the cancel brought the run to.
        const run = await readAfterCancel(client, end.runId!);
        if (run) end.run = run;
        end.stateShown = stateAfterJobCancel(run ?? end.run, result);
      })
  );
}

/** The step's conclusion and, when the step fails, the message that says which items failed and why. */
export function judge(
  ends: ItemEnd[],
  fanOut: FanOutSettings,
  settings: Pick<Settings, 'failOn'>,
  aborted: boolean
): { conclusion: Conclusion; failure?: string; count: string } {
  const succeeded = ends.filter(end => end.conclusion === 'succeeded').length;
  const met = fanOut.require === 'all' ? succeeded === ends.length : succeeded > 0;
  const count = `${succeeded} of ${ends.length} runs succeeded (fan-out-require: ${fanOut.require})`;
  if (met) return { conclusion: 'succeeded', count };
  const conclusion: Conclusion = aborted
    ? 'cancelled'
    : ends.some(end => end.conclusion === 'timed_out')
      ? 'timed_out'
      : 'failed';
  // An item counts against the step when fail-on lists its state, or it never got a state at all.
  const failing = ends.filter(
    end =>
      end.conclusion !== 'succeeded' &&
      (end.run === undefined ||
        end.conclusion === 'timed_out' ||
        end.problem !== undefined ||
        settings.failOn.includes(end.run.state) ||
        (end.run.state === 'SUCCEEDED' && end.conclusion === 'failed'))
  );
  if (failing.length === 0 && !aborted) return { conclusion, count };
  const lines = failing.map(end => `- ${nameOf(end.item)}: ${describeEnd(end)}`);
  return {
    conclusion,
    count,
    failure: `Fan-out ${conclusion}: ${count}.${lines.length ? `\n${lines.join('\n')}` : ''}`
  };
}

function describeEnd(end: ItemEnd): string {
  if (end.problem !== undefined) return end.runId ? `run ${end.runId}: ${end.problem}` : end.problem;
  const run = end.run;
  if (!run) return `run ${end.runId ?? '(none)'}: no state was read`;
  if (end.conclusion === 'timed_out')
    return `run ${end.runId} did not finish in time (last state ${run.state})`;
  if (run.state === 'SUCCEEDED')
    return `run ${end.runId} succeeded, but its structured output is missing or invalid: ${end.produced?.structuredProblem ?? ''}`;
  const code = run.error_code ? ` (${run.error_code})` : '';
  const message = String(run.status_message || 'the service gave no status message');
  return `run ${end.runId} ended ${run.state}${code}: ${message.length > 2000 ? `${message.slice(0, 2000)}…` : message}`;
}

/** `fan-out[2] "Security review"`: how logs and messages name an item. */
function nameOf(item: FanOutItem): string {
  const title = item.create.title;
  return `fan-out[${item.index}]${title ? ` ${JSON.stringify(title.length > 80 ? `${title.slice(0, 80)}…` : title)}` : ''}`;
}

/** The progress comment's rows: what each item's run is doing now, or how it ended. */
function rowsOf(ends: ItemEnd[]): FanOutRow[] {
  return ends.map(end => {
    const run = end.run;
    const message = run?.status_message ?? end.problem;
    return {
      index: end.item.index,
      ...(end.item.create.title ? { title: end.item.create.title } : {}),
      // A run still going when the step ended (the job was cancelled) shows what the step did to it.
      state:
        end.stateShown ??
        (end.over && end.conclusion && run && !isTerminalState(run.state)
          ? `${run.state}, ${end.conclusion}`
          : (run?.state ?? (end.problem ? 'not created' : end.runId ? 'QUEUED' : 'waiting'))),
      ended: end.over === true || isTerminalState(run?.state ?? ''),
      ...(message ? { message: String(message) } : {}),
      ...(end.startedAt === undefined
        ? {}
        : { durationMs: end.over ? end.durationMs : Date.now() - end.startedAt }),
      ...(end.runId ? { runId: end.runId } : {}),
      ...(run?.session_link ? { sessionLink: run.session_link } : {})
    };
  });
}

/** One entry of the `runs` output. */
function runEntry(end: ItemEnd, resultBytes: number, withSchema: boolean): Record<string, unknown> {
  const run = end.run;
  const result = capBytes(end.produced?.result ?? '', resultBytes);
  return {
    index: end.item.index,
    title: end.item.create.title ?? null,
    run_id: end.runId ?? null,
    state: run?.state ?? null,
    conclusion: end.conclusion,
    session_link: run?.session_link ?? null,
    status_message: run?.status_message ?? end.problem ?? null,
    error_code: run?.error_code ?? null,
    duration_seconds: Math.round(end.durationMs / 1000),
    result: result.text,
    ...(result.cut ? { result_truncated: true } : {}),
    ...(withSchema
      ? {
          structured_output: end.produced?.structured
            ? (JSON.parse(end.produced.structured) as unknown)
            : null,
          ...(end.produced?.structuredProblem
            ? { structured_output_problem: end.produced.structuredProblem }
            : {})
        }
      : {}),
    artifacts: end.produced?.artifacts ?? []
  };
}

/** The step's outputs: `runs` in input order, the overall conclusion, the first run's id. */
export function writeFanOutOutputs(
  ends: ItemEnd[],
  conclusion: Conclusion,
  settings: Pick<Settings, 'outputSchema'>,
  durationMs: number
): void {
  const withSchema = settings.outputSchema !== undefined;
  // Each answer gets its share of the output's budget; a list still too large loses its artifacts.
  const share = Math.floor((RUNS_OUTPUT_BYTES * 0.8) / Math.max(1, ends.length));
  let entries = ends.map(end => runEntry(end, share, withSchema));
  let json = toJson(entries) ?? '[]';
  if (Buffer.byteLength(json) > RUNS_OUTPUT_BYTES) {
    entries = entries.map(entry => ({ ...entry, artifacts: [], artifacts_omitted: true }));
    json = toJson(entries) ?? '[]';
  }
  setOutput('runs', json);
  setOutput('conclusion', conclusion);
  setOutput('run-id', ends[0]?.runId ?? '');
  setOutput('result', '');
  setOutput('structured-output', '');
  setOutput('duration-seconds', String(Math.round(durationMs / 1000)));
}

/** The job summary: one row per item (title, state, duration, session), rewritten as runs change. */
class FanOutSummary {
  private chain: Promise<void> = Promise.resolve();
  private warned = false;

  constructor(
    private readonly enabled: boolean,
    private readonly ends: ItemEnd[]
  ) {}

  write(conclusion?: Conclusion): Promise<void> {
    if (!this.enabled) return Promise.resolve();
    const work = () =>
      this.render(conclusion).catch((error: unknown) => {
        if (!this.warned) core.warning(`Could not write the job summary: ${(error as Error).message}`);
        this.warned = true;
      });
    this.chain = this.chain.then(work, work);
    return this.chain;
  }

  private async render(conclusion?: Conclusion): Promise<void> {
    const clip = (text: string) => (text.length > SUMMARY_FIELD ? `${text.slice(0, SUMMARY_FIELD)}…` : text);
    const rows = this.ends.map(end => {
      const run = end.run;
      const message = run?.status_message ?? end.problem;
      return [
        String(end.item.index),
        inert(clip(end.item.create.title ?? '')),
        inert(clip(end.stateShown ?? run?.state ?? (end.problem ? 'not created' : 'waiting'))) +
          (message ? `<br>${inert(clip(String(message)))}` : ''),
        end.durationMs ? formatDuration(end.durationMs) : '',
        run?.session_link ? link(run.session_link, 'session') : end.runId ? code(end.runId) : ''
      ];
    });
    await core.summary
      .emptyBuffer()
      .addHeading('Agent runs (fan-out)', 3)
      .addRaw(`<p>Conclusion: ${escapeHtml(conclusion || 'not finished')}</p>`, true)
      .addTable([
        ['#', 'Title', 'State', 'Duration', 'Session'].map(data => ({ data, header: true })),
        ...rows
      ])
      .write({ overwrite: true });
  }
}
