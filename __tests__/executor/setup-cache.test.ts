// The setup cache (`setup_cache: true`, workspace/setup-layers.ts) and freeing shared checkouts
// under workspaces.min_free, on a real executor that is root here (real bubblewrap, real overlay
// mounts). A setup command appends to a counter in a directory the sandbox may write
// (sandbox.write), outside the workspace: how many times the setup ran is what the counter holds.
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { execFileSync } from 'node:child_process';
import {
  appendFileSync,
  chmodSync,
  existsSync,
  mkdirSync,
  readFileSync,
  readdirSync,
  writeFileSync
} from 'node:fs';
import { join } from 'node:path';
import type { FastifyBaseLogger } from 'fastify';
import { parseConfig } from '../../src/executor/config/config.js';
import { createWorkspace, sweepWorkspaces } from '../../src/executor/workspace/workspace.js';
import { mountPoints, unmountAll } from '../../src/executor/workspace/layers.js';
import { freeSpaceForRuns } from '../../src/executor/worker/maintenance.js';
import { forgetVerifiedSetups } from '../../src/executor/workspace/setup-layers.js';
import { checkStartup } from '../../src/executor/node/startup.js';
import { type TestExecutor, startTestExecutor, tempDir } from '../support/executor.js';
import { eventually } from '../support/eventually.js';
import { waitForState } from '../support/wait.js';

