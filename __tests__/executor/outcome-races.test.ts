// Competing outcomes through a real executor (src/executor/runs/outcomes.ts decides them): an agent
// that exits 0 when it is told to stop, in an environment that publishes to a real bare repository.
// A cancel wins over that exit: the run stays CANCELLED and nothing is pushed. A timeout wins over
// it too: the run fails with `timeout` and nothing is pushed.
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { execFileSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { eventually } from '../support/eventually.js';
import { type TestExecutor, startTestExecutor, tempDir } from '../support/executor.js';

let ex: TestExecutor;
let key: string;
let remote: string;

function git(dir: string, ...args: string[]): string {
  return execFileSync('git', ['-C', dir, '-c', 'user.name=t', '-c', 'user.email=t@t', ...args], {
    encoding: 'utf8'
  }).trim();
}

/** Writes a file, says it is ready, then waits; a SIGTERM makes it exit 0 (a "successful" agent). */
const STUBBORN = [
  'sh',
  '-c',
  'echo changed > stubborn.txt; trap "exit 0" TERM; echo ready; while :; do sleep 1 & wait $!; done'
];

beforeAll(async () => {
  remote = tempDir('agent-races-remote-');
  git(remote, 'init', '--quiet', '--bare', '--initial-branch=main');
  const seed = tempDir('agent-races-seed-');
  git(seed, 'init', '--quiet', '--initial-branch=main');
  writeFileSync(join(seed, 'README.md'), 'original\n');
  git(seed, 'add', '--all');
  git(seed, 'commit', '--quiet', '-m', 'initial');
  git(seed, 'push', '--quiet', remote, 'main');
  const source = tempDir('agent-races-source-');
  execFileSync('git', ['clone', '--quiet', remote, source]);
  const agent = { kind: 'command', command: STUBBORN };
  ex = await startTestExecutor({
    workers: 2,
    environments: [
      { id: 'stubborn', source, agent, publish: { base: 'main' } },
      { id: 'stubborn-slow', source, agent, timeout: '2s', publish: { base: 'main' } }
    ]
  });
  key = (await ex.key('team-a', 'personal', 'alice')).raw;
});
afterAll(async () => {
  await ex?.stop(1000);
});

type Json = Record<string, unknown>;

async function create(environment: string): Promise<string> {
  const response = await ex.request('/api/v1/agent/runs', {
    method: 'POST',
    key,
    body: JSON.stringify({ prompt: 'change a file', config: { environment_id: environment } })
  });
  expect(response.status).toBe(200);
  return ((await response.json()) as { run_id: string }).run_id;
}

async function get(id: string): Promise<Json> {
  return (await (await ex.request(`/api/v1/agent/runs/${id}`, { key })).json()) as Json;
}

async function said(id: string, text: string): Promise<boolean> {
  const store = await ex.openStore();
  try {
    return (await store.transcript.listEvents(id)).some(
      e => e.kind === 'output' && String(e.text).includes(text)
    );
  } finally {
    await store.close();
  }
}

function branches(): string {
  return git(remote, 'branch', '--list');
}

/** Waits until the worker is done with every run (after its publishing step, if it took one). */
async function workerIdle(): Promise<void> {
  await eventually(() => ex.pool.runningCount === 0, { what: 'an idle worker pool', timeoutMs: 60_000 });
}

describe('competing outcomes', () => {
  it('a cancel beats an agent that exits 0 when stopped: CANCELLED, and nothing is published', async () => {
    const id = await create('stubborn');
    await eventually(() => said(id, 'ready'), { what: `run ${id} ready`, timeoutMs: 60_000 });
    const cancel = await ex.request(`/api/v1/agent/runs/${id}/cancel`, {
      method: 'POST',
      key,
      body: JSON.stringify({ reason: 'changed my mind' })
    });
    expect(cancel.status).toBe(200);
    await workerIdle();
    const run = await get(id);
    expect(run).toMatchObject({ state: 'CANCELLED', error_code: 'cancelled' });
    expect(branches()).not.toContain(`agent/${id}`);
  });

  it('a timeout beats an agent that exits 0 when stopped: FAILED timeout, and nothing is published', async () => {
    const id = await create('stubborn-slow');
    const run = await eventually(
      async () => {
        const found = await get(id);
        return found.state === 'FAILED' || found.state === 'SUCCEEDED' ? found : undefined;
      },
      { what: `run ${id} ended`, timeoutMs: 60_000 }
    );
    expect(run).toMatchObject({
      state: 'FAILED',
      error_code: 'timeout',
      status_message: 'the run exceeded its time limit of 2 s'
    });
    await workerIdle();
    expect(branches()).not.toContain(`agent/${id}`);
  });
});
