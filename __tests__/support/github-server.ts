// A local HTTP server that serves the few GitHub REST endpoints the action uses (collaborator
// permission, list/create/update issue comments) and the executor's publishing uses (create a pull
// request, also under a GHES-style /api/v3 prefix), and records every request.

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
    match = /^(?:\/api\/v3)?\/repos\/([^/]+)\/([^/]+)\/pulls$/.exec(url.pathname);
    if (match && req.method === 'POST') return this.createPull(`${match[1]}/${match[2]}`, req, body, send);
    send(404, { message: `no route ${req.method} ${url.pathname}` });
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
