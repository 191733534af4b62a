// What GitHub would act on in text the action or the executor wrote there: a live mention, a
// closing keyword, an HTML comment other than the step's own hidden lines, a remote image, or
// markup that leaves its block. Used on every output that reaches the GitHub stand-in.

/** Hostile text for every field a run or the service fills: each part would act on GitHub if written raw. */
export const HOSTILE = [
  '@alice and @octo/security-team, please approve',
  'fixes #1, Closes: octo/app#2, resolves https://github.com/octo/app/issues/3',
  '<!-- agent-run:0123456789abcdef -->',
  '<!-- agent-run-run:evil-run mode:plan -->',
  '![x](https://evil.example/x.png) <img src="https://evil.example/y.png">',
  '</pre></details></code></td></table><h1>APPROVED</h1>',
  '`@carol` **bold** [link](https://evil.example/z)'
].join('\n');

/** The step's own hidden lines: its marker and its record. */
const OWN_HIDDEN =
  /^<!-- agent-run(?::[0-9a-f]{16}|-finding:[0-9a-f]{24}|-run:[A-Za-z0-9._:~-]+ mode:(?:normal|plan)|-step:\d+\.\d+|-plan:[A-Za-z0-9._:~-]+) -->$/;
const TAGS_ALLOWED = new Set(['code', 'pre', 'a', 'details', 'summary', 'br']);

function decode(text: string): string {
  return text
    .replace(/&#(\d+);/g, (_m, code: string) => String.fromCodePoint(Number(code)))
    .replace(/&#x([0-9a-f]+);/gi, (_m, code: string) => String.fromCodePoint(parseInt(code, 16)))
    .replace(
      /&(lt|gt|amp|quot|apos);/g,
      (_m, name: string) => ({ lt: '<', gt: '>', amp: '&', quot: '"', apos: "'" })[name]!
    );
}

/** Everything in `text` GitHub would act on; empty when it is inert. `markup`: the text is Markdown/HTML. */
export function liveParts(text: string, markup = true): string[] {
  const found: string[] = [];
  const plain = markup ? decode(text) : text;
  for (const match of plain.matchAll(/(^|[^\w@/`.-])@([A-Za-z0-9][A-Za-z0-9-]*(?:\/[A-Za-z0-9_.-]+)?)/g))
    found.push(`mention @${match[2]}`);
  for (const match of plain.matchAll(
    /\b(close[sd]?|fix(?:e[sd])?|resolve[sd]?)\s*:?\s*((?:[\w.-]+\/[\w.-]+)?#\d|gh-\d|https?:\/\/)/gi
  ))
    found.push(`closing keyword ${match[0]}`);
  if (!markup) return found;
  for (const line of text.split('\n'))
    for (const match of line.matchAll(/<!--[\s\S]*?-->/g))
      if (!OWN_HIDDEN.test(line.trim()) || match[0] !== line.trim()) found.push(`HTML comment ${match[0]}`);
  for (const match of text.matchAll(/<\/?([A-Za-z][A-Za-z0-9]*)/g))
    if (!TAGS_ALLOWED.has(match[1]!.toLowerCase())) found.push(`tag ${match[0]}`);
  if (/!\[[^\]]*\]\(/.test(text)) found.push('Markdown image');
  if (/\[[^\]]*\]\(https?:/.test(text)) found.push('Markdown link');
  for (const tag of ['pre', 'code', 'details'])
    if (
      (text.match(new RegExp(`<${tag}[ >]`, 'g')) ?? []).length !==
      (text.match(new RegExp(`</${tag}>`, 'g')) ?? []).length
    )
      found.push(`unbalanced <${tag}>`);
  return found;
}
