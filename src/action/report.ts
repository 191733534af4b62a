// What the step leaves behind, written from one final run record: outputs and the job summary.

import * as core from '@actions/core';
import type { Run } from '../client/index.js';
import { isTerminalState } from '../api/index.js';
import { formatDuration } from '../common/duration.js';
import type { StickyComment } from './comment.js';
import { artifactLines, block, code, escapeHtml, inert, link, resultMarkup } from './markup.js';
import { setOutput, toJson } from './step-outputs.js';
import type { Produced } from './produced.js';
import { findingsOutput, reviewMarkup } from './review.js';

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
  /** The log already showed the session link (it is not repeated in the step's last lines). */
  linkShown?: boolean;
  /** What the summary's State row says when it is not the record's state (a run the job's cancel stopped). */
  stateShown?: string;
}

/** GitHub keeps step outputs under 1 MiB each; stay well below with room for the other outputs. */
const MAX_RUN_OUTPUT = 900 * 1024;
/** The job summary is capped at 1 MiB; a status message never needs more than this. */
const MAX_SUMMARY_MESSAGE = 32 * 1024;
/** The answer's share of the summary (the `result` output and the transcript file have more). */
const MAX_SUMMARY_RESULT = 64 * 1024;

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
  setOutput('run-id', outcome.runId);
  setOutput('state', run?.state ?? '');
  setOutput('conclusion', outcome.conclusion);
  setOutput('session-link', run?.session_link ?? '');
  setOutput('status-message', run?.status_message ?? '');
  setOutput('error-code', run?.error_code ?? '');
  setOutput('duration-seconds', String(Math.round(outcome.durationMs / 1000)));
  setOutput('run', run ? runOutput(run) : '');
  const usage = usageOf(run);
  const usageJson = usage ? toJson(usage) : '';
  if (usageJson === undefined)
    core.notice('The usage output is empty: the service sent it nested too deeply to write.');
  setOutput('usage', usageJson ?? '');
  writeProducedOutputs(outcome.produced);
}

/** The outputs of what the agent made; all empty when nothing was read. */
export function writeProducedOutputs(produced: Produced | undefined): void {
  setOutput('result', produced?.result ?? '');
  setOutput('structured-output', produced?.structured ?? '');
  setOutput('artifacts', produced?.artifactsListed ? artifactsOutput(produced) : '');
  setOutput('pull-request-url', produced?.pullRequestUrl ?? '');
  setOutput('branch', produced?.branch ?? '');
  setOutput('patch-file', produced?.patchFile ?? '');
  setOutput('transcript-file', produced?.transcriptFile ?? '');
  const review = produced?.review;
  setOutput('review-id', review?.id === undefined ? '' : String(review.id));
  setOutput('review-url', review?.url ?? '');
  setOutput('findings', review ? (toJson(findingsOutput(review)) ?? '') : '');
}

/** The artifacts as JSON in the service's shape, or as many of them as fit the output limit. */
function artifactsOutput(produced: Produced, limit = MAX_RUN_OUTPUT): string {
  // An artifact nested too deeply to write is left out; the rest are kept.
  const list = produced.artifacts.filter(artifact => toJson(artifact) !== undefined);
  while (list.length > 0 && Buffer.byteLength(toJson(list)!) > limit) list.pop();
  return toJson(list)!;
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
  const full = toJson(run);
  if (full !== undefined && Buffer.byteLength(full) <= limit) return full;
  const trimmed: Record<string, unknown> = { ...run, truncated: true };
  for (const [key, value] of Object.entries(trimmed)) {
    if (typeof value === 'string' && value.length > 1024) trimmed[key] = `${value.slice(0, 1024)}…`;
    else if (value !== null && typeof value === 'object') {
      const json = toJson(value);
      if (json === undefined) trimmed[key] = '[omitted: nested too deeply for a step output]';
      else if (json.length > 4096) trimmed[key] = '[omitted: too large for a step output]';
    }
  }
  const smaller = toJson(trimmed);
  if (smaller !== undefined && Buffer.byteLength(smaller) <= limit) return smaller;
  return JSON.stringify({
    run_id: String(run.run_id).slice(0, 1024),
    state: String(run.state).slice(0, 1024),
    truncated: true
  });
}

/** Characters of each summary field kept; with escaping the whole summary stays far below 1 MiB. */
const SUMMARY_FIELD_CHARS = { id: 1024, link: 4096, title: 2048, problem: 4096, artifacts: 50 };

