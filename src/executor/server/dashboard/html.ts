// The dashboard's HTML building blocks: the one escape function every piece of run content goes
// through (prompts and output are written by strangers), the page frame with its navigation and
// sign-out form, and the small pieces the pages share (state badges, times, durations).

import { formatDuration } from '../../../common/duration.js';
import type { StoredRun } from '../../store/types.js';

export { isTerminalState } from '../../../api/run.js';
export const STATES = ['QUEUED', 'INPROGRESS', 'SUCCEEDED', 'FAILED', 'CANCELLED'] as const;

/** Terminal colour and cursor sequences (ESC [ … letter), which agents' output is full of. */
// eslint-disable-next-line no-control-regex -- finding control characters is the point
const TERMINAL_SEQUENCES = /\u001b\[[0-?]*[ -/]*[@-~]/g;
/** Control characters other than tab, line feed and carriage return (C0, DEL and C1). */
// eslint-disable-next-line no-control-regex -- finding control characters is the point
const CONTROLS = /[\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f-\u009f]/g;

/**
 * Escapes text for HTML content and quoted attribute values. Terminal sequences are dropped and any
 * other control character becomes U+FFFD, so nothing invisible of an agent's output reaches a page.
 */
export function esc(value: unknown): string {
  return String(value ?? '')
    .replace(TERMINAL_SEQUENCES, '')
    .replace(CONTROLS, '\uFFFD')
    .replace(/[&<>"']/g, ch => `&#${ch.charCodeAt(0)};`);
}

export interface Viewer {
  team: string;
  keyName: string;
  csrf: string;
}

/** A whole page: our own CSS and JS files only, so the CSP needs no inline anything. */
export function page(title: string, body: string, viewer?: Viewer, current = ''): string {
  const link = (href: string, label: string) =>
    `<a href="${href}"${current === href ? ' aria-current="page"' : ''}>${label}</a>`;
  const nav = viewer
    ? `<nav aria-label="Dashboard">${link('/', 'Runs')}${link('/schedules', 'Schedules')}${link('/webhooks', 'Webhooks')}${link('/environments', 'Environments')}</nav>
<form method="post" action="/sign-out" class="sign-out"><input type="hidden" name="csrf" value="${esc(viewer.csrf)}">
<span class="who">${esc(viewer.keyName)} · team ${esc(viewer.team)}</span> <button type="submit">Sign out</button></form>`
    : '';
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="color-scheme" content="light dark">
<title>${esc(title)} · agent-run</title>
<link rel="stylesheet" href="/dashboard/app.css">
<script src="/dashboard/app.js" defer></script>
</head><body>
<header><a class="brand" href="/">agent-run</a>${nav}</header>
<main id="main">
${body}
</main>
</body></html>
`;
}

export function badge(state: string): string {
  return `<span class="badge s-${esc(state.toLowerCase())}">${esc(state)}</span>`;
}

/** An ISO time shown as `2026-11-23 16:54:49 UTC`, machine-readable in the datetime attribute. */
export function time(iso: string | null): string {
  if (!iso) return '';
  return `<time datetime="${esc(iso)}">${esc(iso.slice(0, 19).replace('T', ' '))} UTC</time>`;
}

/** How long a run ran, written as durations are in the configuration: `45s`, `30m`, `1h2m5s`. */
export function duration(run: Pick<StoredRun, 'started_at' | 'completed_at'>, now = Date.now()): string {
  if (!run.started_at) return '';
  const end = run.completed_at ? Date.parse(run.completed_at) : now;
  const text = formatDuration(end - Date.parse(run.started_at));
  return run.completed_at ? text : `${text} so far`;
}

/** Text with `backtick` spans shown as code, as the Markdown it is usually written in means. */
export function inlineCode(text: unknown): string {
  const parts = String(text ?? '').split('`');
  // An unmatched backtick stays a backtick.
  if (parts.length % 2 === 0) parts[parts.length - 2] += `\`${parts.pop()!}`;
  return parts
    .map((part, i) => (i % 2 === 0 ? esc(part) : part === '' ? '``' : `<code>${esc(part)}</code>`))
    .join('');
}

/**
 * A same-origin path to return to after sign-in (`/runs/r_1?x=y`), or undefined for anything
 * else: another origin, a scheme, `//host`, backslashes or control characters.
 */
export function localPath(value: unknown): string | undefined {
  if (typeof value !== 'string' || value.length > 2000) return undefined;
  if (!value.startsWith('/') || /^\/[/\\]/.test(value) || value.includes('\\')) return undefined;
  for (const ch of value) if (ch.charCodeAt(0) < 0x20 || ch.charCodeAt(0) === 0x7f) return undefined;
  const url = new URL(value, 'http://dashboard.invalid');
  if (url.origin !== 'http://dashboard.invalid') return undefined;
  return `${url.pathname}${url.search}${url.hash}`;
}

/** The run's title, else its prompt's first line (shortened). */
export function heading(run: Pick<StoredRun, 'title' | 'prompt'>): string {
  if (run.title) return run.title;
  const line = run.prompt.split('\n', 1)[0]!.trim();
  return line.length > 120 ? `${line.slice(0, 119)}…` : line || '(empty prompt)';
}
