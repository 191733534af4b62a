// Copy-on-write workspaces (workspace/layers.ts), on a real executor that is root here: runs of one
// commit share one checkout through overlayfs mounts, and nothing one run writes, deletes or writes
// through a link reaches the shared checkout or another run; the quota counts only what a run
// wrote; mounts go with the node; unused checkouts are collected; a checkout changed behind the
// executor's back is rebuilt, not trusted; and the full-checkout fallback keeps the same behaviour.
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { execFileSync } from 'node:child_process';
import {
  appendFileSync,
  chmodSync,
  existsSync,
  mkdirSync,
  readFileSync,
  readdirSync,
  statSync,
  symlinkSync,
  writeFileSync
} from 'node:fs';
import { join } from 'node:path';
import { parseConfig } from '../../src/executor/config/config.js';
import { createWorkspace, sweepWorkspaces } from '../../src/executor/workspace/workspace.js';
import { forgetVerified, mountPoints, unmountAll } from '../../src/executor/workspace/layers.js';
import { checkoutWhole, sharedCheckout } from '../../src/executor/workspace/shared-checkout.js';
import { type TestExecutor, startTestExecutor, tempDir } from '../support/executor.js';
import { eventually } from '../support/eventually.js';
import { waitForState } from '../support/wait.js';

let repo: string;

function gitRepo(): string {
  const dir = tempDir('cow-source-');
  writeFileSync(join(dir, 'README.md'), 'original\n');
  mkdirSync(join(dir, 'src'));
  writeFileSync(join(dir, 'src', 'app.txt'), 'app\n');
  symlinkSync('src/app.txt', join(dir, 'link'));
  // Larger than the quota below: a run pays for what it writes, not for the repository.
  writeFileSync(join(dir, 'big.bin'), Buffer.alloc(300 * 1024));
  const git = (...args: string[]) =>
    execFileSync('git', ['-C', dir, '-c', 'user.name=t', '-c', 'user.email=t@t', ...args]);
  git('init', '--quiet');
  git('add', '--all');
  git('commit', '--quiet', '-m', 'initial');
  return dir;
}

const WRITER = [
  '@sim run echo changed > README.md',
  '@sim run echo new > new.txt',
  '@sim run rm src/app.txt && echo through-link >> link || true',
  '@sim run rm big.bin',
  '@sim run echo linked >> link'
].join('\n');
// Fails (non-zero exit fails the run) unless the workspace is exactly the commit.
const CHECKER =
  '@sim run test ! -e new.txt && test "$(cat README.md)" = original && test "$(cat src/app.txt)" = app && test -f big.bin && git status --porcelain | wc -l | grep -qx 0';

async function executorOn(quota = '200KiB'): Promise<{ ex: TestExecutor; key: string }> {
  const ex = await startTestExecutor({
    workers: 4,
    workspaces: { retention: '1h', quota },
    environments: [{ id: 'cow', source: repo, agent: { kind: 'simulated' } }]
  });
  return { ex, key: (await ex.key()).raw };
}

async function run(on: { ex: TestExecutor; key: string }, prompt: string): Promise<string> {
  const response = await on.ex.request('/api/v1/agent/run', {
    method: 'POST',
    key: on.key,
    body: JSON.stringify({ prompt, config: { environment_id: 'cow' } })
  });
  expect(response.status).toBe(200);
  return ((await response.json()) as { run_id: string }).run_id;
}

async function diffOf(on: { ex: TestExecutor; key: string }, id: string) {
  // The transcript is read once it holds the run's end (a run that changed nothing records no diff).
  const events = await eventually(
    async () => {
      const body = (await (
        await on.ex.request(`/api/v1/agent/runs/${id}/transcript`, { key: on.key })
      ).json()) as { events: Record<string, unknown>[] };
      return body.events.some(event => event.kind === 'state' && event.state === 'SUCCEEDED') && body.events;
    },
    { what: `the transcript of run ${id} to hold its end`, timeoutMs: 30_000 }
  );
  const diff = events.find(event => event.kind === 'diff') as
    { files: { path: string; change: string }[] } | undefined;
  return diff?.files ?? [];
}

