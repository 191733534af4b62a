// Copy-on-write workspaces across a stop and a start of the bundled executor (a real child process,
// real signals, real overlay mounts; tests run as root, as CI runs them): a SIGTERM, or two, leave no
// mount under the data dir whether a run is in its setup or its agent, nor does a pool whose claim
// is answered while it stops (an in-process pool on a real SQLite store behind a proxy that holds
// the claim's answer, as a slow store would); and a retained workspace
// whose kept setup layer changed while the executor was down is not mounted again over it at the
// next start: a follow-up of that run fails saying why, and a new run builds the layer again.
import { describe, expect, it } from '@jest/globals';
import { execFileSync } from 'node:child_process';
import { appendFileSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseConfig } from '../../src/executor/config/config.js';
import { SqliteStores } from '../../src/executor/store/sqlite.js';
import { WorkerPool } from '../../src/executor/worker/pool.js';
import { mountPoints, unmountAll } from '../../src/executor/workspace/layers.js';
import { type ExecutorWithKey, spawnExecutor, spawnExecutorWithKey, tempDir } from '../support/executor.js';
import { eventually } from '../support/eventually.js';
import { requireBubblewrap } from '../sandbox/support.js';

function gitRepo(): string {
  const dir = tempDir('layers-stop-source-');
  writeFileSync(join(dir, 'README.md'), 'readme\n');
  const git = (...args: string[]) =>
    execFileSync('git', ['-C', dir, '-c', 'user.name=t', '-c', 'user.email=t@t', ...args]);
  git('init', '--quiet');
  git('add', '--all');
  git('commit', '--quiet', '-m', 'initial');
  return dir;
}

type Run = { state: string; status_message?: string; error_code?: string };

function api(ex: { url: string; key: string }) {
  const request = (path: string, body?: unknown) =>
    fetch(ex.url + path, {
      method: body === undefined ? 'GET' : 'POST',
      headers: { authorization: `Bearer ${ex.key}`, 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body)
    });
  return {
    async create(environment: string, prompt: string): Promise<string> {
      const response = await request('/api/v1/agent/run', {
        prompt,
        config: { environment_id: environment }
      });
      const body = (await response.json()) as { run_id?: string };
      expect(body).toHaveProperty('run_id');
      return body.run_id!;
    },
    async followup(id: string, message: string): Promise<void> {
      expect((await request(`/api/v1/agent/runs/${id}/followups`, { message })).status).toBe(200);
    },
    run: async (id: string) => (await (await request(`/api/v1/agent/runs/${id}`)).json()) as Run,
    ended(id: string, what = `run ${id} to end`): Promise<Run> {
      return eventually(
        async () => {
          const run = await this.run(id);
          return ['SUCCEEDED', 'FAILED', 'CANCELLED'].includes(run.state) && run;
        },
        { what, timeoutMs: 60_000 }
      );
    }
  };
}

/** Pids of this machine's processes whose command line holds `marker`. */
function processesWith(marker: string): number[] {
  return readdirSync('/proc')
    .filter(name => /^\d+$/.test(name))
    .filter(name => {
      try {
        return readFileSync(`/proc/${name}/cmdline`, 'utf8').includes(marker);
      } catch {
        return false;
      }
    })
    .map(Number);
}

/** Mount points under the data dir, as this machine's mount table lists them after the executor. */
const mountsUnder = (dataDir: string) => [...mountPoints(dataDir)];

/** After a failed test: whatever it left mounted goes (the assertions above have already spoken). */
function unmountLeft(dataDir: string): void {
  for (const path of mountsUnder(dataDir)) execFileSync('umount', ['-l', path]);
}

