// A local HTTP server that serves the few GitHub REST endpoints the action uses (collaborator
// permission, list/create/update issue comments, a pull request's head, files, review comments and
// reviews, create a review) and the executor's publishing uses (create a pull request, also under a
// GHES-style /api/v3 prefix), and records every request. A review is checked as GitHub checks it: a
// line comment must sit on a line of its side of one hunk of the file's patch, else 422.

import { type IncomingMessage, type Server, type ServerResponse, createServer } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface GitHubRequest {
  method: string;
  path: string;
  body: unknown;
  authorization?: string;
  at: number;
}

export class GitHubServer {
  readonly requests: GitHubRequest[] = [];
  /** login → permission (admin, maintain, write, triage, read, none). */
  readonly permissions = new Map<string, string>();
  /** issue number → comments */
  readonly comments = new Map<
    number,
    { id: number; body: string; user?: { login: string; type: string } }[]
  >();
  /** Who the token is (GraphQL `viewer.login`); comments are written as `github-actions[bot]`. */
  viewer = 'github-actions[bot]';
  /** Status to answer permission checks with (to simulate failures), or undefined for normal answers. */
  permissionStatus?: number;
  /** Status to answer comment writes with (e.g. 403 without permission). */
  commentStatus?: number;
  /** Pull requests created, by `owner/repo`. */
  readonly pulls: {
    repository: string;
    number: number;
    head: string;
    base: string;
    title: string;
    body: string;
    draft: boolean;
  }[] = [];
  /** Pull requests to review, by number: their head commit and files (with patches). */
  readonly reviewable = new Map<
    number,
    { head: string; files: { filename: string; status: string; patch?: string }[] }
  >();
  /** Reviews posted, by pull request number, as sent (with their ids). */
  readonly reviews = new Map<
    number,
    {
      id: number;
      commit_id: string;
      event: string;
      body: string;
      comments: Record<string, unknown>[];
      user: { login: string; type: string };
    }[]
  >();
  /** Review comments on each pull request, the ones reviews created and any a test adds. */
  readonly reviewComments = new Map<
    number,
    { id: number; body: string; user: { login: string; type: string } }[]
  >();
  /** When set, a review post is never answered (GitHub stalling). */
  stallReviews = false;
  /** The token pull request creation wants as `Authorization: Bearer …` (any when unset). */
  token?: string;
  private nextId = 1000;
  private server?: Server;

  get url(): string {
    return `http://127.0.0.1:${(this.server!.address() as AddressInfo).port}`;
  }

  async start(): Promise<this> {
    this.server = createServer((req, res) => void this.handle(req, res));
    await new Promise<void>(resolve => this.server!.listen(0, '127.0.0.1', resolve));
    return this;
  }

