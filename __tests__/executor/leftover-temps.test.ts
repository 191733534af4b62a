// An unconfined harness turn's TMPDIR is DATA_DIR/tmp/t<pid>.<random>; the turn removes it when it
// ends, and an executor killed first leaves it behind. The node's start-up and maintenance sweep
// removes every such folder no live turn holds, never the one a live turn is using, and never one
// of another live process sharing the data dir.
import { afterAll, expect, it } from '@jest/globals';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { makeRunTemp, releaseRunTemp, sweepRunTemps } from '../../src/executor/worker/run-temp.js';
import { eventually } from '../support/eventually.js';
import { type TestExecutor, startTestExecutor, tempDir } from '../support/executor.js';

const work = tempDir('leftover-temps-');
const mark = join(work, 'tmpdir.txt');
// A harness CLI that says where its TMPDIR is, then waits for the test's word before it answers
// (and tells the start-up check its version).
const cli = [
  '/bin/sh',
  '-c',
  `case "$0 $*" in *--version*) echo 0.0.1; exit 0;; esac; echo "$TMPDIR" > ${JSON.stringify(mark)}; while [ ! -e ${JSON.stringify(`${mark}.go`)} ]; do sleep 0.1; done; ` +
    `echo '{"type":"result","subtype":"success","result":"done","usage":{}}'`
];
const raw = {
  workspaces: { retention: '1s', continue_for: '0s' },
  environments: [
    {
      id: 'harness',
      source: tempDir(),
      sandbox: 'off',
      agent: { kind: 'claude-code', command: cli, args: [] }
    }
  ]
};
const started: TestExecutor[] = [];

afterAll(async () => {
  for (const ex of started) await ex.stop(1000).catch(() => undefined);
  rmSync(work, { recursive: true, force: true });
  if (started[0]) rmSync(dirname(started[0].dataDir), { recursive: true, force: true });
});

/** A folder as a turn of a killed executor leaves it: a file of the agent's inside. */
function leave(dataDir: string, name: string): string {
  const path = join(dataDir, 'tmp', name);
  mkdirSync(join(path, 'claude-0'), { recursive: true });
  writeFileSync(join(path, 'claude-0', 'session.sock.lock'), 'left behind');
  return path;
}

it('removes the temp folders a killed executor left, at start-up and while running, never a live turn’s', async () => {
  const first = await startTestExecutor(raw);
  started.push(first);
  const { raw: key } = await first.key();
  const created = await first.request('/api/v1/agent/runs', {
    method: 'POST',
    key,
    body: JSON.stringify({ prompt: 'hold your TMPDIR', config: { environment_id: 'harness' } })
  });
  expect(created.status).toBe(200);
  const { run_id: runId } = (await created.json()) as { run_id: string };

  // The live turn's TMPDIR, under DATA_DIR/tmp.
  await eventually(() => existsSync(mark) && readFileSync(mark, 'utf8').trim() !== '', {
    what: 'the harness CLI to report its TMPDIR',
    timeoutMs: 60_000
  });
  const live = readFileSync(mark, 'utf8').trim();
  expect(dirname(live)).toBe(join(first.dataDir, 'tmp'));
  expect(existsSync(live)).toBe(true);

  // One left while the node runs goes at the next maintenance sweep; the live turn's stays.
  const during = leave(first.dataDir, 'tLeftWhileRunning');
  await eventually(() => !existsSync(during), { what: `${during} removed`, timeoutMs: 30_000 });
  expect(existsSync(live)).toBe(true);

  // The turn ends: it removes its own.
  writeFileSync(`${mark}.go`, '');
  await eventually(
    async () => {
      const response = await first.request(`/api/v1/agent/runs/${runId}`, { key });
      return ((await response.json()) as { state: string }).state === 'SUCCEEDED';
    },
    { what: `run ${runId} to succeed`, timeoutMs: 60_000 }
  );
  await eventually(() => !existsSync(live), { what: `${live} removed by its turn`, timeoutMs: 30_000 });
  await first.stop(1000);

  // As a SIGKILL leaves it: the next process removes it as it starts.
  const killed = leave(first.dataDir, 'tKilled1');
  const second = await startTestExecutor(raw, first);
  started.push(second);
  await eventually(() => !existsSync(killed), { what: `${killed} removed at start-up`, timeoutMs: 30_000 });
}, 180_000);

it("leaves the temp folders of another live executor process sharing the data dir, removes a dead one's", async () => {
  const dataDir = join(tempDir('leftover-temps-siblings-'), 'data');
  const sibling = spawn(process.execPath, ['-e', 'process.stdin.resume()'], {
    stdio: ['pipe', 'ignore', 'ignore']
  });
  await once(sibling, 'spawn');
  try {
    const theirs = leave(dataDir, `t${sibling.pid}.abc123`);
    const mineUnheld = leave(dataDir, `t${process.pid}.def456`);
    const mineHeld = makeRunTemp(dataDir);
    expect(sweepRunTemps(dataDir)).toBe(1);
    expect(existsSync(join(theirs, 'claude-0'))).toBe(true);
    expect(existsSync(mineUnheld)).toBe(false);
    expect(existsSync(mineHeld)).toBe(true);
    // Once that process is gone, its folder is a leftover.
    sibling.stdin!.end();
    await once(sibling, 'exit');
    expect(sweepRunTemps(dataDir)).toBe(1);
    expect(existsSync(theirs)).toBe(false);
    releaseRunTemp(mineHeld);
    expect(existsSync(mineHeld)).toBe(false);
  } finally {
    sibling.kill();
    rmSync(dirname(dataDir), { recursive: true, force: true });
  }
});
