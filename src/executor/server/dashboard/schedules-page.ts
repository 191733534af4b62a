// The team's scheduled agents as a signed-in person sees them: each schedule's cron expression,
// state, next and last fire, why its last due time started nothing, its last runs, and a pause or
// resume button (a form with the session's CSRF token, checked like a run's cancel).

import type { StoredSchedule } from '../../store/sql-schedules.js';
import type { StoredRun } from '../../store/types.js';
import { type Viewer, badge, esc, heading, page, time } from './html.js';

function lastRuns(runs: StoredRun[]): string {
  if (runs.length === 0) return '<span class="muted">none yet</span>';
  return runs
    .map(
      run =>
        `<a href="/runs/${esc(encodeURIComponent(run.run_id))}" title="${esc(heading(run))}">${badge(run.state)}</a>`
    )
    .join(' ');
}

export function renderSchedules(
  viewer: Viewer,
  schedules: { schedule: StoredSchedule; runs: StoredRun[] }[]
): string {
  const rows = schedules.map(({ schedule, runs }) => {
    const id = esc(encodeURIComponent(schedule.id));
    const action = schedule.enabled ? 'pause' : 'resume';
    const next = schedule.next_run_ms === null ? null : new Date(schedule.next_run_ms).toISOString();
    return `<tr id="schedule-${esc(schedule.id)}">
<td data-label="Schedule">${esc(schedule.spec.name)}<br><code class="muted">${esc(schedule.id)}</code></td>
<td data-label="Cron"><code>${esc(schedule.spec.cron_schedule)}</code> <span class="muted">${esc(schedule.spec.time_zone)}</span></td>
<td data-label="State">${schedule.enabled ? '<span class="badge s-succeeded">enabled</span>' : '<span class="badge s-cancelled">paused</span>'}</td>
<td data-label="Next fire">${next ? time(next) : '<span class="muted">none</span>'}</td>
<td data-label="Last fire">${schedule.last_ran ? time(schedule.last_ran) : '<span class="muted">never</span>'}${
      schedule.last_spawn_error
        ? `<br><span class="spawn-error">${esc(schedule.last_spawn_error)}</span>`
        : ''
    }</td>
<td data-label="Last runs">${lastRuns(runs)}</td>
<td data-label=""><form method="post" action="/schedules/${id}/${action}"><input type="hidden" name="csrf" value="${esc(viewer.csrf)}"><button type="submit">${action === 'pause' ? 'Pause' : 'Resume'}</button></form></td>
</tr>`;
  });
  const table =
    rows.length === 0
      ? '<p class="muted">Your team has no schedules. Create one with <code>agent-run schedules create</code> or <code>POST /api/v1/agent/schedules</code>.</p>'
      : `<table class="runs"><thead><tr><th scope="col">Schedule</th><th scope="col">Cron</th><th scope="col">State</th><th scope="col">Next fire</th><th scope="col">Last fire</th><th scope="col">Last runs</th><th scope="col"></th></tr></thead>
<tbody>${rows.join('\n')}</tbody></table>`;
  return page('Schedules', `<h1>Schedules</h1>\n${table}`, viewer, '/schedules');
}