describe('stopping the executor with runs in their setup and in their agent', () => {
  async function busyExecutor(marker: string): Promise<{ ex: ExecutorWithKey; ids: string[] }> {
    requireBubblewrap();
    const source = gitRepo();
    const ex = await spawnExecutorWithKey({
      prefix: 'layers-stop-',
      config: [
        'log_level: info',
        'shutdown_grace: 1s',
        'workspaces: { retention: 1h }',
        'environments:',
        `  - { id: slow-setup, source: ${JSON.stringify(source)}, setup: ["sh -c 'sleep 300; : ${marker}-setup'"] }`,
        `  - { id: busy, source: ${JSON.stringify(source)} }`
      ].join('\n')
    });
    const runs = api(ex);
    const ids = [
      await runs.create('slow-setup', '@sim say never'),
      await runs.create('busy', `@sim run sh -c 'sleep 300; : ${marker}-agent'`)
    ];
    // Both are under way: one in its setup command, the other in its agent, each over a mounted workspace.
    await eventually(
      () => processesWith(`${marker}-setup`).length > 0 && processesWith(`${marker}-agent`).length > 0,
      { what: 'the setup command and the agent to be running', timeoutMs: 60_000 }
    );
    const workspaces = ids.map(id => join(ex.dataDir, 'workspaces', id));
    expect(workspaces.every(path => mountPoints(ex.dataDir).has(path))).toBe(true);
    return { ex, ids };
  }

  it('SIGTERM: exits 0 once the runs stopped, and nothing stays mounted under the data dir', async () => {
    const marker = `layers-stop-${process.pid}-once`;
    const { ex } = await busyExecutor(marker);
    try {
      expect(await ex.stop('SIGTERM')).toBe(0);
      expect(mountsUnder(ex.dataDir)).toEqual([]);
      expect(processesWith(marker)).toEqual([]);
    } finally {
      await ex.stop('SIGKILL');
      unmountLeft(ex.dataDir);
    }
  }, 120_000);

  it('a second SIGTERM: exits 1 at once, and still nothing stays mounted under the data dir', async () => {
    const marker = `layers-stop-${process.pid}-twice`;
    const { ex } = await busyExecutor(marker);
    try {
      ex.child.kill('SIGTERM');
      await eventually(() => ex.stderr().includes('stopping: running runs get up to'), {
        what: 'the executor to log that it is stopping'
      });
      expect(await ex.stop('SIGTERM')).toBe(1);
      expect(mountsUnder(ex.dataDir)).toEqual([]);
      await eventually(() => processesWith(marker).length === 0, {
        what: `no process of ${marker} left`
      });
    } finally {
      await ex.stop('SIGKILL');
      unmountLeft(ex.dataDir);
    }
  }, 120_000);
});

describe('a claim answered while the pool stops', () => {
  it('runs its run within the stop, so no workspace stays mounted after it', async () => {
    const dir = tempDir('layers-late-claim-');
    const config = parseConfig(
      {
        log_level: 'silent',
        data_dir: join(dir, 'data'),
        workspaces: { retention: '1h' },
        environments: [{ id: 'cow', source: gitRepo(), sandbox: 'off' }]
      },
      dir
    );
    const real = await SqliteStores.open(join(config.dataDir, 'executor.db'));
    let claimed!: () => void;
    const claimHeld = new Promise<void>(resolve => (claimed = resolve));
    let stopping!: () => void;
    const stopBegun = new Promise<void>(resolve => (stopping = resolve));
    // The claim commits at once; its answer reaches the pool only once its stop has begun.
    const slow = new Proxy(real.claims, {
      get(target, name, receiver) {
        const value = Reflect.get(target, name, receiver) as unknown;
        if (typeof value !== 'function') return value;
        const call = (...args: unknown[]) => (value as (...a: unknown[]) => unknown).apply(target, args);
        if (name !== 'claimNext') return call;
        return async (...args: unknown[]) => {
          const run = await call(...args);
          if (run) {
            claimed();
            await stopBegun;
          }
          return run;
        };
      }
    });
    const log = { info: () => undefined, warn: () => undefined, error: () => undefined };
    const pool = new WorkerPool({ ...real, claims: slow }, config, log as never);
    try {
      await real.runs.createRun(
        {
          run_id: 'run_late_claim',
          team: 'default',
          environment_id: 'cow',
          title: null,
          prompt: '@sim write late.txt claimed',
          config: '{"environment_id":"cow"}',
          extra: '{}',
          creator_type: 'user',
          creator_uid: 'u',
          creator_name: 'u',
          created_at: new Date().toISOString()
        },
        undefined,
        100
      );
      const started = pool.start();
      await claimHeld;
      const stopped = pool.stop(5000);
      stopping();
      await stopped;
      await started;
      const run = await eventually(
        async () => {
          const found = await real.runs.getRunAnyTeam('run_late_claim');
          return found && ['SUCCEEDED', 'FAILED', 'CANCELLED'].includes(found.state) && found;
        },
        { what: 'the late-claimed run to end', timeoutMs: 30_000 }
      );
      expect({ state: run.state, message: run.status_message }).toEqual({
        state: 'SUCCEEDED',
        message: run.state === 'SUCCEEDED' ? run.status_message : 'the run succeeded'
      });
      expect(mountsUnder(config.dataDir)).toEqual([]);
    } finally {
      await unmountAll(config.dataDir);
      await real.close();
    }
  }, 120_000);
});

