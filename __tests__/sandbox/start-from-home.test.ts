// A run created with `conversation_id` starts from the earlier run's tree and a copy of its HOME
// (worker/start-from.ts). That HOME is whatever the earlier run's agent left in it, and the copy
// is made by the executor: a directory nested deeper than PATH_MAX made Node's cpSync abort the
// whole executor process (native code, not a JS error), every run of the node with it. The
// executor here is a real process run from the source, so that such an abort is seen as its end.

import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { chmodSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { issueKey } from '../../src/executor/store/keys.js';
import { SqliteStores } from '../../src/executor/store/sqlite.js';
import { removeTree } from '../../src/executor/workspace/remove.js';
import { type ExecutorProcess, spawnExecutor, tempDir } from '../support/executor.js';
import { requireBubblewrap } from './support.js';

const RESULT = '{"type":"result","subtype":"success","result":"done","usage":{}}';

let ex: ExecutorProcess;
let key: string;
let dataDir: string;
const made: string[] = [];

beforeAll(async () => {
  requireBubblewrap();
  const dir = tempDir('start-from-home-');
  made.push(dir);
  dataDir = join(dir, 'data');
  chmodSync(dir, 0o755);
  // A fake Claude Code: asked to nest, it nests directories in its HOME as deep as its shell can
  // go (past PATH_MAX on the host); asked to check its HOME, it fails unless the earlier run's is there.
  const cli = join(dir, 'fake-claude');
  writeFileSync(
    cli,
    [
      '#!/bin/sh',
      '[ "$1" = --version ] && echo 1.0.0 && exit 0',
      'PROMPT=$(cat)',
      // A continued session finds the earlier run's HOME: its mark file.
      'case "$PROMPT" in *check-home*) [ "$(cat "$HOME/mark")" = earlier ] || exit 3 ;; esac',
      'echo earlier > "$HOME/mark"',
      // A file its own user cannot read: the copy for a later run fails half way.
      'case "$PROMPT" in *lock*) echo locked > "$HOME/locked" && chmod 000 "$HOME/locked" ;; esac',
      // (The shell's cd stops at PATH_MAX inside; the data dir's prefix puts the host path past it.)
      'case "$PROMPT" in *nest*) (cd "$HOME" && i=0 && while [ $i -lt 2100 ]; do mkdir d && cd d || exit; i=$((i+1)); done) ;; esac',
      `echo '${RESULT}'`
    ].join('\n'),
    { mode: 0o755 }
  );
  const source = tempDir('start-from-home-source-');
  made.push(source);
  writeFileSync(join(source, 'README.md'), 'hello\n');
  writeFileSync(
    join(dir, 'agent-executor.yaml'),
    JSON.stringify({
      data_dir: join(dir, 'data'),
      log_level: 'warn',
      environments: [
        // The program alone: a read path that held the data dir would be refused at start-up.
        { id: 'deep', source, agent: { kind: 'claude-code', command: [cli] }, sandbox: { read: [cli] } }
      ]
    })
  );
  const store = await SqliteStores.open(join(dir, 'data', 'executor.db'));
  key = (await issueKey(store.accounts, { team: 'team-a', kind: 'personal', name: 'alice' })).raw;
  await store.close();
  ex = await spawnExecutor(['--config', join(dir, 'agent-executor.yaml')], { source: true });
});

afterAll(async () => {
  await ex?.stop();
  // The nested HOMEs go deeper than rmSync reaches: the executor's own removal takes any depth.
  for (const path of made) removeTree(path);
});

async function api(path: string, body?: unknown): Promise<Record<string, unknown>> {
  const response = await fetch(`${ex.url}/api/v1${path}`, {
    method: body ? 'POST' : 'GET',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: body ? JSON.stringify(body) : undefined
  });
  return (await response.json()) as Record<string, unknown>;
}

async function ended(id: string): Promise<Record<string, unknown>> {
  for (;;) {
    const run = await api(`/agent/runs/${id}`);
    if (['SUCCEEDED', 'FAILED', 'CANCELLED'].includes(String(run.state))) return run;
    await new Promise(resolve => setTimeout(resolve, 200));
  }
}

describe('conversation_id', () => {
  it('gives the new run a copy of the earlier run’s HOME', async () => {
    const first = await api('/agent/runs', { prompt: 'hello', config: { environment_id: 'deep' } });
    expect(await ended(String(first.run_id))).toMatchObject({ state: 'SUCCEEDED' });
    const next = await api('/agent/runs', {
      prompt: 'check-home',
      config: { environment_id: 'deep' },
      conversation_id: first.run_id
    });
    expect(await ended(String(next.run_id))).toMatchObject({ state: 'SUCCEEDED' });
  }, 120_000);
});

describe('conversation_id over an earlier HOME that cannot be copied whole', () => {
  it('fails the run, leaves its HOME empty, and refuses a follow-up of it', async () => {
    const first = await api('/agent/runs', { prompt: 'lock', config: { environment_id: 'deep' } });
    expect(await ended(String(first.run_id))).toMatchObject({ state: 'SUCCEEDED' });
    const next = await api('/agent/runs', {
      prompt: 'go on',
      config: { environment_id: 'deep' },
      conversation_id: first.run_id
    });
    const run = await ended(String(next.run_id));
    expect(run).toMatchObject({ state: 'FAILED' });
    expect(String(run.status_message)).toMatch(
      /HOME of the run being continued could not be copied: cp: cannot open '[^']*locked' for reading: Permission denied/
    );
    // Nothing half copied stays for a follow-up to resume.
    expect(readdirSync(join(dataDir, 'homes', String(next.run_id)))).toEqual([]);
    const followup = await fetch(`${ex.url}/api/v1/agent/runs/${String(next.run_id)}/followups`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ message: 'check-home' })
    });
    expect(followup.status).toBe(200);
    const after = await ended(String(next.run_id));
    expect(after).toMatchObject({ state: 'FAILED' });
    expect(String(after.status_message)).toContain(
      `cannot be continued: its start from run ${String(first.run_id)} failed`
    );
  }, 120_000);
});

describe('conversation_id over an earlier HOME nested past PATH_MAX', () => {
  it('fails that run with a message; the executor goes on (it aborted)', async () => {
    const first = await api('/agent/runs', { prompt: 'nest', config: { environment_id: 'deep' } });
    expect(await ended(String(first.run_id))).toMatchObject({ state: 'SUCCEEDED' });
    const next = await api('/agent/runs', {
      prompt: 'go on',
      config: { environment_id: 'deep' },
      conversation_id: first.run_id
    });
    const run = await ended(String(next.run_id));
    expect(run).toMatchObject({ state: 'FAILED' });
    expect(String(run.status_message)).toMatch(/HOME of the run being continued could not be copied/);
    // Still serving, and still running runs.
    expect(ex.child.exitCode).toBeNull();
    const later = await api('/agent/runs', { prompt: 'again', config: { environment_id: 'deep' } });
    expect(await ended(String(later.run_id))).toMatchObject({ state: 'SUCCEEDED' });
  }, 120_000);
});
