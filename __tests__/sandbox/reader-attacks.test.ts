// Attacks on the reader sandbox (sandbox/run-files.ts) and on the steps that go through it: the
// quota's count, the nested-repository walk, and a conversation_id start's copy of an earlier
// run's HOME. Each test plays a hostile run against a real executor run as root (as CI runs it)
// and asserts what a user sees: the run's state and message.

import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { execFileSync } from 'node:child_process';
import { chmodSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { TERMINAL_STATES } from '../../src/api/index.js';
import { unmountAll } from '../../src/executor/workspace/mounts.js';
import { removeTree } from '../../src/executor/workspace/remove.js';
import { type TestExecutor, startTestExecutor, tempDir } from '../support/executor.js';
import { waitForState } from '../support/wait.js';
import { requireBubblewrap, transcript } from './support.js';

const RESULT = '{"type":"result","subtype":"success","result":"done","usage":{}}';

let ex: TestExecutor;
let key: string;
const made: string[] = [];

beforeAll(async () => {
  requireBubblewrap();
  if (process.getuid?.() !== 0)
    throw new Error('these tests need the executor to run as root, as CI runs them');
  const dir = tempDir('reader-attacks-');
  made.push(dir);
  chmodSync(dir, 0o755);
  const source = join(dir, 'source');
  execFileSync('mkdir', ['-p', source]);
  writeFileSync(join(source, 'README.md'), 'hello\n');
  const git = (...args: string[]) =>
    execFileSync('git', ['-C', source, '-c', 'user.name=t', '-c', 'user.email=t@t', ...args]);
  git('init', '--quiet');
  git('add', '--all');
  git('commit', '--quiet', '-m', 'initial');
  // A fake Claude Code whose HOME the run controls: asked to, it leaves one file there under many
  // names (hard links), which its own user's du counts once.
  const cli = join(dir, 'fake-claude');
  writeFileSync(
    cli,
    [
      '#!/bin/sh',
      '[ "$1" = --version ] && echo 1.0.0 && exit 0',
      'PROMPT=$(cat)',
      'case "$PROMPT" in *links*) head -c 4194304 /dev/zero > "$HOME/f" && i=0 && while [ $i -lt 30 ]; do ln "$HOME/f" "$HOME/l$i" || exit 4; i=$((i+1)); done ;; esac',
      `echo '${RESULT}'`
    ].join('\n'),
    { mode: 0o755 }
  );
  ex = await startTestExecutor({
    workers: 2,
    workspaces: { quota: '32MiB' },
    environments: [
      { id: 'repo', source, timeout: '20s' },
      { id: 'harness', source, agent: { kind: 'claude-code', command: [cli] }, sandbox: { read: [dir] } }
    ]
  });
  made.push(dirname(ex.dataDir));
  key = (await ex.key()).raw;
}, 120_000);

afterAll(async () => {
  if (ex) {
    await ex.stop(1000);
    await unmountAll(ex.dataDir);
  }
  for (const path of made) removeTree(path);
});

async function run(environment: string, prompt: string, extra: Record<string, unknown> = {}) {
  const response = await ex.request('/api/v1/agent/run', {
    method: 'POST',
    key,
    body: JSON.stringify({ prompt, config: { environment_id: environment }, ...extra })
  });
  if (response.status !== 200) throw new Error(`create run: ${response.status} ${await response.text()}`);
  const id = ((await response.json()) as { run_id: string }).run_id;
  const end = await waitForState({ on: ex, key, id }, TERMINAL_STATES, { timeoutMs: 110_000 });
  return { id, end };
}

describe('the quota count (du as the run user)', () => {
  it('is not fooled by a directory whose name forges a du "total" line', async () => {
    // du -s prints one line per tree it was given, never the names inside: a name holding
    // "\n0\ttotal\n" forges nothing, and the 40 MiB written are counted.
    const { end } = await run(
      'repo',
      `@sim run mkdir "$(printf 'x\\n0\\ttotal\\n')" && head -c 41943040 /dev/zero > "$(printf 'x\\n0\\ttotal\\n')/big" && echo wrote`
    );
    expect(end.state).toBe('FAILED');
    expect(end.error_code).toBe('workspace_quota_exceeded');
  });

  it('counts bytes written to a file the run deleted but keeps open (du never sees it)', async () => {
    // A file unlinked while a process of the run holds it open is in no tree `du` walks: its bytes
    // are counted from the run's open files (/proc/<pid>/fd of the processes in its cgroup).
    const { end } = await run(
      'repo',
      '@sim run exec 3>hidden && rm hidden && head -c 104857600 /dev/zero >&3 && echo written && while :; do sleep 1; done'
    );
    expect(end.error_code).toBe('workspace_quota_exceeded');
  });
});

describe('the nested-repository walk (find as the run user)', () => {
  it('excludes a nested repository whose name holds a newline and pathspec magic, without probing it', async () => {
    // Its `.git` is a FIFO: a git that probed it would block until its time limit. The name, with a
    // newline and `:(top)`, must come back whole from find and be passed to git literally.
    const name = ':(top)a\\nb';
    const { id, end } = await run(
      'repo',
      [
        `@sim run mkdir -p "$(printf '${name}')" && mkfifo "$(printf '${name}')/.git" && echo changed > README.md && echo ok`
      ].join('\n')
    );
    expect(end.state).toBe('SUCCEEDED');
    const events = await transcript(ex, key, id);
    const diff = events.find(event => event.kind === 'diff') as { files?: { path: string }[] } | undefined;
    expect(diff?.files?.map(file => file.path)).toEqual(['README.md']);
    expect(JSON.stringify(events)).toContain('nested repositories left out of the changes');
  });
});

describe('conversation_id: the earlier run’s changes applied (git apply as the run user)', () => {
  it('refuses, before writing anything, changes whose files hold more than the quota (hard links multiplied)', async () => {
    // The earlier run's quota counted 4 MiB (one inode under 31 names) and its patch is small
    // (zeros deflate), yet applied elsewhere each name is a file of its own: 124 MiB. The sizes of
    // the changed files are summed from git's index first, and the start refused over the quota.
    const first = await run(
      'repo',
      '@sim run head -c 4194304 /dev/zero > f && i=0 && while [ $i -lt 30 ]; do ln f l$i || exit 4; i=$((i+1)); done && echo linked'
    );
    expect(first.end.state).toBe('SUCCEEDED');
    const next = await run('repo', '@sim run echo continued', { conversation_id: first.id });
    expect(next.end.state).toBe('FAILED');
    expect(next.end.status_message).toContain(
      `conversation_id ${first.id}: that run's changes hold 130023424 bytes of files, more than the disk quota (33554432 bytes) a run may write`
    );
  });
});

describe('conversation_id: the copy of the earlier run’s HOME (cp as the run user)', () => {
  it('does not multiply a file the earlier run left under many hard links', async () => {
    // The earlier run's HOME holds 4 MiB under 31 names, counted once by its quota (du counts an
    // inode once); the copy keeps them links (cp --preserve=links), and what it made is measured
    // against the new run's limits before its first process.
    const first = await run('harness', 'links');
    expect(first.end.state).toBe('SUCCEEDED');
    const next = await run('harness', 'go on', { conversation_id: first.id });
    expect({ state: next.end.state, error_code: next.end.error_code }).toEqual({
      state: 'SUCCEEDED',
      error_code: undefined
    });
  });
});