  stop(): Promise<void> {
    this.server?.closeAllConnections();
    return new Promise(resolve => this.server?.close(() => resolve()) ?? resolve());
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const text = Buffer.concat(chunks).toString('utf8');
    const url = new URL(req.url ?? '/', 'http://localhost');
    const body = text ? JSON.parse(text) : undefined;
    this.requests.push({
      method: req.method!,
      path: url.pathname,
      body,
      authorization: req.headers.authorization,
      at: Date.now()
    });
    const send = (status: number, data: unknown) => {
      res.writeHead(status, { 'content-type': 'application/json' });
      res.end(JSON.stringify(data));
    };
    if (/^(?:\/api)?\/graphql$/.test(url.pathname) && req.method === 'POST') {
      const query = String((body as { query?: unknown })?.query ?? '');
      if (!query.includes('viewer')) return send(400, { message: 'unexpected query' });
      return send(200, { data: { viewer: { login: this.viewer } } });
    }
    let match = /^\/repos\/[^/]+\/[^/]+\/collaborators\/([^/]+)\/permission$/.exec(url.pathname);
    if (match && req.method === 'GET') {
      if (this.permissionStatus) return send(this.permissionStatus, { message: 'Server Error' });
      const login = decodeURIComponent(match[1]!);
      const permission = this.permissions.get(login) ?? 'none';
      const legacy = ['admin', 'maintain'].includes(permission)
        ? 'admin'
        : permission === 'triage'
          ? 'read'
          : permission;
      return send(200, { permission: legacy, role_name: permission, user: { login } });
    }
    match = /^\/repos\/[^/]+\/[^/]+\/issues\/(\d+)\/comments$/.exec(url.pathname);
    if (match) {
      const list = this.comments.get(Number(match[1])) ?? [];
      this.comments.set(Number(match[1]), list);
      if (req.method === 'GET')
        return send(
          200,
          list.map(c => ({ id: c.id, body: c.body, user: c.user }))
        );
      if (this.commentStatus)
        return send(this.commentStatus, { message: 'Resource not accessible by integration' });
      if ((body as { body: string }).body.length > 65_536)
        return send(422, {
          message: 'Validation Failed',
          errors: [{ code: 'custom', message: 'body is too long (maximum is 65536 characters)' }]
        });
      const comment = {
        id: this.nextId++,
        body: (body as { body: string }).body,
        user: { login: 'github-actions[bot]', type: 'Bot' }
      };
      list.push(comment);
      return send(201, comment);
    }
    match = /^\/repos\/[^/]+\/[^/]+\/issues\/comments\/(\d+)$/.exec(url.pathname);
    if (match && req.method === 'GET') {
      const found = [...this.comments.values()].flat().find(c => c.id === Number(match![1]));
      return found ? send(200, found) : send(404, { message: 'Not Found' });
    }
    if (match && req.method === 'PATCH') {
      if (this.commentStatus)
        return send(this.commentStatus, { message: 'Resource not accessible by integration' });
      if ((body as { body: string }).body.length > 65_536)
        return send(422, {
          message: 'Validation Failed',
          errors: [{ code: 'custom', message: 'body is too long (maximum is 65536 characters)' }]
        });
      for (const list of this.comments.values()) {
        const comment = list.find(c => c.id === Number(match![1]));
        if (comment) {
          comment.body = (body as { body: string }).body;
          return send(200, comment);
        }
      }
      return send(404, { message: 'Not Found' });
    }
    match = /^\/repos\/[^/]+\/[^/]+\/pulls\/(\d+)(\/files|\/comments|\/reviews)?$/.exec(url.pathname);
    if (match) return this.pullRequest(Number(match[1]), match[2] ?? '', req.method!, url, body, send);
    match = /^(?:\/api\/v3)?\/repos\/([^/]+)\/([^/]+)\/pulls$/.exec(url.pathname);
    if (match && req.method === 'POST') return this.createPull(`${match[1]}/${match[2]}`, req, body, send);
    send(404, { message: `no route ${req.method} ${url.pathname}` });
  }

  /** A pull request's head, files, review comments and reviews, paged as GitHub pages them. */
  private pullRequest(
    number: number,
    what: string,
    method: string,
    url: URL,
    body: unknown,
    send: (status: number, data: unknown) => void
  ): void {
    const pull = this.reviewable.get(number);
    if (!pull) return send(404, { message: 'Not Found' });
    const page = <T>(items: T[]): T[] => {
      const size = Math.min(100, Number(url.searchParams.get('per_page') ?? 30));
      const at = Number(url.searchParams.get('page') ?? 1);
      return items.slice((at - 1) * size, at * size);
    };
    const comments = this.reviewComments.get(number) ?? [];
    this.reviewComments.set(number, comments);
    const reviews = this.reviews.get(number) ?? [];
    this.reviews.set(number, reviews);
    if (method === 'GET' && what === '') return send(200, { number, head: { sha: pull.head } });
    if (method === 'GET' && what === '/files') return send(200, page(pull.files));
    if (method === 'GET' && what === '/comments') return send(200, page(comments));
    if (method === 'GET' && what === '/reviews')
      return send(
        200,
        page(reviews).map(({ id, body: text, user, commit_id }) => ({ id, body: text, user, commit_id }))
      );
    if (method !== 'POST' || what !== '/reviews') return send(404, { message: 'Not Found' });
    if (this.stallReviews) return;
    const review = (body ?? {}) as Record<string, unknown>;
    const refuse = (message: string) => send(422, { message: 'Unprocessable Entity', errors: [message] });
    if (!['APPROVE', 'REQUEST_CHANGES', 'COMMENT'].includes(String(review.event)))
      return refuse(`event ${String(review.event)} is not valid`);
    if (typeof review.body !== 'string' || review.body.length > 65_536) return refuse('body is too long');
    const list = Array.isArray(review.comments) ? (review.comments as Record<string, unknown>[]) : [];
    for (const comment of list) {
      const file = pull.files.find(f => f.filename === comment.path);
      if (!file) return refuse(`Path could not be resolved: ${String(comment.path)}`);
      const side = (comment.side ?? 'RIGHT') as 'LEFT' | 'RIGHT';
      const lines = hunkLines(file.patch ?? '')[side];
      const end = lines.get(Number(comment.line));
      const start = comment.start_line === undefined ? end : lines.get(Number(comment.start_line));
      if (end === undefined || start === undefined || start !== end)
        return refuse('Line could not be resolved');
      if (typeof comment.body !== 'string' || comment.body.length > 65_536)
        return refuse('comment body is too long');
    }
    const user = { login: 'github-actions[bot]', type: 'Bot' };
    const id = this.nextId++;
    reviews.push({
      id,
      commit_id: String(review.commit_id),
      event: String(review.event),
      body: review.body,
      comments: list,
      user
    });
    for (const comment of list) comments.push({ id: this.nextId++, body: String(comment.body), user });
    send(200, { id, html_url: `https://github.com/acme/app/pull/${number}#pullrequestreview-${id}`, user });
  }

