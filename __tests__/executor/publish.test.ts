// Publishing a run's changes: a commit on a branch of the run, pushed to a real bare repository
// (the remote of a local source), and a pull request opened on a stand-in GitHub REST API on port
// 0. Covers the branch's exact content, two runs, no change, a refusing pre-receive hook, an
// existing branch, the API's 422, a GHES api_url, `config.publish: false`, and the token found
// nowhere (log, transcript, store files, workspace files); and a push over smart HTTP (git
// http-backend behind a real server) that carries the token as a header, never on a command line.
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { execFileSync, spawn } from 'node:child_process';
import { chmodSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { type Server, createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { parseConfig } from '../../src/executor/config/config.js';
import { repositoryOf } from '../../src/executor/publish/pull-request.js';
import { GitHubServer } from '../support/github-server.js';
import { type TestExecutor, startTestExecutor, tempDir } from '../support/executor.js';
import { waitForState } from '../support/wait.js';

const TOKEN = `ghp_publishTest${Math.random().toString(36).slice(2)}Secret`;
const TOKEN_BASIC = Buffer.from(`x-access-token:${TOKEN}`).toString('base64');

let ex: TestExecutor;
let key: string;
let gh: GitHubServer;
let remote: string;
let hookedRemote: string;
let mainCommit: string;
const logged: string[] = [];
let restoreStderr: () => void;

function git(dir: string, ...args: string[]): string {
  return execFileSync('git', ['-C', dir, '-c', 'user.name=t', '-c', 'user.email=t@t', ...args], {
    encoding: 'utf8'
  }).trim();
}

/** A bare remote with `main` (README.md, src/app.txt) and `develop` (one more commit). */
function bareRemote(): string {
  const bare = tempDir('agent-publish-remote-');
  git(bare, 'init', '--quiet', '--bare', '--initial-branch=main');
  const seed = tempDir('agent-publish-seed-');
  git(seed, 'init', '--quiet', '--initial-branch=main');
  writeFileSync(join(seed, 'README.md'), 'original\n');
  writeFileSync(join(seed, 'app.txt'), 'app\n');
  git(seed, 'add', '--all');
  git(seed, 'commit', '--quiet', '-m', 'initial');
  git(seed, 'checkout', '--quiet', '-b', 'develop');
  writeFileSync(join(seed, 'develop-only.txt'), 'not on main\n');
  git(seed, 'add', '--all');
  git(seed, 'commit', '--quiet', '-m', 'develop work');
  git(seed, 'push', '--quiet', bare, 'main', 'develop');
  return bare;
}

/** A local checkout of `bare` (its origin), on `develop`: runs must still start at publish.base. */
function checkout(bare: string): string {
  const dir = tempDir('agent-publish-source-');
  execFileSync('git', ['clone', '--quiet', '--branch', 'develop', bare, dir]);
  // What actions/checkout leaves in a checkout: the workspace never carries it.
  git(dir, 'config', 'http.https://github.com/.extraheader', 'AUTHORIZATION: basic c2VjcmV0');
  return dir;
}

/** What the smart-HTTP remote saw of pushes: the Authorization header, and any process showing the token. */
const pushes: { authorization?: string; tokenInArgv: boolean }[] = [];
let httpServer: Server;
let httpRoot: string;

/** Command lines of this machine's processes that hold `secret`. */
function processesHolding(secret: string): string[] {
  const found: string[] = [];
  for (const pid of readdirSync('/proc').filter(name => /^\d+$/.test(name))) {
    try {
      const argv = readFileSync(`/proc/${pid}/cmdline`, 'utf8');
      if (argv.includes(secret)) found.push(argv);
    } catch {
      // gone
    }
  }
  return found;
}

/**
 * `git http-backend` behind a Node server: fetches are open (a public repository), pushes need
 * `Authorization: Basic x-access-token:<token>` as GitHub takes a token.
 */
async function smartHttpRemote(root: string): Promise<string> {
  httpServer = createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://localhost');
    const pushing =
      url.searchParams.get('service') === 'git-receive-pack' || url.pathname.endsWith('/git-receive-pack');
    if (pushing) {
      pushes.push({
        authorization: req.headers.authorization,
        tokenInArgv: processesHolding(TOKEN).length + processesHolding(TOKEN_BASIC).length > 0
      });
      if (req.headers.authorization !== `Basic ${TOKEN_BASIC}`) {
        res.writeHead(401, { 'www-authenticate': 'Basic realm="test"' });
        res.end('no');
        return;
      }
    }
    const cgi = spawn('git', ['http-backend'], {
      env: {
        PATH: process.env.PATH,
        GIT_PROJECT_ROOT: root,
        GIT_HTTP_EXPORT_ALL: '1',
        PATH_INFO: url.pathname,
        QUERY_STRING: url.search.slice(1),
        REQUEST_METHOD: req.method,
        CONTENT_TYPE: req.headers['content-type'] ?? '',
        HTTP_CONTENT_ENCODING: req.headers['content-encoding'] ?? '',
        REMOTE_USER: pushing ? 'x-access-token' : '',
        REMOTE_ADDR: '127.0.0.1'
      }
    });
    req.pipe(cgi.stdin);
    const chunks: Buffer[] = [];
    cgi.stdout.on('data', chunk => chunks.push(chunk as Buffer));
    cgi.on('close', () => {
      const out = Buffer.concat(chunks);
      const end = out.indexOf('\r\n\r\n');
      const headers = out.subarray(0, end).toString('latin1').split('\r\n');
      let status = 200;
      const fields: Record<string, string> = {};
      for (const line of headers) {
        const [name, ...value] = line.split(':');
        if (name!.toLowerCase() === 'status') status = Number.parseInt(value.join(':').trim(), 10);
        else fields[name!.toLowerCase()] = value.join(':').trim();
      }
      res.writeHead(status, fields);
      res.end(out.subarray(end + 4));
    });
  });
  await new Promise<void>(resolve => httpServer.listen(0, '127.0.0.1', resolve));
  return `http://127.0.0.1:${(httpServer.address() as AddressInfo).port}`;
}

