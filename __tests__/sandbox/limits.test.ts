// Limits and refusals: a fork bomb and a memory hog, at once, end FAILED resource_limit_exceeded
// while a third run succeeds; a source larger than the quota stops its copy; a node refuses to
// start when bubblewrap is missing, unless the environment says `sandbox: off`, whose runs then
// record a warning.

import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { TERMINAL_STATES } from '../../src/api/index.js';
import { waitForState } from '../support/wait.js';
import { readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { type TestExecutor, startTestExecutor, tempDir } from '../support/executor.js';
import { createRun, requireBubblewrap, transcript } from './support.js';

let ex: TestExecutor;
let key: string;

beforeAll(async () => {
  requireBubblewrap();
  const big = tempDir('sandbox-big-');
  for (let i = 0; i < 8; i++) writeFileSync(join(big, `part-${i}.bin`), Buffer.alloc(64 * 1024, i));
  ex = await startTestExecutor({
    workers: 4,
    workspaces: { quota: '256KiB' },
    environments: [
      { id: 'small', source: tempDir('sandbox-small-'), sandbox: { memory: '64MiB', processes: 32 } },
      { id: 'big', source: big }
    ]
  });
  key = (await ex.key()).raw;
}, 120_000);
afterAll(() => ex?.stop(1000));

describe('resource limits', () => {
  it('fails a fork bomb and a memory hog with resource_limit_exceeded while another run succeeds', async () => {
    const bomb = await createRun(ex, key, 'small', '@sim run while true; do sleep 30 & done');
    const hog = await createRun(
      ex,
      key,
      'small',
      '@sim run head -c 300000000 /dev/zero | tail -c 200000000 | wc -c'
    );
    const fine = await createRun(ex, key, 'small', '@sim run echo still fine\n@sim sleep 1');
    const [b, h, f] = await Promise.all([
      waitForState({ on: ex, key, id: bomb }, TERMINAL_STATES, { timeoutMs: 30_000 }),
      waitForState({ on: ex, key, id: hog }, TERMINAL_STATES, { timeoutMs: 30_000 }),
      waitForState({ on: ex, key, id: fine }, TERMINAL_STATES, { timeoutMs: 30_000 })
    ]);
    expect(b).toMatchObject({
      state: 'FAILED',
      error_code: 'resource_limit_exceeded',
      status_message: 'the run tried to start more than the limit of 32 processes at once'
    });
    expect(h).toMatchObject({
      state: 'FAILED',
      error_code: 'resource_limit_exceeded',
      status_message: "the run's processes used more than the memory limit of 64 MiB"
    });
    expect(f).toMatchObject({ state: 'SUCCEEDED' });
    expect((await ex.request('/healthz')).status).toBe(200);
    // Nothing of the two runs is left running: their cgroups are gone.
    const cgroups = readdirSync('/sys/fs/cgroup/pids', { recursive: true }).map(String);
    expect(cgroups.filter(name => name.includes(bomb) || name.includes(hog))).toEqual([]);
  }, 120_000);

  it('stops copying a source larger than the quota, before the disk fills', async () => {
    const id = await createRun(ex, key, 'big', '@sim say never reached');
    expect(await waitForState({ on: ex, key, id })).toMatchObject({
      state: 'FAILED',
      error_code: 'workspace_quota_exceeded',
      status_message: 'the source is larger than the workspace disk quota of 256 KiB; the copy stopped there'
    });
  });
});

describe('stopping a confined run', () => {
  it('gives its processes SIGTERM first, inside the sandbox', async () => {
    const id = await createRun(
      ex,
      key,
      'small',
      `@sim run trap 'echo got TERM; exit 0' TERM; echo ready; sleep 30 & wait`
    );
    await waitForState({ on: ex, key, id }, ['INPROGRESS']);
    await new Promise(resolve => setTimeout(resolve, 1000));
    await ex.request(`/api/v1/agent/runs/${id}/cancel`, { method: 'POST', key });
    await waitForState({ on: ex, key, id }, ['CANCELLED']);
    let command: Record<string, unknown> | undefined;
    for (let i = 0; i < 100 && !command; i++) {
      command = (await transcript(ex, key, id)).find(e => e.kind === 'command');
      if (!command) await new Promise(resolve => setTimeout(resolve, 50));
    }
    expect(command).toMatchObject({ output: 'ready\ngot TERM\n', exit_code: 0 });
  });
});

describe('workspaces.min_free', () => {
  it('claims no run while the data dir has less free space, and says why in /readyz with status 503', async () => {
    const full = await startTestExecutor({ workspaces: { min_free: '1000000GiB' } });
    try {
      const fullKey = (await full.key()).raw;
      const id = await createRun(full, fullKey, 'local', '@sim say hi');
      for (let i = 0; i < 3; i++) await full.pool.pump();
      expect(await waitForState({ on: full, key: fullKey, id }, ['QUEUED'])).toMatchObject({
        state: 'QUEUED'
      });
      const ready = await full.request('/readyz');
      expect(ready.status).toBe(503);
      expect(await ready.json()).toEqual({
        status: 'low_on_space',
        claiming: false,
        reason: expect.stringMatching(
          /^the data dir's file system has \d+ MiB free, less than workspaces\.min_free \(1024000000 MiB\): not claiming runs$/
        )
      });
    } finally {
      await full.stop(1000);
    }
  });
});

describe('start-up', () => {
  it('refuses to start when bubblewrap is missing, naming the fix', async () => {
    process.env.AGENT_EXECUTOR_BWRAP = '/nonexistent/bwrap';
    try {
      await expect(
        startTestExecutor({ environments: [{ id: 'confined', source: tempDir() }] })
      ).rejects.toThrow(
        /cannot confine the runs of environment confined: bubblewrap \(\/nonexistent\/bwrap\) is not installed; install it with `sudo apt-get install bubblewrap`/
      );
    } finally {
      delete process.env.AGENT_EXECUTOR_BWRAP;
    }
  });

  it('starts an environment with `sandbox: off` anyway, and each of its runs records a warning', async () => {
    process.env.AGENT_EXECUTOR_BWRAP = '/nonexistent/bwrap';
    let off: TestExecutor | undefined;
    try {
      off = await startTestExecutor({ environments: [{ id: 'open', source: tempDir(), sandbox: 'off' }] });
      const offKey = (await off.key()).raw;
      const id = await createRun(off, offKey, 'open', '@sim say hi');
      expect(await waitForState({ on: off, key: offKey, id })).toMatchObject({ state: 'SUCCEEDED' });
      const warnings = (await transcript(off, offKey, id)).filter(e => e.kind === 'warning');
      expect(warnings.map(w => w.message)).toEqual([
        "this environment has `sandbox: off`: the run's processes run unconfined, as the executor's own user"
      ]);
    } finally {
      delete process.env.AGENT_EXECUTOR_BWRAP;
      await off?.stop(1000);
    }
  });
});
