// Opening a pull request through the GitHub REST API (github.com or a GitHub Enterprise Server's
// /api/v3), for publish.ts. Its own module because it speaks HTTP to GitHub while publish.ts
// drives git; a failure comes back in GitHub's own words (its message and its errors' messages).

export interface PullRequestRequest {
  /** The API's root, e.g. https://api.github.com or https://HOST/api/v3. */
  apiUrl: string;
  /** owner/name */
  repository: string;
  token: string;
  title: string;
  head: string;
  base: string;
  body: string;
  draft: boolean;
}

/** owner/name of a GitHub URL (https, ssh or scp-like); the API's own web host counts too. */
export function repositoryOf(url: string, apiUrl: string): string | undefined {
  const hosts = new Set(['github.com', new URL(apiUrl).hostname.replace(/^api\./, '')]);
  const match =
    /^(?:https?|ssh|git):\/\/(?:[^@/]+@)?([^/:]+)(?::\d+)?\/([\w.-]+)\/([\w.-]+?)(?:\.git)?\/?$/.exec(url) ??
    /^[\w.-]+@([\w.-]+):([\w.-]+)\/([\w.-]+?)(?:\.git)?$/.exec(url);
  return match && hosts.has(match[1]!) ? `${match[2]}/${match[3]}` : undefined;
}

/** POST /repos/{owner}/{repo}/pulls; answers the pull request's web URL and number. */
export async function openPullRequest(
  request: PullRequestRequest
): Promise<{ url: string; number?: number }> {
  const endpoint = `${request.apiUrl}/repos/${request.repository}/pulls`;
  let response: Response;
  try {
    response = await fetch(endpoint, {
      method: 'POST',
      headers: {
        accept: 'application/vnd.github+json',
        authorization: `Bearer ${request.token}`,
        'content-type': 'application/json',
        'user-agent': 'agent-executor',
        'x-github-api-version': '2022-11-28'
      },
      body: JSON.stringify({
        title: request.title,
        head: request.head,
        base: request.base,
        body: request.body,
        draft: request.draft
      }),
      signal: AbortSignal.timeout(30_000)
    });
  } catch (error) {
    throw new Error(`POST ${endpoint} failed: ${(error as Error).message}`);
  }
  const text = await response.text();
  let body: { html_url?: unknown; number?: unknown; message?: unknown; errors?: unknown } = {};
  try {
    body = JSON.parse(text) as typeof body;
  } catch {
    // described below by its status and first characters
  }
  if (response.status === 201 && typeof body.html_url === 'string')
    return { url: body.html_url, number: typeof body.number === 'number' ? body.number : undefined };
  // 422 says {"message":"Validation Failed","errors":[{"message":"A pull request already exists for …"}]}
  const details = Array.isArray(body.errors)
    ? body.errors
        .map(e =>
          typeof e === 'string'
            ? e
            : ((e as { message?: string; code?: string })?.message ?? (e as { field?: string })?.field)
        )
        .filter(Boolean)
    : [];
  const words = [typeof body.message === 'string' ? body.message : text.slice(0, 200), ...details].join(': ');
  throw new Error(`the GitHub API at ${endpoint} answered ${response.status} (${words})`);
}
