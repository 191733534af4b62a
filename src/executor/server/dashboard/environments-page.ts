// The configured environments as a signed-in team sees them: what each one runs and how many of the
// team's runs wait or run in it. Only what is safe to show: never a secret, an `env` value (or
// even the variables' names), a setup command or the source path.

import type { ExecutorConfig } from '../../config.js';
import type { StoredRun } from '../../store/types.js';
import { type Viewer, esc, page } from './html.js';

export function renderEnvironments(viewer: Viewer, config: ExecutorConfig, active: StoredRun[]): string {
  const tally = (env: string, state: string) =>
    active.filter(r => r.environment_id === env && r.state === state).length;
  const rows = config.environments.map(env => {
    const q = new URLSearchParams({ environment: env.id }).toString();
    return `<tr>
<td data-label="Environment"><a href="/?${esc(q)}">${esc(env.id)}</a>${env.name && env.name !== env.id ? ` <span class="muted">${esc(env.name)}</span>` : ''}</td>
<td data-label="Agent">${esc(env.agent.kind)}</td>
<td data-label="Queued">${tally(env.id, 'QUEUED')}</td>
<td data-label="Running">${tally(env.id, 'INPROGRESS')}</td>
<td data-label="At once">${esc(env.maxConcurrentRuns)}</td>
<td data-label="Time limit">${esc(Math.round(env.timeoutMs / 1000))} s</td>
</tr>`;
  });
  const body = `<h1>Environments</h1>
<p>This executor runs up to ${esc(config.workers)} runs at once across its environments. Queued and running counts are your team's runs.</p>
<table class="runs"><thead><tr><th scope="col">Environment</th><th scope="col">Agent</th><th scope="col">Queued</th><th scope="col">Running</th><th scope="col">At once</th><th scope="col">Time limit</th></tr></thead>
<tbody>${rows.join('\n')}</tbody></table>`;
  return page('Environments', body, viewer, '/environments');
}
