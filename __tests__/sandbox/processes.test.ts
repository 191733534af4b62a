// No agent process outlives the executor: a double Ctrl-C stops every run's process group before
// the executor exits, and after a SIGKILL the restarted executor stops the survivors (recorded in
// its data dir) before it fails their runs executor_restarted. Runs the bundle (npm run build).

import { afterEach, describe, expect, it } from '@jest/globals';
import { readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { executorCli, spawnExecutor, tempDir } from '../support/executor.js';
import { requireBubblewrap } from './support.js';

/** Pids of this machine's processes whose command line holds `marker`. */
function processesWith(marker: string): number[] {
  const found: number[] = [];
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      if (readFileSync(`/proc/${name}/cmdline`, 'utf8').includes(marker)) found.push(Number(name));
    } catch {
      // ended meanwhile
    }
  }
  return found;
}

// Waits for `check` up to `ms` (generous: the sleeping processes it watches live 300 s, so a long
// wait never lets a wrong answer pass), polling every 50 ms.
async function until(check: () => boolean, ms: number): Promise<boolean> {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    if (check()) return true;
    await new Promise(resolve => setTimeout(resolve, 50));
  }
  return check();
}

/** What a process is waiting in (its kernel wait channel), or '' when it has ended. */
function waitChannel(pid: number): string {
  try {
    return readFileSync(`/proc/${pid}/wchan`, 'utf8');
  } catch {
    return '';
  }
}

function commandOf(pid: number): string {
  try {
    return readFileSync(`/proc/${pid}/comm`, 'utf8').trim();
  } catch {
    return '';
  }
}

function parentOf(pid: number): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
  } catch {
    return 0;
  }
}

/**
 * Whether each sandbox of `marker` has finished starting: bubblewrap's init inside the sandbox (a
 * bwrap whose parent is a bwrap) binds its life to its parent's only after it has started the
 * command, then waits for its children (`do_wait`). A SIGKILL of the executor before that moment
 * can leave the sandbox running until the executor starts again (which stops it through the run's
 * cgroup); this test is about what happens after it.
 */
function sandboxesSettled(marker: string): boolean {
  const inits = processesWith(marker).filter(
    pid => commandOf(pid) === 'bwrap' && commandOf(parentOf(pid)) === 'bwrap'
  );
  return inits.length > 0 && inits.every(pid => waitChannel(pid) === 'do_wait');
}

/** Every process of `marker`, with its parent, group and command line: said when a wait fails. */
function describeProcesses(marker: string): string {
  return processesWith(marker)
    .map(pid => {
      try {
        const stat = readFileSync(`/proc/${pid}/stat`, 'utf8').split(' ').slice(0, 8).join(' ');
        const line = readFileSync(`/proc/${pid}/cmdline`, 'utf8').replace(/\0/g, ' ').slice(0, 200);
        return `${stat} wchan=${waitChannel(pid)} :: ${line}`;
      } catch {
        return `${pid} (ended)`;
      }
    })
    .join('\n');
}

async function setUp(marker: string) {
  requireBubblewrap();
  const dir = tempDir('sandbox-processes-');
  const data = join(dir, 'data');
  writeFileSync(
    join(dir, 'agent-executor.yaml'),
    [
      'log_level: warn',
      'shutdown_grace: 30s',
      'environments:',
      `  - { id: confined, source: ${JSON.stringify(tempDir())} }`,
      `  - { id: open, source: ${JSON.stringify(tempDir())}, sandbox: off }`
    ].join('\n')
  );
  const created = await executorCli(
    ['keys', 'create', '--kind', 'agent', '--name', 't', '--data-dir', data],
    { cwd: dir }
  );
  const key = created.stdout.trim().split('\n').at(-1)!;
  const start = () => spawnExecutor(['--data-dir', data], { cwd: dir });
  const executor = await start();
  const ids: string[] = [];
  for (const environment of ['confined', 'open']) {
    const response = await fetch(`${executor.url}/api/v1/agent/run`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({
        prompt: `@sim run sh -c 'sleep 300; : ${marker}-${environment}' & sh -c 'trap "" TERM INT; sleep 300; : ${marker}-${environment}'`,
        config: { environment_id: environment }
      })
    });
    const body = (await response.json()) as { run_id: string };
    if (!body.run_id) executor.child.kill('SIGKILL');
    expect(body).toHaveProperty('run_id');
    ids.push(body.run_id);
  }
  // Both shells of each run are up (a confined run's bubblewrap processes carry the marker too).
  const started = await until(
    () =>
      processesWith(`${marker}-confined`).length >= 2 &&
      processesWith(`${marker}-open`).length >= 2 &&
      sandboxesSettled(`${marker}-confined`),
    120_000
  );
  if (!started) {
    executor.child.kill('SIGKILL');
    const states = await Promise.all(
      ids.map(async id =>
        (
          await fetch(`${executor.url}/api/v1/agent/runs/${id}/transcript`, {
            headers: { authorization: `Bearer ${key}` }
          })
        ).text()
      )
    );
    throw new Error(
      `runs did not start their processes:\n${describeProcesses(marker)}\n${states.join('\n')}\n${executor.stderr()}`
    );
  }
  return { executor, start, key, ids, data };
}

