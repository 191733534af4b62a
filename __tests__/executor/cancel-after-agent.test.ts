// A cancel that arrives after the agent ended, while the executor is still gathering what the run
// made (its diff, its answer, its patch): the run is CANCELLED, so nothing of it may be published.
// The agent makes that phase long on purpose (thousands of new files to diff and patch), and the
// test cancels as soon as the run's diff is in its transcript, followed with held reads.
import { afterAll, beforeAll, expect, it } from '@jest/globals';
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

/** Thousands of new files (a slow diff and patch), then a success. */
const BUSY = ['sh', '-c', 'mkdir many && cd many && seq 1 8000 | xargs touch && echo done'];

beforeAll(async () => {
  remote = tempDir('agent-late-cancel-remote-');
  git(remote, 'init', '--quiet', '--bare', '--initial-branch=main');
  const seed = tempDir('agent-late-cancel-seed-');
  git(seed, 'init', '--quiet', '--initial-branch=main');
  writeFileSync(join(seed, 'README.md'), 'original\n');
  git(seed, 'add', '--all');
  git(seed, 'commit', '--quiet', '-m', 'initial');
  git(seed, 'push', '--quiet', remote, 'main');
  const source = tempDir('agent-late-cancel-source-');
  execFileSync('git', ['clone', '--quiet', remote, source]);
  ex = await startTestExecutor({
    environments: [
      { id: 'busy', source, agent: { kind: 'command', command: BUSY }, publish: { base: 'main' } }
    ]
  });
  key = (await ex.key()).raw;
});
afterAll(async () => {
  await ex?.stop(1000);
});

/** Follows the run's transcript with held reads until an event of `kind` is there. */
async function until(id: string, kind: string): Promise<void> {
  let after = 0;
  for (;;) {
    const response = await ex.request(`/api/v1/agent/runs/${id}/transcript?after=${after}`, {
      key,
      headers: { prefer: 'wait=20' }
    });
    const { events } = (await response.json()) as { events: { seq: number; kind: string }[] };
    if (events.some(event => event.kind === kind)) return;
    after = events.at(-1)?.seq ?? after;
  }
}

it('a cancel after the agent ended, before publishing: CANCELLED, and nothing is published', async () => {
  const created = await ex.request('/api/v1/agent/runs', {
    method: 'POST',
    key,
    body: JSON.stringify({ prompt: 'make files', config: { environment_id: 'busy' } })
  });
  const { run_id: id } = (await created.json()) as { run_id: string };
  await until(id, 'diff');
  const cancel = await ex.request(`/api/v1/agent/runs/${id}/cancel`, { method: 'POST', key });
  expect(cancel.status).toBe(200);
  await eventually(() => ex.pool.runningCount === 0, { what: 'an idle worker pool', timeoutMs: 120_000 });
  const run = (await (await ex.request(`/api/v1/agent/runs/${id}`, { key })).json()) as Record<
    string,
    unknown
  >;
  expect(run).toMatchObject({ state: 'CANCELLED' });
  expect(git(remote, 'branch', '--list')).not.toContain(`agent/${id}`);
}, 180_000);
