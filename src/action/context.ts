// Where the workflow was started from: read from the runner's variables and the event payload file,
// once. Everything users wrote (titles, bodies, comments) is kept apart as untrusted text.

import { readFileSync } from 'node:fs';

export interface EventContext {
  event: string;
  /** The payload's `action` (created, edited, deleted, opened, …), if any. */
  action?: string;
  /** owner/name */
  repo: string;
  ref: string;
  sha: string;
  actor: string;
  /** Number of the pull request or issue the event is about, if any. */
  number?: number;
  pr?: { number: number; title: string; body: string; base: string; head: string; fromFork: boolean };
  issue?: { number: number; title: string; body: string; isPullRequest: boolean };
  comment?: { body: string; author: string };
}

type Payload = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

export function readEventContext(env: NodeJS.ProcessEnv = process.env): EventContext {
  let payload: Payload = {};
  if (env.GITHUB_EVENT_PATH) {
    try {
      payload = JSON.parse(readFileSync(env.GITHUB_EVENT_PATH, 'utf8')) as Payload;
    } catch {
      payload = {};
    }
  }
  const text = (value: unknown) => (typeof value === 'string' ? value : '');
  const context: EventContext = {
    event: env.GITHUB_EVENT_NAME ?? '',
    repo: env.GITHUB_REPOSITORY ?? '',
    ref: env.GITHUB_REF ?? '',
    sha: env.GITHUB_SHA ?? '',
    actor: env.GITHUB_ACTOR ?? text(payload.sender?.login),
    action: text(payload.action) || undefined
  };
  const pr = payload.pull_request;
  if (pr && typeof pr.number === 'number') {
    context.pr = {
      number: pr.number,
      title: text(pr.title),
      body: text(pr.body),
      base: text(pr.base?.ref),
      head: text(pr.head?.ref),
      fromFork: Boolean(pr.head?.repo && pr.base?.repo && pr.head.repo.full_name !== pr.base.repo.full_name)
    };
    context.number = pr.number;
  }
  const issue = payload.issue;
  if (issue && typeof issue.number === 'number') {
    context.issue = {
      number: issue.number,
      title: text(issue.title),
      body: text(issue.body),
      isPullRequest: Boolean(issue.pull_request)
    };
    context.number ??= issue.number;
  }
  const comment = payload.comment;
  if (comment && typeof comment.body === 'string') {
    context.comment = { body: comment.body, author: text(comment.user?.login) };
  }
  return context;
}
