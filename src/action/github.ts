// The few GitHub REST calls the action makes, through @actions/github (GITHUB_API_URL is honoured,
// so GitHub Enterprise Server works). Loaded only when a feature needs it, to keep start-up quick.

import type { getOctokit } from '@actions/github';

export interface GitHubApi {
  /** The actor's permission on the repository: admin, maintain, write, triage, read or none. */
  permission(username: string): Promise<string>;
  findComment(issueNumber: number, marker: string): Promise<number | undefined>;
  /**
   * The step's own comment holding the marker, with its text (what run the thread belongs to): one
   * written by the token's own identity, never another bot's. Throws when that identity cannot be read.
   */
  readComment(issueNumber: number, marker: string): Promise<{ id: number; body: string } | undefined>;
  /** The current text of a comment (to see whether a newer step has written it since). */
  commentBody(commentId: number): Promise<string>;
  createComment(issueNumber: number, body: string): Promise<number>;
  updateComment(commentId: number, body: string): Promise<void>;
  /** The head commit of a pull request as it is now. */
  pullHead(pullNumber: number): Promise<string>;
  /** A pull request's files with their patches (absent for a binary or too large diff), all pages. */
  pullFiles(pullNumber: number): Promise<PullFile[]>;
  /**
   * The texts this token's own identity wrote on a pull request's reviews: each review comment and
   * each review body (another identity's text is never read as this step's).
   */
  ownReviewTexts(pullNumber: number): Promise<string[]>;
  /** Posts one review; answers its id and web address. */
  createReview(pullNumber: number, review: ReviewRequest): Promise<{ id: number; url: string }>;
}

export interface PullFile {
  filename: string;
  status: string;
  patch?: string;
}

/** A line comment of a review, as the pull request reviews API takes it. */
export interface ReviewComment {
  path: string;
  body: string;
  line: number;
  side: 'LEFT' | 'RIGHT';
  start_line?: number;
  start_side?: 'LEFT' | 'RIGHT';
}

export interface ReviewRequest {
  commit_id: string;
  event: 'COMMENT' | 'REQUEST_CHANGES';
  body: string;
  comments: ReviewComment[];
}

/**
 * Every GitHub call ends within this (`github-timeout`, default 30 s): a stalled GitHub never holds
 * the step (or its post step) past its deadline by more than one call's wait.
 */
export const GITHUB_REQUEST_TIMEOUT_MS = 30_000;
const MAX_COMMENT_PAGES = 10;
/** GitHub lists at most 3,000 files of a pull request: 30 pages of 100. */
const MAX_FILE_PAGES = 30;
/** Review comments and reviews read for this step's earlier findings: at most 3,000 of each. */
const MAX_REVIEW_PAGES = 30;

/** The Octokit the action's calls go through. */
type Octokit = ReturnType<typeof getOctokit>;

/** A comment's or a review's author, as GitHub gives it. */
type Author = { login?: string; type?: string } | null | undefined;

/** Bounds every request of `octokit` to `timeoutMs`, saying which call GitHub did not answer. */
function boundRequests(octokit: Octokit, timeoutMs: number): void {
  octokit.hook.wrap('request', async (request, options) => {
    const bound = AbortSignal.timeout(timeoutMs);
    const given = options.request?.signal as AbortSignal | undefined;
    // In place: the hooks wrapped inside this one were bound to this very object.
    options.request = { ...options.request, signal: given ? AbortSignal.any([given, bound]) : bound };
    try {
      return await request(options);
    } catch (error) {
      if (!bound.aborted) throw error;
      // The route's template (`/repos/{owner}/{repo}/…`): ours, never data of the request.
      throw new Error(`GitHub did not answer ${options.method} ${options.url} within ${timeoutMs / 1000} s`);
    }
  });
}

/**
 * Who the token is, asked once: GraphQL's `viewer` answers for installation tokens too (REST
 * `GET /user` does not). GraphQL may name a bot without the `[bot]` that REST comments carry.
 */
function tokenLogin(octokit: Octokit): () => Promise<string> {
  let identity: Promise<string> | undefined;
  return () =>
    (identity ??= octokit
      .graphql<{ viewer?: { login?: string } }>('query { viewer { login } }')
      .then(({ viewer }) => {
        if (!viewer?.login) throw new Error('GitHub did not say who the token is');
        return viewer.login;
      }));
}

/** Whether `user` is the token's own identity `login` (a bot under its REST name too). */
function isLogin(user: Author, login: string): boolean {
  return user?.login === login || (user?.type === 'Bot' && user.login === `${login}[bot]`);
}

/** Every page of a list, up to `max` pages of 100. */
async function allPages<T>(read: (page: number) => Promise<{ data: T[] }>, max: number): Promise<T[]> {
  const items: T[] = [];
  for (let page = 1; page <= max; page++) {
    const { data } = await read(page);
    items.push(...data);
    if (data.length < 100) break;
  }
  return items;
}