/** The behaviour both kinds of workspace must have; answers the two runs' workspaces. */
async function isolation(on: { ex: TestExecutor; key: string }): Promise<string[]> {
  const writer = await run(on, WRITER);
  const written = join(on.ex.dataDir, 'workspaces', writer);
  expect(await waitForState({ on: on.ex, key: on.key, id: writer })).toMatchObject({ state: 'SUCCEEDED' });
  const files = await diffOf(on, writer);
  expect(files).toEqual([
    { path: 'README.md', change: 'modified' },
    { path: 'big.bin', change: 'deleted' },
    { path: 'new.txt', change: 'added' },
    { path: 'src/app.txt', change: 'modified' }
  ]);
  expect(readFileSync(join(written, 'src', 'app.txt'), 'utf8')).toBe('through-link\nlinked\n');
  // The writer's workspace is retained (1h) while the next run of the commit starts clean.
  const checker = await run(on, CHECKER);
  expect(await waitForState({ on: on.ex, key: on.key, id: checker })).toMatchObject({ state: 'SUCCEEDED' });
  expect(await diffOf(on, checker)).toEqual([]);
  // The source is never written to.
  expect(readFileSync(join(repo, 'README.md'), 'utf8')).toBe('original\n');
  expect(existsSync(join(repo, 'new.txt'))).toBe(false);
  return [written, join(on.ex.dataDir, 'workspaces', checker)];
}

beforeAll(() => {
  repo = gitRepo();
});

describe('copy-on-write workspaces (tests run as root, as CI runs them)', () => {
  let on: { ex: TestExecutor; key: string };
  /** Data dirs of workspaces made directly: unmounted even when a test fails half-way. */
  const direct: string[] = [];
  beforeAll(async () => {
    on = await executorOn();
  });
  afterAll(async () => {
    await on.ex.stop(1000);
    for (const data of direct) await unmountAll(data);
  });

  it('keeps two runs of one commit apart, and the shared checkout as the commit was', async () => {
    const [written, checked] = await isolation(on);
    const mounts = mountPoints(join(on.ex.dataDir, 'workspaces'));
    expect(mounts.has(written!) && mounts.has(checked!)).toBe(true);
    // One checkout serves both runs, and it holds none of the writer's changes.
    const checkouts = readdirSync(join(on.ex.dataDir, 'checkouts'));
    expect(checkouts).toHaveLength(1);
    const tree = join(on.ex.dataDir, 'checkouts', checkouts[0]!, 'tree');
    expect(readFileSync(join(tree, 'README.md'), 'utf8')).toBe('original\n');
    expect(readFileSync(join(tree, 'src', 'app.txt'), 'utf8')).toBe('app\n');
    expect(existsSync(join(tree, 'big.bin')) && !existsSync(join(tree, 'new.txt'))).toBe(true);
  }, 120_000);

  it('counts against the quota only what the run wrote, not the repository under it', async () => {
    // The repository is 300 KiB and the quota 200 KiB: a run that writes little succeeds.
    const small = await run(on, '@sim write notes.txt a few bytes');
    expect(await waitForState({ on: on.ex, key: on.key, id: small })).toMatchObject({ state: 'SUCCEEDED' });
    const big = await run(on, '@sim run head -c 600000 /dev/zero > big2.bin\n@sim sleep 10');
    expect(await waitForState({ on: on.ex, key: on.key, id: big })).toMatchObject({
      error_code: 'workspace_quota_exceeded'
    });
  }, 120_000);

  it('leaves no mount behind when the node stops, and mounts retained workspaces again at start', async () => {
    const dir = tempDir('cow-restart-');
    const config = parseConfig(
      {
        workspaces: { retention: '1h' },
        environments: [{ id: 'cow', source: repo, agent: { kind: 'simulated' } }]
      },
      dir
    );
    const data = config.dataDir;
    direct.push(data);
    const workspace = await createWorkspace(config.environments[0]!, data, 'run-a');
    writeFileSync(join(workspace.path, 'mine.txt'), 'kept\n');
    expect(mountPoints(data).has(workspace.root)).toBe(true);
    await unmountAll(data);
    expect(mountPoints(data).size).toBe(0);
    expect(existsSync(join(workspace.root, 'mine.txt'))).toBe(false);
    // The start-up sweep mounts the retained workspace again, its layer intact; the checkout under
    // it stays, even with no room at all for unused ones.
    await sweepWorkspaces(data, config.environments, 3_600_000, new Set(), 0);
    expect(readFileSync(join(workspace.root, 'mine.txt'), 'utf8')).toBe('kept\n');
    expect(readdirSync(join(data, 'checkouts'))).toHaveLength(1);
    // Past retention it is unmounted and removed, and its unused checkout collected.
    await sweepWorkspaces(data, config.environments, 0, new Set(), 0);
    expect(mountPoints(data).size).toBe(0);
    expect(existsSync(workspace.root)).toBe(false);
    expect(readdirSync(join(data, 'checkouts'))).toEqual([]);
    expect(readdirSync(join(data, 'layers')).filter(name => !name.startsWith('.'))).toEqual([]);
  }, 120_000);

  it('reuses an intact shared checkout after a restart and rebuilds one changed behind its back', async () => {
    const dir = tempDir('cow-tamper-');
    const config = parseConfig(
      { environments: [{ id: 'cow', source: repo, agent: { kind: 'simulated' } }] },
      dir
    );
    const data = config.dataDir;
    direct.push(data);
    // Given to a run user, as a root executor's checkouts are: the index still matches by stat.
    // The files are that user's from the start, and a source only root may read is still read.
    const owner = { uid: 4242, gid: 4242 };
    chmodSync(repo, 0o700);
    const first = await createWorkspace(config.environments[0]!, data, 'run-a', undefined, owner);
    const stale = (ws: typeof first) =>
      execFileSync('git', ['--git-dir', ws.git.gitDir, '--work-tree', ws.root, 'diff-files', '--name-only'], {
        encoding: 'utf8'
      });
    expect(stale(first)).toBe('');
    // The agent's own repository agrees without reading a file again, and is the run user's too.
    expect(
      execFileSync('git', ['-c', 'safe.directory=*', '-C', first.path, 'diff-files', '--name-only'], {
        encoding: 'utf8'
      })
    ).toBe('');
    for (const path of ['.', 'README.md', '.git', '.git/index', '.git/HEAD'])
      expect(statSync(join(first.path, path)).uid).toBe(4242);
    const [name] = readdirSync(join(data, 'checkouts'));
    // The executor's own git dir of the checkout stays root's.
    expect(statSync(join(data, 'checkouts', name!, 'git', 'index')).uid).toBe(0);
    const readme = join(data, 'checkouts', name!, 'tree', 'README.md');
    const built = statSync(readme).ino;
    await unmountAll(data);
    forgetVerified(); // as a restarted process
    // A retained workspace's check at start-up and a new run's use of the checkout, at once: one
    // check, and neither finds the unchanged checkout changed (two at once failed on the index lock).
    const head = execFileSync('git', ['-C', repo, 'rev-parse', 'HEAD'], { encoding: 'utf8' }).trim();
    const objects = join(repo, '.git', 'objects');
    const [whole, made] = await Promise.all([
      checkoutWhole(join(data, 'checkouts', name!)),
      sharedCheckout(data, head, [objects], join(repo, '.git', 'shallow'), owner)
    ]);
    expect(whole).toBe(true);
    expect(made).toBe(join(data, 'checkouts', name!));
    expect(statSync(readme).ino).toBe(built);
    const again = await createWorkspace(config.environments[0]!, data, 'run-b', undefined, owner);
    expect(statSync(readme).ino).toBe(built);
    expect(stale(again)).toBe('');
    await unmountAll(data);
    appendFileSync(readme, 'tampered\n');
    writeFileSync(join(data, 'checkouts', name!, 'tree', 'planted.txt'), 'planted\n');
    forgetVerified();
    const second = await createWorkspace(config.environments[0]!, data, 'run-c', undefined, owner);
    expect(readFileSync(join(second.path, 'README.md'), 'utf8')).toBe('original\n');
    expect(existsSync(join(second.path, 'planted.txt'))).toBe(false);
    expect((await second.diff()).files).toEqual([]);
    expect(statSync(join(second.path, 'README.md')).uid).toBe(4242);
    await sweepWorkspaces(data, config.environments, 0, new Set(), 0);
    expect(mountPoints(data).size).toBe(0);
  }, 120_000);
});

