// The few GitHub REST calls the action makes, through @actions/github (GITHUB_API_URL is honoured,
// so GitHub Enterprise Server works). Loaded only when a feature needs it, to keep start-up quick.

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
}

const MAX_COMMENT_PAGES = 10;

export async function createGitHubApi(token: string, repository: string): Promise<GitHubApi> {
  const { getOctokit } = await import('@actions/github');
  const octokit = getOctokit(token, { request: { retries: 0 } });
  const [owner = '', repo = ''] = repository.split('/');
  // Who the token is: GraphQL's `viewer` answers for installation tokens too (REST `GET /user`
  // does not). GraphQL may name a bot without the `[bot]` that REST comments carry.
  let identity: Promise<string> | undefined;
  const self = () =>
    (identity ??= octokit
      .graphql<{ viewer?: { login?: string } }>('query { viewer { login } }')
      .then(({ viewer }) => {
        if (!viewer?.login) throw new Error('GitHub did not say who the token is');
        return viewer.login;
      }));
  const readComment: GitHubApi['readComment'] = async (issueNumber, marker) => {
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
      const mine = (user: { login?: string; type?: string } | null | undefined) =>
        user?.login === login || (user?.type === 'Bot' && user.login === `${login}[bot]`);
      const found = marked.find(comment => mine(comment.user));
      if (found) return { id: found.id, body: found.body ?? '' };
      if (data.length < 100) return undefined;
    }
    return undefined;
  };
  return {
    readComment,
    async permission(username) {
      const { data } = await octokit.rest.repos.getCollaboratorPermissionLevel({ owner, repo, username });
      return (data as { role_name?: string }).role_name || data.permission;
    },
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

/** No github-token to ask GitHub with (the default token is empty outside a workflow). */
export class NoTokenError extends Error {
  constructor() {
    super('github-token is empty');
  }
}
