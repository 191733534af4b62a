// `review: inline`: the agent's findings as one pull request review. The prompt asks for a findings
// object (FINDINGS_SCHEMA), checked like `output-schema`'s; each finding whose lines lie in one hunk
// of the pull request's diff becomes a line comment on that side (a `suggestion` a suggestion block
// replacing exactly those lines), every other finding goes into the review's body under its file,
// never dropped. Each finding carries a hidden fingerprint, so a re-run skips what this identity has
// already posted. Every text from the agent is rendered inert (src/api/github-text.ts): the review
// is written by this module and nothing else.

import { createHash } from 'node:crypto';
import { codeBlock, textBlock } from '../api/github-text.js';
import { showValue } from '../api/index.js';
import { compileSchema } from '../client/index.js';
import type { GitHubApi, PullFile, ReviewComment, ReviewRequest } from './github.js';
import { code, inert, link } from './markup.js';
import type { OutputSchema } from './output-schema.js';

export const SEVERITIES = ['critical', 'major', 'minor', 'nit'] as const;
export type Severity = (typeof SEVERITIES)[number];

/** At most this many findings in one answer: each must still fit the review's body when it goes there. */
export const MAX_FINDINGS = 100;
/** GitHub keeps at most this many characters of a review's body. */
export const MAX_REVIEW_BODY = 65_536;
/** Bytes of one line comment at most. */
export const MAX_COMMENT_BYTES = 16 * 1024;

/** The object the answer must end with under `review: inline`. */
export const FINDINGS_SCHEMA = {
  type: 'object',
  required: ['summary', 'findings'],
  additionalProperties: false,
  properties: {
    summary: { type: 'string', maxLength: 20_000 },
    findings: {
      type: 'array',
      maxItems: MAX_FINDINGS,
      items: {
        type: 'object',
        required: ['path', 'line', 'severity', 'body'],
        additionalProperties: false,
        properties: {
          path: { type: 'string', minLength: 1, maxLength: 1024 },
          line: { type: 'integer', minimum: 1, maximum: 10_000_000 },
          start_line: { type: 'integer', minimum: 1, maximum: 10_000_000 },
          side: { enum: ['RIGHT', 'LEFT'] },
          severity: { enum: [...SEVERITIES] },
          title: { type: 'string', maxLength: 200 },
          body: { type: 'string', minLength: 1, maxLength: 16_000 },
          suggestion: { type: 'string', maxLength: 16_000 }
        }
      }
    }
  }
} as const;

export interface Finding {
  path: string;
  line: number;
  start_line?: number;
  side?: 'RIGHT' | 'LEFT';
  severity: Severity;
  title?: string;
  body: string;
  suggestion?: string;
}

export interface ReviewSettings {
  /** The pull request reviewed. */
  pullNumber: number;
  /** `review-request-changes`: REQUEST_CHANGES when a finding at or above it exists. */
  requestChanges?: Severity;
  /** `review-max-comments`: line comments at most; the rest go into the body, by severity. */
  maxComments: number;
}

/** The findings schema, compiled once, checked by the same code as `output-schema`'s. */
export function findingsSchema(): OutputSchema {
  const schema = FINDINGS_SCHEMA as unknown as Record<string, unknown>;
  return { schema, check: compileSchema(schema) };
}

/** What the prompt gets under `review: inline`: one sentence and the schema. */
export function reviewRequest(): string {
  return (
    '\n\nEnd your answer with one JSON object of your review findings that matches this JSON Schema ' +
    '(a ```json block or a bare object, nothing after it), where `path` is a file of the pull request, ' +
    '`line` (and `start_line` for a range) are line numbers of the new file (`side` RIGHT, the default) ' +
    'or of the old one for removed lines (`side` LEFT), and `suggestion` is the exact text that replaces ' +
    'those lines:\n```json\n' +
    `${JSON.stringify(FINDINGS_SCHEMA, null, 2)}\n\`\`\`\n`
  );
}

