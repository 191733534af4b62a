// The pieces of `review: inline` that need no server: reading a patch's lines, placing findings,
// the suggestion's fence, the input checks.
import { describe, expect, it } from '@jest/globals';
import { codeBlock } from '../../src/api/github-text.js';
import {
  type Finding,
  commentBody,
  diffLines,
  placeFindings,
  pullDiff,
  readReviewInputs,
  reviewBody
} from '../../src/action/review.js';

describe('diffLines', () => {
  it('numbers each side as GitHub does, across hunks, past a "no newline" marker and a final line break', () => {
    const lines = diffLines(
      '@@ -1,2 +1,2 @@\n-old\n+new\n same\n\\ No newline at end of file\n@@ -20 +20,2 @@\n ctx\n+added\n'
    );
    expect([...lines.RIGHT].map(([n, l]) => [n, l.hunk, l.text])).toEqual([
      [1, 0, 'new'],
      [2, 0, 'same'],
      [20, 1, 'ctx'],
      [21, 1, 'added']
    ]);
    expect([...lines.LEFT].map(([n, l]) => [n, l.hunk, l.text])).toEqual([
      [1, 0, 'old'],
      [2, 0, 'same'],
      [20, 1, 'ctx']
    ]);
  });
});

describe('placeFindings', () => {
  const diff = pullDiff([{ filename: 'a.ts', status: 'modified', patch: '@@ -1,3 +1,4 @@\n a\n+b\n c\n d' }]);
  const finding = (extra: Partial<Finding>): Finding => ({
    path: 'a.ts',
    line: 2,
    severity: 'minor',
    body: 'x',
    ...extra
  });

  it('gives the same fingerprint to the same text on moved lines, and a new one when the text changes', () => {
    const moved = pullDiff([
      { filename: 'a.ts', status: 'modified', patch: '@@ -5,3 +5,4 @@\n a\n+b\n c\n d' }
    ]);
    const [first] = placeFindings([finding({})], diff, new Set(), 25).placed;
    const [second] = placeFindings([finding({ line: 6 })], moved, new Set(), 25).placed;
    const [other] = placeFindings([finding({ body: 'y' })], diff, new Set(), 25).placed;
    expect(second!.fingerprint).toBe(first!.fingerprint);
    expect(other!.fingerprint).not.toBe(first!.fingerprint);
    const [again] = placeFindings([finding({})], diff, new Set([first!.fingerprint]), 25).placed;
    expect(again!.posted).toBe('duplicate');
  });

  it('refuses a range that ends before it starts', () => {
    const [placed] = placeFindings([finding({ start_line: 3, line: 2 })], diff, new Set(), 25).placed;
    expect(placed).toMatchObject({ posted: 'body', why: 'start_line 3 is after line 2' });
  });
});

describe('codeBlock', () => {
  it('fences code with more backticks than any run it holds and drops control characters', () => {
    expect(codeBlock('a\r\n````\n\u001b[1m', 'suggestion')).toBe('`````suggestion\na\n````\n[1m\n`````');
  });
});

describe('readReviewInputs', () => {
  it('names each bad value with the form expected', () => {
    const problems: string[] = [];
    const inputs: Record<string, string> = {
      review: 'on',
      'review-request-changes': 'blocker',
      'review-max-comments': '-1'
    };
    readReviewInputs(name => inputs[name] ?? '', problems);
    expect(problems).toEqual([
      'review "on": expected off or inline',
      'review-request-changes "blocker": expected off or a severity: critical, major, minor, nit',
      'review-max-comments "-1": expected a whole number from 0 to 1000'
    ]);
  });
});

describe('sizes', () => {
  const diff = pullDiff([{ filename: 'a.ts', status: 'modified', patch: '@@ -1,1 +1,2 @@\n a\n+b' }]);

  it('keeps each line comment within 16 KiB, whatever the escaping makes of its text', () => {
    for (const text of ['<'.repeat(16_000), 'é'.repeat(16_000), '😀'.repeat(8000)]) {
      const { placed } = placeFindings(
        [{ path: 'a.ts', line: 2, severity: 'major', title: '@'.repeat(200), body: text, suggestion: text }],
        diff,
        new Set(),
        25
      );
      const body = commentBody(placed[0]!, 'RIGHT');
      expect(Buffer.byteLength(body)).toBeLessThanOrEqual(16 * 1024);
      expect(body).toMatch(/<!-- agent-run-finding:[0-9a-f]{24} -->$/);
    }
  });

  it("keeps the review's body within GitHub's 65,536 characters with 100 findings of the longest text", () => {
    const findings: Finding[] = Array.from({ length: 100 }, (_, i) => ({
      path: `${'<'.repeat(1000)}${i}`,
      line: 1,
      severity: 'nit',
      title: '<'.repeat(200),
      body: '<'.repeat(16_000),
      suggestion: '`'.repeat(16_000)
    }));
    const { placed } = placeFindings(findings, diff, new Set(), 25);
    const body = reviewBody('<'.repeat(20_000), placed, 'a'.repeat(40));
    expect(body.length).toBeLessThanOrEqual(65_536);
    expect(body.match(/<!-- agent-run-finding:/g)!.length).toBeGreaterThan(0);
  });
});
