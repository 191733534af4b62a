// Low disk with nothing left to free (worker/maintenance.ts): under workspaces.min_free the pool
// removes unused shared checkouts, and when none is left it says so once and looks again only
// when something could have become unused (a run ended, the retention sweep removed a workspace),
// not on every claim attempt; claiming resumes as soon as free space is back, on a real small
// file system (a tmpfs of its own, mounted here as root) filled and then emptied.
import { afterAll, describe, expect, it } from '@jest/globals';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, rmSync, statfsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { FastifyBaseLogger } from 'fastify';
import { parseConfig } from '../../src/executor/config/config.js';
import { issueKey } from '../../src/executor/store/keys.js';
import { startExecutor } from '../../src/executor/node/serve.js';
import { SqliteStores } from '../../src/executor/store/sqlite.js';
import { freeSpaceForRuns, sweepFinishedWorkspaces } from '../../src/executor/worker/maintenance.js';
import { createWorkspace, sweepWorkspaces } from '../../src/executor/workspace/workspace.js';
import { mountPoints, unmountAll } from '../../src/executor/workspace/layers.js';
import { tempDir } from '../support/executor.js';
import { eventually } from '../support/eventually.js';

function gitRepo(): { dir: string; commit: (file: string) => string } {
  const dir = tempDir('low-disk-source-');
  const git = (...args: string[]) =>
    execFileSync('git', ['-C', dir, '-c', 'user.name=t', '-c', 'user.email=t@t', ...args], {
      encoding: 'utf8'
    });
  git('init', '--quiet');
  const commit = (file: string) => {
    writeFileSync(join(dir, file), `${file}\n`);
    git('add', '--all');
    git('commit', '--quiet', '-m', file);
    return git('rev-parse', 'HEAD').trim();
  };
  commit('README.md');
  return { dir, commit };
}

function logLines() {
  const lines: string[] = [];
  const log = {
    warn: (_: unknown, message: string) => lines.push(message),
    info: (_: unknown, message: string) => lines.push(message)
  } as unknown as FastifyBaseLogger;
  return { lines, log };
}

describe('workspaces.min_free with nothing left to free', () => {
  it('says so once and looks again only when a run ends or the retention sweep removes a workspace', async () => {
    const repo = gitRepo();
    const config = parseConfig(
      {
        // More than any disk here: the node is short of space throughout.
        workspaces: { min_free: '1000000TiB', retention: '0s', continue_for: '0s' },
        environments: [{ id: 'cow', source: repo.dir, agent: { kind: 'simulated' } }]
      },
      tempDir('low-disk-')
    );
    const data = config.dataDir;
    const env = config.environments[0]!;
    try {
      // Three retained workspaces, each over its own commit's checkout: nothing is unused.
      await createWorkspace(env, data, 'run-a');
      repo.commit('b.txt');
      await createWorkspace(env, data, 'run-b');
      repo.commit('c.txt');
      await createWorkspace(env, data, 'run-c');
      const checkouts = () => readdirSync(join(data, 'checkouts')).length;
      expect(checkouts()).toBe(3);
      const { lines, log } = logLines();
      await freeSpaceForRuns(config, new Set(['run-c']), log);
      expect(lines).toEqual([
        expect.stringMatching(
          /^less free space than workspaces\.min_free and no unused shared checkout, setup layer or unpacked image left to remove: looking again when a run ends or a workspace is removed, or in 60 s$/
        )
      ]);
      // run-a's workspace goes behind the pool's back (no run ended, no sweep of the pool's): the
      // pool does not look again, however often it is asked, and says nothing more.
      await sweepWorkspaces(data, config.environments, 0, new Set(['run-b', 'run-c']));
      for (let i = 0; i < 5; i++) await freeSpaceForRuns(config, new Set(['run-c']), log);
      expect(checkouts()).toBe(3);
      expect(lines).toHaveLength(1);
      // run-c ends: the next claim attempt looks, and removes run-a's checkout, now unused.
      await freeSpaceForRuns(config, new Set(), log);
      expect(checkouts()).toBe(2);
      expect(lines).toHaveLength(2);
      expect(lines[1]).toMatch(
        /^less free space than workspaces\.min_free: removed 1 unused shared checkout\(s\), setup layer\(s\) and unpacked image\(s\): checkouts\/\S+; none left unused, looking again when/
      );
      await freeSpaceForRuns(config, new Set(), log);
      expect(lines).toHaveLength(2);
      // The retention sweep removes run-b's workspace: the next attempt looks, and frees its checkout.
      await sweepFinishedWorkspaces(config, new Set(['run-c']), log);
      expect(lines[2]).toBe('removed workspaces past retention');
      await freeSpaceForRuns(config, new Set(['run-c']), log);
      expect(checkouts()).toBe(1);
      expect(lines[3]).toMatch(/removed 1 unused shared checkout\(s\)/);
    } finally {
      await unmountAll(data);
      expect(mountPoints(data).size).toBe(0);
    }
  }, 120_000);
});

describe('claiming once free space is back', () => {
  const mounted: string[] = [];
  afterAll(() => {
    for (const dir of mounted) execFileSync('umount', ['-l', dir]);
  });

  it('claims the queued run as soon as the data dir has min_free again, on a file system filled and emptied', async () => {
    const dir = tempDir('low-disk-fs-');
    execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=96m', 'tmpfs', dir]);
    mounted.push(dir);
    const repo = gitRepo();
    const config = parseConfig(
      {
        log_level: 'silent',
        workspaces: { min_free: '48MiB', retention: '1h' },
        environments: [{ id: 'cow', source: repo.dir, agent: { kind: 'simulated' } }]
      },
      dir
    );
    config.port = 0;
    mkdirSync(config.dataDir, { recursive: true });
    const store = await SqliteStores.open(join(config.dataDir, 'executor.db'));
    const executor = await startExecutor(config, { store, checkEnvironments: false });
    try {
      const key = (await issueKey(store.accounts, { team: 'default', kind: 'personal', name: 'test' })).raw;
      const request = (path: string, init: RequestInit = {}) =>
        fetch(executor.url + path, {
          ...init,
          headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' }
        });
      // Filled until 32 MiB are left: less than min_free, with nothing the cache could give back.
      const { bavail, bsize } = statfsSync(dir);
      const filler = join(dir, 'filler.bin');
      writeFileSync(filler, Buffer.alloc(bavail * bsize - 32 * 1024 ** 2));
      const created = await request('/api/v1/agent/run', {
        method: 'POST',
        body: JSON.stringify({ prompt: '@sim say hi', config: { environment_id: 'cow' } })
      });
      const id = ((await created.json()) as { run_id: string }).run_id;
      await eventually(
        async () => ((await (await request('/readyz')).json()) as { claiming: boolean }).claiming === false,
        { what: '/readyz to say the node is not claiming' }
      );
      const state = async () =>
        ((await (await request(`/api/v1/agent/runs/${id}`)).json()) as { state: string }).state;
      expect(await state()).toBe('QUEUED');
      rmSync(filler);
      await eventually(async () => (await state()) === 'SUCCEEDED', {
        what: `run ${id} to be claimed and succeed once space is back`,
        timeoutMs: 30_000
      });
      expect(existsSync(join(config.dataDir, 'workspaces', id))).toBe(true);
    } finally {
      await executor.stop(1000);
      expect(mountPoints(dir)).toEqual(new Set([dir]));
    }
  }, 120_000);
});
