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
    expect(comments[0]!.body).toContain('**Agent run** `r-1`: **INPROGRESS** after 5s');
    expect(comments[0]!.body).toContain('[Session transcript](https://s/1)');
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
    expect(body).toContain('**FAILED** (failed)');
    expect(body).toContain('<pre>&#60;b&#62;red&#60;/b&#62;</pre>');
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
