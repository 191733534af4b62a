// Renders a run and its transcript as one self-contained HTML page.

import type { StoredRun, TranscriptEvent } from '../store/types.js';

export function escapeHtml(value: unknown): string {
  return String(value ?? '').replace(/[&<>"']/g, ch => `&#${ch.charCodeAt(0)};`);
}

function duration(from: string | null, to: string | null): string {
  if (!from) return '';
  const ms = Date.parse(to ?? new Date().toISOString()) - Date.parse(from);
  return `${(ms / 1000).toFixed(1)} s${to ? '' : ' so far'}`;
}

function event(e: TranscriptEvent): string {
  const time = `<time>${escapeHtml(e.at.slice(11, 23))}</time>`;
  switch (e.kind) {
    case 'state':
      return `<li class="state">${time} state <b>${escapeHtml(e.state)}</b>${e.status_message ? `: ${escapeHtml(e.status_message)}` : ''}</li>`;
    case 'message':
      return `<li class="message">${time} agent<pre>${escapeHtml(e.text)}</pre></li>`;
    case 'command':
    case 'setup':
      return `<li class="command">${time} ${e.kind === 'setup' ? 'setup' : 'command'} <code>${escapeHtml(e.command)}</code> → exit ${escapeHtml(e.exit_code)}${e.output ? `<pre>${escapeHtml(e.output)}</pre>` : ''}</li>`;
    case 'file':
      return `<li class="file">${time} file <code>${escapeHtml(e.path)}</code> ${escapeHtml(e.change)}${e.diff ? `<pre>${escapeHtml(e.diff)}</pre>` : ''}</li>`;
    case 'diff': {
      const files = (e.files as { path: string; change: string }[] | undefined) ?? [];
      const more = typeof e.more_files === 'number' ? `, and ${e.more_files} more` : '';
      const list =
        files.map(f => `<code>${escapeHtml(f.path)}</code> ${escapeHtml(f.change)}`).join(', ') + more;
      return `<li class="diff">${time} files changed: ${list}<pre>${escapeHtml(e.diff)}</pre></li>`;
    }
    case 'exit':
      return `<li class="exit">${time} agent exited with code ${escapeHtml(e.exit_code)}${e.signal ? ` (${escapeHtml(e.signal)})` : ''}</li>`;
    case 'omitted':
    case 'truncated':
      return `<li class="omitted">${time} <b>${escapeHtml(e.text)}</b></li>`;
    case 'output':
      return `<li class="output">${time} ${escapeHtml(e.stream ?? 'output')}<pre>${escapeHtml(e.text)}</pre></li>`;
    default:
      return `<li>${time} ${escapeHtml(e.kind)}<pre>${escapeHtml(JSON.stringify(e))}</pre></li>`;
  }
}

export function renderSession(run: StoredRun, events: TranscriptEvent[]): string {
  const rows: [string, string][] = [
    ['Run', `<code>${escapeHtml(run.run_id)}</code>`],
    ['State', `<b>${escapeHtml(run.state)}</b>`],
    ['Environment', escapeHtml(run.environment_id)],
    ['Created', escapeHtml(run.created_at)],
    ['Started', escapeHtml(run.started_at ?? '')],
    ['Completed', escapeHtml(run.completed_at ?? '')],
    ['Duration', escapeHtml(duration(run.started_at, run.completed_at))],
    ['Creator', `${escapeHtml(run.creator_name)} (${escapeHtml(run.creator_type)})`]
  ];
  if (run.status_message) rows.push(['Status message', escapeHtml(run.status_message)]);
  if (run.error_code) rows.push(['Error code', `<code>${escapeHtml(run.error_code)}</code>`]);
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escapeHtml(run.title || `Run ${run.run_id}`)}</title>
<style>
body{font:15px/1.45 system-ui,sans-serif;max-width:60rem;margin:2rem auto;padding:0 1rem;color:#1f2328}
table{border-collapse:collapse}td,th{text-align:left;padding:.2rem .8rem .2rem 0;vertical-align:top}
pre{background:#f6f8fa;padding:.6rem;overflow:auto;white-space:pre-wrap;word-break:break-word}
ol{list-style:none;padding:0}li{margin:.4rem 0}time{color:#656d76;font-family:monospace}
</style></head><body>
<h1>${escapeHtml(run.title || 'Agent run')}</h1>
<table>${rows.map(([k, v]) => `<tr><th>${k}</th><td>${v}</td></tr>`).join('')}</table>
<h2>Prompt</h2><pre>${escapeHtml(run.prompt)}</pre>
<h2>Transcript</h2><ol>${events.map(event).join('\n')}</ol>
</body></html>
`;
}
