// Text from a run that publishing writes into GitHub: the pull request's title and body and the
// commit message. A run's answer and title may carry words a stranger steered the agent into
// writing, and GitHub acts on some words wherever they appear: `@user` and `@org/team` notify
// people from the publishing account, `fixes #1` (or `closes owner/repo#2`, or an issue URL) closes
// an issue when the change is merged, and in a Markdown body `![x](https://…)` or raw HTML loads
// remote content for every reader. So each field taken from the run is neutralised before it is
// put into the operator's template; the template's own text stays exactly as written. The
// neutralising itself is shared with the action's comment and summary (src/api/github-text.ts).

import { inlineText, neutralizePlain, textBlock } from '../../api/github-text.js';

export { neutralizePlain };

/** A short field (the title) inside a Markdown body: one line of inert text. */
export function inlineMarkdown(text: string): string {
  return inlineText(text);
}

/**
 * A long field (the answer) inside a Markdown body: an escaped `<pre>` block, so it shows as the
 * agent wrote it (line breaks kept) and nothing in it is a link, an image, HTML or a mention.
 */
export function quotedMarkdown(text: string): string {
  if (text === '') return '';
  return textBlock(text).markup;
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