/** `review`, `review-request-changes`, `review-max-comments`. */
export function readReviewInputs(
  getInput: (name: string) => string,
  problems: string[]
): { inline: boolean; requestChanges?: Severity; maxComments: number } {
  const review = getInput('review').trim().toLowerCase() || 'off';
  if (review !== 'off' && review !== 'inline')
    problems.push(`review ${showValue(getInput('review'))}: expected off or inline`);
  const rawSeverity = getInput('review-request-changes').trim().toLowerCase();
  let requestChanges: Severity | undefined;
  if (rawSeverity !== '' && rawSeverity !== 'off') {
    if ((SEVERITIES as readonly string[]).includes(rawSeverity)) requestChanges = rawSeverity as Severity;
    else
      problems.push(
        `review-request-changes ${showValue(getInput('review-request-changes'))}: expected off or a severity: ${SEVERITIES.join(', ')}`
      );
  }
  const rawMax = getInput('review-max-comments').trim() || '25';
  const maxComments = Number(rawMax);
  if (!/^\d{1,4}$/.test(rawMax) || maxComments > 1000) {
    problems.push(`review-max-comments ${showValue(rawMax)}: expected a whole number from 0 to 1000`);
  }
  return {
    inline: review === 'inline',
    maxComments: Number.isSafeInteger(maxComments) ? Math.min(maxComments, 1000) : 25,
    ...(requestChanges ? { requestChanges } : {})
  };
}

// ---- The diff: which lines of each side a hunk shows ----

/** Each side's lines that the file's hunks show: line number → the hunk it is in and its text. */
export interface DiffLines {
  RIGHT: Map<number, { hunk: number; text: string }>;
  LEFT: Map<number, { hunk: number; text: string }>;
}

const HUNK = /^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@/;

/** Reads a file's patch as GitHub's files endpoint gives it (hunks, without the file headers). */
export function diffLines(patch: string): DiffLines {
  const lines: DiffLines = { RIGHT: new Map(), LEFT: new Map() };
  let hunk = -1;
  let left = 0;
  let right = 0;
  let inHunk = false;
  const all = patch.split('\n');
  for (const [index, raw] of all.entries()) {
    // A patch that ends with a line break has an empty last "line": the end, not a line.
    if (raw === '' && index === all.length - 1) break;
    const header = HUNK.exec(raw);
    if (header) {
      hunk++;
      left = Number(header[1]);
      right = Number(header[3]);
      inHunk = true;
      continue;
    }
    if (!inHunk) continue;
    const text = raw.replace(/\r$/, '').slice(1);
    if (raw.startsWith('+')) lines.RIGHT.set(right++, { hunk, text });
    else if (raw.startsWith('-')) lines.LEFT.set(left++, { hunk, text });
    else if (raw.startsWith(' ') || raw === '') {
      // A context line is on both sides.
      lines.LEFT.set(left++, { hunk, text });
      lines.RIGHT.set(right++, { hunk, text });
    } else if (!raw.startsWith('\\')) inHunk = false;
  }
  return lines;
}

/** The pull request's files, each with its diff's lines (undefined: GitHub shows no diff for it). */
export type PullDiff = Map<string, DiffLines | undefined>;

export function pullDiff(files: PullFile[]): PullDiff {
  const diff: PullDiff = new Map();
  for (const file of files) diff.set(file.filename, file.patch ? diffLines(file.patch) : undefined);
  return diff;
}

// ---- Placing each finding ----

export type Posted = 'line' | 'body' | 'duplicate';

export interface Placed extends Finding {
  posted: Posted;
  /** Why a finding is in the body rather than on its lines. */
  why?: string;
  /** The hidden fingerprint it carries. */
  fingerprint: string;
}

interface Anchor {
  side: 'LEFT' | 'RIGHT';
  start: number;
  end: number;
  texts: string[];
}