  /** POST /repos/{owner}/{repo}/pulls, checked and answered as GitHub does. */
  private createPull(
    repository: string,
    req: IncomingMessage,
    body: unknown,
    send: (status: number, data: unknown) => void
  ): void {
    if (this.token !== undefined && req.headers.authorization !== `Bearer ${this.token}`)
      return send(401, { message: 'Bad credentials', status: '401' });
    const pr = (body ?? {}) as Record<string, unknown>;
    const missing = ['head', 'base', 'title'].filter(key => typeof pr[key] !== 'string' || pr[key] === '');
    if (missing.length > 0 || (pr.draft !== undefined && typeof pr.draft !== 'boolean'))
      return send(422, {
        message: 'Validation Failed',
        errors: missing.map(field => ({ resource: 'PullRequest', code: 'missing_field', field })),
        status: '422'
      });
    const owner = repository.split('/')[0]!;
    if (this.pulls.some(p => p.repository === repository && p.head === pr.head))
      return send(422, {
        message: 'Validation Failed',
        errors: [
          {
            resource: 'PullRequest',
            code: 'custom',
            message: `A pull request already exists for ${owner}:${String(pr.head)}.`
          }
        ],
        documentation_url: 'https://docs.github.com/rest/pulls/pulls#create-a-pull-request',
        status: '422'
      });
    const number = this.pulls.length + 1;
    const created = {
      repository,
      number,
      head: String(pr.head),
      base: String(pr.base),
      title: String(pr.title),
      body: String(pr.body ?? ''),
      draft: pr.draft === true
    };
    this.pulls.push(created);
    send(201, {
      id: this.nextId++,
      number,
      state: 'open',
      html_url: `https://github.com/${repository}/pull/${number}`,
      url: `${this.url}/repos/${repository}/pulls/${number}`,
      title: created.title,
      body: created.body,
      draft: created.draft,
      head: { ref: created.head, label: `${owner}:${created.head}` },
      base: { ref: created.base }
    });
  }
}

/** Each side's lines in a patch, to the hunk they belong to: GitHub comments only on these. */
function hunkLines(patch: string): Record<'LEFT' | 'RIGHT', Map<number, number>> {
  const sides = { LEFT: new Map<number, number>(), RIGHT: new Map<number, number>() };
  let hunk = -1;
  let left = 0;
  let right = 0;
  for (const line of patch.split('\n')) {
    const header = /^@@ -(\d+)(?:,\d+)? \+(\d+)(?:,\d+)? @@/.exec(line);
    if (header) {
      hunk++;
      left = Number(header[1]);
      right = Number(header[2]);
    } else if (hunk < 0 || line.startsWith('\\')) continue;
    else if (line.startsWith('-')) sides.LEFT.set(left++, hunk);
    else if (line.startsWith('+')) sides.RIGHT.set(right++, hunk);
    else if (line.startsWith(' ')) {
      sides.LEFT.set(left++, hunk);
      sides.RIGHT.set(right++, hunk);
    }
  }
  return sides;
}
