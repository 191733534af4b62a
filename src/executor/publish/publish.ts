// Publishing a run's changes after its agent succeeded: one commit of everything the agent changed
// on top of the workspace's start, pushed as a new branch of the run, then (when configured) a pull
// request through the GitHub REST API. The executor does it itself, so the work never depends on
// an agent remembering to push. The workspace's files were the agent's to write, its `.git` too:
// the commit is built in the run's private git dir (private-git.ts: the executor's own index,
// config and borrowed object stores), pushed from there, and the token only ever reaches git
// through the environment of that one push process, which reads no config the agent wrote.

import { randomUUID } from 'node:crypto';
import { isRemoteSource } from '../config/config.js';
import type { ArtifactStore, StoredRun, TranscriptEvent } from '../store/types.js';
import { type PrivateRepository, privateGit, redactUrls, sourceGit } from '../workspace/git.js';
import type { PublishConfig } from '../config/publish-config.js';
import { markdownFields, plainFields } from './pr-text.js';
import { openPullRequest, repositoryOf } from './pull-request.js';
import type { Workspace } from '../workspace/workspace.js';
import { type AgentOutcome, publishFailed } from '../runs/outcomes.js';
import { shortRunId } from '../runs/run-id.js';

export interface PublishOptions {
  run: StoredRun;
  config: PublishConfig;
  workspace: Workspace;
  /** The environment's source (a URL source is pushed to directly). */
  source: string;
  /** The commit the workspace started at. */
  base: string;
  sessionLink?: string;
  /**
   * The run's transcript as it is now (read once by the worker): the agent's final answer, for
   * `{result}`, and what an earlier turn published.
   */
  events: readonly TranscriptEvent[];
  /** Where the pull request's artifact is kept. */
  artifacts: Pick<ArtifactStore, 'addArtifact'>;
  record: (kind: string, data: Record<string, unknown>) => Promise<void>;
  /** Where the token variable is read (the executor's own environment). */
  env?: NodeJS.ProcessEnv;
}

/** A failure of one step, with the words of git or of the API (secrets already removed). */
class PublishError extends Error {
  constructor(
    readonly step: string,
    why: string
  ) {
    super(why);
  }
}

/** The run's title, or its prompt's first non-empty line. */
function titleOf(run: StoredRun): string {
  const line = run.prompt.split(/\r?\n/).find(text => text.trim() !== '') ?? '';
  return (run.title ?? line).trim().slice(0, 200) || `Run ${run.run_id}`;
}

/** Fills `{field}`s of a template; unknown fields stay as written. */
export function fillTemplate(template: string, fields: Record<string, string>): string {
  return template.replace(/\{(\w+)\}/g, (whole, name: string) => fields[name] ?? whole);
}

function slug(text: string): string {
  return (
    text
      .toLowerCase()
      .replace(/[^a-z0-9]+/g, '-')
      .slice(0, 40)
      .replace(/^-+|-+$/g, '') || 'run'
  );
}

/**
 * Publishes the workspace's changes; answers the run's failure (`publish_failed`) when a step
 * fails, undefined when it published or there was nothing to publish.
 */
export async function publishChanges(options: PublishOptions): Promise<AgentOutcome | undefined> {
  const { config, env = process.env } = options;
  const token = config.tokenEnv ? env[config.tokenEnv] || undefined : undefined;
  const secrets = token ? [token, basicAuth(token)] : [];
  const hide = (text: string) =>
    secrets.reduce((out, secret) => out.replaceAll(secret, '***'), redactUrls(text));
  try {
    if (config.tokenEnv && !token)
      throw new PublishError(
        'token',
        `the executor's variable ${config.tokenEnv} (publish.token_env) is not set`
      );
    return await publish(options, token);
  } catch (error) {
    const step = error instanceof PublishError ? error.step : 'publish';
    return publishFailed(step, (error as Error).message, hide);
  }
}

function basicAuth(token: string): string {
  return Buffer.from(`x-access-token:${token}`).toString('base64');
}

/** What an earlier turn of the run published: a continued run adds a commit on top of it. */
interface Published {
  commit: string;
  branch: string;
  pull_request_url?: string;
  pull_request_number?: number;
}

/** The last publish of the run's transcript `events` (a turn's branch and commit), if any. */
function earlierPublish(events: readonly TranscriptEvent[]): Published | undefined {
  const last = events.findLast(
    event => event.kind === 'publish' && typeof event.commit === 'string' && typeof event.branch === 'string'
  );
  return last as unknown as Published | undefined;
}