/**
 * Rewrites this step's job summary (each step has its own summary file). Every field is cut to
 * its share of GitHub's 1 MiB summary limit; the names of the fields cut are returned.
 */
export async function writeSummary(outcome: Outcome): Promise<string[]> {
  const run = outcome.run;
  const cuts: string[] = [];
  const clip = (field: string, text: string, max: number): string => {
    if (text.length <= max) return text;
    if (!cuts.includes(field)) cuts.push(field);
    return `${text.slice(0, max)}…`;
  };
  const linkOf = (field: string, url: string) =>
    url.length > SUMMARY_FIELD_CHARS.link ? code(clip(field, url, SUMMARY_FIELD_CHARS.link)) : link(url);
  const rows: [string, string][] = [
    ['Run', code(clip('Run', outcome.runId, SUMMARY_FIELD_CHARS.id))],
    ['State', inert(clip('State', outcome.stateShown ?? run?.state ?? 'unknown', SUMMARY_FIELD_CHARS.id))],
    ['Conclusion', escapeHtml(outcome.conclusion || 'not finished')],
    ['Duration', formatDuration(outcome.durationMs)]
  ];
  if (run?.title) rows.push(['Title', inert(clip('Title', String(run.title), SUMMARY_FIELD_CHARS.title))]);
  if (run?.session_link) rows.push(['Session', linkOf('Session', run.session_link)]);
  if (run?.error_code)
    rows.push(['Error code', code(clip('Error code', run.error_code, SUMMARY_FIELD_CHARS.id))]);
  const usage = usageOf(run);
  if (usage) {
    const figures = Object.entries(usage).map(
      ([name, value]) => `${name}: ${toJson(value) ?? '(nested too deeply to show)'}`
    );
    rows.push(['Usage', inert(clip('Usage', figures.join(', '), 2000))]);
  }
  if (run?.state === 'BLOCKED') {
    rows.push([
      'Blocked',
      `The agent is waiting for user input or approval${run.session_link ? `: ${linkOf('Session', run.session_link)}` : ''}`
    ]);
  }
  const produced = outcome.produced;
  if (produced?.pullRequestUrl) rows.push(['Pull request', linkOf('Pull request', produced.pullRequestUrl)]);
  if (produced?.branch) rows.push(['Branch', code(clip('Branch', produced.branch, SUMMARY_FIELD_CHARS.id))]);
  const artifacts = artifactLines(produced, SUMMARY_FIELD_CHARS.title);
  if (artifacts.length > SUMMARY_FIELD_CHARS.artifacts) cuts.push('Artifacts');
  if (artifacts.length > 0) {
    const shown = artifacts.slice(0, SUMMARY_FIELD_CHARS.artifacts);
    const more = artifacts.length - shown.length;
    rows.push(['Artifacts', shown.join('<br>') + (more > 0 ? `<br>… and ${more} more` : '')]);
  }
  if (produced?.review) rows.push(['Review', reviewMarkup(produced.review)]);
  if (produced?.reviewProblem) rows.push(['Review', block(clip('Review', produced.reviewProblem, 4096))]);
  if (produced?.result) {
    if (produced.result.length > MAX_SUMMARY_RESULT) cuts.push('Result');
    rows.push(['Result', resultMarkup(produced.result, MAX_SUMMARY_RESULT)]);
  }
  if (produced?.structuredProblem) {
    const problem = clip('Structured output', produced.structuredProblem, SUMMARY_FIELD_CHARS.problem);
    rows.push(['Structured output', block(problem)]);
  }
  if (run?.status_message) {
    const message = clip('Status message', run.status_message, MAX_SUMMARY_MESSAGE);
    rows.push(['Status message', block(message)]);
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
  return cuts;
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
      const cuts = (await writeSummary(outcome)).filter(field => !this.cutsAnnounced.has(field));
      for (const field of cuts) this.cutsAnnounced.add(field);
      if (cuts.length > 0) {
        core.notice(
          `The job summary shows only the start of: ${cuts.join(', ')} (GitHub keeps at most 1 MiB of summary per step).`
        );
      }
    } catch (error) {
      if (!this.warned) core.warning(`Could not write the job summary: ${(error as Error).message}`);
      this.warned = true;
    }
  }

  private warned = false;
  private readonly cutsAnnounced = new Set<string>();
}