describe('a retained workspace over a kept setup layer changed while the executor was down', () => {
  it('is not mounted again over it: its follow-up fails saying why, and a new run builds the layer again', async () => {
    requireBubblewrap();
    const source = gitRepo();
    const ex = await spawnExecutorWithKey({
      prefix: 'layers-restart-',
      config: [
        'log_level: warn',
        'workspaces: { retention: 1h }',
        'environments:',
        `  - id: cached`,
        `    source: ${JSON.stringify(source)}`,
        `    setup_cache: true`,
        `    setup: ["mkdir -p deps && echo built > deps/lib.txt"]`
      ].join('\n')
    });
    const dataDir = ex.dataDir;
    let again: Awaited<ReturnType<typeof spawnExecutor>> | undefined;
    try {
      const runs = api(ex);
      const USES_SETUP = '@sim run test "$(cat deps/lib.txt)" = built';
      const builder = await runs.create('cached', USES_SETUP);
      expect((await runs.ended(builder)).state).toBe('SUCCEEDED');
      const user = await runs.create('cached', `${USES_SETUP}\n@sim write mine.txt kept`);
      expect((await runs.ended(user)).state).toBe('SUCCEEDED');
      expect(await ex.stop('SIGTERM')).toBe(0);
      expect(mountsUnder(dataDir)).toEqual([]);

      // While it is down, the kept layer under both retained workspaces changes.
      const [key] = readdirSync(join(dataDir, 'setups'));
      appendFileSync(join(dataDir, 'setups', key!, 'upper', 'deps', 'lib.txt'), 'tampered\n');

      again = await spawnExecutor(['--data-dir', dataDir], { cwd: ex.dir });
      const next = api({ url: again.url, key: ex.key });
      // The start-up sweep has run by the time it listens: neither workspace is mounted over it.
      const workspace = join(dataDir, 'workspaces', user);
      expect(mountPoints(dataDir).has(workspace)).toBe(false);
      expect(mountPoints(dataDir).has(join(dataDir, 'workspaces', builder))).toBe(false);
      await next.followup(user, '@sim run cat deps/lib.txt mine.txt');
      const followed = await next.ended(user, `the follow-up of ${user} to end`);
      expect(followed).toMatchObject({ state: 'FAILED' });
      expect(followed.status_message).toContain(
        `the workspace of run ${user} cannot be continued: it could not be mounted again: the setup layer under it (setups/${key}) changed since the workspace was made over it`
      );
      // A new run does not use the changed layer: its setup runs again, and the agent sees its output.
      const fresh = await next.create('cached', USES_SETUP);
      expect((await next.ended(fresh)).state).toBe('SUCCEEDED');
      expect(readFileSync(join(dataDir, 'setups', key!, 'upper', 'deps', 'lib.txt'), 'utf8')).toBe('built\n');
      expect(await again.stop('SIGTERM')).toBe(0);
      expect(mountsUnder(dataDir)).toEqual([]);
    } finally {
      await ex.stop('SIGKILL');
      await again?.stop('SIGKILL');
      unmountLeft(dataDir);
    }
  }, 180_000);
});

describe('a retained workspace over a shared checkout changed while the executor was down', () => {
  it('is not mounted again over it: its follow-up fails saying why, and a new run gets the commit as it was', async () => {
    requireBubblewrap();
    const source = gitRepo();
    const ex = await spawnExecutorWithKey({
      prefix: 'layers-restart-checkout-',
      config: [
        'log_level: warn',
        'workspaces: { retention: 1h }',
        'environments:',
        `  - id: plain`,
        `    source: ${JSON.stringify(source)}`
      ].join('\n')
    });
    const dataDir = ex.dataDir;
    let again: Awaited<ReturnType<typeof spawnExecutor>> | undefined;
    try {
      const runs = api(ex);
      const kept = await runs.create('plain', '@sim write mine.txt kept');
      expect((await runs.ended(kept)).state).toBe('SUCCEEDED');
      expect(await ex.stop('SIGTERM')).toBe(0);
      expect(mountsUnder(dataDir)).toEqual([]);

      // While it is down, a file of the shared checkout under the retained workspace changes.
      const [checkout] = readdirSync(join(dataDir, 'checkouts'));
      appendFileSync(join(dataDir, 'checkouts', checkout!, 'tree', 'README.md'), 'tampered\n');

      again = await spawnExecutor(['--data-dir', dataDir], { cwd: ex.dir });
      const next = api({ url: again.url, key: ex.key });
      expect(mountPoints(dataDir).has(join(dataDir, 'workspaces', kept))).toBe(false);
      await next.followup(kept, '@sim run cat README.md mine.txt');
      const followed = await next.ended(kept, `the follow-up of ${kept} to end`);
      expect(followed).toMatchObject({ state: 'FAILED' });
      expect(followed.status_message).toContain(
        `the workspace of run ${kept} cannot be continued: it could not be mounted again: the shared checkout under it (checkouts/${checkout}) changed since the workspace was made over it`
      );
      // A new run of the commit gets it as it was (the checkout is made again).
      const fresh = await next.create('plain', '@sim run test "$(cat README.md)" = readme');
      expect((await next.ended(fresh)).state).toBe('SUCCEEDED');
      expect(readFileSync(join(dataDir, 'checkouts', checkout!, 'tree', 'README.md'), 'utf8')).toBe(
        'readme\n'
      );
      expect(await again.stop('SIGTERM')).toBe(0);
      expect(mountsUnder(dataDir)).toEqual([]);
    } finally {
      await ex.stop('SIGKILL');
      await again?.stop('SIGKILL');
      unmountLeft(dataDir);
    }
  }, 180_000);
});
