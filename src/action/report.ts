// What the step leaves behind, written from one final run record: outputs and the job summary.

import * as core from '@actions/core';
import type { Run } from '../client/index.js';
import { formatDuration, isTerminalState } from '../api/index.js';
import type { StickyComment } from './comment.js';
import { artifactLines, code, escapeHtml, inert, link, resultMarkup } from './markup.js';
import type { Produced } from './produced.js';

export type Conclusion =
  'succeeded' | 'failed' | 'cancelled' | 'timed_out' | 'error' | 'blocked' | 'skipped' | '';

export interface Outcome {
  runId: string;
  /** The last record read, if any. */
  run?: Run;
  conclusion: Conclusion;
  durationMs: number;
  /** What the agent made, once read (see produced.ts). */
  produced?: Produced;
}

/** GitHub keeps step outputs under 1 MiB each; stay well below with room for the other outputs. */
const MAX_RUN_OUTPUT = 900 * 1024;
/** The job summary is capped at 1 MiB; a status message never needs more than this. */
const MAX_SUMMARY_MESSAGE = 64 * 1024;

export function conclusionOf(state: string | undefined): Conclusion {
  switch (state) {
    case 'SUCCEEDED':
      return 'succeeded';
    case 'FAILED':
      return 'failed';
    case 'CANCELLED':
      return 'cancelled';
    case 'ERROR':
      return 'error';
    default:
      return '';
  }
}

/**
 * Duration from the record's own timestamps once the run has ended, else as the action measured
 * it: a run still going has no end yet, and its `updated_at` is only its last change.
 */
export function durationOf(run: Run | undefined, measuredMs: number): number {
  const start = Date.parse(String(run?.created_at ?? ''));
  const ended = run?.completed_at ?? (run && isTerminalState(run.state) ? run.updated_at : undefined);
  const end = Date.parse(String(ended ?? ''));
  return Number.isFinite(start) && Number.isFinite(end) && end >= start ? end - start : measuredMs;
}

export function writeOutputs(outcome: Outcome): void {
  const run = outcome.run;
  core.setOutput('run-id', outcome.runId);
  core.setOutput('state', run?.state ?? '');
  core.setOutput('conclusion', outcome.conclusion);
  core.setOutput('session-link', run?.session_link ?? '');
  core.setOutput('status-message', run?.status_message ?? '');
  core.setOutput('error-code', run?.error_code ?? '');
  core.setOutput('duration-seconds', String(Math.round(outcome.durationMs / 1000)));
  core.setOutput('run', run ? runOutput(run) : '');
  core.setOutput('usage', usageOf(run) ? JSON.stringify(usageOf(run)) : '');
  writeProducedOutputs(outcome.produced);
}

/** The outputs of what the agent made; all empty when nothing was read. */
export function writeProducedOutputs(produced: Produced | undefined): void {
  core.setOutput('result', produced?.result ?? '');
  core.setOutput('structured-output', produced?.structured ?? '');
  core.setOutput('artifacts', produced?.artifactsListed ? artifactsOutput(produced) : '');
  core.setOutput('pull-request-url', produced?.pullRequestUrl ?? '');
  core.setOutput('branch', produced?.branch ?? '');
  core.setOutput('patch-file', produced?.patchFile ?? '');
  core.setOutput('transcript-file', produced?.transcriptFile ?? '');
}

/** The artifacts as JSON in the service's shape, or as many of them as fit the output limit. */
function artifactsOutput(produced: Produced, limit = MAX_RUN_OUTPUT): string {
  const list = [...produced.artifacts];
  while (list.length > 0 && Buffer.byteLength(JSON.stringify(list)) > limit) list.pop();
  return JSON.stringify(list);
}

/** The service's usage and cost figures (`request_usage`), when it sends them. */
export function usageOf(run: Run | undefined): Record<string, unknown> | undefined {
  const usage = run?.request_usage;
  return usage !== null && typeof usage === 'object' && !Array.isArray(usage)
    ? (usage as Record<string, unknown>)
    : undefined;
}

/** The record as JSON, still valid JSON when it has to be cut down to fit the output limit. */
export function runOutput(run: Run, limit = MAX_RUN_OUTPUT): string {
  const full = JSON.stringify(run);
  if (Buffer.byteLength(full) <= limit) return full;
  const trimmed: Record<string, unknown> = { ...run, truncated: true };
  for (const [key, value] of Object.entries(trimmed)) {
    if (typeof value === 'string' && value.length > 1024) trimmed[key] = `${value.slice(0, 1024)}…`;
    else if (value !== null && typeof value === 'object' && JSON.stringify(value).length > 4096) {
      trimmed[key] = '[omitted: too large for a step output]';
    }
  }
  const smaller = JSON.stringify(trimmed);
  if (Buffer.byteLength(smaller) <= limit) return smaller;
  return JSON.stringify({ run_id: run.run_id, state: run.state, truncated: true });
}

