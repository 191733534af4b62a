// The dashboard's page of one run: the shared run renderer (../run-view.ts: facts, prompt,
// transcript, result, diff, artifacts) framed with what only a signed-in viewer gets: the run id to
// copy, the session link, the usage figures, the commands that fetch the run from a terminal, and a
// "Cancel run" button behind a confirmation while it can still be cancelled. Every piece of run
// content goes through esc(); app.js appends new transcript entries as the server renders them.

import type { StoredArtifact, StoredRun, TranscriptEvent } from '../../store/types.js';
import { runViewHtml } from '../run-view.js';
import { type Viewer, esc, heading, isTerminalState, page } from './html.js';

export function cancelHtml(run: StoredRun, viewer: Viewer): string {
  if (isTerminalState(run.state)) return '';
  return `<details class="cancel" id="cancel"><summary>Cancel run</summary>
<form method="post" action="/runs/${encodeURIComponent(run.run_id)}/cancel">
<input type="hidden" name="csrf" value="${esc(viewer.csrf)}">
<p>The agent is stopped and the run ends CANCELLED. This cannot be undone.</p>
<button type="submit" class="danger">Yes, cancel this run</button>
</form></details>`;
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
  const body = `<h1>${esc(heading(run))}</h1>
<p class="run-id"><label for="run-id">Run id</label> <input id="run-id" class="copy" readonly value="${esc(run.run_id)}"></p>
${sessionLink ? `<p class="session-link"><a id="session-link" href="${esc(sessionLink)}">Session page</a> <span class="muted">(shareable: whoever has the link sees the transcript, no sign-in)</span></p>` : ''}
${runViewHtml(run, events, artifacts, {
  artifactHref: a =>
    `/runs/${encodeURIComponent(run.run_id)}/artifacts/${encodeURIComponent(a.artifact_uid)}`,
  afterFacts: cancelHtml(run, viewer),
  afterResult: usageHtml(run)
})}
${commandsHtml(run, baseUrl)}`;
  return page(heading(run), body, viewer);
}
