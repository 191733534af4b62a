// `workspaces.min_free_inodes` (sandbox/processes.ts): on a data dir whose file system has fewer
// free inodes than the floor, /readyz answers 503 naming the reason and the node claims no run;
// once files are removed it is ready again and claims the queued run. On a real small file system
// (an 8 MiB ext4 image of 2,048 inodes, loop-mounted here as root) filled with empty files, as a
// run filled the data dir's file system in the attack this answers. Below the floor, unused shared
// checkouts give their inodes back first, as they give bytes back below workspaces.min_free.
import { afterAll, describe, expect, it } from '@jest/globals';
import { execFileSync } from 'node:child_process';
import type { FastifyBaseLogger } from 'fastify';
import { mkdirSync, rmSync, statfsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseConfig } from '../../src/executor/config/config.js';
import { issueKey } from '../../src/executor/store/keys.js';
import { startExecutor } from '../../src/executor/node/serve.js';
import { SqliteStores } from '../../src/executor/store/sqlite.js';
import { mountPoints, unmountAll } from '../../src/executor/workspace/layers.js';
import { createWorkspace, sweepWorkspaces } from '../../src/executor/workspace/workspace.js';
import { freeSpaceForRuns } from '../../src/executor/worker/maintenance.js';
import { tempDir } from '../support/executor.js';
import { eventually } from '../support/eventually.js';

const FLOOR = 1000;

/** Empty files in `dir` until its file system has fewer than `below` free inodes. */
function fillInodes(dir: string, below: number): void {
  mkdirSync(dir);
  for (let i = 0; statfsSync(dir).ffree >= below; i++) writeFileSync(join(dir, String(i)), '');
}

describe('workspaces.min_free_inodes', () => {
  const base = tempDir('min-free-inodes-');
  const image = join(base, 'fs.img');
  const mount = join(base, 'fs');
  let mounted = false;
  afterAll(() => {
    if (mounted) execFileSync('umount', [mount]);
    rmSync(base, { recursive: true, force: true });
  });

  it('answers /readyz 503 and claims nothing below the floor, and is ready and claims again once inodes are back', async () => {
    execFileSync('truncate', ['-s', '8M', image]);
    execFileSync('mkfs.ext4', ['-q', '-N', '2048', image]);
    mkdirSync(mount);
    execFileSync('mount', ['-o', 'loop', image, mount]);
    mounted = true;
    const source = join(base, 'source');
    mkdirSync(source);
    writeFileSync(join(source, 'README.md'), 'hello\n');
    const config = parseConfig(
      {
        log_level: 'silent',
        // Bytes are plenty for this test's one small run: only inodes run short.
        workspaces: { min_free: '1MiB', min_free_inodes: FLOOR },
        environments: [{ id: 'local', source, agent: { kind: 'simulated' } }]
      },
      mount
    );
    config.port = 0;
    mkdirSync(config.dataDir, { recursive: true });
    const store = await SqliteStores.open(join(config.dataDir, 'executor.db'));
    const executor = await startExecutor(config, { store, checkEnvironments: false });
    const filler = join(mount, 'filler');
    try {
      const key = (await issueKey(store.accounts, { team: 'default', kind: 'personal', name: 'test' })).raw;
      const request = (path: string, init: RequestInit = {}) =>
        fetch(executor.url + path, {
          ...init,
          headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' }
        });
      expect((await request('/readyz')).status).toBe(200);

      // Empty files, as the attack made them, until fewer inodes than the floor are free.
      fillInodes(filler, FLOOR - 10);
      const free = statfsSync(mount).ffree;
      const ready = await request('/readyz');
      expect(ready.status).toBe(503);
      expect(await ready.json()).toEqual({
        status: 'low_on_space',
        claiming: false,
        reason: `the data dir's file system has ${free} free inodes, less than workspaces.min_free_inodes (${FLOOR}): not claiming runs`
      });

      const created = await request('/api/v1/agent/run', {
        method: 'POST',
        body: JSON.stringify({ prompt: '@sim say hi', config: { environment_id: 'local' } })
      });
      expect(created.status).toBe(200);
      const id = ((await created.json()) as { run_id: string }).run_id;
      const state = async () =>
        ((await (await request(`/api/v1/agent/runs/${id}`)).json()) as { state: string }).state;
      // Claim passes that find the run queued leave it queued.
      for (let i = 0; i < 3; i++) await executor.pool.pump();
      expect(await state()).toBe('QUEUED');
      expect((await request('/readyz')).status).toBe(503);

      rmSync(filler, { recursive: true });
      await eventually(async () => (await request('/readyz')).status === 200, {
        what: '/readyz to answer 200 once inodes are back'
      });
      await eventually(async () => (await state()) === 'SUCCEEDED', {
        what: `run ${id} to be claimed and succeed once inodes are back`,
        timeoutMs: 30_000
      });
    } finally {
      rmSync(filler, { recursive: true, force: true });
      await executor.stop(1000);
      expect(mountPoints(mount)).toEqual(new Set([mount]));
    }
  }, 120_000);

  it('removes an unused shared checkout first, and says which, when inodes run short', async () => {
    // A git source of 200 files: its shared checkout takes 200 inodes and more.
    const repo = join(base, 'repo');
    mkdirSync(repo);
    for (let i = 0; i < 200; i++) writeFileSync(join(repo, `f${i}.txt`), `${i}\n`);
    const git = (...args: string[]) =>
      execFileSync('git', ['-C', repo, '-c', 'user.name=t', '-c', 'user.email=t@t', ...args]);
    git('init', '--quiet');
    git('add', '--all');
    git('commit', '--quiet', '-m', 'files');
    const config = parseConfig(
      {
        workspaces: { min_free: '1MiB', min_free_inodes: FLOOR },
        environments: [{ id: 'cow', source: repo, agent: { kind: 'simulated' } }]
      },
      join(mount, 'second')
    );
    const data = config.dataDir;
    const filler = join(mount, 'filler-2');
    try {
      await createWorkspace(config.environments[0]!, data, 'run-a');
      // run-a's workspace goes past retention: its checkout is unused, kept as cache.
      await sweepWorkspaces(data, config.environments, 0, new Set());
      const lines: string[] = [];
      const log = {
        warn: (_: unknown, message: string) => lines.push(message),
        info: (_: unknown, message: string) => lines.push(message)
      } as unknown as FastifyBaseLogger;
      await freeSpaceForRuns(config, new Set(), log);
      expect(lines).toEqual([]);
      fillInodes(filler, FLOOR - 10);
      await freeSpaceForRuns(config, new Set(), log);
      expect(lines).toEqual([
        expect.stringMatching(
          /^fewer free inodes than workspaces\.min_free_inodes: removed 1 unused shared checkout\(s\), setup layer\(s\) and unpacked image\(s\): checkouts\/\S+$/
        )
      ]);
      expect(statfsSync(mount).ffree).toBeGreaterThanOrEqual(FLOOR);
    } finally {
      rmSync(filler, { recursive: true, force: true });
      await unmountAll(data);
      expect(mountPoints(mount)).toEqual(new Set([mount]));
    }
  }, 120_000);
});
