// Closing keywords GitHub acts on in a title or commit message, in every spacing it accepts:
// `fixes:#1`, `Fixes:  #1`, `closes:owner/repo#2`, `resolved GH-3`. Each must come out so that no
// keyword is directly followed by a reference any more.

import { describe, expect, it } from '@jest/globals';
import { neutralizePlain, plainFields } from '../../src/executor/publish/pr-text.js';
import { runSourceChild, sourcePath } from '../support/source-child.js';

const STILL_CLOSES = /\b(close[sd]?|fix(?:e[sd])?|resolve[sd]?)\s*:?\s*(?:[\w.-]+\/[\w.-]+)?(#\d|gh-\d)/i;

describe('closing keywords from a run are neutralised', () => {
  it.each([
    ['fixes:#1', 'fixes issue:#1'],
    ['Fixes:  #1', 'Fixes issue:  #1'],
    ['closes:owner/repo#2', 'closes issue:owner/repo#2'],
    ['resolved GH-3', 'resolved issue GH-3'],
    ['fix#4', 'fix issue#4'],
    ['Closes #5', 'Closes issue #5']
  ])('%s', (text, expected) => {
    expect(neutralizePlain(text)).toBe(expected);
    expect(STILL_CLOSES.test(neutralizePlain(text))).toBe(false);
  });

  it('in the title and the commit message alike, and leaves ordinary words alone', () => {
    const safe = plainFields({ title: 'Fixes:#7', message: 'closes:a/b#8', other: 'fixes:#9' }, [
      'title',
      'message'
    ]);
    expect(safe).toEqual({ title: 'Fixes issue:#7', message: 'closes issue:a/b#8', other: 'fixes:#9' });
    expect(neutralizePlain('the fix is in prefix#1 and suffixes')).toBe(
      'the fix is in prefix#1 and suffixes'
    );
  });
});

describe('an answer with a keyword then a long run of spaces', () => {
  // Publishing neutralises the answer (for the commit message and the pull request) in the
  // executor's own event loop. `fixes` then spaces that lead to no reference made the closing
  // keyword's pattern backtrack in quadratic time: about an hour for a 1 MiB answer, with every
  // run, request and lease of the node held meanwhile. Read in a child so a hang fails the test.
  it('is neutralised at once', async () => {
    const script = `import { markdownFields, plainFields } from ${JSON.stringify(sourcePath('src/executor/publish/pr-text.ts'))};
let result = '';
process.stdin.on('data', chunk => (result += chunk));
process.stdin.on('end', () => {
  const plain = plainFields({ result }, ['result']).result;
  const quoted = markdownFields({ result }, ['result']).result;
  process.stdout.write(JSON.stringify([plain === result, quoted.length]));
});`;
    const result = `fixes${' '.repeat(300_000)}soon`;
    // Generous: done in milliseconds; the old pattern needed minutes for this answer.
    const shown = await runSourceChild(script, result, 60_000);
    expect(shown).toBe(JSON.stringify([true, result.length + '<pre></pre>'.length]));
  });
});