const markers: string[] = [];
afterEach(() => {
  // Whatever a failed assertion left running is stopped here, so the suite itself leaks nothing.
  for (const marker of markers.splice(0))
    for (const pid of processesWith(marker)) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        // gone
      }
    }
});

describe('agent processes', () => {
  it('a double SIGINT leaves no agent process behind', async () => {
    const marker = `double-sigint-${process.pid}-${Date.now()}`;
    markers.push(marker);
    const { executor } = await setUp(marker);
    executor.child.kill('SIGINT');
    await new Promise(resolve => setTimeout(resolve, 300));
    const code = executor.stop('SIGINT');
    expect(await code).toBe(1);
    const gone = await until(() => processesWith(marker).length === 0, 60_000);
    expect(gone ? '' : describeProcesses(marker)).toBe('');
  }, 240_000);

  it('after a SIGKILL the restarted executor stops the survivors, then fails their runs executor_restarted', async () => {
    const marker = `sigkill-${process.pid}-${Date.now()}`;
    markers.push(marker);
    const { executor, start, key, ids, data } = await setUp(marker);
    await executor.stop('SIGKILL');
    // The confined run dies with the executor (bubblewrap's --die-with-parent); the unconfined one survives.
    const confinedGone = await until(() => processesWith(`${marker}-confined`).length === 0, 60_000);
    expect(confinedGone ? '' : describeProcesses(marker)).toBe('');
    expect(processesWith(`${marker}-open`).length).toBeGreaterThanOrEqual(2);
    const recorded = readdirSync(join(data, 'processes'))
      .map(name => `${name}: ${readFileSync(join(data, 'processes', name), 'utf8').trim()}`)
      .join('\n');
    const again = await start();
    try {
      const allGone = await until(() => processesWith(marker).length === 0, 60_000);
      expect(allGone ? '' : `${describeProcesses(marker)}\nrecorded:\n${recorded}\n${again.stderr()}`).toBe(
        ''
      );
      for (const id of ids) {
        const run = (await (
          await fetch(`${again.url}/api/v1/agent/runs/${id}`, { headers: { authorization: `Bearer ${key}` } })
        ).json()) as { state: string; error_code: string };
        expect(run).toMatchObject({ state: 'FAILED', error_code: 'executor_restarted' });
      }
    } finally {
      await again.stop('SIGTERM');
    }
  }, 240_000);

  it('the restarted executor finds the unconfined survivors by their variable when the records are gone', async () => {
    const marker = `unrecorded-${process.pid}-${Date.now()}`;
    markers.push(marker);
    const { executor, start, data } = await setUp(marker);
    await executor.stop('SIGKILL');
    expect(processesWith(`${marker}-open`).length).toBeGreaterThanOrEqual(2);
    rmSync(join(data, 'processes'), { recursive: true, force: true });
    const again = await start();
    try {
      const allGone = await until(() => processesWith(`${marker}-open`).length === 0, 60_000);
      expect(allGone ? '' : `${describeProcesses(marker)}\n${again.stderr()}`).toBe('');
    } finally {
      await again.stop('SIGTERM');
    }
  }, 240_000);
});
