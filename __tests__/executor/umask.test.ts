// An executor started under `umask 077` (as on hardened servers) still gives every run a workspace
// its user can enter, write and use git in (issue 50, bug 2): what it makes under its data dir gets
// the modes runs need whatever the umask, for a copied source (a folder that is no git repository),
// a local git source, a git URL's cache and a clone made under umask 077 itself (bug 1: the
// runs borrow a readable mirror of its objects), as copy-on-write views and as full checkouts
// (AGENT_EXECUTOR_WORKSPACES=checkout). The executor runs in this process and makes each workspace
// when its run starts, so the umask stays 077 until the file's runs are done, as for a served one.
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { execFileSync } from 'node:child_process';
import { rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { unmountAll } from '../../src/executor/workspace/layers.js';
import { type TestExecutor, startTestExecutor, tempDir } from '../support/executor.js';
import { waitForState } from '../support/wait.js';

let oldUmask: number;
const made: string[] = [];
let empty: string;
let repo: string;
/** A git repository made under umask 077 (bug 1): its objects are its owner's alone. */
let privateRepo: string;
/** Another, whose mirror the first runs of it make side by side. */
let togetherRepo: string;

function dir(prefix: string): string {
  const path = tempDir(prefix);
  made.push(path);
  return path;
}

/** A git repository of one commit, made under the umask of the moment. */
function gitRepo(): string {
  const path = dir('umask-repo-');
  writeFileSync(join(path, 'README.md'), 'original\n');
  const git = (...args: string[]) =>
    execFileSync('git', ['-C', path, '-c', 'user.name=t', '-c', 'user.email=t@t', ...args]);
  git('init', '--quiet');
  git('add', '--all');
  git('commit', '--quiet', '-m', 'initial');
  return path;
}

beforeAll(() => {
  empty = dir('umask-empty-');
  repo = gitRepo();
  oldUmask = process.umask(0o077);
  privateRepo = gitRepo();
  togetherRepo = gitRepo();
});

afterAll(() => {
  process.umask(oldUmask);
  for (const path of made) rmSync(path, { recursive: true, force: true });
});

/** The file's executors, one per kind of workspace, each started (and stopped) under umask 077. */
function executorOf(workspaces: 'copy-on-write' | 'checkout') {
  const on: { ex?: TestExecutor; key?: string } = {};
  beforeAll(async () => {
    if (workspaces === 'checkout') process.env.AGENT_EXECUTOR_WORKSPACES = 'checkout';
    on.ex = await startTestExecutor({
      workspaces: { retention: '1h' },
      environments: [
        { id: 'copied', source: empty, agent: { kind: 'simulated' } },
        { id: 'local-git', source: repo, agent: { kind: 'simulated' } },
        { id: 'git-url', source: `file://${repo}`, agent: { kind: 'simulated' } },
        { id: 'private-git', source: privateRepo, agent: { kind: 'simulated' } },
        { id: 'together', source: togetherRepo, agent: { kind: 'simulated' } }
      ]
    });
    made.push(dirname(on.ex.dataDir));
    on.key = (await on.ex.key()).raw;
  });
  afterAll(async () => {
    delete process.env.AGENT_EXECUTOR_WORKSPACES;
    await on.ex?.stop(1000);
    if (on.ex) await unmountAll(on.ex.dataDir);
  });
  return on as { ex: TestExecutor; key: string };
}

async function run(on: { ex: TestExecutor; key: string }, environment: string, prompt: string) {
  const response = await on.ex.request('/api/v1/agent/runs', {
    method: 'POST',
    key: on.key,
    body: JSON.stringify({ prompt, config: { environment_id: environment } })
  });
  expect(response.status).toBe(200);
  const { run_id: id } = (await response.json()) as { run_id: string };
  return waitForState({ on: on.ex, key: on.key, id });
}

async function patchOf(on: { ex: TestExecutor; key: string }, artifacts: unknown): Promise<string> {
  const [artifact] = artifacts as { data: { artifact_uid: string } }[];
  const response = await on.ex.request(`/api/v1/agent/artifacts/${artifact!.data.artifact_uid}`, {
    key: on.key
  });
  const details = (await response.json()) as { download_url: string };
  return (await fetch(details.download_url)).text();
}

// The write, then git in the workspace by its absolute path, as a run's tools use it.
const PROMPT = '@sim write NOTES.md hello\n@sim run cd "$PWD" && git status --short | grep -qx "?? NOTES.md"';

describe.each(['copy-on-write', 'checkout'] as const)('an executor under umask 077, %s workspaces', kind => {
  const on = executorOf(kind);

  it.each(['copied', 'local-git', 'git-url', 'private-git'])(
    'runs @sim write in the workspace of a %s source',
    async id => {
      const seen = await run(on, id, PROMPT);
      expect([seen.state, seen.status_message]).toEqual(['SUCCEEDED', undefined]);
      const patch = await patchOf(on, seen.artifacts);
      expect(patch).toContain('+++ b/NOTES.md');
      expect(patch).toContain('+hello');
    }
  );

  it('starts three runs of a private clone at once, the first to need its mirror', async () => {
    const seen = await Promise.all([1, 2, 3].map(() => run(on, 'together', PROMPT)));
    expect(seen.map(one => [one.state, one.status_message])).toEqual([
      ['SUCCEEDED', undefined],
      ['SUCCEEDED', undefined],
      ['SUCCEEDED', undefined]
    ]);
  });
});
