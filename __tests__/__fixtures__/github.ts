// A typed stand-in for @actions/github's `getOctokit`: the REST calls the action makes, answered
// from a small in-memory repository (permissions and issue comments), with every call recorded.

export interface FakeComment {
  id: number;
  body: string;
  user: { login: string; type: 'Bot' | 'User' };
}

export interface FakeRepository {
  /** Permission per login; anyone else gets `none`. */
  permissions: Record<string, string>;
  comments: Map<number, FakeComment[]>;
  calls: string[];
  /** A status to fail the next calls with, e.g. 403 for a token without the permission. */
  failWith?: number;
  /** Who the token is (GraphQL `viewer.login`); the step's comments are written as `github-actions[bot]`. */
  viewer: string;
}

export function createFakeRepository(permissions: Record<string, string> = {}): FakeRepository {
  return { permissions, comments: new Map(), calls: [], viewer: 'github-actions[bot]' };
}

/** GitHub answers 422 to a comment body longer than this. */
const MAX_BODY = 65_536;

function failure(status: number): Error & { status: number } {
  return Object.assign(new Error(`HttpError: ${status}`), { status });
}

/** The module @actions/github as the action imports it, backed by `repository`. */
export function fakeGitHubModule(repository: FakeRepository) {
  let nextId = 1000;
  const call = (name: string) => {
    repository.calls.push(name);
    if (repository.failWith) throw failure(repository.failWith);
  };
  const octokit = {
    // The action bounds every request through this hook; the fake's calls make no request to bound.
    hook: { wrap() {} },
    async graphql(query: string) {
      call('graphql');
      if (!query.includes('viewer')) throw new Error(`unexpected query ${query}`);
      return { viewer: { login: repository.viewer } };
    },
    rest: {
      repos: {
        async getCollaboratorPermissionLevel({
          username
        }: {
          owner: string;
          repo: string;
          username: string;
        }) {
          call(`permission ${username}`);
          return { data: { permission: repository.permissions[username] ?? 'none' } };
        }
      },
      issues: {
        async listComments({ issue_number, page }: { issue_number: number; page: number; per_page: number }) {
          call(`list #${issue_number}`);
          const all = repository.comments.get(issue_number) ?? [];
          return { data: all.slice((page - 1) * 100, page * 100) };
        },
        async createComment({ issue_number, body }: { issue_number: number; body: string }) {
          call(`create #${issue_number}`);
          if (body.length > MAX_BODY) throw failure(422);
          const comment: FakeComment = {
            id: nextId++,
            body,
            user: { login: 'github-actions[bot]', type: 'Bot' }
          };
          repository.comments.set(issue_number, [...(repository.comments.get(issue_number) ?? []), comment]);
          return { data: { id: comment.id } };
        },
        async getComment({ comment_id }: { comment_id: number }) {
          call(`get ${comment_id}`);
          for (const list of repository.comments.values()) {
            const found = list.find(comment => comment.id === comment_id);
            if (found) return { data: { id: found.id, body: found.body, user: found.user } };
          }
          throw failure(404);
        },
        async updateComment({ comment_id, body }: { comment_id: number; body: string }) {
          call(`update ${comment_id}`);
          if (body.length > MAX_BODY) throw failure(422);
          for (const list of repository.comments.values()) {
            const found = list.find(comment => comment.id === comment_id);
            if (found) found.body = body;
          }
          return { data: {} };
        }
      }
    }
  };
  return { getOctokit: (_token: string, _options?: unknown) => octokit };
}
