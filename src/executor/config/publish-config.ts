// The `publish:` key of an environment: where the executor pushes a run's changes and whether it
// opens a pull request. Its own module beside publish.ts so that config.ts only calls it; every
// default of the issue lives here, and each mistake is named with its key and the expected form.

import { type ConfigReader, show } from '../values/config-reader.js';

export interface PullRequestConfig {
  /** owner/name; from the remote URL when it is a GitHub URL. */
  repository?: string;
  /** The REST API's root (GitHub Enterprise Server: https://HOST/api/v3). */
  apiUrl: string;
  draft: boolean;
  title: string;
  body: string;
}

export interface PublishConfig {
  /** Branch name template: {run_id}, {short_id}, {title_slug}. */
  branch: string;
  /** The branch runs start from and pull requests target; the source's HEAD branch when unset. */
  base?: string;
  /** The remote of a local source that receives the branch (a URL source pushes to its URL). */
  remote: string;
  commitMessage: string;
  author: { name: string; email: string };
  /** The executor's variable holding the token for https pushes and the API. */
  tokenEnv?: string;
  /** Absent: push only. */
  pullRequest?: PullRequestConfig;
}

export const PUBLISH_DEFAULTS = {
  branch: 'agent/{run_id}',
  remote: 'origin',
  commitMessage: '{title}\n\nRun: {session_link}',
  author: { name: 'agent-executor', email: 'agent-executor@localhost' },
  apiUrl: 'https://api.github.com',
  title: '{title}',
  body: '{result}\n\n---\nRun {run_id}: {session_link}'
} as const;

export function parsePublish(raw: unknown, at: string, r: ConfigReader): PublishConfig | undefined {
  if (raw === undefined || raw === null || raw === false) return undefined;
  const publish = r.object(raw === true ? {} : raw, at);
  r.known(publish, at, ['branch', 'base', 'remote', 'commit_message', 'author', 'token_env', 'pull_request']);
  const author = r.object(publish.author, `${at}.author`);
  r.known(author, `${at}.author`, ['name', 'email']);
  const config: PublishConfig = {
    branch: r.string(publish.branch, `${at}.branch`, PUBLISH_DEFAULTS.branch),
    remote: r.string(publish.remote, `${at}.remote`, PUBLISH_DEFAULTS.remote),
    commitMessage: r.string(publish.commit_message, `${at}.commit_message`, PUBLISH_DEFAULTS.commitMessage),
    author: {
      name: r.string(author.name, `${at}.author.name`, PUBLISH_DEFAULTS.author.name),
      email: r.string(author.email, `${at}.author.email`, PUBLISH_DEFAULTS.author.email)
    }
  };
  if (/[{}]/.test(config.branch.replace(/\{(run_id|short_id|title_slug)\}/g, ''))) {
    r.problems.push(
      `${at}.branch ${show(publish.branch)}: expected a branch name template with only {run_id}, {short_id} or {title_slug}`
    );
  }
  if (publish.base !== undefined && publish.base !== null)
    config.base = r.string(publish.base, `${at}.base`, 'main');
  if (publish.token_env !== undefined && publish.token_env !== null) {
    const name = r.string(publish.token_env, `${at}.token_env`, 'GITHUB_TOKEN');
    if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(name))
      r.problems.push(`${at}.token_env ${show(name)}: expected a variable name such as GITHUB_TOKEN`);
    config.tokenEnv = name;
  }
  if (publish.pull_request !== undefined && publish.pull_request !== null && publish.pull_request !== false) {
    const pr = r.object(publish.pull_request === true ? {} : publish.pull_request, `${at}.pull_request`);
    r.known(pr, `${at}.pull_request`, ['repository', 'api_url', 'draft', 'title', 'body']);
    config.pullRequest = {
      apiUrl: r.url(pr.api_url, `${at}.pull_request.api_url`) ?? PUBLISH_DEFAULTS.apiUrl,
      draft: true,
      title: r.string(pr.title, `${at}.pull_request.title`, PUBLISH_DEFAULTS.title),
      body: r.string(pr.body, `${at}.pull_request.body`, PUBLISH_DEFAULTS.body)
    };
    if (pr.draft !== undefined && pr.draft !== null) {
      if (typeof pr.draft === 'boolean') config.pullRequest.draft = pr.draft;
      else r.problems.push(`${at}.pull_request.draft ${show(pr.draft)}: expected true or false`);
    }
    if (pr.repository !== undefined && pr.repository !== null) {
      const repository = r.string(pr.repository, `${at}.pull_request.repository`, 'owner/name');
      if (!/^[\w.-]+\/[\w.-]+$/.test(repository))
        r.problems.push(
          `${at}.pull_request.repository ${show(repository)}: expected owner/name such as acme/web`
        );
      config.pullRequest.repository = repository;
    }
  }
  return config;
}
