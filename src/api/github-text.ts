// Text from a run or the service that reaches GitHub (a comment, a review, the job summary, a pull
// request's title and body, a commit message), made inert, for both sides of the contract: the
// action's comment and summary (src/action/markup.ts) and the executor's publishing
// (src/executor/publish/pr-text.ts) render every such field through these functions and nothing
// else. A run's answer, title, status message, plan and artifact names may carry words a stranger
// steered the agent into writing, and GitHub acts on some words wherever they appear: `@user` and
// `@org/team` notify people (even inside <pre>), `fixes #1` closes an issue once merged, a
// `<!-- … -->` could pass for the action's hidden marker, `![x](https://…)` or raw HTML loads remote
// content for every reader, and `</pre>` or `</details>` would let the rest escape its block.

/** `@name` or `@org/team` where GitHub would see a mention (not inside an e-mail address). */
const MENTION = /(^|[^\w@/`.-])@([A-Za-z0-9][A-Za-z0-9-]*(?:\/[A-Za-z0-9_.-]+)?)/g;

/**
 * A closing keyword then a reference, with or without a colon or space: `fixes:#1`, `Closes: owner/repo#2`,
 * `resolves GH-3`, a URL. The gap is `\s*(?::\s*)?`, never `\s*:?\s*`: two neighbouring `\s*` can split
 * a run of spaces in quadratically many ways, and an answer's `fixes` followed by a megabyte of
 * spaces then held the executor for about an hour.
 */
const CLOSING =
  /\b(close[sd]?|fix(?:e[sd])?|resolve[sd]?)(\s*(?::\s*)?)(?=(?:[\w.-]+\/[\w.-]+)?#\d|gh-\d|https?:\/\/)/gi;

/** Drops C0 and C1 controls other than tab and newline: nothing a title or message needs. */
export function dropControls(text: string): string {
  let out = '';
  for (const ch of text) {
    const code = ch.codePointAt(0)!;
    if (code === 9 || code === 10 || (code >= 32 && (code < 127 || code > 159))) out += ch;
  }
  return out;
}

/**
 * Plain text (a title, a commit message) with its mentions and closing keywords made harmless in
 * a way a reader still understands: `@ octocat`, `fixes issue #1`.
 */
export function neutralizePlain(text: string): string {
  return dropControls(text)
    .replace(MENTION, (_whole, before: string, name: string) => `${before}@ ${name}`)
    .replace(CLOSING, (_whole, keyword: string, gap: string) => `${keyword} issue${gap}`);
}

/** Characters HTML or Markdown (or GitHub's autolinks) give a meaning to. */
const MARKUP = /[&<>"'`*_[\]()!#@\\~|:{}=+-]/g;

/** Every character HTML or Markdown gives a meaning to, as a numeric character reference. */
export function escapeMarkup(text: string): string {
  return text
    .replace(MARKUP, ch => `&#${ch.charCodeAt(0)};`)
    .replace(/www\./gi, match => `${match.slice(0, 3)}&#46;`);
}

/** A short field inside Markdown: one line of inert text. */
export function inlineText(text: string): string {
  return escapeMarkup(neutralizePlain(text).replace(/[\r\n]+/g, ' '));
}

/**
 * A long field (an answer, a status message, a plan) inside Markdown or HTML: an escaped `<pre>`
 * block, so it shows as written (line breaks kept) and nothing in it is a link, an image, HTML, a
 * marker, a mention or a closing keyword. At most `max` characters of markup: the text is cut
 * after escaping, never inside a character reference; `cut` says whether all of it fitted.
 */
export function textBlock(text: string, max = Infinity): { markup: string; cut: boolean } {
  const escaped = escapeMarkup(neutralizePlain(text));
  const room = max - '<pre></pre>'.length - 1;
  if (escaped.length <= room) return { markup: `<pre>${escaped}</pre>`, cut: false };
  let end = Math.max(0, room);
  // Never end inside `&#NN;`: back up to the reference's start.
  const amp = escaped.lastIndexOf('&', end);
  if (amp !== -1 && escaped.indexOf(';', amp) >= end) end = amp;
  return { markup: `<pre>${escaped.slice(0, end)}…</pre>`, cut: true };
}

/**
 * Code shown as written inside a fenced block (a review's `suggestion`, which GitHub applies as
 * the new text of the commented lines): GitHub links no mention and loads no image inside it, so
 * the text is kept as it is, but without control characters (a lone carriage return would end a
 * line) and behind a fence longer than any run of backticks it holds, so no line of it can close
 * the block and let the rest be read as Markdown.
 */
export function codeBlock(text: string, info = ''): string {
  const code = dropControls(text);
  let longest = 0;
  for (const run of code.match(/`+/g) ?? []) longest = Math.max(longest, run.length);
  const fence = '`'.repeat(Math.max(3, longest + 1));
  return `${fence}${info}\n${code}\n${fence}`;
}
