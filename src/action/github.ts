// The few GitHub REST calls the action makes, through @actions/github (GITHUB_API_URL is honoured,
// so GitHub Enterprise Server works). Loaded only when a feature needs it, to keep start-up quick.

export interface GitHubApi {
  /** The actor's permission on the repository: admin, maintain, write, triage, read or none. */
  permission(username: string): Promise<string>;
  findComment(issueNumber: number, marker: string): Promise<number | undefined>;
  /** The bot's comment holding the marker, with its text (what run the thread belongs to). */
  readComment(issueNumber: number, marker: string): Promise<{ id: number; body: string } | undefined>;
  createComment(issueNumber: number, body: string): Promise<number>;
  updateComment(commentId: number, body: string): Promise<void>;
}

const MAX_COMMENT_PAGES = 10;

export async function createGitHubApi(token: string, repository: string): Promise<GitHubApi> {
  const { getOctokit } = await import('@actions/github');
  const octokit = getOctokit(token, { request: { retries: 0 } });
  const [owner = '', repo = ''] = repository.split('/');
  const readComment: GitHubApi['readComment'] = async (issueNumber, marker) => {
    for (let page = 1; page <= MAX_COMMENT_PAGES; page++) {
      const { data } = await octokit.rest.issues.listComments({
        owner,
        repo,
        issue_number: issueNumber,
        per_page: 100,
        page
      });
      // Only a comment a bot wrote counts: anyone can paste the marker into a comment of their own.
      // And only one that begins with it, as the step writes it: another bot quoting a stranger's
      // text that holds the marker is neither read nor overwritten.
      const found = data.find(comment => comment.user?.type === 'Bot' && comment.body?.startsWith(marker));
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
