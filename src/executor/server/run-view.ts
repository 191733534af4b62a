// The one renderer of a run, shared by the shareable session page (routes/sessions.ts) and the
// dashboard's run page (dashboard/run-page.ts): its facts, prompt, transcript, result (as text),
// the diff with coloured lines, and its artifacts with download links. Each page frames it and
// says where an artifact downloads from. Everything the agent wrote is hostile: it goes through
// esc() (HTML escaped, control characters dropped), links only ever point at http(s) addresses,
// and no event is shown as raw JSON (which would show fields meant for programs, not people).

import { type AnyEvent, known, otherKind } from '../../api/events.js';
import type { StoredArtifact, StoredRun, TranscriptEvent } from '../store/types.js';
import { badge, duration, esc, inlineCode, isTerminalState, time } from './dashboard/html.js';

export interface RunViewOptions {
  /** Where an artifact is downloaded from (relative to the page, or absolute). */
  artifactHref(artifact: StoredArtifact): string;
  /** HTML right after the facts table (the dashboard's cancel button). */
  afterFacts?: string;
  /** HTML right after the result (the dashboard's usage table). */
  afterResult?: string;
}

function pre(text: unknown): string {
  return `<pre>${esc(text)}</pre>`;
}

/** A unified diff with each line classed by its first character (added, deleted, hunk, file). */
export function diffHtml(diff: unknown): string {
  const lines = String(diff ?? '')
    .replace(/\n$/, '')
    .split('\n');
  const cls = (line: string) =>
    line.startsWith('+++') || line.startsWith('---')
      ? 'd-file'
      : line.startsWith('+')
        ? 'd-add'
        : line.startsWith('-')
          ? 'd-del'
          : line.startsWith('@@')
            ? 'd-hunk'
            : 'd-ctx';
  // Each line is a block of its own (coloured across the width), so no newline is written inside.
  return `<pre class="diff">${lines.map(l => `<span class="${cls(l)}">${esc(l) || ' '}</span>`).join('')}</pre>`;
}

/** A link to an http(s) address written by someone else; anything else stays text. */
function webLink(url: unknown, label: string): string {
  return typeof url === 'string' && /^https?:\/\/[^\s]+$/i.test(url)
    ? `<a href="${esc(url)}" rel="noopener noreferrer">${esc(label)}</a>`
    : esc(label);
}