/** Rewrites this step's job summary (each step has its own summary file). */
export async function writeSummary(outcome: Outcome): Promise<void> {
  const run = outcome.run;
  const rows: [string, string][] = [
    ['Run', code(outcome.runId)],
    ['State', inert(run?.state ?? 'unknown')],
    ['Conclusion', escapeHtml(outcome.conclusion || 'not finished')],
    ['Duration', formatDuration(outcome.durationMs)]
  ];
  if (run?.title) rows.push(['Title', inert(String(run.title))]);
  if (run?.session_link) rows.push(['Session', link(run.session_link)]);
  if (run?.error_code) rows.push(['Error code', code(run.error_code)]);
  const usage = usageOf(run);
  if (usage) {
    const figures = Object.entries(usage).map(([name, value]) => `${name}: ${JSON.stringify(value)}`);
    rows.push(['Usage', inert(figures.join(', ').slice(0, 2000))]);
  }
  if (run?.state === 'BLOCKED') {
    rows.push([
      'Blocked',
      `The agent is waiting for user input or approval${run.session_link ? `: ${link(run.session_link)}` : ''}`
    ]);
  }
  const produced = outcome.produced;
  if (produced?.pullRequestUrl) rows.push(['Pull request', link(produced.pullRequestUrl)]);
  if (produced?.branch) rows.push(['Branch', code(produced.branch)]);
  const artifacts = artifactLines(produced);
  if (artifacts.length > 0) rows.push(['Artifacts', artifacts.join('<br>')]);
  if (produced?.result) rows.push(['Result', resultMarkup(produced.result)]);
  if (produced?.structuredProblem) rows.push(['Structured output', escapeHtml(produced.structuredProblem)]);
  if (run?.status_message) {
    const message = run.status_message;
    const cut = message.length > MAX_SUMMARY_MESSAGE ? `${message.slice(0, MAX_SUMMARY_MESSAGE)}…` : message;
    rows.push(['Status message', `<pre>${escapeHtml(cut)}</pre>`]);
  }
  await core.summary
    .emptyBuffer()
    .addHeading('Agent run', 3)
    .addTable([
      [
        { data: 'Field', header: true },
        { data: 'Value', header: true }
      ],
      ...rows.map(([field, value]) => [field, value])
    ])
    .write({ overwrite: true });
}

/** Everything the step reports, from one record: outputs, the job summary, the progress comment. */
export class Reporter {
  constructor(
    private readonly summary: boolean,
    private readonly startedAt: number,
    private readonly comment?: { mode: 'sticky' | 'final'; writer: StickyComment }
  ) {}

  /** On every state change: the summary and a sticky comment follow the run live. */
  progress(runId: string, run: Run): Promise<void> {
    return this.next(async () => {
      const elapsed = Date.now() - this.startedAt;
      await this.writeSummarySafely({ runId, run, conclusion: '', durationMs: elapsed });
      if (this.comment?.mode === 'sticky') await this.comment.writer.update(runId, run, elapsed);
    });
  }

  /** When the step does not wait (`wait: false`): outputs and summary of the run as it is now. */
  notWaiting(outcome: Outcome): Promise<void> {
    return this.next(async () => {
      writeOutputs(outcome);
      await this.writeSummarySafely(outcome);
    });
  }

  /** At the end: outputs, summary and comment from the final record, after any update in flight. */
  final(outcome: Outcome): Promise<void> {
    return this.next(async () => {
      writeOutputs(outcome);
      await this.writeSummarySafely(outcome);
      await this.comment?.writer.update(
        outcome.runId,
        outcome.run,
        Date.now() - this.startedAt,
        outcome.conclusion,
        outcome.produced
      );
    });
  }

  private chain: Promise<void> = Promise.resolve();
  private next(work: () => Promise<void>): Promise<void> {
    this.chain = this.chain.then(work, work);
    return this.chain;
  }

  /** A summary that cannot be written (no GITHUB_STEP_SUMMARY, say) must not change the step's outcome. */
  private async writeSummarySafely(outcome: Outcome): Promise<void> {
    if (!this.summary) return;
    try {
      await writeSummary(outcome);
    } catch (error) {
      if (!this.warned) core.warning(`Could not write the job summary: ${(error as Error).message}`);
      this.warned = true;
    }
  }

  private warned = false;
}
