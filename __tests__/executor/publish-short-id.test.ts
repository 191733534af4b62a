// `{short_id}` in publish.branch names one run's branch (docs/publishing.md): two runs made one
// after the other must push two branches. Run ids are time-ordered (src/executor/runs/run-id.ts),
// so their first 8 hex digits are the top 32 bits of the creation time in milliseconds and are the
// same for every run made within about 65 seconds.
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { execFileSync } from 'node:child_process';
import { rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { type TestExecutor, startTestExecutor, tempDir } from '../support/executor.js';
import { waitForState } from '../support/wait.js';

let ex: TestExecutor;
let key: string;
let remote: string;
const made: string[] = [];

function git(dir: string, ...args: string[]): string {
  return execFileSync('git', ['-C', dir, '-c', 'user.name=t', '-c', 'user.email=t@t', ...args], {
    encoding: 'utf8'
  }).trim();
}

beforeAll(async () => {
  remote = tempDir('agent-short-id-remote-');
  made.push(remote);
  git(remote, 'init', '--quiet', '--bare', '--initial-branch=main');
  const seed = tempDir('agent-short-id-seed-');
  made.push(seed);
  git(seed, 'init', '--quiet', '--initial-branch=main');
  writeFileSync(join(seed, 'README.md'), 'original\n');
  git(seed, 'add', '--all');
  git(seed, 'commit', '--quiet', '-m', 'initial');
  git(seed, 'push', '--quiet', remote, 'main');
  const source = tempDir('agent-short-id-source-');
  made.push(source);
  execFileSync('git', ['clone', '--quiet', remote, source]);
  ex = await startTestExecutor({
    workers: 2,
    environments: [{ id: 'short', source, publish: { base: 'main', branch: 'agent/{short_id}' } }]
  });
  key = (await ex.key('team-a', 'personal', 'alice')).raw;
});
afterAll(async () => {
  await ex?.stop(1000);
  for (const dir of made) rmSync(dir, { recursive: true, force: true });
});

async function create(prompt: string): Promise<string> {
  const response = await ex.request('/api/v1/agent/runs', {
    method: 'POST',
    key,
    body: JSON.stringify({ prompt, config: { environment_id: 'short' } })
  });
  expect(response.status).toBe(200);
  return ((await response.json()) as { run_id: string }).run_id;
}

describe('publish.branch with {short_id}', () => {
  it('gives two runs made one after the other two branches, and both are pushed', async () => {
    const first = await create('One\n@sim write one.txt 1\n@sim result first');
    const second = await create('Two\n@sim write two.txt 2\n@sim result second');
    const runs = [
      await waitForState({ on: ex, key, id: first }),
      await waitForState({ on: ex, key, id: second })
    ];
    expect(runs.map(run => run.state)).toEqual(['SUCCEEDED', 'SUCCEEDED']);
    const branches = git(remote, 'for-each-ref', '--format=%(refname:short)', 'refs/heads/agent/')
      .split('\n')
      .filter(Boolean);
    expect(branches).toHaveLength(2);
  });
});