/** Where a finding can be commented, or why it cannot. */
function anchor(finding: Finding, diff: PullDiff): Anchor | string {
  if (!diff.has(finding.path)) return 'not a file of this pull request';
  const lines = diff.get(finding.path);
  if (!lines) return 'GitHub shows no diff for this file';
  const side = finding.side ?? 'RIGHT';
  const start = finding.start_line ?? finding.line;
  const end = finding.line;
  if (start > end) return `start_line ${start} is after line ${end}`;
  const first = lines[side].get(start);
  const last = lines[side].get(end);
  if (!first || !last) return 'outside the diff';
  // Within one hunk each side's lines are consecutive: both ends in it means every line between is.
  if (first.hunk !== last.hunk) return 'spans more than one hunk of the diff';
  const texts: string[] = [];
  for (let line = start; line <= end; line++) texts.push(lines[side].get(line)!.text);
  return { side, start, end, texts };
}

function fingerprintOf(finding: Finding, where: Anchor | undefined): string {
  const parts = [finding.path, where?.side ?? '', where?.texts ?? [], finding.title ?? '', finding.body];
  return createHash('sha256').update(JSON.stringify(parts)).digest('hex').slice(0, 24);
}

const MARK = /<!-- agent-run-finding:([0-9a-f]{24}) -->/g;
const mark = (fingerprint: string) => `<!-- agent-run-finding:${fingerprint} -->`;

/** The fingerprints of findings earlier steps posted, read from this identity's own review texts. */
export function postedFingerprints(texts: string[]): Set<string> {
  const found = new Set<string>();
  for (const text of texts) for (const match of text.matchAll(MARK)) found.add(match[1]!);
  return found;
}

const rank = (severity: Severity) => SEVERITIES.indexOf(severity);

/**
 * Decides where each finding goes: already posted (by its fingerprint), a line comment (inside one
 * hunk, the most severe first, up to `maxComments`), or the body. The order of the answer is kept.
 */
export function placeFindings(
  findings: Finding[],
  diff: PullDiff,
  posted: Set<string>,
  maxComments: number
): { placed: Placed[]; anchors: Map<Placed, Anchor> } {
  const anchors = new Map<Placed, Anchor>();
  const placed: Placed[] = findings.map(raw => {
    const finding = { ...raw, path: raw.path.replace(/^(\.\/)+/, '') };
    const where = anchor(finding, diff);
    const fingerprint = fingerprintOf(finding, typeof where === 'string' ? undefined : where);
    if (posted.has(fingerprint)) return { ...finding, posted: 'duplicate', fingerprint };
    if (typeof where === 'string') return { ...finding, posted: 'body', why: where, fingerprint };
    const item: Placed = { ...finding, posted: 'line', fingerprint };
    anchors.set(item, where);
    return item;
  });
  const lined = placed.filter(item => item.posted === 'line');
  const bySeverity = [...lined].sort((a, b) => rank(a.severity) - rank(b.severity));
  for (const item of bySeverity.slice(maxComments)) {
    item.posted = 'body';
    item.why = `over review-max-comments (${maxComments})`;
  }
  return { placed, anchors };
}

// ---- Rendering: every text from the agent made inert ----

const BADGE: Record<Severity, string> = {
  critical: '🔴 **Critical**',
  major: '🟠 **Major**',
  minor: '🟡 **Minor**',
  nit: '⚪ **Nit**'
};

const clip = (text: string, max: number) => (text.length > max ? `${text.slice(0, max)}…` : text);

function heading(finding: Finding): string {
  return finding.title ? `${BADGE[finding.severity]}: ${inert(finding.title)}` : BADGE[finding.severity];
}

