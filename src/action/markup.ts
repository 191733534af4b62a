// Escaping for what the step writes as HTML or Markdown (the job summary, the progress comment):
// service text is shown, never interpreted. Also the pieces both of them show: the answer, artifacts.

import type { Produced } from './produced.js';

export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, ch => `&#${ch.charCodeAt(0)};`);
}

export function code(text: string): string {
  return `<code>${escapeHtml(text)}</code>`;
}

/** A link for http(s) URLs; anything else is shown as text. */
export function link(url: string): string {
  return /^https?:\/\//i.test(url) ? `<a href="${escapeHtml(url)}">${escapeHtml(url)}</a>` : escapeHtml(url);
}

/** The result's text in the summary and the comment: long text folds away inside <details>. */
export function resultMarkup(result: string, max = 64 * 1024): string {
  const cut = result.length > max ? `${result.slice(0, max)}…` : result;
  const body = `<pre>${escapeHtml(cut)}</pre>`;
  const long = cut.length > 300 || cut.split('\n').length > 8;
  return long
    ? `<details><summary>Agent's answer (${result.length} characters)</summary>\n\n${body}\n</details>`
    : body;
}

/** One line per artifact, for the summary and the comment. */
export function artifactLines(produced: Produced | undefined): string[] {
  return (produced?.artifacts ?? []).map(artifact => {
    const data = artifact.data;
    const name = String(data.url ?? data.filename ?? data.filepath ?? data.title ?? data.artifact_uid ?? '');
    const shown =
      typeof data.url === 'string' && /^https?:/.test(data.url) ? link(data.url) : escapeHtml(name);
    return `${escapeHtml(String(artifact.artifact_type))}${shown ? `: ${shown}` : ''}`;
  });
}
