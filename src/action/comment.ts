// One comment on the pull request or issue, found again by a hidden marker and updated in place:
// state, elapsed time, session link, the status message when the run fails, a BLOCKED note, and
// at the end what the agent made (its answer, the pull request, the artifacts). A fan-out step's
// comment is a table instead, one row per item (title, state, duration, link), rewritten as the runs
// move. Without the permission to comment it warns once and carries on.

import * as core from '@actions/core';
import { createHash } from 'node:crypto';
import { formatDuration } from '../common/duration.js';
import type { RunMode } from '../api/run.js';
import type { Run } from '../client/index.js';
import type { GitHubApi } from './github.js';
import * as log from './log.js';
import { artifactLines, block, code, inert, isWebLink, link, resultMarkup } from './markup.js';
import type { Produced } from './produced.js';
import { type Plan, planMarkup } from './plan-approval.js';
import { reviewMarkup } from './review.js';

/** GitHub keeps at most this many characters of a comment's body (it answers 422 above it). */
export const MAX_COMMENT_CHARS = 65_536;

/** Which step of which workflow run wrote the comment: GITHUB_RUN_ID and GITHUB_RUN_ATTEMPT. */
export interface StepId {
  run: number;
  attempt: number;
}

/**
 * What the comment records about its run, in hidden lines: the run id, the mode of its last turn,
 * the step that wrote it, and the PLAN artifact the comment shows (the only plan an approval
 * carries out: it is recorded only in a comment that was written with the plan in it).
 */
export interface ThreadRecord {
  runId: string;
  mode: RunMode;
  step?: StepId;
  plan?: string;
}

const RECORD = /<!-- agent-run-run:([A-Za-z0-9._:~-]{1,200}) mode:(normal|plan|orchestrate) -->/;
const STEP = /<!-- agent-run-step:(\d{1,20})\.(\d{1,10}) -->/;
const PLAN = /<!-- agent-run-plan:([A-Za-z0-9._:~-]{1,200}) -->/;
const SAFE_ID = /^[A-Za-z0-9._:~-]{1,200}$/;

/** The run a comment's text records, if any. */
export function parseRecord(body: string): ThreadRecord | undefined {
  const match = RECORD.exec(body);
  if (!match) return undefined;
  const record: ThreadRecord = { runId: match[1]!, mode: match[2] as ThreadRecord['mode'] };
  const step = stepWrote(body);
  if (step) record.step = step;
  const plan = PLAN.exec(body);
  if (plan) record.plan = plan[1]!;
  return record;
}

/** The step that wrote a comment (a single run's or a fan-out's), when its text records one. */
export function stepWrote(body: string): StepId | undefined {
  const step = STEP.exec(body);
  return step ? { run: Number(step[1]), attempt: Number(step[2]) } : undefined;
}

/** The hidden line naming the step that writes a comment, read back by `stepWrote`. */
function stepLine(step: StepId): string {
  return `<!-- agent-run-step:${step.run}.${step.attempt} -->`;
}

/** This step's workflow run and attempt, when the runner says. */
export function stepOf(env: NodeJS.ProcessEnv = process.env): StepId | undefined {
  const run = Number(env.GITHUB_RUN_ID);
  const attempt = Number(env.GITHUB_RUN_ATTEMPT || '1');
  return Number.isSafeInteger(run) && run > 0 && Number.isSafeInteger(attempt) ? { run, attempt } : undefined;
}

/** Whether `a` is a later step than `b` (a later workflow run, or a later attempt of the same one). */
export function isNewer(a: StepId, b: StepId): boolean {
  return a.run > b.run || (a.run === b.run && a.attempt > b.attempt);
}

/** One fan-out item as its row in the comment shows it. */
export interface FanOutRow {
  index: number;
  title?: string;
  /** The run's state, or what became of an item without one (`waiting`, `not created`). */
  state: string;
  /** Whether the item is over: its run ended, or never will (not created, or left as the step ended). */
  ended: boolean;
  /** Why a run that did not succeed ended (the status message, or why it was never created). */
  message?: string;
  /** How long the run took, or has been going; undefined before it starts. */
  durationMs?: number;
  runId?: string;
  sessionLink?: string;
}

/**
 * How much of each row the comment shows, tried in turn until the comment fits GitHub's limit:
 * every field is cut before it is escaped, and escaping can make a character six.
 */
const ROW_LEVELS = [
  { title: 100, message: 200, link: 1024 },
  { title: 60, message: 80, link: 300 },
  { title: 30, message: 0, link: 0 }
] as const;