/** A tool call's input (JSON text) as lines of `name: value`, the way a person reads it. */
function toolInput(input: string): string {
  let value: unknown;
  try {
    value = JSON.parse(input);
  } catch {
    return input ? pre(input) : '';
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return pre(String(input));
  const lines = Object.entries(value as Record<string, unknown>).map(
    ([name, field]) => `${name}: ${typeof field === 'string' ? field : JSON.stringify(field)}`
  );
  return lines.length > 0 ? pre(lines.join('\n')) : '';
}

const exitText = (code: unknown, signal?: unknown) =>
  `${code === null || code === undefined ? 'no exit code' : `exit <b>${esc(code)}</b>`}${signal ? ` (${esc(signal)})` : ''}`;

/** One transcript entry; every kind has its own case (the default only compiles when none is missing). */
export function eventHtml(event: TranscriptEvent): string {
  const at = `<time datetime="${esc(event.at)}">${esc(event.at.slice(11, 19))}</time>`;
  const item = (cls: string, inner: string) =>
    `<li class="ev ev-${cls}" data-seq="${esc(event.seq)}">${at} ${inner}</li>`;
  const e = known(event);
  switch (e.kind) {
    case 'state':
      return item(
        'state',
        `state ${badge(String(e.state))}${e.status_message ? ` <span class="lines">${esc(e.status_message)}</span>` : ''}`
      );
    case 'message':
      return item('message', `agent${pre(e.text)}`);
    case 'result':
      return item('message', `result${pre(e.text)}`);
    case 'output':
      return item('output', `${esc(e.stream ?? 'output')}${pre(e.text)}`);
    case 'command':
    case 'setup':
      return item(
        'command',
        `${e.kind} <code>${esc(e.command)}</code> → ${exitText(e.exit_code)}${e.output ? pre(e.output) : ''}`
      );
    case 'file':
      return item('file', `file <code>${esc(e.path)}</code> ${esc(e.change)}`);
    case 'diff': {
      const files = Array.isArray(e.files) ? e.files : [];
      const more = typeof e.more_files === 'number' ? `, and ${esc(e.more_files)} more` : '';
      const list = files.map(f => `<code>${esc(f?.path)}</code> ${esc(f?.change)}`).join(', ') + more;
      const cut = e.truncated ? ' <span class="muted">(the diff is cut at its size limit)</span>' : '';
      return item('diff', `files changed: ${list}${cut}${diffHtml(e.diff)}`);
    }
    case 'exit':
      return item('exit', `agent exited: ${exitText(e.exit_code, e.signal)}`);
    case 'notice':
      return item('other', `notice <span class="lines">${esc(e.text)}</span>`);
    case 'warning':
      return item('other', `<span class="error">warning</span> <span class="lines">${esc(e.message)}</span>`);
    case 'truncated':
    case 'omitted':
      return item('other', `<b>${esc(e.text)}</b>`);
    case 'artifact':
      return item('file', `artifact <code>${esc(e.filename)}</code> ${esc(e.size)} bytes`);
    case 'action':
      return item('command', `tool <code>${esc(e.name)}</code>${toolInput(e.input)}`);
    case 'action_result':
      return item(
        'output',
        `${e.ok === false ? '<span class="error">tool failed</span>' : 'tool result'}${pre(e.output)}`
      );
    case 'followup':
      return item('other', `<b>follow-up</b> (${esc(e.mode)})${pre(e.message)}`);
    case 'turn':
      return item('other', `<b>turn ${esc(e.turn)}</b> begins (${esc(e.mode)} mode)`);
    case 'agent_session':
      return item('other', `agent session <code>${esc(e.session_id)}</code> (${esc(e.harness)})`);
    case 'publish': {
      const commit = typeof e.commit === 'string' ? e.commit.slice(0, 12) : '';
      const pr = e.pull_request_url
        ? `, ${webLink(e.pull_request_url, `pull request${e.pull_request_number ? ` #${e.pull_request_number}` : ''}`)}`
        : '';
      return item(
        'other',
        `published commit <code>${esc(commit)}</code> to branch <code>${esc(e.branch)}</code>${pr}`
      );
    }
    default:
      return item('other', unknownHtml(otherKind(e)));
  }
}

/** A kind this version does not know (written by a newer executor): its name and its text, if any. */
function unknownHtml(event: AnyEvent): string {
  const text = [event.text, event.message].find(value => typeof value === 'string');
  return `${esc(event.kind)}${text === undefined ? '' : pre(text)}`;
}

export function factsHtml(run: StoredRun): string {
  const rows: [string, string][] = [
    ['State', badge(run.state)],
    ['Environment', esc(run.environment_id)],
    ['Creator', `${esc(run.creator_name)} (${esc(run.creator_type)})`],
    ['Created', time(run.created_at)],
    ['Started', time(run.started_at)],
    ['Completed', time(run.completed_at)],
    ['Duration', esc(duration(run))]
  ];
  if (run.status_message) rows.push(['Status', `<span class="lines">${esc(run.status_message)}</span>`]);
  if (run.error_code) rows.push(['Error code', `<code>${esc(run.error_code)}</code>`]);
  return rows.map(([k, v]) => `<tr><th scope="row">${k}</th><td>${v}</td></tr>`).join('');
}

/** The run's answer: the text of its last `result` event. */
export function resultHtml(events: TranscriptEvent[]): string {
  const result = events.filter(e => e.kind === 'result').at(-1);
  return result ? `<h2>Result</h2><div id="result">${pre(result.text)}</div>` : '';
}

export function artifactsHtml(artifacts: StoredArtifact[], hrefOf: RunViewOptions['artifactHref']): string {
  if (artifacts.length === 0) return '';
  const items = artifacts.map(
    a =>
      `<li><a href="${esc(hrefOf(a))}" download>${esc(a.filename)}</a> <span class="muted">${esc(a.filepath)} · ${esc(a.mime_type)} · ${esc(a.size)} bytes</span>${a.description ? ` — ${inlineCode(a.description)}` : ''}</li>`
  );
  return `<h2>Artifacts</h2><ul class="artifacts" id="artifacts">${items.join('')}</ul>`;
}

/** The run itself: facts, prompt, transcript, result and artifacts. */
export function runViewHtml(
  run: StoredRun,
  events: TranscriptEvent[],
  artifacts: StoredArtifact[],
  options: RunViewOptions
): string {
  const last = events.at(-1)?.seq ?? 0;
  return `<div id="run" data-run="${esc(run.run_id)}" data-after="${esc(last)}" data-live="${isTerminalState(run.state) ? 'done' : 'live'}">
<table class="facts"><tbody id="facts">${factsHtml(run)}</tbody></table>
${options.afterFacts ?? ''}
</div>
<h2>Prompt</h2>${pre(run.prompt)}
<h2>Transcript</h2>
<ol class="transcript" id="transcript" aria-live="polite">${events.map(eventHtml).join('\n')}</ol>
${resultHtml(events)}
${options.afterResult ?? ''}
${artifactsHtml(artifacts, options.artifactHref)}`;
}