async function publish(options: PublishOptions, token: string | undefined): Promise<undefined> {
  const { config, workspace, base, record } = options;
  if (workspace.kind !== 'repository' || !workspace.repository)
    throw new PublishError('commit', `the source ${options.source} is not a git repository`);
  // A run continued by a follow-up pushes one more commit on its own branch (a fast-forward, never
  // forced) and keeps its pull request, which shows the new commit: no second branch or request.
  const earlier = earlierPublish(options.events);
  const commit = await commitChanges(options, earlier?.commit);
  if (!commit) {
    await record('notice', {
      text: earlier
        ? `This turn changed no files since the commit ${earlier.commit.slice(0, 12)} on ${earlier.branch}: nothing new was pushed.`
        : 'The run changed no files: nothing was committed or pushed.'
    });
    return undefined;
  }
  const fields = templateFields(options);
  const branch = earlier?.branch ?? fillTemplate(config.branch, fields);
  await privateGit(workspace.git, ['check-ref-format', '--branch', branch]).catch(() => {
    throw new PublishError('push', `the branch name ${JSON.stringify(branch)} (publish.branch) is not valid`);
  });
  const remote = await remoteUrl(options);
  const repository = pullRequestRepository(options, remote, token);
  await push(workspace.git, remote, commit, branch, token);
  const event: Record<string, unknown> = { commit, branch, remote: redactUrls(remote), base_commit: base };
  if (earlier?.pull_request_url !== undefined) {
    event.pull_request_url = earlier.pull_request_url;
    if (earlier.pull_request_number !== undefined) event.pull_request_number = earlier.pull_request_number;
  } else if (config.pullRequest && repository && token && workspace.baseBranch) {
    const target = { repository, token, head: branch, base: workspace.baseBranch };
    const opened = await openRequest(config.pullRequest, target, fields).catch(async (error: Error) => {
      await record('publish', event);
      throw new PublishError('pull request', `${error.message}; the branch ${branch} was pushed`);
    });
    event.pull_request_url = opened.url;
    event.pull_request_number = opened.number;
    await keepPullRequest(options, opened.url, branch);
  }
  await record('publish', event);
  return undefined;
}

/**
 * The repository a pull request is opened in, when the environment asks for one: whatever it needs
 * is checked here, before anything is pushed.
 */
function pullRequestRepository(
  { config, workspace }: PublishOptions,
  remote: string,
  token: string | undefined
): string | undefined {
  const pr = config.pullRequest;
  if (!pr) return undefined;
  const repository = pr.repository ?? repositoryOf(remote, pr.apiUrl);
  if (!repository)
    throw new PublishError(
      'pull request',
      `the remote ${redactUrls(remote)} is not a GitHub URL; set publish.pull_request.repository (owner/name)`
    );
  if (!token) throw new PublishError('pull request', 'the GitHub API needs a token: set publish.token_env');
  if (!workspace.baseBranch)
    throw new PublishError(
      'pull request',
      "the source's HEAD is on no branch (detached); set publish.base to the branch pull requests target"
    );
  return repository;
}

/** Opens the pull request of the pushed branch `head` into `base`, its title and body from the templates. */
async function openRequest(
  pr: NonNullable<PublishConfig['pullRequest']>,
  target: { repository: string; token: string; head: string; base: string },
  fields: Record<string, string>
): Promise<{ url: string; number?: number }> {
  return openPullRequest({
    apiUrl: pr.apiUrl,
    repository: target.repository,
    token: target.token,
    title: fillTemplate(pr.title, plainFields(fields, FROM_RUN)),
    head: target.head,
    base: target.base,
    body: fillTemplate(pr.body, markdownFields(fields, FROM_RUN)),
    draft: pr.draft
  });
}

/** The pull request as one of the run's artifacts (PULL_REQUEST: its bytes are {url, branch}). */
async function keepPullRequest(
  { run, artifacts }: PublishOptions,
  url: string,
  branch: string
): Promise<void> {
  const data = Buffer.from(JSON.stringify({ url, branch }));
  const createdAt = new Date().toISOString();
  await artifacts.addArtifact(
    {
      artifact_uid: randomUUID(),
      run_id: run.run_id,
      team: run.team,
      artifact_type: 'PULL_REQUEST',
      filepath: branch,
      filename: 'pull-request.json',
      mime_type: 'application/json',
      size: data.length,
      description: url,
      created_at: createdAt
    },
    data
  );
}

/** The agent's final answer: the text of the transcript's last `result` event. */
function answerOf(events: readonly TranscriptEvent[]): string | undefined {
  const answer = events.findLast(event => event.kind === 'result')?.text;
  return typeof answer === 'string' ? answer : undefined;
}

