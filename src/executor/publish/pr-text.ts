// Text from a run that publishing writes into GitHub: the pull request's title and body and the
// commit message. A run's answer and title may carry words a stranger steered the agent into
// writing, and GitHub acts on some words wherever they appear: `@user` and `@org/team` notify
// people from the publishing account, `fixes #1` (or `closes owner/repo#2`, or an issue URL) closes
// an issue when the change is merged, and in a Markdown body `![x](https://…)` or raw HTML loads
// remote content for every reader. So each field taken from the run is neutralised before it is
// put into the operator's template; the template's own text stays exactly as written.

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
function dropControls(text: string): string {
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

/** Every character HTML or Markdown gives a meaning to, as a numeric character reference. */
function escapeMarkup(text: string): string {
  return text
    .replace(/[&<>"'`*_[\]()!#@\\~|:{}=+-]/g, ch => `&#${ch.charCodeAt(0)};`)
    .replace(/www\./gi, match => `${match.slice(0, 3)}&#46;`);
}

/** A short field (the title) inside a Markdown body: one line of inert text. */
export function inlineMarkdown(text: string): string {
  return escapeMarkup(neutralizePlain(text).replace(/[\r\n]+/g, ' '));
}

/**
 * A long field (the answer) inside a Markdown body: an escaped `<pre>` block, so it shows as the
 * agent wrote it (line breaks kept) and nothing in it is a link, an image, HTML or a mention.
 */
export function quotedMarkdown(text: string): string {
  if (text === '') return '';
  return `<pre>${escapeMarkup(neutralizePlain(text))}</pre>`;
}

/** The fields that came from the run, made safe for plain text: the title and the commit message. */
export function plainFields(
  fields: Record<string, string>,
  fromRun: readonly string[]
): Record<string, string> {
  const safe = { ...fields };
  for (const name of fromRun) if (name in safe) safe[name] = neutralizePlain(safe[name]!);
  return safe;
}

/** The same for a Markdown body: `result` quoted as a block, every other field from the run inline. */
export function markdownFields(
  fields: Record<string, string>,
  fromRun: readonly string[]
): Record<string, string> {
  const safe = { ...fields };
  for (const name of fromRun) {
    if (!(name in safe)) continue;
    safe[name] = name === 'result' ? quotedMarkdown(safe[name]!) : inlineMarkdown(safe[name]!);
  }
  return safe;
}
