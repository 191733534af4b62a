// Adopted from the review of the merged post-run git hardening (issue 21): attacks from a command agent's run that
// still get through the run's private git dir. The executor's `git add --all` still looks into
// nested repositories the run made (to record them as gitlinks), and reads their `.git` files on
// the host with no time or memory bound. Each test states what the run should see; a failing
// test is a finding of the review (see the review report), not a flaky one.

import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { TERMINAL_STATES } from '../../src/api/index.js';
import { waitForState } from '../support/wait.js';
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { type TestExecutor, startTestExecutor, tempDir } from '../support/executor.js';
import { createRun, releaseFifo, requireBubblewrap, transcript } from './support.js';

let ex: TestExecutor;
let key: string;
let remote: string;
let hostRepo: string;
let hostHead: string;

function git(dir: string, ...args: string[]): string {
  return execFileSync('git', ['-C', dir, '-c', 'user.name=t', '-c', 'user.email=t@t', ...args], {
    encoding: 'utf8'
  }).trim();
}

function repository(prefix: string): string {
  const dir = tempDir(prefix);
  git(dir, 'init', '--quiet', '--initial-branch=main');
  execFileSync('sh', ['-c', `echo original > ${join(dir, 'README.md')}`]);
  git(dir, 'add', '--all');
  git(dir, 'commit', '--quiet', '-m', 'initial');
  return dir;
}

const agent = { kind: 'command', command: ['/bin/sh', '-c', 'cat > /tmp/attack.sh && sh -e /tmp/attack.sh'] };

beforeAll(async () => {
  requireBubblewrap();
  const source = repository('review-git-source-');
  remote = tempDir('review-git-remote-');
  git(remote, 'init', '--quiet', '--bare', '--initial-branch=main');
  git(source, 'push', '--quiet', remote, 'main');
  const published = tempDir('review-git-published-');
  execFileSync('git', ['clone', '--quiet', remote, published]);
  // A repository of the host the run never sees (its commit id stands for any host secret a
  // ref can hold).
  hostRepo = repository('review-git-host-');
  // A commit of its own, so its id never equals the source's (same files made in the same second).
  git(hostRepo, 'commit', '--quiet', '--allow-empty', '-m', 'host only');
  hostHead = git(hostRepo, 'rev-parse', 'HEAD');
  ex = await startTestExecutor({
    workers: 2,
    environments: [
      { id: 'plain', source, agent },
      { id: 'publishing', source: published, agent, publish: { base: 'main' } }
    ]
  });
  key = (await ex.key()).raw;
}, 120_000);

afterAll(async () => {
  await ex?.stop(1000);
}, 120_000);

describe("the executor's git after a run, attacked through nested repositories", () => {
  it('a nested .git whose HEAD is a FIFO does not hang the post-run diff (the run ends)', async () => {
    const id = await createRun(
      ex,
      key,
      'plain',
      'mkdir -p nested/.git/objects nested/.git/refs\nmkfifo nested/.git/HEAD\necho changed >> README.md\n'
    );
    const fifo = join(ex.dataDir, 'workspaces', id, 'nested', '.git', 'HEAD');
    try {
      // Generous: the agent itself takes a second; the diff step is what never returns.
      const run = await waitForState({ on: ex, key, id }, TERMINAL_STATES, { timeoutMs: 150_000 });
      expect(['SUCCEEDED', 'FAILED']).toContain(run.state);
    } finally {
      // Frees the executor's git (and the worker) while it is still blocked on the FIFO: git
      // opens HEAD more than once, so this goes on until the run ends.
      for (let tries = 0; tries < 300; tries++) {
        releaseFifo(fifo);
        const run = await waitForState({ on: ex, key, id }, ['SUCCEEDED', 'FAILED', 'CANCELLED'], {
          timeoutMs: 200
        }).catch(() => undefined);
        if (run) break;
      }
    }
  }, 200_000);

  it('a nested gitfile naming a host repository puts nothing of it in the published branch', async () => {
    const id = await createRun(
      ex,
      key,
      'publishing',
      `mkdir sub\nprintf 'gitdir: %s\\n' '${join(hostRepo, '.git')}' > sub/.git\necho changed >> README.md\n`
    );
    const run = await waitForState({ on: ex, key, id }, TERMINAL_STATES, { timeoutMs: 120_000 });
    const events = await transcript(ex, key, id);
    const branch = git(remote, 'for-each-ref', '--format=%(refname)', `refs/heads/agent/${id}`);
    const tree = branch ? git(remote, 'ls-tree', '-r', branch) : '';
    // The host repository's commit id must not leave the host, and the branch must hold what the
    // patch shows (the patch never shows a gitlink: --ignore-submodules=all).
    expect(run.state).toBe('SUCCEEDED');
    expect(tree).not.toContain(hostHead);
    expect(JSON.stringify(events)).not.toContain(hostHead);
  }, 180_000);

  it('a run whose only change is a nested gitfile publishes nothing and says why', async () => {
    const id = await createRun(
      ex,
      key,
      'publishing',
      `mkdir sub\nprintf 'gitdir: %s\\n' '${join(hostRepo, '.git')}' > sub/.git\n`
    );
    const run = await waitForState({ on: ex, key, id }, TERMINAL_STATES, { timeoutMs: 120_000 });
    const events = await transcript(ex, key, id);
    expect(run.state).toBe('SUCCEEDED');
    expect(git(remote, 'for-each-ref', '--format=%(refname)', `refs/heads/agent/${id}`)).toBe('');
    expect(events.some(event => event.kind === 'publish')).toBe(false);
    expect(events).toContainEqual(
      expect.objectContaining({ kind: 'notice', text: 'nested repositories left out of the changes: sub/' })
    );
  }, 180_000);

  it('a nested ref that is a link to /dev/zero is never read (the run ends with its change)', async () => {
    const id = await createRun(
      ex,
      key,
      'plain',
      'mkdir -p z/.git/objects z/.git/refs/heads\nln -s /dev/zero z/.git/refs/heads/main\n' +
        "echo 'ref: refs/heads/main' > z/.git/HEAD\necho changed >> README.md\n"
    );
    const run = await waitForState({ on: ex, key, id }, TERMINAL_STATES, { timeoutMs: 120_000 });
    const events = await transcript(ex, key, id);
    expect(run.state).toBe('SUCCEEDED');
    expect(events).toContainEqual(
      expect.objectContaining({ kind: 'diff', files: [{ path: 'README.md', change: 'modified' }] })
    );
  }, 180_000);
});
