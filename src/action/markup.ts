// Escaping for what the step writes as HTML or Markdown (the job summary, the progress comment):
// service text is shown, never interpreted.

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