beforeAll(async () => {
  gh = await new GitHubServer().start();
  gh.token = TOKEN;
  remote = bareRemote();
  hookedRemote = bareRemote();
  const hook = join(hookedRemote, 'hooks', 'pre-receive');
  writeFileSync(hook, '#!/bin/sh\necho "branches need the release team\'s approval" >&2\nexit 1\n');
  chmodSync(hook, 0o755);
  mainCommit = git(remote, 'rev-parse', 'main');
  process.env.PUBLISH_TEST_TOKEN = TOKEN;
  const source = checkout(remote);
  const publish = (extra: Record<string, unknown> = {}, pr: Record<string, unknown> | null = {}) => ({
    base: 'main',
    token_env: 'PUBLISH_TEST_TOKEN',
    ...(pr ? { pull_request: { repository: 'acme/web', api_url: gh.url, ...pr } } : {}),
    ...extra
  });
  httpRoot = tempDir('agent-publish-http-');
  execFileSync('git', ['clone', '--quiet', '--bare', remote, join(httpRoot, 'web.git')]);
  const httpUrl = `${await smartHttpRemote(httpRoot)}/web.git`;
  const environments = [
    { id: 'over-http', source: httpUrl, publish: { token_env: 'PUBLISH_TEST_TOKEN' } },
    { id: 'web', source, publish: publish() },
    { id: 'push-only', source, publish: { base: 'main' } },
    { id: 'no-repository', source, publish: { base: 'main', pull_request: { api_url: gh.url } } },
    { id: 'hooked', source: checkout(hookedRemote), publish: publish() },
    {
      id: 'by-title',
      source,
      publish: publish({ branch: 'agent/{title_slug}' }, { repository: 'acme/dup' })
    },
    {
      id: 'ghes',
      source,
      publish: publish({}, { api_url: `${gh.url}/api/v3`, repository: 'acme/ghes', draft: false })
    }
  ];
  // The log, at its most detailed, is searched for the token.
  const write = process.stderr.write.bind(process.stderr);
  process.stderr.write = ((chunk: string | Uint8Array, ...rest: unknown[]) => {
    logged.push(String(chunk));
    return (write as (...args: unknown[]) => boolean)(chunk, ...rest);
  }) as typeof process.stderr.write;
  restoreStderr = () => (process.stderr.write = write);
  ex = await startTestExecutor({ workers: 4, log_level: 'debug', environments });
  key = (await ex.key('team-a', 'personal', 'alice')).raw;
});
afterAll(async () => {
  await ex?.stop(1000);
  await gh?.stop();
  httpServer?.closeAllConnections();
  httpServer?.close();
  restoreStderr?.();
});

