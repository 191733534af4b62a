// One comment on the pull request or issue, found again by a hidden marker and updated in place:
// state, elapsed time, session link, the status message when the run fails, a BLOCKED note, and
// at the end what the agent made (its answer, the pull request, the artifacts). Without the
// permission to comment it warns once and carries on.

import * as core from '@actions/core';
import { createHash } from 'node:crypto';
import { formatDuration } from '../api/index.js';
import type { Run } from '../client/index.js';
import type { GitHubApi } from './github.js';
import { artifactLines, code, escapeHtml, isWebLink, link, resultMarkup } from './markup.js';
import type { Produced } from './produced.js';
import { type Plan, planMarkup } from './plan.js';

/** What the comment records about its run, in a hidden line: the run id and the mode of its last turn. */
export interface ThreadRecord {
  runId: string;
  mode: 'normal' | 'plan';
}

const RECORD = /<!-- agent-run-run:([A-Za-z0-9._:~-]{1,200}) mode:(normal|plan) -->/;

/** The run a comment's text records, if any. */
export function parseRecord(body: string): ThreadRecord | undefined {
  const match = RECORD.exec(body);
  return match ? { runId: match[1]!, mode: match[2] as ThreadRecord['mode'] } : undefined;
}

export class StickyComment {
  private id?: number;
  private disabled = false;
  private warned = false;
  private last = '';
  private queue: Promise<void> = Promise.resolve();
  readonly marker: string;
  /** The mode of the turn this step reports (recorded in the comment). */
  mode: 'normal' | 'plan' = 'normal';
  /** Lines the step adds (a superseded run, a follow-up sent). */
  readonly notes: string[] = [];
  /** The plan the run made, shown with the way to approve it. */
  plan?: Plan;
  approvePhrase = '/approve';

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

  private async write(body: string): Promise<void> {
    if (this.disabled || body === this.last) return;
    try {
      const api = await this.github();
      this.id ??= await api.findComment(this.issueNumber, this.marker);
      if (this.id === undefined) this.id = await api.createComment(this.issueNumber, body);
      else await api.updateComment(this.id, body);
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

  private render(
    runId: string,
    run: Run | undefined,
    elapsedMs: number,
    conclusion: string,
    produced: Produced | undefined
  ): string {
    // GitHub keeps at most 65,536 characters of a comment: every field from the service is cut, so
    // even fully escaped (up to 6 characters each) the comment stays below it.
    const short = (text: string) => (text.length > 256 ? `${text.slice(0, 256)}…` : text);
    const state = short(run?.state ?? 'QUEUED');
    const lines = [
      this.marker,
      // Every field from the service is inert: a hostile run id or state mentions no one, loads nothing.
      `**Agent run** ${code(short(runId))}: **${code(state)}**${conclusion ? ` (${conclusion})` : ''} after ${formatDuration(elapsedMs)}`
    ];
    if (run?.session_link && run.session_link.length <= 2048 && isWebLink(run.session_link))
      lines.push('', link(run.session_link, 'Session transcript'));
    if (run?.status_message && state !== 'SUCCEEDED') {
      const message =
        run.status_message.length > 3000 ? `${run.status_message.slice(0, 3000)}…` : run.status_message;
      lines.push('', `<pre>${escapeHtml(message)}</pre>`);
    }
    if (state === 'BLOCKED')
      lines.push('', '⏸ The agent is waiting for user input or approval in the session.');
    if (produced?.pullRequestUrl) lines.push('', `Pull request: ${link(short(produced.pullRequestUrl))}`);
    const artifacts = artifactLines(produced, 200);
    if (artifacts.length > 10) artifacts.splice(10, artifacts.length, `… and ${artifacts.length - 10} more`);
    if (artifacts.length > 0) lines.push('', `Artifacts:<br>${artifacts.join('<br>')}`);
    for (const note of this.notes) lines.push('', note);
    if (this.plan) lines.push('', planMarkup(this.plan, this.approvePhrase));
    else if (produced?.result) lines.push('', resultMarkup(produced.result, 5000));
    // Last, hidden: the run this thread belongs to, read back by `continue`, approvals and `supersede`.
    if (/^[A-Za-z0-9._:~-]{1,200}$/.test(runId))
      lines.push(`<!-- agent-run-run:${runId} mode:${this.mode} -->`);
    return lines.join('\n');
  }
}
