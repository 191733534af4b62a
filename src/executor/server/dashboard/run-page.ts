// One run: its facts, prompt, transcript (commands with output, the diff with coloured lines),
// result and artifacts with download links, the commands that fetch it from a terminal, and a
// "Cancel run" button behind a confirmation while it can still be cancelled. Every piece of run
// content goes through esc(); app.js appends new transcript entries as the server renders them.

import type { StoredArtifact, StoredRun, TranscriptEvent } from '../../store/types.js';
import {
  type Viewer,
  badge,
  duration,
  esc,
  heading,
  inlineCode,
  isTerminalState,
  page,
  time
} from './html.js';

function pre(text: unknown): string {
  return `<pre>${esc(text)}</pre>`;
}

/** A unified diff with each line classed by its first character. */
export function diffHtml(diff: unknown): string {
  const lines = String(diff ?? '').split('\n');
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
  return `<pre class="diff">${lines.map(l => `<span class="${cls(l)}">${esc(l)}\n</span>`).join('')}</pre>`;
}

export function eventHtml(e: TranscriptEvent): string {
  const at = `<time datetime="${esc(e.at)}">${esc(e.at.slice(11, 19))}</time>`;
  const item = (kind: string, inner: string) =>
    `<li class="ev ev-${kind}" data-seq="${e.seq}">${at} ${inner}</li>`;
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
    case 'command':
    case 'setup':
      return item(
        'command',
        `${e.kind} <code>${esc(e.command)}</code> → exit <b>${esc(e.exit_code)}</b>${e.output ? pre(e.output) : ''}`
      );
    case 'file':
      return item(
        'file',
        `file <code>${esc(e.path)}</code> ${esc(e.change)}${e.diff ? diffHtml(e.diff) : ''}`
      );
    case 'diff': {
      const files = Array.isArray(e.files) ? (e.files as { path: string; change: string }[]) : [];
      const more = typeof e.more_files === 'number' ? `, and ${e.more_files} more` : '';
      const list = files.map(f => `<code>${esc(f.path)}</code> ${esc(f.change)}`).join(', ') + more;
      return item('diff', `files changed: ${list}${diffHtml(e.diff)}`);
    }
    case 'artifact':
      return item('file', `artifact <code>${esc(e.filename)}</code> ${esc(e.size)} bytes`);
    case 'exit':
      return item(
        'exit',
        `agent exited with code ${esc(e.exit_code)}${e.signal ? ` (${esc(e.signal)})` : ''}`
      );
    case 'omitted':
    case 'truncated':
      return item('other', `<b>${esc(e.text)}</b>`);
    case 'output':
      return item('output', `${esc(e.stream ?? 'output')}${pre(e.text)}`);
    default:
      return item('other', `${esc(e.kind)}${pre(JSON.stringify(e))}`);
  }
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

export function cancelHtml(run: StoredRun, viewer: Viewer): string {
  if (isTerminalState(run.state)) return '';
  return `<details class="cancel" id="cancel"><summary>Cancel run</summary>
<form method="post" action="/runs/${encodeURIComponent(run.run_id)}/cancel">
<input type="hidden" name="csrf" value="${esc(viewer.csrf)}">
<p>The agent is stopped and the run ends CANCELLED. This cannot be undone.</p>
<button type="submit" class="danger">Yes, cancel this run</button>
</form></details>`;
}

function resultHtml(events: TranscriptEvent[]): string {
  const result = events.filter(e => e.kind === 'result').at(-1);
  return result ? `<h2>Result</h2>${pre(result.text)}` : '';
}

function artifactsHtml(run: StoredRun, artifacts: StoredArtifact[]): string {
  if (artifacts.length === 0) return '';
  const items = artifacts.map(
    a =>
      `<li><a href="/runs/${encodeURIComponent(run.run_id)}/artifacts/${encodeURIComponent(a.artifact_uid)}" download>${esc(a.filename)}</a> <span class="muted">${esc(a.filepath)} · ${esc(a.mime_type)} · ${esc(a.size)} bytes</span>${a.description ? ` — ${inlineCode(a.description)}` : ''}</li>`
  );
  return `<h2>Artifacts</h2><ul class="artifacts">${items.join('')}</ul>`;
}

/** The run's usage and cost figures as its agent reported them (request_usage). */
function usageHtml(run: StoredRun): string {
  if (!run.request_usage) return '';
  let usage: unknown;
  try {
    usage = JSON.parse(run.request_usage);
  } catch {
    return '';
  }
  if (usage === null || typeof usage !== 'object' || Array.isArray(usage)) return '';
  const rows = Object.entries(usage as Record<string, unknown>).map(
    ([name, value]) =>
      `<tr><th scope="row">${esc(name.replace(/_/g, ' '))}</th><td>${esc(typeof value === 'object' ? JSON.stringify(value) : value)}</td></tr>`
  );
  if (rows.length === 0) return '';
  return `<h2>Usage</h2><table class="facts usage" id="usage"><tbody>${rows.join('')}</tbody></table>`;
}

function commandsHtml(run: StoredRun, baseUrl: string): string {
  const id = run.run_id;
  const q = (text: string) => `'${text.replace(/'/g, `'\\''`)}'`;
  const cli = `agent-run get ${q(id)}`;
  const curl = `curl -H "Authorization: Bearer $AGENT_RUN_API_KEY" ${q(`${baseUrl}/api/v1/agent/runs/${encodeURIComponent(id)}`)}`;
  return `<h2>From a terminal</h2>
<p><label for="cmd-cli">agent-run</label><input id="cmd-cli" class="copy" readonly value="${esc(cli)}"></p>
<p><label for="cmd-curl">curl</label><input id="cmd-curl" class="copy" readonly value="${esc(curl)}"></p>`;
}

export function renderRun(
  viewer: Viewer,
  run: StoredRun,
  events: TranscriptEvent[],
  artifacts: StoredArtifact[],
  baseUrl: string,
  sessionLink?: string
): string {
  const last = events.at(-1)?.seq ?? 0;
  const body = `<h1>${esc(heading(run))}</h1>
<p class="run-id"><label for="run-id">Run id</label> <input id="run-id" class="copy" readonly value="${esc(run.run_id)}"></p>
${sessionLink ? `<p class="session-link"><a id="session-link" href="${esc(sessionLink)}">Session page</a> <span class="muted">(shareable: whoever has the link sees the transcript, no sign-in)</span></p>` : ''}
<div id="run" data-run="${esc(run.run_id)}" data-after="${last}" data-live="${isTerminalState(run.state) ? 'done' : 'live'}">
<table class="facts"><tbody id="facts">${factsHtml(run)}</tbody></table>
${cancelHtml(run, viewer)}
</div>
<h2>Prompt</h2>${pre(run.prompt)}
<h2>Transcript</h2>
<ol class="transcript" id="transcript" aria-live="polite">${events.map(eventHtml).join('\n')}</ol>
${resultHtml(events)}
${usageHtml(run)}
${artifactsHtml(run, artifacts)}
${commandsHtml(run, baseUrl)}`;
  return page(heading(run), body, viewer);
}
