// The configured environments as a signed-in team sees them: what each one runs and how many of the
// team's runs wait or run in it. Only what is safe to show: never a secret, an `env` value (or
// even the variables' names), a setup command or the source path. Below them, the executor nodes on
// this store as their heartbeats report them, with their workers busy and free.

import { formatDuration } from '../../../common/duration.js';
import type { ExecutorConfig } from '../../config/config.js';
import type { NodeReport, StoredRun } from '../../store/types.js';
import { SILENT_AFTER_MS } from '../../telemetry/heartbeat.js';
import { type Viewer, esc, page } from './html.js';

function ago(ms: number): string {
  const seconds = Math.max(0, Math.round(ms / 1000));
  return seconds < 120 ? `${seconds} s ago` : `${Math.round(seconds / 60)} min ago`;
}

function nodesHtml(nodes: NodeReport[], now: number): string {
  if (nodes.length === 0) return '<p class="muted">No node has reported itself yet.</p>';
  const rows = nodes.map(node => {
    const silent = now - node.seen_at > SILENT_AFTER_MS;
    const status = silent
      ? '<span class="badge s-failed">silent</span>'
      : '<span class="badge s-succeeded">alive</span>';
    const free = Math.max(0, node.workers - node.busy);
    return `<tr id="node-${esc(node.node_id)}">
<td data-label="Node"><code>${esc(node.node_id)}</code></td>
<td data-label="Status">${status}</td>
<td data-label="Role">${esc(node.role)}</td>
<td data-label="Workers">${esc(node.busy)} busy, ${esc(free)} free</td>
<td data-label="Last heard">${esc(ago(now - node.seen_at))}</td>
</tr>`;
  });
  return `<table class="runs"><thead><tr><th scope="col">Node</th><th scope="col">Status</th><th scope="col">Role</th><th scope="col">Workers</th><th scope="col">Last heard</th></tr></thead>
<tbody>${rows.join('\n')}</tbody></table>`;
}

export function renderEnvironments(
  viewer: Viewer,
  config: Pick<ExecutorConfig, 'environments' | 'workers'>,
  active: StoredRun[],
  nodes: NodeReport[],
  now = Date.now()
): string {
  const tally = (env: string, state: string) =>
    active.filter(r => r.environment_id === env && r.state === state).length;
  const rows = config.environments.map(env => {
    const q = new URLSearchParams({ environment: env.id }).toString();
    return `<tr>
<td data-label="Environment"><a href="/?${esc(q)}">${esc(env.id)}</a>${env.name && env.name !== env.id ? ` <span class="muted">${esc(env.name)}</span>` : ''}</td>
<td data-label="Agent">${esc(env.agent.kind)}</td>
<td data-label="Image">${env.image ? `<code>${esc(env.image.ref)}</code>` : '<span class="muted">host</span>'}</td>
<td data-label="Queued">${tally(env.id, 'QUEUED')}</td>
<td data-label="Running">${tally(env.id, 'INPROGRESS')}</td>
<td data-label="At once">${esc(env.maxConcurrentRuns)}</td>
<td data-label="Time limit">${esc(formatDuration(env.timeoutMs))}</td>
</tr>`;
  });
  const body = `<h1>Environments</h1>
<p>This executor runs up to ${esc(config.workers)} runs at once across its environments. Queued and running counts are your team's runs.</p>
<table class="runs"><thead><tr><th scope="col">Environment</th><th scope="col">Agent</th><th scope="col">Image</th><th scope="col">Queued</th><th scope="col">Running</th><th scope="col">At once</th><th scope="col">Time limit</th></tr></thead>
<tbody>${rows.join('\n')}</tbody></table>
<h2>Nodes</h2>
<p>Every executor process on this store reports itself every ${SILENT_AFTER_MS / 3000} s; one unheard for ${SILENT_AFTER_MS / 1000} s is shown as silent.</p>
${nodesHtml(nodes, now)}`;
  return page('Environments', body, viewer, '/environments');
}
