// The trust gate through the real GitHub wrapper with @actions/github mocked: who may start the
// agent on which event, and that it fails closed when the permission cannot be read.
import { beforeEach, describe, expect, it, jest } from '@jest/globals';
import { forkPullRequest, issueComment, pushByMaintainer } from '../__fixtures__/events.js';
import { createFakeRepository, fakeGitHubModule } from '../__fixtures__/github.js';

const repository = createFakeRepository();
jest.unstable_mockModule('@actions/github', () => fakeGitHubModule(repository));
const { createGitHubApi } = await import('../../src/action/github.js');
const { checkTrust } = await import('../../src/action/trust.js');
import type { TrustSettings } from '../../src/action/trust.js';

const github = () => createGitHubApi('ghs_token', 'octo/app');
const gate: TrustSettings = { allowedActors: [], minPermission: 'write' };

beforeEach(() => {
  repository.permissions = { maintainer: 'admin', writer: 'write', reader: 'read' };
  repository.calls.length = 0;
  repository.failWith = undefined;
});

describe('trust gate', () => {
  it('lets a push through without asking GitHub', async () => {
    expect(await checkTrust(gate, pushByMaintainer, github)).toEqual({ run: true });
    expect(repository.calls).toEqual([]);
  });

  it('checks the permission of a commenter against min-permission', async () => {
    expect(await checkTrust(gate, issueComment('writer', 'go'), github)).toEqual({
      run: true,
      why: 'writer has write permission'
    });
    expect(await checkTrust(gate, issueComment('reader', 'go'), github)).toEqual({
      run: false,
      why: 'reader has read permission on octo/app; min-permission is write'
    });
    expect(
      await checkTrust({ ...gate, minPermission: 'read' }, issueComment('reader', 'go'), github)
    ).toEqual({
      run: true,
      why: 'reader has read permission'
    });
    expect(repository.calls).toEqual(['permission writer', 'permission reader', 'permission reader']);
  });

  it('needs the trigger phrase on comments, and refuses deleted comments', async () => {
    const phrase = { ...gate, triggerPhrase: '@agent' };
    expect(await checkTrust(phrase, issueComment('writer', 'just chatting'), github)).toEqual({
      run: false,
      why: 'the comment does not contain the trigger phrase "@agent"'
    });
    expect((await checkTrust(phrase, issueComment('writer', '@agent fix'), github)).run).toBe(true);
    expect(await checkTrust(gate, issueComment('writer', 'x', 'deleted'), github)).toEqual({
      run: false,
      why: 'the comment was deleted'
    });
  });

  it('takes allowed-actors as they are, and bots only when named exactly', async () => {
    const allowed = { ...gate, allowedActors: ['outsider', 'helper[bot]'] };
    expect(await checkTrust(allowed, issueComment('outsider', 'go'), github)).toEqual({
      run: true,
      why: 'outsider is listed in allowed-actors'
    });
    expect((await checkTrust(allowed, issueComment('helper[bot]', 'go'), github)).run).toBe(true);
    expect(await checkTrust(allowed, issueComment('other[bot]', 'go'), github)).toEqual({
      run: false,
      why: 'other[bot] is a bot; bots run the agent only when allowed-actors names them exactly'
    });
    expect(repository.calls).toEqual([]);
  });

  it('gates a pull request from a fork like any other untrusted event', async () => {
    repository.permissions.stranger = 'read';
    expect((await checkTrust(gate, forkPullRequest, github)).run).toBe(false);
    expect(repository.calls).toEqual(['permission stranger']);
  });

  it('fails closed when the permission cannot be read', async () => {
    repository.failWith = 403;
    const verdict = await checkTrust(gate, issueComment('writer', 'go'), github);
    expect(verdict).toEqual({
      run: false,
      why: 'could not check the permission of writer on octo/app (403 HttpError: 403)'
    });
  });
});