export class StickyComment {
  private id?: number;
  private disabled = false;
  private warned = false;
  private last = '';
  private queue: Promise<void> = Promise.resolve();
  readonly marker: string;
  /** The mode of the turn this step reports (recorded in the comment). */
  mode: RunMode = 'normal';
  /** Lines the step adds (a superseded run, a follow-up sent). */
  readonly notes: string[] = [];
  /** The plan the run made, shown with the way to approve it. */
  plan?: Plan;
  approvePhrase = '/approve';
  /** Whether the comment shows the session link (`comment-session-link`). */
  showSessionLink = true;
  /** The step writing (GITHUB_RUN_ID.GITHUB_RUN_ATTEMPT): a newer step's comment is never overwritten. */
  step?: StepId = stepOf();

  constructor(
    private readonly github: () => Promise<GitHubApi>,
    private readonly issueNumber: number,
    identity: string
  ) {
    this.marker = `<!-- agent-run:${createHash('sha256').update(identity).digest('hex').slice(0, 16)} -->`;
  }

  /** The run the thread's comment names, read once before the step decides what to do. */
  async readRecord(): Promise<ThreadRecord | undefined> {
    const api = await this.github();
    const found = await api.readComment(this.issueNumber, this.marker);
    if (!found) return undefined;
    this.id = found.id;
    return parseRecord(found.body);
  }

  /** Writes the comment for this moment of the run; updates are serialised and never throw. */
  update(
    runId: string,
    run: Run | undefined,
    elapsedMs: number,
    conclusion = '',
    produced?: Produced
  ): Promise<void> {
    const body = this.render(runId, run, elapsedMs, conclusion, produced);
    this.queue = this.queue.then(() => this.write(body));
    return this.queue;
  }

  /**
   * Writes a fan-out's table for this moment. Bodies that arrive while a write is waiting replace
   * it, so many runs changing at once cost one write, and the last body is always the one written.
   */
  updateFanOut(rows: FanOutRow[], elapsedMs: number, conclusion = ''): Promise<void> {
    const first = this.pending === undefined;
    this.pending = this.renderFanOut(rows, elapsedMs, conclusion);
    if (first)
      this.queue = this.queue.then(() => {
        const body = this.pending!;
        this.pending = undefined;
        return this.write(body);
      });
    return this.queue;
  }

  private pending?: string;

  private async write(body: string): Promise<void> {
    if (this.disabled || body === this.last) return;
    try {
      const api = await this.github();
      if (this.id === undefined && !this.searched) {
        this.searched = true;
        try {
          this.id = await api.findComment(this.issueNumber, this.marker);
        } catch (error) {
          // Without permission to read comments, writing fails too (below). Any other failure (who
          // the token is cannot be read) leaves earlier comments alone: this step writes its own.
          if ([401, 403, 404].includes((error as { status?: number }).status ?? 0)) throw error;
          log.info(
            `Could not look for this step's earlier comment (${(error as Error).message}); writing a new one.`
          );
        }
      }
      if (this.id === undefined) {
        this.id = await api.createComment(this.issueNumber, body);
      } else {
        if (await this.newerStepWrote(api, this.id)) return;
        await api.updateComment(this.id, body);
      }
      this.last = body;
    } catch (error) {
      const status = (error as { status?: number }).status;
      // Without permission every later write fails too; any other failure may pass, so try again next time.
      const forbidden = status === 401 || status === 403 || status === 404;
      if (forbidden) this.disabled = true;
      const hint = forbidden
        ? ' The workflow needs `permissions: pull-requests: write` (or `issues: write`) to comment.'
        : ' Will try again on the next change.';
      if (!this.warned)
        core.warning(
          `Could not write the progress comment on #${this.issueNumber} (${(error as Error).message}).${hint}`
        );
      this.warned = true;
    }
  }

  private searched = false;

  /**
   * Whether a newer step (a later workflow run on this thread) has written the comment since: then
   * this one stops writing it, so two steps never rewrite each other's record in turn.
   */
  private async newerStepWrote(api: GitHubApi, id: number): Promise<boolean> {
    if (!this.step) return false;
    const found = stepWrote(await api.commentBody(id));
    if (!found || !isNewer(found, this.step)) return false;
    this.disabled = true;
    core.notice(
      `A newer step (workflow run ${found.run}, attempt ${found.attempt}) now reports on #${this.issueNumber}'s progress comment; this step no longer updates it.`
    );
    return true;
  }