type Json = Record<string, unknown>;

async function create(
  environment: string,
  prompt: string,
  extra: Json = {},
  config: Json = {}
): Promise<string> {
  const response = await ex.request('/api/v1/agent/runs', {
    method: 'POST',
    key,
    body: JSON.stringify({ prompt, config: { environment_id: environment, ...config }, ...extra })
  });
  expect(response.status).toBe(200);
  return ((await response.json()) as { run_id: string }).run_id;
}

const finished = (id: string): Promise<Json> => waitForState({ on: ex, key, id });

async function events(id: string): Promise<Json[]> {
  const store = await ex.openStore();
  try {
    return (await store.transcript.listEvents(id)) as Json[];
  } finally {
    await store.close();
  }
}

const CHANGE =
  '@sim write added.txt new file\n@sim write README.md changed\n@sim run rm app.txt\n@sim result All done.';

describe('publishing a run continued by follow-ups', () => {
  it('pushes one more commit on the same branch per turn and keeps its one pull request', async () => {
    const id = await create('web', 'Start\n@sim write one.txt 1\n@sim result first');
    expect((await finished(id)).state).toBe('SUCCEEDED');
    const branch = `agent/${id}`;
    const first = git(remote, 'rev-parse', branch);
    const send = (message: string) =>
      ex.request(`/api/v1/agent/runs/${id}/followups`, {
        method: 'POST',
        key,
        body: JSON.stringify({ message })
      });
    expect((await send('@sim write two.txt 2\n@sim result second')).status).toBe(200);
    expect((await finished(id)).state).toBe('SUCCEEDED');
    expect((await send('@sim write three.txt 3\n@sim result third')).status).toBe(200);
    const run = await finished(id);
    expect(run.state).toBe('SUCCEEDED');
    // One branch, three commits in a line on top of main (each turn's on the one before, never forced).
    const commits = git(remote, 'rev-list', `main..${branch}`).split('\n');
    expect(commits).toHaveLength(3);
    expect(git(remote, 'rev-parse', `${branch}~2`)).toBe(first);
    expect(git(remote, 'show', `${branch}:three.txt`)).toBe('3');
    expect(git(remote, 'show', `${branch}:one.txt`)).toBe('1');
    // One pull request, for that branch; every publish event names it.
    expect(gh.pulls.filter(pull => pull.head === branch)).toHaveLength(1);
    const published = (await events(id)).filter(event => event.kind === 'publish');
    expect(published).toHaveLength(3);
    expect(new Set(published.map(event => event.pull_request_url)).size).toBe(1);
    expect(
      (run.artifacts as Json[]).filter(artifact => artifact.artifact_type === 'PULL_REQUEST')
    ).toHaveLength(1);
  });
});