/** One line comment, at most MAX_COMMENT_BYTES: the body's text is cut to what room is left. */
export function commentBody(finding: Placed, side: 'LEFT' | 'RIGHT'): string {
  const suggestion =
    finding.suggestion === undefined
      ? ''
      : side === 'RIGHT'
        ? codeBlock(finding.suggestion.replace(/\n$/, ''), 'suggestion')
        : `Suggested text:\n\n${codeBlock(finding.suggestion.replace(/\n$/, ''))}`;
  const fits = Buffer.byteLength(suggestion) <= MAX_COMMENT_BYTES / 2;
  const tail = [fits ? suggestion : '(the suggestion is too long to show here)', mark(finding.fingerprint)];
  const render = (room: number) =>
    [heading(finding), textBlock(finding.body, room).markup, ...tail].filter(Boolean).join('\n\n');
  let room = MAX_COMMENT_BYTES - Buffer.byteLength(render(0)) - 16;
  let text = render(room);
  // Escaped text is mostly ASCII; a body of many-byte characters needs a second, smaller cut.
  for (let tries = 0; Buffer.byteLength(text) > MAX_COMMENT_BYTES && tries < 8; tries++) {
    room -= Buffer.byteLength(text) - MAX_COMMENT_BYTES + 64;
    text = render(Math.max(0, room));
  }
  return text;
}

/** A body finding: where it is, why it is not on its lines, its text, its suggestion. */
function bodyFinding(finding: Placed, room: number): string {
  const lines =
    finding.start_line !== undefined && finding.start_line !== finding.line
      ? `lines ${finding.start_line}–${finding.line}`
      : `line ${finding.line}`;
  const side = finding.side === 'LEFT' ? ' (old file)' : '';
  const head = `${heading(finding)} · ${lines}${side} · ${inert(finding.why ?? '')}`;
  const suggestion =
    finding.suggestion === undefined || finding.suggestion.length > room / 2
      ? ''
      : `Suggested text:\n\n${codeBlock(finding.suggestion.replace(/\n$/, ''))}`;
  const fixed = head.length + suggestion.length + 80;
  return [
    head,
    textBlock(finding.body, Math.max(40, room - fixed)).markup,
    suggestion,
    mark(finding.fingerprint)
  ]
    .filter(Boolean)
    .join('\n\n');
}

export function severityCounts(findings: Finding[]): Record<Severity, number> {
  const counts = { critical: 0, major: 0, minor: 0, nit: 0 };
  for (const finding of findings) counts[finding.severity]++;
  return counts;
}

/** `1 critical, 2 major, 0 minor, 1 nit`. */
export function countsText(findings: Finding[]): string {
  const counts = severityCounts(findings);
  return SEVERITIES.map(severity => `${counts[severity]} ${severity}`).join(', ');
}

/** Where each placed finding went, in words: `2 line comments, 1 in the body, 1 already posted`. */
export function placementText(placed: Placed[]): string {
  const count = (posted: Posted) => placed.filter(item => item.posted === posted).length;
  const lines = count('line');
  return `${lines} line comment${lines === 1 ? '' : 's'}, ${count('body')} in the body, ${count('duplicate')} already posted`;
}

/** The review's body: the summary, the counts, and the findings that are not line comments, by file. */
export function reviewBody(summary: string, placed: Placed[], commit: string): string {
  const counts = `${countsText(placed)} (${placementText(placed)})`;
  const head = [
    `**Agent review** of ${code(commit.slice(0, 12))}: ${counts}`,
    textBlock(summary, 8000).markup
  ];
  const inBody = placed.filter(item => item.posted === 'body');
  const byFile = new Map<string, Placed[]>();
  for (const item of inBody) byFile.set(item.path, [...(byFile.get(item.path) ?? []), item]);
  const parts = [...head];
  if (inBody.length > 0) parts.push(`**Findings not on the diff's lines** (${inBody.length})`);
  const used = () => parts.join('\n\n').length;
  const reserve = 400;
  let left = inBody.length;
  let shown = 0;
  files: for (const [path, items] of byFile) {
    const file = `#### ${code(clip(path, 300))}`;
    if (used() + file.length + reserve > MAX_REVIEW_BODY) break;
    parts.push(file);
    for (const item of items) {
      const room = Math.floor((MAX_REVIEW_BODY - used() - reserve) / left);
      const text = bodyFinding(item, room);
      if (used() + text.length + reserve > MAX_REVIEW_BODY) break files;
      parts.push(text);
      left--;
      shown++;
    }
  }
  if (shown < inBody.length)
    parts.push(
      `… ${inBody.length - shown} more finding(s) do not fit here: see the step's \`findings\` output.`
    );
  return parts.join('\n\n');
}

