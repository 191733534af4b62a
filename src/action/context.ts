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
  /** `author` is who wrote the title and body (the payload's `user.login`), when the payload says. */
  pr?: {
    number: number;
    title: string;
    body: string;
    base: string;
    head: string;
    /** The head commit the event saw (`pull_request.head.sha`), when the payload says. */
    headSha?: string;
    fromFork: boolean;
    author?: string;
  };
  issue?: { number: number; title: string; body: string; isPullRequest: boolean; author?: string };
  /** A comment, or a review's body on `pull_request_review`. */
  comment?: { body: string; author: string };
  /** On `labeled` events: the label just added. */
  label?: string;
  /** Who sent the event (the payload's `sender.login`): on `labeled`, who added the label. */
  sender?: string;
  /** The payload's `repository.private`: true only when the event says the repository is private. */
  repoPrivate?: boolean;
}

type Payload = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

/** Events about a pull request whose step may review it (`issue_comment` only on a pull request). */
export const PULL_REQUEST_EVENTS = [
  'pull_request',
  'pull_request_target',
  'pull_request_review',
  'pull_request_review_comment'
];

/** The pull request the event is about, when it is a pull request event (or a comment on one). */
export function pullRequestOf(context: EventContext): number | undefined {
  if (PULL_REQUEST_EVENTS.includes(context.event)) return context.pr?.number;
  if (context.event === 'issue_comment' && context.issue?.isPullRequest) return context.issue.number;
  return undefined;
}

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
      ...(text(pr.head?.sha) ? { headSha: text(pr.head?.sha) } : {}),
      // A head repository that is gone (a deleted fork: `head.repo` is null) is no proof of trust.
      fromFork: !pr.head?.repo || Boolean(pr.base?.repo && pr.head.repo.full_name !== pr.base.repo.full_name),
      ...author(pr)
    };
    context.number = pr.number;
  }
  const issue = payload.issue;
  if (issue && typeof issue.number === 'number') {
    context.issue = {
      number: issue.number,
      title: text(issue.title),
      body: text(issue.body),
      isPullRequest: Boolean(issue.pull_request),
      ...author(issue)
    };
    context.number ??= issue.number;
  }
  const comment = payload.comment;
  if (comment && typeof comment.body === 'string') {
    context.comment = { body: comment.body, author: text(comment.user?.login) };
  }
  // A review's text is a comment too: the trigger phrase and the author check apply to it.
  const review = payload.review;
  if (!context.comment && review && typeof review === 'object') {
    context.comment = { body: text(review.body), author: text(review.user?.login) };
  }
  if (typeof payload.label?.name === 'string') context.label = payload.label.name;
  if (typeof payload.sender?.login === 'string' && payload.sender.login !== '')
    context.sender = payload.sender.login;
  if (typeof payload.repository?.private === 'boolean') context.repoPrivate = payload.repository.private;
  return context;
}

function author(item: Payload): { author?: string } {
  const login: unknown = item.user?.login;
  return typeof login === 'string' && login !== '' ? { author: login } : {};
}
