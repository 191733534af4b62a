// The sign-in page and the runs list: newest first, paged by the seq of the last row shown,
// filtered by state, environment, text and created range, all kept in the URL so a filtered view
// can be bookmarked and shared. Readable without JavaScript; app.js makes it live.

import type { ListQuery, StoredRun } from '../../store/types.js';
import { STATES, type Viewer, badge, duration, esc, heading, page, time } from './html.js';

export const PAGE_SIZE = 25;

export interface Filters {
  state: string;
  environment: string;
  q: string;
  /** YYYY-MM-DD, inclusive. */
  from: string;
  to: string;
  before?: number;
}

const DATE = /^\d{4}-\d{2}-\d{2}$/;
/**
 * Dates typed as the list shows them (YYYY-MM-DD, UTC days), not the browser's locale picker, which
 * shows mm/dd/yyyy or dd/mm/yyyy beside a list of ISO times.
 */
const DATE_INPUT =
  'placeholder="YYYY-MM-DD" pattern="\\d{4}-\\d{2}-\\d{2}" inputmode="numeric" size="10" title="a UTC date, YYYY-MM-DD"';

/** Reads the filters from the query string; anything malformed is ignored, not an error page. */
export function readFilters(query: Record<string, unknown>): Filters {
  const text = (name: string, max = 200) => {
    const value = query[name];
    return typeof value === 'string' ? value.slice(0, max) : '';
  };
  const before = Number(text('before', 20));
  return {
    state: /^[A-Z]{1,20}$/.test(text('state')) ? text('state') : '',
    environment: text('environment', 100),
    q: text('q').trim(),
    from: DATE.test(text('from')) ? text('from') : '',
    to: DATE.test(text('to')) ? text('to') : '',
    ...(Number.isSafeInteger(before) && before > 0 ? { before } : {})
  };
}

export function listQuery(filters: Filters, limit: number): ListQuery {
  const query: ListQuery = { limit };
  if (filters.before !== undefined) query.beforeSeq = filters.before;
  if (filters.state) query.states = [filters.state];
  if (filters.environment) query.environmentId = filters.environment;
  if (filters.q) query.search = filters.q;
  if (filters.from) query.createdAfter = `${filters.from}T00:00:00.000Z`;
  if (filters.to) query.createdBefore = `${filters.to}T23:59:59.999Z`;
  return query;
}

/** Whether a run belongs in the list these filters show (for live updates). */
export function matches(filters: Filters, run: StoredRun): boolean {
  if (filters.state && run.state !== filters.state) return false;
  if (filters.environment && run.environment_id !== filters.environment) return false;
  if (filters.from && run.created_at < `${filters.from}T00:00:00.000Z`) return false;
  if (filters.to && run.created_at > `${filters.to}T23:59:59.999Z`) return false;
  if (filters.q) {
    const needle = filters.q.toLowerCase();
    if (!`${run.title ?? ''}\n${run.prompt}`.toLowerCase().includes(needle)) return false;
  }
  return true;
}

function filterQuery(filters: Filters, before?: number): string {
  const params = new URLSearchParams();
  for (const name of ['state', 'environment', 'q', 'from', 'to'] as const)
    if (filters[name]) params.set(name, filters[name]);
  if (before !== undefined) params.set('before', String(before));
  const text = params.toString();
  return text ? `?${text}` : '';
}

export function runRow(run: StoredRun): string {
  const id = esc(run.run_id);
  return `<tr id="run-${id}" data-state="${esc(run.state)}">
<td data-label="State">${badge(run.state)}</td>
<td data-label="Run"><a href="/runs/${encodeURIComponent(run.run_id)}">${esc(heading(run))}</a></td>
<td data-label="Environment">${esc(run.environment_id)}</td>
<td data-label="Creator">${esc(run.creator_name)}</td>
<td data-label="Created">${time(run.created_at)}</td>
<td data-label="Duration">${esc(duration(run))}</td>
</tr>`;
}

export function countsHtml(counts: Record<string, number>): string {
  const states = [...new Set([...STATES, ...Object.keys(counts)])];
  return states
    .map(s => `<li>${badge(s)} <span data-count="${esc(s)}">${counts[s] ?? 0}</span></li>`)
    .join('');
}

export function renderList(
  viewer: Viewer,
  filters: Filters,
  runs: StoredRun[],
  more: boolean,
  counts: Record<string, number>,
  environments: string[]
): string {
  const option = (value: string, selected: string, label = value) =>
    `<option value="${esc(value)}"${value === selected ? ' selected' : ''}>${esc(label)}</option>`;
  const states = [...new Set([...STATES, ...Object.keys(counts)])];
  const form = `<form method="get" action="/" class="filters" role="search" aria-label="Filter runs">
<label>State <select name="state">${option('', filters.state, 'any')}${states.map(s => option(s, filters.state)).join('')}</select></label>
<label>Environment <select name="environment">${option('', filters.environment, 'any')}${environments.map(e => option(e, filters.environment)).join('')}</select></label>
<label>Text <input type="search" name="q" value="${esc(filters.q)}" placeholder="title or prompt"></label>
<label>Created from <input type="text" name="from" value="${esc(filters.from)}" ${DATE_INPUT}></label>
<label>Created until <input type="text" name="to" value="${esc(filters.to)}" ${DATE_INPUT}></label>
<button type="submit">Filter</button> <a href="/">Clear</a>
</form>`;
  const rows = runs.map(runRow).join('\n');
  const last = runs.at(-1);
  const next =
    more && last ? `<a rel="next" href="/${esc(filterQuery(filters, last.seq))}">Older runs →</a>` : '';
  const newest =
    filters.before !== undefined ? `<a href="/${esc(filterQuery(filters))}">← Newest runs</a>` : '';
  const body = `<h1>Runs</h1>
<ul class="counts" id="counts" aria-label="Runs per state">${countsHtml(counts)}</ul>
${form}
<table class="runs" id="runs" data-live="${filters.before === undefined ? 'list' : 'page'}">
<caption class="sr-only">Runs, newest first</caption>
<thead><tr><th scope="col">State</th><th scope="col">Run</th><th scope="col">Environment</th><th scope="col">Creator</th><th scope="col">Created</th><th scope="col">Duration</th></tr></thead>
<tbody>${rows}</tbody></table>
${runs.length === 0 ? '<p class="empty" id="empty">No runs match.</p>' : ''}
<nav class="paging" aria-label="Pages">${newest} ${next}</nav>
<p class="live-status" id="live-status" aria-live="polite"></p>`;
  return page('Runs', body, viewer, '/');
}

export function renderSignIn(problem?: string, next?: string): string {
  const body = `<h1>Sign in</h1>
<p>Sign in with an API key of your team (the executor's <code>keys create</code> command makes one). The key stays on the server; your browser gets a session cookie.</p>
${problem ? `<p class="error" role="alert">${esc(problem)}</p>` : ''}
<form method="post" action="/sign-in" class="sign-in">
${next ? `<input type="hidden" name="next" value="${esc(next)}">` : ''}
<label for="api_key">API key</label>
<input id="api_key" name="api_key" type="password" autocomplete="off" required spellcheck="false">
<button type="submit">Sign in</button>
</form>`;
  return page('Sign in', body);
}

export function renderProblem(viewer: Viewer | undefined, title: string, message: string): string {
  return page(
    title,
    `<h1>${esc(title)}</h1><p role="alert">${esc(message)}</p><p><a href="/">Back to the runs</a></p>`,
    viewer
  );
}