// ---- Posting ----

export interface ReviewOutcome {
  id?: number;
  url?: string;
  placed: Placed[];
  event?: ReviewRequest['event'];
}

/**
 * Posts the review of `findings` on the pull request at `commit`: reads what this identity already
 * posted, places each finding, and writes one review (none when every finding is already posted).
 * If GitHub refuses a line comment all the same, the review is posted again with every finding in
 * its body: no finding is lost.
 */
export async function postReview(
  api: GitHubApi,
  settings: ReviewSettings,
  value: { summary: string; findings: Finding[] },
  context: { commit: string; files: PullFile[] },
  notice: (message: string) => void
): Promise<ReviewOutcome> {
  const diff = pullDiff(context.files);
  const posted = postedFingerprints(await api.ownReviewTexts(settings.pullNumber));
  const { placed, anchors } = placeFindings(value.findings, diff, posted, settings.maxComments);
  const threshold = settings.requestChanges;
  const event: ReviewRequest['event'] =
    threshold !== undefined && value.findings.some(finding => rank(finding.severity) <= rank(threshold))
      ? 'REQUEST_CHANGES'
      : 'COMMENT';
  const fresh = placed.filter(item => item.posted !== 'duplicate');
  if (fresh.length === 0 && placed.length > 0) {
    notice(
      `Every finding of this review (${placed.length}) was already posted on #${settings.pullNumber}; no new review was written.`
    );
    return { placed };
  }
  const comments: ReviewComment[] = placed
    .filter(item => item.posted === 'line')
    .map(item => {
      const where = anchors.get(item)!;
      return {
        path: item.path,
        body: commentBody(item, where.side),
        line: where.end,
        side: where.side,
        ...(where.start < where.end ? { start_line: where.start, start_side: where.side } : {})
      };
    });
  const request = (): ReviewRequest => ({
    commit_id: context.commit,
    event,
    body: reviewBody(value.summary, placed, context.commit),
    comments
  });
  try {
    return { ...(await api.createReview(settings.pullNumber, request())), placed, event };
  } catch (error) {
    if ((error as { status?: number }).status !== 422 || comments.length === 0) throw error;
    notice(
      `GitHub refused the review's line comments (${(error as Error).message}); posting every finding in the review's body instead.`
    );
    for (const item of placed)
      if (item.posted === 'line') {
        item.posted = 'body';
        item.why = 'GitHub refused the line comment';
      }
    comments.length = 0;
    return { ...(await api.createReview(settings.pullNumber, request())), placed, event };
  }
}

/** The review in the job summary and the progress comment: a link and the counts. */
export function reviewMarkup(review: ReviewOutcome): string {
  const where = review.url ? link(review.url, 'Review') : 'No new review (every finding was already posted)';
  return `${where}: ${countsText(review.placed)} (${placementText(review.placed)})`;
}

/** The `findings` output: each finding as the agent gave it, with where it went (and why, for the body). */
export function findingsOutput(review: ReviewOutcome): Placed[] {
  return review.placed;
}

/** What the review needs from the start of the step: the head commit the run sees and the diff. */
export interface ReviewContext {
  commit: string;
  files: PullFile[];
}

/** Read before the run starts, so the review is anchored to the commit the agent looked at. */
export async function readReviewContext(
  api: GitHubApi,
  settings: ReviewSettings,
  headSha: string | undefined
): Promise<ReviewContext> {
  const commit = headSha || (await api.pullHead(settings.pullNumber));
  const files = await api.pullFiles(settings.pullNumber);
  return { commit, files };
}