function gitRepo(): { dir: string; commit: (file: string) => string } {
  const dir = tempDir('setup-cache-source-');
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

const counters = tempDir('setup-cache-counters-');
chmodSync(counters, 0o777); // the run's host user appends to the counters
const count = (name: string) =>
  existsSync(join(counters, name))
    ? readFileSync(join(counters, name), 'utf8').split('\n').filter(Boolean).length
    : 0;

/** An environment whose setup counts its runs in `counter` and leaves deps/lib.txt in the workspace. */
function environment(id: string, source: string, counter: string, extra: string[] = []) {
  return {
    id,
    source,
    setup_cache: true,
    setup: [`echo ran >> ${counters}/${counter}`, 'mkdir -p deps && echo built > deps/lib.txt', ...extra],
    sandbox: { write: [counters] },
    agent: { kind: 'simulated' }
  };
}

describe('setup_cache (tests run as root, as CI runs them)', () => {
  const repo = gitRepo();
  // One repository, two packages: an environment for each, with the same setup list.
  const mono = gitRepo();
  for (const name of ['a', 'b']) mkdirSync(join(mono.dir, 'packages', name), { recursive: true });
  mono.commit('packages/a/package.json');
  mono.commit('packages/b/package.json');
  let ex: TestExecutor;
  let key: string;
  beforeAll(async () => {
    ex = await startTestExecutor({
      workers: 4,
      workspaces: { retention: '1h' },
      environments: [
        environment('cached', repo.dir, 'cached'),
        environment('changed', repo.dir, 'changed', ['echo another command > /dev/null']),
        // Fails the first time only: the flag file is made by the failing attempt.
        environment('failing', repo.dir, 'failing', [
          `test -e ${counters}/failed-once || { touch ${counters}/failed-once; exit 3; }`
        ]),
        environment('concurrent', repo.dir, 'concurrent', ['sleep 1']),
        environment('package-a', join(mono.dir, 'packages', 'a'), 'packages'),
        environment('package-b', join(mono.dir, 'packages', 'b'), 'packages')
      ]
    });
    key = (await ex.key()).raw;
  });
  afterAll(async () => {
    await ex.stop(1000);
  });

  async function run(env: string, prompt: string): Promise<Record<string, unknown>> {
    const response = await ex.request('/api/v1/agent/run', {
      method: 'POST',
      key,
      body: JSON.stringify({ prompt, config: { environment_id: env } })
    });
    expect(response.status).toBe(200);
    const id = ((await response.json()) as { run_id: string }).run_id;
    return { ...(await waitForState({ on: ex, key, id })), events: await eventsOf(id) };
  }

  async function eventsOf(id: string): Promise<Record<string, unknown>[]> {
    return eventually(
      async () => {
        const body = (await (
          await ex.request(`/api/v1/agent/runs/${id}/transcript?limit=1000`, { key })
        ).json()) as {
          events: Record<string, unknown>[];
        };
        return (
          body.events.some(event => event.kind === 'state' && event.state !== 'INPROGRESS') && body.events
        );
      },
      { what: `the transcript of run ${id} to hold its end`, timeoutMs: 30_000 }
    );
  }

  // Succeeds only when the setup's output is there and no earlier agent's file is.
  const USES_SETUP =
    '@sim run test "$(cat deps/lib.txt)" = built && test ! -e agent.txt && echo mine > agent.txt';
  const setups = (events: Record<string, unknown>[]) => events.filter(event => event.kind === 'setup').length;

  it('runs the setup once per commit and setup list; later runs see its output, never an agent’s', async () => {
    const first = await run('cached', USES_SETUP);
    expect(first).toMatchObject({ state: 'SUCCEEDED' });
    expect(setups(first.events as Record<string, unknown>[])).toBe(2);
    const second = await run('cached', USES_SETUP);
    expect(second).toMatchObject({ state: 'SUCCEEDED' });
    expect(count('cached')).toBe(1);
    expect(setups(second.events as Record<string, unknown>[])).toBe(0);
    expect(second.events).toContainEqual(
      expect.objectContaining({ kind: 'notice', text: expect.stringContaining('setup commands skipped') })
    );
    // The kept layer holds what the setup wrote and nothing of either agent.
    const kept = readdirSync(join(ex.dataDir, 'setups'));
    expect(kept).toHaveLength(1);
    const layer = join(ex.dataDir, 'setups', kept[0]!, 'upper');
    expect(readFileSync(join(layer, 'deps', 'lib.txt'), 'utf8')).toBe('built\n');
    expect(existsSync(join(layer, 'agent.txt'))).toBe(false);

    // Another setup list over the same commit is another layer: its setup runs.
    expect(await run('changed', USES_SETUP)).toMatchObject({ state: 'SUCCEEDED' });
    expect(count('changed')).toBe(1);
    expect(await run('changed', USES_SETUP)).toMatchObject({ state: 'SUCCEEDED' });
    expect(count('changed')).toBe(1);

    // A new commit: the setup runs again, once.
    repo.commit('second.txt');
    expect(await run('cached', USES_SETUP)).toMatchObject({ state: 'SUCCEEDED' });
    expect(count('cached')).toBe(2);
    const again = await run('cached', `${USES_SETUP} && test -f second.txt`);
    expect(again).toMatchObject({ state: 'SUCCEEDED' });
    expect(count('cached')).toBe(2);
    expect(readdirSync(join(ex.dataDir, 'setups'))).toHaveLength(3);
  }, 120_000);

  it('keeps nothing of a setup that failed: the next run runs it again, and keeps that one', async () => {
    expect(await run('failing', USES_SETUP)).toMatchObject({ state: 'FAILED', error_code: 'setup_failed' });
    expect(count('failing')).toBe(1);
    expect(await run('failing', USES_SETUP)).toMatchObject({ state: 'SUCCEEDED' });
    expect(count('failing')).toBe(2);
    expect(await run('failing', USES_SETUP)).toMatchObject({ state: 'SUCCEEDED' });
    expect(count('failing')).toBe(2);
  }, 120_000);

  it('builds one layer for runs of one key that start at once; the others wait and use it', async () => {
    const all = await Promise.all([1, 2, 3].map(() => run('concurrent', USES_SETUP)));
    for (const ended of all) expect(ended).toMatchObject({ state: 'SUCCEEDED' });
    expect(count('concurrent')).toBe(1);
  }, 120_000);

  it('keeps one layer per source directory: two packages of one repository never share one', async () => {
    // The same commands write deps/ in each package (the setup runs in the environment's source
    // directory); a layer keyed without it gave package b the layer package a's setup made.
    expect(await run('package-a', USES_SETUP)).toMatchObject({ state: 'SUCCEEDED' });
    const b = await run('package-b', USES_SETUP);
    expect(b).toMatchObject({ state: 'SUCCEEDED' });
    expect(setups(b.events as Record<string, unknown>[])).toBe(2);
    expect(count('packages')).toBe(2);
    // Each is kept: the next run of either skips its setup.
    expect(await run('package-b', USES_SETUP)).toMatchObject({ state: 'SUCCEEDED' });
    expect(await run('package-a', USES_SETUP)).toMatchObject({ state: 'SUCCEEDED' });
    expect(count('packages')).toBe(2);
  }, 120_000);
});

describe('a kept setup layer, made and used directly', () => {
  it('is checked after a restart before its first use, and made again when it changed', async () => {
    const repo = gitRepo();
    const config = parseConfig(
      { environments: [environment('direct', repo.dir, 'direct')] },
      tempDir('setup-cache-restart-')
    );
    const env = config.environments[0]!;
    const data = config.dataDir;
    try {
      const make = async (id: string) => {
        const made = await createWorkspace(env, data, id, undefined, undefined, true);
        if (!made.setupLayer!.cached) {
          mkdirSync(join(made.path, 'deps'));
          writeFileSync(join(made.path, 'deps', 'lib.txt'), `built by ${id}\n`);
          expect(await made.setupLayer!.finish(true)).toBe(true);
        }
        return made;
      };
      const first = await make('run-a');
      // The run goes on over the kept layer with an empty layer of its own.
      expect(readFileSync(join(first.path, 'deps', 'lib.txt'), 'utf8')).toBe('built by run-a\n');
      expect(readdirSync(join(data, 'layers', 'run-a', 'upper'))).toEqual([]);
      forgetVerifiedSetups(); // as a restarted process: an intact layer is used
      const second = await make('run-b');
      expect(second.setupLayer!.cached).toBe(true);
      // The index that came with the checkout still matches its files by stat under two lower layers.
      const stale = execFileSync(
        'git',
        ['--git-dir', second.git.gitDir, '--work-tree', second.root, 'diff-files', '--name-only'],
        { encoding: 'utf8' }
      );
      expect(stale).toBe('');
      expect(readFileSync(join(second.path, 'deps', 'lib.txt'), 'utf8')).toBe('built by run-a\n');
      const [key] = readdirSync(join(data, 'setups'));
      appendFileSync(join(data, 'setups', key!, 'upper', 'deps', 'lib.txt'), 'tampered\n');
      forgetVerifiedSetups();
      const third = await make('run-c');
      expect(third.setupLayer!.cached).toBe(false);
      expect(readFileSync(join(third.path, 'deps', 'lib.txt'), 'utf8')).toBe('built by run-c\n');
    } finally {
      await unmountAll(data);
    }
  }, 120_000);

  it('is refused as a non-boolean, and ignored with a start-up warning where workspaces are full checkouts', () => {
    const at = (value: unknown) => () =>
      parseConfig(
        { environments: [{ ...environment('x', '.', 'x'), setup_cache: value }] },
        tempDir('setup-cache-config-')
      );
    expect(at('yes')).toThrow('environments[0].setup_cache "yes": expected true or false');
    process.env.AGENT_EXECUTOR_WORKSPACES = 'checkout';
    try {
      const config = at(true)();
      const { warnings } = checkStartup(config, 'all', { environments: false });
      expect(warnings).toContainEqual(
        expect.stringMatching(/^environment x: setup_cache is ignored, workspaces are full checkouts/)
      );
    } finally {
      delete process.env.AGENT_EXECUTOR_WORKSPACES;
    }
  });
});

describe('workspaces.min_free', () => {
  it('removes unused shared checkouts, least recently used first, and keeps those in use', async () => {
    const repo = gitRepo();
    const config = parseConfig(
      {
        // More than any disk here: every unused checkout is removed, and the node stops claiming.
        workspaces: { min_free: '1000000TiB' },
        environments: [{ id: 'cow', source: repo.dir, agent: { kind: 'simulated' } }]
      },
      tempDir('setup-cache-free-')
    );
    const data = config.dataDir;
    try {
      // The old commit's checkout has a kept setup layer: it goes with the checkout.
      const cached = { ...config.environments[0]!, setupCache: true, setup: ['true'] };
      const old = await createWorkspace(cached, data, 'run-old', undefined, undefined, true);
      expect(await old.setupLayer!.finish(true)).toBe(true);
      expect(readdirSync(join(data, 'setups'))).toHaveLength(1);
      const head = repo.commit('new.txt');
      const current = await createWorkspace(config.environments[0]!, data, 'run-current');
      expect(current.base).toBe(head);
      // The old run's workspace is gone (past retention); its checkout stays, unused (no cache bound).
      await sweepWorkspaces(data, config.environments, 0, new Set(['run-current']));
      expect(existsSync(old.root)).toBe(false);
      const before = readdirSync(join(data, 'checkouts'));
      expect(before).toHaveLength(2);
      const unused = before.find(name => !name.startsWith(head))!;

      const lines: { object: Record<string, unknown>; message: string }[] = [];
      const log = {
        warn: (object: Record<string, unknown>, message: string) => lines.push({ object, message }),
        info: () => undefined
      } as unknown as FastifyBaseLogger;
      // The retained workspace is not running: only its layers keep its checkout.
      await freeSpaceForRuns(config, new Set(), log);
      const after = readdirSync(join(data, 'checkouts'));
      expect(after).toEqual([before.find(name => name.startsWith(head))]);
      expect(readFileSync(join(current.path, 'new.txt'), 'utf8')).toBe('new.txt\n');
      expect(lines).toHaveLength(1);
      expect(readdirSync(join(data, 'setups'))).toEqual([]);
      expect(lines[0]!.message).toContain(`checkouts/${unused}`);
      expect(lines[0]!.message).toContain('setups/');
      expect(lines[0]!.message).toContain('workspaces.min_free');
    } finally {
      await unmountAll(data);
      expect(mountPoints(data).size).toBe(0);
    }
  }, 120_000);
});
