// `review: inline` end to end: the bundled action, as the runner starts it on a pull request event,
// against the bundled executor (the simulated agent answers with the findings object `@sim json`
// gives) and the GitHub REST stand-in, which models the pull request's files and patches and
// refuses a line comment outside the diff as GitHub does.
import { afterAll, beforeAll, beforeEach, describe, expect, it } from '@jest/globals';
import { rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { type ExecutorProcess, spawnExecutorWithKey, tempDir } from '../support/executor.js';
import { GitHubServer } from '../support/github-server.js';
import { HOSTILE, liveParts } from '../support/live-markup.js';
import { runAction } from '../support/runner.js';
import { parseWorkflowCommands } from '../support/workflow-commands.js';

const HEAD = 'a1b2c3d4e5f60718293a4b5c6d7e8f9012345678';
const PR = 7;

// src/app.ts: hunk 1 shows old lines 10–15 and new lines 10–16; hunk 2 old 40–42, new 41–44.
const APP_PATCH = [
  '@@ -10,6 +10,7 @@ export function main() {',
  ' const a = 1;', //  L10 R10
  '-const b = 2;', //  L11
  '+const b = 3;', //  R11
  '+const c = 4;', //  R12
  ' const d = 5;', //  L12 R13
  ' const e = 6;', //  L13 R14
  ' const f = 7;', //  L14 R15
  ' const g = 8;', //  L15 R16
  '@@ -40,3 +41,4 @@ export function tail() {',
  ' x();', //  L40 R41
  '+y();', //  R42
  ' z();', //  L41 R43
  ' w();' //  L42 R44
].join('\n');

let executor: ExecutorProcess;
let key: string;
let github: GitHubServer;
const dirs: string[] = [];

beforeAll(async () => {
  const started = await spawnExecutorWithKey({ kind: 'personal', name: 'reviews' });
  ({ key } = started);
  executor = started;
  github = await new GitHubServer().start();
  github.permissions.set('alice', 'write');
});
afterAll(async () => {
  await executor.stop();
  await github.stop();
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

/** A fresh pull request: 120 generated files first, so src/late.ts is on the second page of files. */
beforeEach(() => {
  const files = Array.from({ length: 120 }, (_, i) => ({
    filename: `gen/file-${i}.ts`,
    status: 'added',
    patch: '@@ -0,0 +1,1 @@\n+export const n = 1;'
  }));
  files.splice(1, 0, { filename: 'src/app.ts', status: 'modified', patch: APP_PATCH });
  files.push({ filename: 'src/late.ts', status: 'added', patch: '@@ -0,0 +1,3 @@\n+one\n+two\n+three' });
  files.push({ filename: 'assets/logo.png', status: 'added' } as (typeof files)[number]);
  github.requests.length = 0;
  github.reviewable.clear();
  github.reviews.clear();
  github.reviewComments.clear();
  github.comments.clear();
  github.reviewable.set(PR, { head: HEAD, files });
});

interface FindingInput {
  path: string;
  line: number;
  start_line?: number;
  side?: 'LEFT' | 'RIGHT';
  severity: string;
  title?: string;
  body: string;
  suggestion?: string;
}

function review(
  answer: { summary: string; findings: FindingInput[] } | Record<string, unknown>,
  extra: Record<string, string> = {},
  event = 'pull_request'
) {
  const dir = tempDir('review-');
  dirs.push(dir);
  const onComment = {
    action: 'created',
    issue: { number: PR, title: 'Tidy main', body: '', pull_request: {}, user: { login: 'alice' } },
    comment: { body: 'please review', user: { login: 'alice' } }
  };
  const payload =
    event === 'issue_comment'
      ? onComment
      : {
          action: 'synchronize',
          pull_request: {
            number: PR,
            title: 'Tidy main',
            body: '',
            head: { ref: 'tidy', sha: HEAD, repo: { full_name: 'acme/app' } },
            base: { ref: 'main', repo: { full_name: 'acme/app' } },
            user: { login: 'alice' }
          },
          repository: { private: false }
        };
  writeFileSync(join(dir, 'event.json'), JSON.stringify(payload));
  return runAction(
    {
      prompt: `Review this pull request\n@sim json ${JSON.stringify(answer)}`,
      'environment-id': 'local',
      'api-key': key,
      'base-url': executor.url,
      'github-token': 'ghs_test',
      review: 'inline',
      'log-conversation': 'false',
      ...extra
    },
    {
      env: {
        GITHUB_EVENT_NAME: event,
        GITHUB_EVENT_PATH: join(dir, 'event.json'),
        GITHUB_REPOSITORY: 'acme/app',
        GITHUB_ACTOR: 'alice',
        GITHUB_SHA: 'ffffffffffffffffffffffffffffffffffffffff',
        GITHUB_API_URL: github.url,
        GITHUB_WORKFLOW: 'review',
        GITHUB_JOB: 'review',
        GITHUB_ACTION: 'agent'
      }
    }
  );
}

const posts = () =>
  github.requests.filter(r => r.method === 'POST' && r.path.endsWith(`/pulls/${PR}/reviews`));

/** Whether a text holds a control character other than tab and line feed. */
const hasControls = (text: string) =>
  [...text].some(ch => {
    const code = ch.codePointAt(0)!;
    return (code < 32 && code !== 9 && code !== 10) || (code >= 127 && code <= 159);
  });

/** The fenced code blocks of a text, and the text without them. */
function fences(text: string): { blocks: { info: string; code: string }[]; rest: string } {
  const blocks: { info: string; code: string }[] = [];
  const rest: string[] = [];
  const lines = text.split('\n');
  for (let i = 0; i < lines.length; i++) {
    const open = /^(`{3,})([^`]*)$/.exec(lines[i]!);
    if (!open) {
      rest.push(lines[i]!);
      continue;
    }
    const code: string[] = [];
    for (i++; i < lines.length && !new RegExp(`^\`{${open[1]!.length},}\\s*$`).test(lines[i]!); i++)
      code.push(lines[i]!);
    blocks.push({ info: open[2]!, code: code.join('\n') });
  }
  return { blocks, rest: rest.join('\n') };
}

describe('review: inline on a pull request', () => {
  it('posts line comments on the right lines and sides, a range with a suggestion, and the rest in the body', async () => {
    const findings: FindingInput[] = [
      { path: 'src/app.ts', line: 12, severity: 'major', title: 'Unused c', body: 'c is never read.' },
      { path: 'src/app.ts', line: 14, severity: 'minor', body: 'e could be const-folded.' },
      { path: 'src/app.ts', line: 11, side: 'LEFT', severity: 'nit', body: 'the old b was clearer' },
      {
        path: './src/app.ts',
        start_line: 11,
        line: 13,
        severity: 'critical',
        title: 'Wrong constants',
        body: 'These three must be tens.',
        suggestion: 'const b = 30;\nconst c = 40;\nconst d = 50;'
      },
      {
        path: 'src/app.ts',
        line: 30,
        severity: 'major',
        title: 'Far away',
        body: 'line 30 is not in the diff'
      },
      { path: 'src/app.ts', start_line: 12, line: 42, severity: 'minor', body: 'from hunk one to hunk two' },
      { path: 'src/other.ts', line: 1, severity: 'major', title: 'Elsewhere', body: 'not a file of the PR' },
      { path: 'assets/logo.png', line: 1, severity: 'nit', body: 'binary file' },
      { path: 'src/late.ts', line: 2, severity: 'minor', body: 'on the second page of files' }
    ];
    const result = await review(
      { summary: 'Mostly fine; the constants are wrong.', findings },
      { comment: 'sticky' }
    );
    expect(result.stderr).toBe('');
    expect(result.code).toBe(0);

    expect(posts()).toHaveLength(1);
    const sent = posts()[0]!.body as {
      commit_id: string;
      event: string;
      body: string;
      comments: Record<string, unknown>[];
    };
    // The head the run saw (the payload's head.sha), not the merge commit GITHUB_SHA names.
    expect(sent.commit_id).toBe(HEAD);
    expect(sent.event).toBe('COMMENT');
    const where = sent.comments.map(({ path, line, side, start_line, start_side }) => ({
      path,
      line,
      side,
      start_line,
      start_side
    }));
    expect(where).toEqual([
      { path: 'src/app.ts', line: 12, side: 'RIGHT', start_line: undefined, start_side: undefined },
      { path: 'src/app.ts', line: 14, side: 'RIGHT', start_line: undefined, start_side: undefined },
      { path: 'src/app.ts', line: 11, side: 'LEFT', start_line: undefined, start_side: undefined },
      { path: 'src/app.ts', line: 13, side: 'RIGHT', start_line: 11, start_side: 'RIGHT' },
      { path: 'src/late.ts', line: 2, side: 'RIGHT', start_line: undefined, start_side: undefined }
    ]);
    const bodies = sent.comments.map(c => String(c.body));
    expect(bodies[0]).toContain('🟠 **Major**: Unused c');
    expect(bodies[2]).toContain('⚪ **Nit**');
    const range = fences(bodies[3]!);
    expect(range.blocks).toEqual([
      { info: 'suggestion', code: 'const b = 30;\nconst c = 40;\nconst d = 50;' }
    ]);
    expect(range.rest).toContain('🔴 **Critical**: Wrong constants');

    // Every finding the diff cannot hold is in the body, under its file, with why.
    const body = sent.body;
    expect(body).toContain('Mostly fine; the constants are wrong.');
    expect(body).toContain(
      '1 critical, 3 major, 3 minor, 2 nit (5 line comments, 4 in the body, 0 already posted)'
    );
    for (const text of [
      'line 30 is not in the diff',
      'from hunk one to hunk two',
      'not a file of the PR',
      'binary file'
    ])
      expect(body).toContain(text);
    expect(body).toContain('outside the diff');
    expect(body).toContain('spans more than one hunk of the diff');
    expect(body).toContain('not a file of this pull request');
    expect(body).toContain('GitHub shows no diff for this file');
    expect(body).toContain('<code>src/other.ts</code>');

    expect(result.outputs['review-id']).toMatch(/^\d+$/);
    expect(result.outputs['review-url']).toBe(
      `https://github.com/acme/app/pull/${PR}#pullrequestreview-${result.outputs['review-id']}`
    );
    const output = JSON.parse(result.outputs.findings!) as { path: string; posted: string; why?: string }[];
    expect(output.map(f => f.posted)).toEqual([
      'line',
      'line',
      'line',
      'line',
      'body',
      'body',
      'body',
      'body',
      'line'
    ]);
    expect(output[3]!.path).toBe('src/app.ts');
    expect(output[6]!.why).toBe('not a file of this pull request');
    expect(result.summary).toContain('1 critical, 3 major, 3 minor, 2 nit');

    // The sticky comment links the review instead of repeating the answer.
    const comment = github.comments.get(PR)![0]!.body;
    expect(comment).toContain(`<a href="${result.outputs['review-url']}">Review</a>`);
    expect(comment).not.toContain('constants are wrong');
  });

  it('a re-run posts nothing already posted, and only what is new', async () => {
    const findings: FindingInput[] = [
      { path: 'src/app.ts', line: 12, severity: 'major', body: 'c is never read.' },
      { path: 'src/app.ts', line: 30, severity: 'minor', body: 'outside' }
    ];
    const first = await review({ summary: 'first', findings });
    expect(first.code).toBe(0);
    expect(posts()).toHaveLength(1);

    const again = await review({ summary: 'second look', findings });
    expect(again.code).toBe(0);
    expect(posts()).toHaveLength(1);
    expect(again.outputs['review-id']).toBe('');
    expect(JSON.parse(again.outputs.findings!).map((f: { posted: string }) => f.posted)).toEqual([
      'duplicate',
      'duplicate'
    ]);
    expect(again.stdout).toContain('::notice::Every finding of this review (2) was already posted on #7');

    const more = [...findings, { path: 'src/app.ts', line: 42, severity: 'nit', body: 'y() needs a name' }];
    const third = await review({ summary: 'third', findings: more });
    expect(third.code).toBe(0);
    expect(posts()).toHaveLength(2);
    const sent = posts()[1]!.body as { body: string; comments: { line: number }[] };
    expect(sent.comments.map(c => c.line)).toEqual([42]);
    expect(sent.body).not.toContain('outside');
    expect(JSON.parse(third.outputs.findings!).map((f: { posted: string }) => f.posted)).toEqual([
      'duplicate',
      'duplicate',
      'line'
    ]);

    // Fingerprints count only in what this token's identity wrote: the same texts by someone else
    // (anyone can paste a hidden fingerprint into a comment) suppress nothing.
    const mallory = { login: 'mallory', type: 'User' };
    for (const comment of github.reviewComments.get(PR)!) comment.user = mallory;
    for (const posted of github.reviews.get(PR)!) posted.user = mallory;
    const fourth = await review({ summary: 'fourth', findings: more });
    expect(fourth.code).toBe(0);
    expect(posts()).toHaveLength(3);
    expect((posts()[2]!.body as { comments: { line: number }[] }).comments.map(c => c.line)).toEqual([
      12, 42
    ]);
  });

  it('on a comment on the pull request, reviews the head GitHub names for it', async () => {
    const result = await review(
      {
        summary: 'asked in a comment',
        findings: [{ path: 'src/app.ts', line: 42, severity: 'minor', body: 'y() needs a name' }]
      },
      {},
      'issue_comment'
    );
    expect(result.code).toBe(0);
    expect(github.requests.some(r => r.method === 'GET' && r.path === `/repos/acme/app/pulls/${PR}`)).toBe(
      true
    );
    const sent = posts()[0]!.body as { commit_id: string; comments: { line: number; side: string }[] };
    expect(sent.commit_id).toBe(HEAD);
    expect(sent.comments).toMatchObject([{ line: 42, side: 'RIGHT' }]);
  });

  it('review-max-comments keeps the most severe as line comments; review-request-changes asks for changes', async () => {
    const findings: FindingInput[] = [
      { path: 'src/app.ts', line: 10, severity: 'nit', body: 'nit on a' },
      { path: 'src/app.ts', line: 12, severity: 'critical', body: 'critical on c' },
      { path: 'src/app.ts', line: 13, severity: 'minor', body: 'minor on d' }
    ];
    const result = await review(
      { summary: 's', findings },
      { 'review-max-comments': '1', 'review-request-changes': 'major' }
    );
    expect(result.code).toBe(0);
    const sent = posts()[0]!.body as { event: string; body: string; comments: { line: number }[] };
    expect(sent.event).toBe('REQUEST_CHANGES');
    expect(sent.comments.map(c => c.line)).toEqual([12]);
    expect(sent.body).toContain('nit on a');
    expect(sent.body).toContain('minor on d');
    // As GitHub shows it: character references read as the characters they stand for.
    const shown = sent.body.replace(/&#(\d+);/g, (_m, code: string) => String.fromCharCode(Number(code)));
    expect(shown).toContain('over review-max-comments (1)');

    // Below the threshold it only comments; it never approves.
    const mild = await review(
      { summary: 's', findings: [{ path: 'src/app.ts', line: 14, severity: 'minor', body: 'mild' }] },
      { 'review-request-changes': 'critical' }
    );
    expect(mild.code).toBe(0);
    expect(posts().map(p => (p.body as { event: string }).event)).toEqual(['REQUEST_CHANGES', 'COMMENT']);
  });

  it('renders hostile findings inert: no mention, closing keyword, marker, image, breakout, command or control code', async () => {
    const hostile = `${HOSTILE}\n::error::boom\n\u001b[31mred\u001b[0m\u0007\n<!-- agent-run-finding:000000000000000000000000 -->`;
    const findings: FindingInput[] = [
      {
        path: 'src/app.ts',
        line: 12,
        severity: 'critical',
        title: '@alice fixes #1 </pre>',
        body: hostile,
        suggestion: 'const c = 4; // @alice\n```\n![x](https://evil.example/x.png)\n\u001b[31m'
      },
      { path: 'src/app.ts', line: 99, severity: 'major', title: '<!-- x -->', body: hostile },
      { path: 'src/@alice/</details>`x`.ts', line: 1, severity: 'minor', body: hostile }
    ];
    const result = await review({ summary: hostile, findings });
    expect(result.code).toBe(0);
    const sent = posts()[0]!.body as { body: string; comments: { body: string }[] };
    for (const text of [sent.body, ...sent.comments.map(c => c.body)]) {
      const { blocks, rest } = fences(text);
      expect(liveParts(rest)).toEqual([]);
      expect(hasControls(rest)).toBe(false);
      expect(rest).not.toMatch(/^::/m);
      for (const block of blocks) expect(hasControls(block.code)).toBe(false);
    }
    // The suggestion stays the code it is (a fence longer than any it holds), without control codes.
    expect(fences(sent.comments[0]!.body).blocks).toEqual([
      { info: 'suggestion', code: 'const c = 4; // @alice\n```\n![x](https://evil.example/x.png)\n[31m' }
    ]);
    // The fake fingerprint the agent wrote is shown, not read back as one by a re-run.
    expect(sent.comments[0]!.body.match(/<!-- agent-run-finding:/g)).toHaveLength(1);
    expect(parseWorkflowCommands(result.stdout).filter(c => c.message.includes('boom'))).toEqual([]);
  });
});

describe('review: inline refuses what it cannot use', () => {
  it('GitHub never answering the review post fails the step, naming the call, instead of holding the job', async () => {
    github.stallReviews = true;
    try {
      const result = await review(
        {
          summary: 'One finding',
          findings: [{ path: 'src/app.ts', line: 12, severity: 'minor', body: 'b' }]
        },
        // GitHub's stall ends at github-timeout (30 s by default), long before the step's own deadline.
        { timeout: '10m', 'github-timeout': '2s' }
      );
      expect(result.code).toBe(1);
      expect(result.outputs.conclusion).toBe('failed');
      const error = parseWorkflowCommands(result.stdout).find(c => c.name === 'error')!;
      expect(error.message).toContain(`could not post the review on #${PR}: GitHub did not answer POST`);
      expect(error.message).toContain('within 2 s');
      expect(posts()).toHaveLength(1);
      expect(github.reviews.get(PR) ?? []).toHaveLength(0);
    } finally {
      github.stallReviews = false;
    }
  });

  it('an invalid findings object fails the step naming the first violations, and posts nothing', async () => {
    const result = await review({
      summary: 'x',
      findings: [{ path: 'src/app.ts', line: 0, severity: 'blocker', body: 'b' }]
    });
    expect(result.code).toBe(1);
    expect(result.outputs.conclusion).toBe('failed');
    const error = parseWorkflowCommands(result.stdout).find(c => c.name === 'error')!;
    expect(error.message).toContain('succeeded, but its review findings are missing or invalid');
    expect(error.message).toContain('/findings/0/line: must be >= 1');
    expect(error.message).toContain(
      '/findings/0/severity: must be one of "critical", "major", "minor", "nit"'
    );
    expect(posts()).toHaveLength(0);
  });

  it('review and output-schema together are an input error before any run', async () => {
    const result = await review({ summary: 'x', findings: [] }, { 'output-schema': '{"type": "object"}' });
    expect(result.code).toBe(1);
    expect(result.stdout).toContain(
      '::error::review and output-schema are both set: review: inline asks for its own findings object; give one of them'
    );
    expect(result.outputs['run-id']).toBeUndefined();
    expect(github.requests).toEqual([]);
  });

  it('review and fan-out together are an input error before any run', async () => {
    const result = await review({ summary: 'x', findings: [] }, { 'fan-out': '- one\n- two' });
    expect(result.code).toBe(1);
    expect(result.stdout).toContain(
      '::error::fan-out and review: inline are both set: a step posts one review of one run; give one of them'
    );
    expect(result.outputs['run-id']).toBeUndefined();
    expect(github.requests).toEqual([]);
  });

  it('a bad review input names the value and the form expected', async () => {
    const result = await review(
      { summary: 'x', findings: [] },
      { review: 'yes', 'review-max-comments': 'many' }
    );
    expect(result.code).toBe(1);
    expect(result.stdout).toContain('review "yes": expected off or inline');
    expect(result.stdout).toContain('review-max-comments "many": expected a whole number from 0 to 1000');
  });
});
