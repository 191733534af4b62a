// The `publish:` key of an environment: where the executor pushes a run's changes and whether it
// opens a pull request. Its own module beside publish.ts so that config.ts only calls it; every
// default of the issue lives here, and each mistake is named with its key and the expected form.

import Type, { type Static } from 'typebox';
import { show } from '../values/config-reader.js';
import { type Read, custom, flag, section, text } from './schema-kit.js';

export const PUBLISH_DEFAULTS = {
  branch: 'agent/{run_id}',
  remote: 'origin',
  commitMessage: '{title}\n\nRun: {session_link}',
  author: { name: 'agent-executor', email: 'agent-executor@localhost' },
  apiUrl: 'https://api.github.com',
  title: '{title}',
  body: '{result}\n\n---\nRun {run_id}: {session_link}'
} as const;

/** `branch`: a name template with only {run_id}, {short_id} or {title_slug} in braces. */
const readBranch: Read = (value, at, { r }) => {
  const branch = r.string(value, at, PUBLISH_DEFAULTS.branch);
  if (/[{}]/.test(branch.replace(/\{(run_id|short_id|title_slug)\}/g, '')))
    r.problems.push(
      `${at} ${show(value)}: expected a branch name template with only {run_id}, {short_id} or {title_slug}`
    );
  return branch;
};

/** `token_env`: unset, or a variable name. */
const readTokenEnv: Read = (value, at, { r }) => {
  if (value === undefined || value === null) return undefined;
  const name = r.string(value, at, 'GITHUB_TOKEN');
  if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(name))
    r.problems.push(`${at} ${show(name)}: expected a variable name such as GITHUB_TOKEN`);
  return name;
};

/** `pull_request.repository`: unset, or owner/name. */
const readRepository: Read = (value, at, { r }) => {
  if (value === undefined || value === null) return undefined;
  const repository = r.string(value, at, 'owner/name');
  if (!/^[\w.-]+\/[\w.-]+$/.test(repository))
    r.problems.push(`${at} ${show(repository)}: expected owner/name such as acme/web`);
  return repository;
};

/** `publish.pull_request`: true, false or a mapping. */
const PULL_REQUEST = section(
  'pull_request',
  'open a pull request of the branch (true: with every default); unset: push only',
  {
    repository: Type.Optional(
      custom<string>(
        'repository',
        'owner/name; from the remote URL when it is a GitHub URL',
        'owner/name',
        readRepository
      )
    ),
    apiUrl: custom<string>(
      'api_url',
      "the REST API's root (GitHub Enterprise Server: https://HOST/api/v3)",
      'an http(s) URL',
      (value, at, { r }) => r.url(value, at) ?? PUBLISH_DEFAULTS.apiUrl,
      { fallback: PUBLISH_DEFAULTS.apiUrl }
    ),
    draft: flag('draft', 'whether the pull request is opened as a draft', true),
    title: text('title', "the pull request's title template", PUBLISH_DEFAULTS.title),
    body: text('body', "the pull request's body template", PUBLISH_DEFAULTS.body)
  },
  { toggle: true }
);

export type PullRequestConfig = Static<typeof PULL_REQUEST>;

/** An environment's `publish:`: true (all defaults), false or a mapping. */
export const PUBLISH = section(
  'publish',
  "push the run's changes as a branch, and open a pull request; unset: nothing is pushed",
  {
    /** Branch name template: {run_id}, {short_id}, {title_slug}. */
    branch: custom<string>(
      'branch',
      'the branch name template: {run_id}, {short_id}, {title_slug}',
      'a string',
      readBranch,
      {
        fallback: PUBLISH_DEFAULTS.branch
      }
    ),
    base: Type.Optional(
      custom<string>(
        'base',
        "the branch runs start from and pull requests target; unset: the source's HEAD branch",
        'a string',
        (value, at, { r }) =>
          value === undefined || value === null ? undefined : r.string(value, at, 'main')
      )
    ),
    remote: text(
      'remote',
      'the remote of a local source that receives the branch (a URL source pushes to its URL)',
      PUBLISH_DEFAULTS.remote
    ),
    commitMessage: text('commit_message', "the commit's message template", PUBLISH_DEFAULTS.commitMessage),
    author: section('author', "the commit's author", {
      name: text('name', "the author's name", PUBLISH_DEFAULTS.author.name),
      email: text('email', "the author's email", PUBLISH_DEFAULTS.author.email)
    }),
    /** The executor's variable holding the token for https pushes and the API. */
    tokenEnv: Type.Optional(
      custom<string>(
        'token_env',
        "the executor's variable holding the token for https pushes and the API",
        'a variable name',
        readTokenEnv
      )
    ),
    /** Absent: push only. */
    pullRequest: Type.Optional(PULL_REQUEST)
  },
  { toggle: true }
);

export type PublishConfig = Static<typeof PUBLISH>;