/** The step's own marked comment on an issue or pull request, page after page. */
function commentReader(
  octokit: Octokit,
  owner: string,
  repo: string,
  self: () => Promise<string>
): GitHubApi['readComment'] {
  return async (issueNumber, marker) => {
    for (let page = 1; page <= MAX_COMMENT_PAGES; page++) {
      const { data } = await octokit.rest.issues.listComments({
        owner,
        repo,
        issue_number: issueNumber,
        per_page: 100,
        page
      });
      // Only a comment the token itself wrote counts: anyone can paste the marker into a comment of
      // their own, and another bot quoting a stranger's text can carry it too; neither is read nor
      // overwritten. And only one that begins with the marker, as the step writes it.
      const marked = data.filter(comment => comment.body?.startsWith(marker));
      const login = marked.length > 0 ? await self() : '';
      const found = marked.find(comment => isLogin(comment.user, login));
      if (found) return { id: found.id, body: found.body ?? '' };
      if (data.length < 100) return undefined;
    }
    return undefined;
  };
}

/** The calls on issue comments: finding, reading, writing the step's comment. */
function commentCalls(
  octokit: Octokit,
  owner: string,
  repo: string,
  self: () => Promise<string>
): Pick<GitHubApi, 'readComment' | 'findComment' | 'commentBody' | 'createComment' | 'updateComment'> {
  const readComment = commentReader(octokit, owner, repo, self);
  return {
    readComment,
    async findComment(issueNumber, marker) {
      return (await readComment(issueNumber, marker))?.id;
    },
    async commentBody(commentId) {
      const { data } = await octokit.rest.issues.getComment({ owner, repo, comment_id: commentId });
      return data.body ?? '';
    },
    async createComment(issueNumber, body) {
      const { data } = await octokit.rest.issues.createComment({
        owner,
        repo,
        issue_number: issueNumber,
        body
      });
      return data.id;
    },
    async updateComment(commentId, body) {
      await octokit.rest.issues.updateComment({ owner, repo, comment_id: commentId, body });
    }
  };
}

/** The texts the token's own identity wrote on a pull request's review comments and reviews. */
async function ownReviewTexts(
  octokit: Octokit,
  owner: string,
  repo: string,
  pullNumber: number,
  self: () => Promise<string>
): Promise<string[]> {
  const isOwn = async (user: Author) => isLogin(user, await self());
  const texts: string[] = [];
  const comments = await allPages(
    page =>
      octokit.rest.pulls.listReviewComments({
        owner,
        repo,
        pull_number: pullNumber,
        per_page: 100,
        page
      }),
    MAX_REVIEW_PAGES
  );
  for (const comment of comments) if (await isOwn(comment.user)) texts.push(comment.body);
  const reviews = await allPages(
    page => octokit.rest.pulls.listReviews({ owner, repo, pull_number: pullNumber, per_page: 100, page }),
    MAX_REVIEW_PAGES
  );
  for (const review of reviews) if (review.body && (await isOwn(review.user))) texts.push(review.body);
  return texts;
}

/** The calls on pull requests: the head, the files, the step's earlier reviews, a new review. */
function pullCalls(
  octokit: Octokit,
  owner: string,
  repo: string,
  self: () => Promise<string>
): Pick<GitHubApi, 'pullHead' | 'pullFiles' | 'ownReviewTexts' | 'createReview'> {
  return {
    async pullHead(pullNumber) {
      const { data } = await octokit.rest.pulls.get({ owner, repo, pull_number: pullNumber });
      return data.head.sha;
    },
    async pullFiles(pullNumber) {
      const files = await allPages(
        page => octokit.rest.pulls.listFiles({ owner, repo, pull_number: pullNumber, per_page: 100, page }),
        MAX_FILE_PAGES
      );
      return files.map(file => ({
        filename: file.filename,
        status: file.status,
        ...(typeof file.patch === 'string' ? { patch: file.patch } : {})
      }));
    },
    ownReviewTexts: pullNumber => ownReviewTexts(octokit, owner, repo, pullNumber, self),
    async createReview(pullNumber, review) {
      const { data } = await octokit.rest.pulls.createReview({
        owner,
        repo,
        pull_number: pullNumber,
        ...review
      });
      return { id: data.id, url: data.html_url };
    }
  };
}

export async function createGitHubApi(
  token: string,
  repository: string,
  timeoutMs = GITHUB_REQUEST_TIMEOUT_MS
): Promise<GitHubApi> {
  const { getOctokit } = await import('@actions/github');
  const octokit = getOctokit(token, { request: { retries: 0 } });
  boundRequests(octokit, timeoutMs);
  const [owner = '', repo = ''] = repository.split('/');
  const self = tokenLogin(octokit);
  return {
    async permission(username) {
      const { data } = await octokit.rest.repos.getCollaboratorPermissionLevel({ owner, repo, username });
      return (data as { role_name?: string }).role_name || data.permission;
    },
    ...commentCalls(octokit, owner, repo, self),
    ...pullCalls(octokit, owner, repo, self)
  };
}

/** No github-token to ask GitHub with (the default token is empty outside a workflow). */
export class NoTokenError extends Error {
  constructor() {
    super('github-token is empty');
  }
}
