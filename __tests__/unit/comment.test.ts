// The sticky progress comment through the real GitHub wrapper with @actions/core and
// @actions/github mocked: one comment, found again by its marker and updated in place.
import { beforeEach, describe, expect, it, jest } from '@jest/globals';
import { createFakeCore } from '../__fixtures__/core.js';
import { createFakeRepository, fakeGitHubModule } from '../__fixtures__/github.js';

const core = createFakeCore();
const repository = createFakeRepository();
jest.unstable_mockModule('@actions/core', () => core);
jest.unstable_mockModule('@actions/github', () => fakeGitHubModule(repository));
const { createGitHubApi } = await import('../../src/action/github.js');
const { StickyComment } = await import('../../src/action/comment.js');

const github = () => createGitHubApi('ghs_token', 'octo/app');
const queued = { run_id: 'r-1', state: 'QUEUED' };

beforeEach(() => {
  core.reset();
  repository.comments.clear();
  repository.calls.length = 0;
  repository.failWith = undefined;
});

describe('sticky comment', () => {
  it('creates one comment, then updates it in place, skipping unchanged bodies', async () => {
    const comment = new StickyComment(github, 7, 'ci/test/step');
    await comment.update('r-1', queued, 1000);
    await comment.update('r-1', queued, 1000);
    await comment.update('r-1', { ...queued, state: 'INPROGRESS', session_link: 'https://s/1' }, 5000);
    const comments = repository.comments.get(7)!;
    expect(comments).toHaveLength(1);
    expect(comments[0]!.body).toContain(comment.marker);
    expect(comments[0]!.body).toContain(
      '**Agent run** <code>r-1</code>: **<code>INPROGRESS</code>** after 5s'
    );
    expect(comments[0]!.body).toContain('<a href="https://s/1">Session transcript</a>');
    expect(repository.calls).toEqual(['list #7', 'create #7', `update ${comments[0]!.id}`]);
  });

  it('finds its comment from an earlier run of the step, but not a copy of the marker by a person', async () => {
    const first = new StickyComment(github, 7, 'ci/test/step');
    await first.update('r-1', queued, 0);
    const id = repository.comments.get(7)![0]!.id;
    repository.comments
      .get(7)!
      .unshift({ id: 1, body: first.marker, user: { login: 'mallory', type: 'User' } });
    const again = new StickyComment(github, 7, 'ci/test/step');
    await again.update('r-2', { run_id: 'r-2', state: 'FAILED', status_message: '<b>red</b>' }, 0, 'failed');
    expect(repository.comments.get(7)!.find(c => c.id === 1)!.body).toBe(first.marker);
    const body = repository.comments.get(7)!.find(c => c.id === id)!.body;
    expect(body).toContain('**<code>FAILED</code>** (failed)');
    expect(body).toContain('<pre>&#60;b&#62;red&#60;/b&#62;</pre>');
  });

  it('shows a hostile service’s run id, state and link inert', async () => {
    const comment = new StickyComment(github, 7, 'ci/test/step');
    const runId = 'r`**Approved by @octo-org/security** <img src=https://evil.example/x.png>';
    await comment.update(
      runId,
      {
        run_id: runId,
        state: '<h1>APPROVED</h1> ![ok](https://evil.example/ok.png) fixes #1 @octocat',
        session_link: 'javascript:alert(1)'
      },
      0,
      'succeeded'
    );
    const body = repository.comments.get(7)![0]!.body;
    for (const live of [
      '@octo-org',
      '@octocat',
      '<img',
      '<h1>',
      '![',
      '](',
      'fixes #1',
      'javascript:',
      '`**'
    ]) {
      expect(body).not.toContain(live);
    }
    expect(body).not.toContain('<a ');
    expect(body).toContain('<code>r&#96;&#42;&#42;Approved by &#64; octo-org/security&#42;&#42; &#60;img');
    await comment.update(runId, { run_id: runId, state: 'X', session_link: 'https://s/1"onmouseover="x' }, 0);
    const linked = repository.comments.get(7)![0]!.body;
    expect(linked).toContain('<a href="https://s/1&#34;onmouseover=&#34;x">');
  });

  it('warns once and stops writing without the permission to comment', async () => {
    repository.failWith = 403;
    const comment = new StickyComment(github, 7, 'ci/test/step');
    await comment.update('r-1', queued, 0);
    await comment.update('r-1', { ...queued, state: 'INPROGRESS' }, 1000);
    expect(core.record.warnings).toHaveLength(1);
    expect(core.record.warnings[0]).toContain('permissions: pull-requests: write');
    expect(repository.calls).toEqual(['list #7']);
    expect(core.record.failures).toEqual([]);
  });
});