  private renderFanOut(rows: FanOutRow[], elapsedMs: number, conclusion: string): string {
    const ended = rows.filter(row => row.ended).length;
    const head = [
      this.marker,
      `**Agent runs (fan-out)**: ${ended} of ${rows.length} ended${conclusion ? ` (${inert(conclusion)})` : ''} after ${formatDuration(elapsedMs)}`,
      '',
      '| # | Title | State | Duration | Link |',
      '| --- | --- | --- | --- | --- |'
    ];
    // Last, hidden: the step writing it, so an older step never overwrites a newer one's table.
    const tail = this.step ? [stepLine(this.step)] : [];
    for (const level of ROW_LEVELS) {
      const lines = [...head, ...rows.map(row => this.fanOutRow(row, level)), ...tail];
      const body = lines.join('\n');
      if (body.length <= MAX_COMMENT_CHARS) return body;
    }
    // Still too long (it cannot be, at 50 items): the rows that fit, then how many did not.
    const lines = [...head];
    const last = ROW_LEVELS[ROW_LEVELS.length - 1]!;
    let size = lines.join('\n').length + 200;
    for (const [shown, row] of rows.entries()) {
      const line = this.fanOutRow(row, last);
      if (size + line.length + 1 > MAX_COMMENT_CHARS) {
        lines.push('', `… and ${rows.length - shown} more runs (see the job summary)`);
        break;
      }
      lines.push(line);
      size += line.length + 1;
    }
    lines.push(...tail);
    return lines.join('\n');
  }

  /** One row: every field from the item or the service cut, then rendered inert (src/api/github-text.ts). */
  private fanOutRow(row: FanOutRow, level: (typeof ROW_LEVELS)[number]): string {
    const cut = (text: string, max: number) => (text.length > max ? `${text.slice(0, max)}…` : text);
    const state = `<code>${inert(cut(row.state, 40))}</code>`;
    const message =
      level.message > 0 && row.message && row.state !== 'SUCCEEDED'
        ? `<br>${inert(cut(row.message, level.message))}`
        : '';
    const session =
      this.showSessionLink &&
      row.sessionLink &&
      row.sessionLink.length <= level.link &&
      isWebLink(row.sessionLink)
        ? link(row.sessionLink, 'session')
        : undefined;
    const shownId = row.runId ? code(cut(row.runId, 64)) : '';
    return [
      String(row.index),
      inert(cut(row.title ?? '', level.title)),
      state + message,
      row.durationMs === undefined ? '' : formatDuration(row.durationMs),
      session ?? shownId
    ]
      .map(cell => ` ${cell} `)
      .join('|')
      .replace(/^/, '|')
      .replace(/$/, '|');
  }

  private render(
    runId: string,
    run: Run | undefined,
    elapsedMs: number,
    conclusion: string,
    produced: Produced | undefined
  ): string {
    // Every field from the service is cut and rendered inert (src/action/markup.ts); the plan gets
    // what room is left under GitHub's limit once everything else is escaped.
    const short = (text: string) => (text.length > 256 ? `${text.slice(0, 256)}…` : text);
    const state = short(run?.state ?? 'QUEUED');
    const lines = [
      this.marker,
      `**Agent run** ${code(short(runId))}: **${code(state)}**${conclusion ? ` (${conclusion})` : ''} after ${formatDuration(elapsedMs)}`
    ];
    const session =
      run?.session_link && run.session_link.length <= 2048 && isWebLink(run.session_link)
        ? run.session_link
        : undefined;
    if (session && this.showSessionLink) lines.push('', link(session, 'Session transcript'));
    if (run?.status_message && state !== 'SUCCEEDED') lines.push('', block(run.status_message, 20_000));
    if (state === 'BLOCKED')
      lines.push('', '⏸ The agent is waiting for user input or approval in the session.');
    if (produced?.pullRequestUrl) lines.push('', `Pull request: ${link(short(produced.pullRequestUrl))}`);
    const artifacts = artifactLines(produced, 200);
    if (artifacts.length > 10) artifacts.splice(10, artifacts.length, `… and ${artifacts.length - 10} more`);
    if (artifacts.length > 0) lines.push('', `Artifacts:<br>${artifacts.join('<br>')}`);
    for (const note of this.notes) lines.push('', note);
    // Last, hidden: the run this thread belongs to, read back by `continue`, approvals and `supersede`.
    const record: string[] = [];
    if (SAFE_ID.test(runId)) {
      record.push(`<!-- agent-run-run:${runId} mode:${this.mode} -->`);
      if (this.step) record.push(stepLine(this.step));
    }
    if (this.plan) {
      const used = [...lines, ...record].join('\n').length + 200;
      const plan = planMarkup(
        this.plan,
        this.approvePhrase,
        MAX_COMMENT_CHARS - used,
        this.showSessionLink ? session : undefined
      );
      lines.push('', plan.markup);
      if (plan.shown && record.length > 0 && SAFE_ID.test(this.plan.uid))
        record.push(`<!-- agent-run-plan:${this.plan.uid} -->`);
    } else if (produced?.review) {
      // The review holds the findings: the comment links it rather than repeating them.
      lines.push('', reviewMarkup(produced.review));
    } else if (produced?.result) lines.push('', resultMarkup(produced.result, 5000));
    lines.push(...record);
    return lines.join('\n');
  }
}