describe('publishing', () => {
  it('pushes exactly the agent change on top of publish.base and opens the pull request', async () => {
    const id = await create('web', `Tidy the readme\n${CHANGE}`, { title: 'Tidy the readme' });
    const run = await finished(id);
    expect(run.state).toBe('SUCCEEDED');
    const branch = `agent/${id}`;
    // One commit whose parent is main (not the checkout's develop), holding the three changes.
    expect(git(remote, 'rev-parse', `${branch}^`)).toBe(mainCommit);
    expect(git(remote, 'diff', '--name-status', '--no-renames', 'main', branch).split('\n').sort()).toEqual([
      'A\tadded.txt',
      'D\tapp.txt',
      'M\tREADME.md'
    ]);
    expect(git(remote, 'show', `${branch}:README.md`)).toBe('changed');
    expect(git(remote, 'log', '-1', '--format=%an <%ae>|%s', branch)).toBe(
      'agent-executor <agent-executor@localhost>|Tidy the readme'
    );
    expect(git(remote, 'log', '-1', '--format=%b', branch)).toContain(`/sessions/${id}?token=`);
    const tip = git(remote, 'rev-parse', branch);

    const pull = gh.pulls.find(p => p.head === branch)!;
    expect(pull).toMatchObject({
      repository: 'acme/web',
      base: 'main',
      title: 'Tidy the readme',
      draft: true
    });
    expect(pull.body).toContain('All done.');
    expect(pull.body).toContain(`Run ${id}: `);
    const request = gh.requests.find(
      r => r.path === '/repos/acme/web/pulls' && (r.body as Json).head === branch
    )!;
    expect(request.authorization).toBe(`Bearer ${TOKEN}`);
    expect(request.body).toEqual({
      title: pull.title,
      head: branch,
      base: 'main',
      body: pull.body,
      draft: true
    });

    const artifacts = run.artifacts as Json[];
    expect(artifacts).toContainEqual({
      artifact_type: 'PULL_REQUEST',
      created_at: expect.any(String),
      data: { url: `https://github.com/acme/web/pull/${pull.number}`, branch }
    });
    expect(artifacts.some(a => a.artifact_type === 'FILE')).toBe(true);
    const published = (await events(id)).find(e => e.kind === 'publish')!;
    expect(published).toMatchObject({
      commit: tip,
      branch,
      pull_request_url: expect.stringContaining('/pull/')
    });
  });

  it('writes no live mention, closing keyword, remote image or HTML from the run into the pull request', async () => {
    const hostile = 'Thanks @octocat and @org/team! fixes #1, Closes: acme/web#2';
    const answer = `${hostile}\\n![x](https://evil.example/x.png)\\n<img src=x onerror=alert(1)>`;
    const id = await create('web', `@sim write hostile.txt x\n@sim result ${answer}`, { title: hostile });
    expect((await finished(id)).state).toBe('SUCCEEDED');
    const branch = `agent/${id}`;
    const pull = gh.pulls.find(p => p.head === branch)!;
    const message = git(remote, 'log', '-1', '--format=%B', branch);
    for (const text of [pull.title, pull.body, message]) {
      for (const live of [
        '@octocat',
        '@org/team',
        'fixes #1',
        'Closes: acme/web#2',
        '![',
        '<img',
        'onerror='
      ]) {
        expect(text).not.toContain(live);
      }
    }
    expect(pull.title).toBe('Thanks @ octocat and @ org/team! fixes issue #1, Closes issue: acme/web#2');
    expect(message.split('\n')[0]).toBe(pull.title);
    // The answer is quoted whole in an escaped <pre>; the operator's template text stays as written.
    expect(pull.body).toMatch(/^<pre>Thanks &#64; octocat and &#64; org\/team&#33; fixes issue &#35;1/);
    expect(pull.body).toContain('&#60;img src&#61;x onerror&#61;alert&#40;1&#41;&#62;</pre>\n\n---\nRun ');
  });

  it('gives two runs two branches, and pushes only (defaults) without pull_request', async () => {
    const [a, b] = await Promise.all([
      create('push-only', '@sim write one.txt 1'),
      create('push-only', '@sim write two.txt 2')
    ]);
    const before = gh.pulls.length;
    expect((await finished(a!)).state).toBe('SUCCEEDED');
    expect((await finished(b!)).state).toBe('SUCCEEDED');
    expect(git(remote, 'diff', '--name-only', 'main', `agent/${a}`)).toBe('one.txt');
    expect(git(remote, 'diff', '--name-only', 'main', `agent/${b}`)).toBe('two.txt');
    // The prompt's first line is the title: `@sim` would mention a user named sim, so it is broken.
    expect(git(remote, 'log', '-1', '--format=%s', `agent/${a}`)).toBe('@ sim write one.txt 1');
    expect(gh.pulls.length).toBe(before);
  });

  it('pushes nothing when the agent changed nothing, and the run succeeds', async () => {
    const id = await create('web', '@sim say nothing to change');
    expect((await finished(id)).state).toBe('SUCCEEDED');
    expect(git(remote, 'branch', '--list', `agent/${id}`)).toBe('');
    expect(gh.pulls.some(p => p.head === `agent/${id}`)).toBe(false);
    const notice = (await events(id)).find(e => e.kind === 'notice');
    expect(String(notice?.text)).toMatch(/changed no files: nothing was committed or pushed/);
  });

  it('does not publish a run whose create request says config.publish: false', async () => {
    const id = await create('web', '@sim write kept.txt k', {}, { publish: false });
    const run = await finished(id);
    expect(run.state).toBe('SUCCEEDED');
    expect(git(remote, 'branch', '--list', `agent/${id}`)).toBe('');
    expect((run.artifacts as Json[]).map(a => a.artifact_type)).toEqual(['FILE']);
  });

  it('refuses a create request that tries to choose where to publish', async () => {
    const response = await ex.request('/api/v1/agent/runs', {
      method: 'POST',
      key,
      body: JSON.stringify({ prompt: 'x', config: { environment_id: 'web', publish: { remote: 'evil' } } })
    });
    expect(response.status).toBe(422);
    const problem = (await response.json()) as Json;
    expect(problem.error_code).toBe('invalid_field');
    expect(problem.detail).toMatch(
      /^config\.publish: expected true or false \(a request may turn publishing off/
    );
  });

  it('fails with publish_failed and the hook message when the remote refuses the push', async () => {
    const id = await create('hooked', '@sim write refused.txt r');
    const run = await finished(id);
    expect(run).toMatchObject({ state: 'FAILED', error_code: 'publish_failed' });
    expect(run.status_message).toMatch(/at the push: .*branches need the release team's approval/);
    expect(run.status_message).toMatch(/pre-receive hook declined/);
    expect(git(hookedRemote, 'branch', '--list', `agent/${id}`)).toBe('');
    // The changes stay available as the FILE artifact.
    expect((run.artifacts as Json[]).map(a => a.artifact_type)).toEqual(['FILE']);
  });

  it('says clearly when the pull request already exists, and never overwrites a branch', async () => {
    gh.pulls.push({
      repository: 'acme/dup',
      number: 99,
      head: 'agent/dup-title',
      base: 'main',
      title: 'earlier',
      body: '',
      draft: true
    });
    const first = await finished(await create('by-title', '@sim write dup.txt 1', { title: 'Dup title' }));
    expect(first).toMatchObject({ state: 'FAILED', error_code: 'publish_failed' });
    expect(first.status_message).toMatch(
      /at the pull request: the GitHub API at \S+\/repos\/acme\/dup\/pulls answered 422 \(Validation Failed: A pull request already exists for acme:agent\/dup-title\.\); the branch agent\/dup-title was pushed/
    );
    const pushed = git(remote, 'rev-parse', 'agent/dup-title');

    const second = await finished(await create('by-title', '@sim write dup.txt 2', { title: 'Dup title' }));
    expect(second).toMatchObject({ state: 'FAILED', error_code: 'publish_failed' });
    expect(second.status_message).toMatch(
      /at the push: the remote refused the branch agent\/dup-title: rejected/
    );
    expect(second.status_message).toMatch(/already exists there and is never overwritten/);
    expect(git(remote, 'rev-parse', 'agent/dup-title')).toBe(pushed);
  });

  it('pushes nothing when the pull request could not be opened anyway (no repository, no token)', async () => {
    const id = await create('no-repository', '@sim write nowhere.txt n');
    const run = await finished(id);
    expect(run).toMatchObject({ state: 'FAILED', error_code: 'publish_failed' });
    expect(run.status_message).toMatch(
      /at the pull request: the remote \/\S+ is not a GitHub URL; set publish\.pull_request\.repository/
    );
    expect(git(remote, 'branch', '--list', `agent/${id}`)).toBe('');
  });

  it('finds owner/name in GitHub remote URLs, GHES ones by the api_url host', () => {
    const api = 'https://api.github.com';
    expect(repositoryOf('https://github.com/acme/web.git', api)).toBe('acme/web');
    expect(repositoryOf('https://x-access-token:t@github.com/acme/web', api)).toBe('acme/web');
    expect(repositoryOf('git@github.com:acme/web.git', api)).toBe('acme/web');
    expect(repositoryOf('ssh://git@github.com/acme/web.git', api)).toBe('acme/web');
    expect(repositoryOf('https://ghe.example.com/acme/web.git', 'https://ghe.example.com/api/v3')).toBe(
      'acme/web'
    );
    expect(repositoryOf('https://ghe.example.com/acme/web.git', api)).toBeUndefined();
    expect(repositoryOf('/srv/git/web.git', api)).toBeUndefined();
  });

  it('honours a GitHub Enterprise Server api_url', async () => {
    const id = await create('ghes', '@sim write ghes.txt g', { title: 'On GHES' });
    const run = await finished(id);
    expect(run.state).toBe('SUCCEEDED');
    const request = gh.requests.find(r => r.path === '/api/v3/repos/acme/ghes/pulls')!;
    expect(request.body).toMatchObject({ head: `agent/${id}`, base: 'main', title: 'On GHES', draft: false });
    expect(request.authorization).toBe(`Bearer ${TOKEN}`);
  });

  it('pushes over https with the token as a header of the git process, never on its command line', async () => {
    const id = await create('over-http', '@sim write http.txt over http');
    const run = await finished(id);
    expect(run.state).toBe('SUCCEEDED');
    const bare = join(httpRoot, 'web.git');
    expect(git(bare, 'diff', '--name-only', 'main', `agent/${id}`)).toBe('http.txt');
    expect(git(bare, 'rev-parse', `agent/${id}^`)).toBe(mainCommit);
    expect(pushes.length).toBeGreaterThan(0);
    expect(pushes.every(p => p.authorization === `Basic ${TOKEN_BASIC}`)).toBe(true);
    expect(pushes.some(p => p.tokenInArgv)).toBe(false);
  });

  it('leaves the token nowhere: log, transcript, store files, workspace files', async () => {
    const id = await create('web', '@sim write last.txt l\n@sim run env > seen-env.txt');
    expect((await finished(id)).state).toBe('SUCCEEDED');
    const found = (text: string) => text.includes(TOKEN) || text.includes(TOKEN_BASIC);
    expect(logged.join('').length).toBeGreaterThan(0);
    expect(found(logged.join(''))).toBe(false);
    const store = await ex.openStore();
    try {
      for (const run of await store.runs.listRuns('team-a', { limit: 100 }))
        expect(found(JSON.stringify(await store.transcript.listEvents(run.run_id)))).toBe(false);
    } finally {
      await store.close();
    }
    const files = readdirSync(ex.dataDir, { recursive: true, withFileTypes: true }).filter(e => e.isFile());
    expect(files.some(e => e.parentPath.includes('workspaces'))).toBe(true);
    for (const entry of files) {
      const path = join(entry.parentPath, entry.name);
      expect({ path, found: found(readFileSync(path, 'latin1')) }).toEqual({ path, found: false });
    }
    for (const path of ex.storeFiles()) expect(found(readFileSync(path, 'latin1'))).toBe(false);
  });

  it('reads the publish key with every default of the issue', () => {
    const config = parseConfig(
      {
        environments: [
          { id: 'a', source: '.', publish: { pull_request: {} } },
          { id: 'b', source: '.' }
        ]
      },
      tempDir()
    );
    expect(config.environments[0]!.publish).toEqual({
      branch: 'agent/{run_id}',
      remote: 'origin',
      commitMessage: '{title}\n\nRun: {session_link}',
      author: { name: 'agent-executor', email: 'agent-executor@localhost' },
      pullRequest: {
        apiUrl: 'https://api.github.com',
        draft: true,
        title: '{title}',
        body: '{result}\n\n---\nRun {run_id}: {session_link}'
      }
    });
    expect(config.environments[1]!.publish).toBeUndefined();
    expect(() =>
      parseConfig(
        {
          environments: [
            { id: 'a', publish: { branch: 'x/{nope}', token_env: 'A-B', pull_request: { draft: 'yes' } } }
          ]
        },
        tempDir()
      )
    ).toThrow(
      /publish\.branch "x\/\{nope\}".*\n.*publish\.token_env "A-B".*\n.*publish\.pull_request\.draft "yes": expected true or false/
    );
  });
});