describe('full checkouts (the fallback where overlayfs cannot be mounted)', () => {
  let on: { ex: TestExecutor; key: string };
  beforeAll(async () => {
    process.env.AGENT_EXECUTOR_WORKSPACES = 'checkout';
    on = await executorOn('1MiB');
  });
  afterAll(async () => {
    await on.ex.stop(1000);
    delete process.env.AGENT_EXECUTOR_WORKSPACES;
  });

  it('keeps the same behaviour with a full checkout per run, and mounts nothing', async () => {
    const [written] = await isolation(on);
    expect(mountPoints(on.ex.dataDir).size).toBe(0);
    expect(existsSync(join(on.ex.dataDir, 'checkouts'))).toBe(false);
    expect(readFileSync(join(written!, 'README.md'), 'utf8')).toBe('changed\n');
  }, 120_000);
});

describe('workspaces.cache_size', () => {
  it('bounds unused shared checkouts (10 GiB by default) and takes binary units only', () => {
    const cache = (value?: string) =>
      parseConfig(value === undefined ? {} : { workspaces: { cache_size: value } }, tempDir('cow-config-'))
        .workspaces.cacheBytes;
    expect(cache()).toBe(10 * 1024 ** 3);
    expect(cache('2GiB')).toBe(2 * 1024 ** 3);
    expect(() => cache('2GB')).toThrow(/workspaces\.cache_size/);
  });
});
