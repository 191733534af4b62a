// Typed event contexts for the action's unit tests: who started the workflow, and from where.

import type { EventContext } from '../../src/action/context.js';

const base = { repo: 'octo/app', ref: 'refs/heads/main', sha: 'abc123' };

export const pushByMaintainer: EventContext = { ...base, event: 'push', actor: 'maintainer' };

export function issueComment(author: string, body: string, action = 'created'): EventContext {
  return {
    ...base,
    event: 'issue_comment',
    action,
    actor: author,
    number: 7,
    issue: { number: 7, title: 'Bug', body: 'It breaks', isPullRequest: false },
    comment: { body, author }
  };
}

export const forkPullRequest: EventContext = {
  ...base,
  event: 'pull_request',
  actor: 'stranger',
  number: 12,
  pr: { number: 12, title: 'Fix', body: '', base: 'main', head: 'fix', fromFork: true }
};