/** Template fields whose text came from the run (its title or prompt, the agent's answer). */
const FROM_RUN = ['title', 'result'] as const;

function templateFields(options: PublishOptions): Record<string, string> {
  const title = titleOf(options.run);
  return {
    run_id: options.run.run_id,
    short_id: shortRunId(options.run.run_id),
    title,
    title_slug: slug(title),
    session_link: options.sessionLink ?? '',
    result: (answerOf(options.events) ?? '').trim()
  };
}

/**
 * One commit of the whole working tree on top of the start commit (or of `parent`, the commit an
 * earlier turn of the run pushed), built in the run's private git
 * dir from its index as the diff left it (the agent has ended, so the work tree has not moved; a
 * second `git add` would look into the nested repositories the first one recorded). Undefined
 * when the tree is the start's.
 */
async function commitChanges(options: PublishOptions, parent?: string): Promise<string | undefined> {
  const { workspace, config } = options;
  const base = parent ?? options.base;
  try {
    const tree = await workspace.tree();
    const start = (await privateGit(workspace.git, ['rev-parse', `${base}^{tree}`])).trim();
    if (tree === start) return undefined;
    const message = fillTemplate(config.commitMessage, plainFields(templateFields(options), FROM_RUN));
    const author = ['-c', `user.name=${config.author.name}`, '-c', `user.email=${config.author.email}`];
    return (
      await privateGit(workspace.git, [...author, 'commit-tree', tree, '-p', base, '-m', message])
    ).trim();
  } catch (error) {
    throw new PublishError('commit', (error as Error).message);
  }
}

/** A URL source is pushed to; a local source's `publish.remote` names where. */
async function remoteUrl({ source, config, workspace }: PublishOptions): Promise<string> {
  if (isRemoteSource(source)) return source;
  try {
    return (await sourceGit(['remote', 'get-url', config.remote], workspace.repository)).trim();
  } catch {
    throw new PublishError(
      'push',
      `the source ${workspace.repository} has no remote ${JSON.stringify(config.remote)} (publish.remote)`
    );
  }
}

/** Transports a push may use (the workspace's git allows none by default; `ext::` stays off). */
const PUSH_PROTOCOLS = ['file', 'git', 'http', 'https', 'ssh'].flatMap(name => [
  '-c',
  `protocol.${name}.allow=always`
]);

/**
 * Pushes `commit` as the new branch, never forced: a branch of that name already there refuses
 * it. An https remote gets the token as an Authorization header set through GIT_CONFIG_* variables
 * of this one git process (never its command line, never a file).
 */
async function push(
  repository: PrivateRepository,
  remote: string,
  commit: string,
  branch: string,
  token: string | undefined
): Promise<void> {
  const env: Record<string, string> = {};
  if (token && /^https?:\/\//i.test(remote)) {
    Object.assign(env, {
      GIT_CONFIG_COUNT: '1',
      GIT_CONFIG_KEY_0: 'http.extraHeader',
      GIT_CONFIG_VALUE_0: `Authorization: Basic ${basicAuth(token)}`
    });
  }
  try {
    await privateGit(
      repository,
      [
        ...PUSH_PROTOCOLS,
        '-c',
        'core.sshCommand=ssh',
        'push',
        '--no-verify',
        '--no-recurse-submodules',
        remote,
        `${commit}:refs/heads/${branch}`
      ],
      { env, push: true }
    );
  } catch (error) {
    throw new PublishError('push', pushReason(error, branch));
  }
}

/** What the remote said (its hook's `remote:` lines, the refusal), else git's own line. */
function pushReason(error: unknown, branch: string): string {
  const lines = String((error as { stderr?: string }).stderr ?? '').split('\n');
  const remote = lines
    .map(line => /^remote:\s?(.*)$/.exec(line)?.[1]?.trim())
    .filter((line): line is string => !!line);
  // ` ! [remote rejected] 1a2b -> agent/x (pre-receive hook declined)`
  const refused = lines.map(line => /^!\s+\[(.+?)\].*?(?:\(([^()]*)\))?$/.exec(line.trim())).find(Boolean);
  const words = [...remote];
  if (refused) words.push(refused[2] ? `${refused[1]} (${refused[2]})` : refused[1]!);
  if (refused?.[1] === 'rejected')
    words.push(`a branch ${branch} already exists there and is never overwritten`);
  return words.length > 0
    ? `the remote refused the branch ${branch}: ${words.join('; ')}`
    : (error as Error).message;
}
