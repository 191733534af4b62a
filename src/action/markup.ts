// Escaping for what the step writes as HTML or Markdown (the job summary, the progress comment):
// service text is shown, never interpreted. Also the pieces both of them show: the answer, artifacts.
// HTML escaping alone is not enough in Markdown: text between inline tags is still Markdown, where
// `![x](url)` loads an image, `@team` notifies people and `fixes #1` closes an issue. So a short
// field from the service is shown inert: every character Markdown or HTML gives a meaning to
// becomes a numeric character reference, and it sits inside <code>, where GitHub links no mention.
// This module is the one writer of run and service text into what the action posts (the comment,
// the job summary): `inert`/`code` for a field on one line, `block` for a long one. Both neutralise
// mentions and closing keywords as the executor's pull request text does (src/api/github-text.ts).

import type { Artifact } from '../api/index.js';
import { neutralizePlain, textBlock } from '../api/github-text.js';

export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, ch => `&#${ch.charCodeAt(0)};`);
}

/**
 * Text that stays text in Markdown and HTML alike, on one line. Colons are escaped too (no URL in
 * it becomes a link), except in a link's own label, where the URL is the href already.
 */
export function inert(text: string, inLink = false): string {
  const special = inLink ? /[&<>"'`*[\]()!#@\\~|{}]/g : /[&<>"'`*[\]()!#@\\~|:{}]/g;
  return neutralizePlain(text)
    .replace(/[\r\n]+/g, ' ')
    .replace(special, ch => `&#${ch.charCodeAt(0)};`)
    .replace(/www\./gi, match => `${match.slice(0, 3)}&#46;`);
}

export function code(text: string): string {
  return `<code>${inert(text)}</code>`;
}

/** Whether a URL may be shown as a link: http(s) only. */
export function isWebLink(url: string): boolean {
  return /^https?:\/\/[^\s]+$/i.test(url);
}

/** A link for http(s) URLs; anything else is shown as inert text. */
export function link(url: string, label?: string): string {
  if (!isWebLink(url)) return code(url);
  return `<a href="${escapeHtml(url)}">${inert(label ?? url, true)}</a>`;
}

/**
 * A long text from the run or the service (an answer, a status message, a plan) as an inert `<pre>`
 * block of at most `max` characters of markup (cut after escaping, so the limit holds).
 */
export function block(text: string, max = Infinity): string {
  return textBlock(text, max).markup;
}

/** The result's text in the summary and the comment: long text folds away inside <details>. */
export function resultMarkup(result: string, max = 64 * 1024): string {
  const cut = result.length > max ? `${result.slice(0, max)}…` : result;
  const body = block(cut);
  const long = cut.length > 300 || cut.split('\n').length > 8;
  return long
    ? `<details><summary>Agent's answer (${result.length} characters)</summary>\n\n${body}\n</details>`
    : body;
}

/** One line per artifact, for the summary and the comment. */
export function artifactLines(produced: { artifacts: Artifact[] } | undefined, maxName = 2048): string[] {
  return (produced?.artifacts ?? []).map(artifact => {
    const data = artifact.data;
    const full = String(data.url ?? data.filename ?? data.filepath ?? data.title ?? data.artifact_uid ?? '');
    const name = full.length > maxName ? `${full.slice(0, maxName)}…` : full;
    const linked = typeof data.url === 'string' && data.url.length <= maxName && isWebLink(data.url);
    const shown = linked ? link(data.url as string) : name && code(name);
    return `${inert(String(artifact.artifact_type).slice(0, 100))}${shown ? `: ${shown}` : ''}`;
  });
}
