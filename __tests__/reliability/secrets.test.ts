// The API key never leaks: not in the action's log (apart from the `::add-mask::` command the
// runner consumes), outputs, state or summary, not in the executor's log, and not in its database.
// Checked through the bundles as users run them, on the success, failure, timeout, post-step and
// wrong-key paths, for the raw key and the encodings a leak would most likely take.
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { readFileSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { generateKey } from '../../src/executor/store/keys.js';
import { type ExecutorProcess, createKeyWithCli, spawnExecutor, tempDir } from '../support/executor.js';
import { type ActionRun, runAction } from '../support/runner.js';

/** The forms a leaked key would take: raw, the secret part after the shown hint, header, base64. */
function leakForms(key: string): Record<string, string> {
  return {
    raw: key,
    'secret part': key.slice(8),
    header: `Bearer ${key}`,
    base64: Buffer.from(key).toString('base64'),
    'base64 of header': Buffer.from(`Bearer ${key}`).toString('base64'),
    base64url: Buffer.from(key).toString('base64url'),
    'url-encoded header': encodeURIComponent(`Bearer ${key}`)
  };
}

/** Names each form of each key found in the text (empty when none is). */
function leaks(text: string, keys: string[]): string[] {
  const found: string[] = [];
  for (const key of keys)
    for (const [form, value] of Object.entries(leakForms(key)))
      if (text.includes(value)) found.push(`${form} of ${key.slice(0, 8)}…`);
  return found;
}

/** The action's log without the one line that hands the key to the runner's masker. */
function withoutMaskCommands(log: string, key: string): string {
  return log
    .split('\n')
    .filter(line => line.trim() !== `::add-mask::${key}`)
    .join('\n');
}

function filesUnder(dir: string, limit = 5000): string[] {
  const files: string[] = [];
  const walk = (path: string) => {
    for (const entry of readdirSync(path)) {
      if (files.length >= limit) return;
      const full = join(path, entry);
      const stat = statSync(full, { throwIfNoEntry: false });
      if (stat?.isDirectory()) walk(full);
      else if (stat?.isFile()) files.push(full);
    }
  };
  walk(dir);
  return files;
}

let dir: string;
let data: string;
let key: string;
let executor: ExecutorProcess;
const wrongKeys = [generateKey(), 'arx_not-even-well-formed-but-still-a-secret-0123'];
const actions: { name: string; key: string; run: ActionRun }[] = [];

beforeAll(async () => {
  dir = tempDir('secrets-');
  data = join(dir, 'data');
  // debug: the most the executor ever logs.
  writeFileSync(
    join(dir, 'agent-executor.yaml'),
    'workers: 2\nshutdown_grace: 1s\nlog_level: debug\nlimits:\n  rate_limit_per_minute: 0\n'
  );
  key = await createKeyWithCli(dir, { name: 'secret', dataDir: data });
  expect(key).toMatch(/^arx_[0-9A-Za-z]{36}$/);
  executor = await spawnExecutor(['--data-dir', data], { cwd: dir });

  const inputs = (apiKey: string, extra: Record<string, string> = {}) => ({
    'base-url': executor.url,
    'api-key': apiKey,
    'environment-id': 'local',
    prompt: '@sim say hello',
    ...extra
  });
  const [success, failure, timeout, detached, ...wrong] = await Promise.all([
    runAction(inputs(key)),
    runAction(inputs(key, { prompt: '@sim fail x' })),
    runAction(inputs(key, { prompt: '@sim sleep 30', timeout: '2s' })),
    runAction(inputs(key, { prompt: '@sim sleep 30', wait: 'false' })),
    ...wrongKeys.map(wrongKey => runAction(inputs(wrongKey)))
  ]);
  actions.push(
    { name: 'success', key, run: success! },
    { name: 'failure', key, run: failure! },
    { name: 'timeout', key, run: timeout! },
    { name: 'wait: false', key, run: detached! },
    ...wrong.map((run, i) => ({ name: `wrong key ${i}`, key: wrongKeys[i]!, run }))
  );
  // The post step of a main step that was killed before it settled the run: it cancels the run.
  const post = await runAction(inputs(key), {
    state: { isPost: 'true', 'run-id': detached!.outputs['run-id']! }
  });
  actions.push({ name: 'post step', key, run: post });
  expect(await executor.stop('SIGTERM')).toBe(0);
}, 120_000);

afterAll(async () => {
  await executor?.stop('SIGKILL');
  if (dir) rmSync(dir, { recursive: true, force: true });
});

describe('the API key', () => {
  it('would be found by the checks below in every form they look for', () => {
    const planted = generateKey();
    for (const [form, value] of Object.entries(leakForms(planted)))
      expect({ form, found: leaks(`log line: ${value}.`, [planted]).length > 0 }).toEqual({
        form,
        found: true
      });
    expect(withoutMaskCommands(`::add-mask::${planted}\nnext`, planted)).toBe('next');
  });

  it('took the paths under test', () => {
    const byName = Object.fromEntries(actions.map(a => [a.name, a.run]));
    expect(byName.success!.outputs.conclusion).toBe('succeeded');
    expect(byName.failure!.outputs).toMatchObject({ conclusion: 'failed', 'status-message': 'x' });
    expect(byName.timeout!.outputs.conclusion).toBe('timed_out');
    expect(byName['wait: false']!.outputs['run-id']).toMatch(/^[0-9a-f-]{36}$/);
    expect(byName['post step']!.stdout).toMatch(/cancel/i);
    for (const i of wrongKeys.keys()) {
      expect(byName[`wrong key ${i}`]!.code).toBe(1);
      expect(byName[`wrong key ${i}`]!.stdout).toMatch(/401|API key/);
    }
  });

  it('is masked before anything is logged, and appears nowhere else in the action', () => {
    for (const { name, key: used, run } of actions) {
      // The first thing either step writes is the mask command.
      const first = run.stdout.split('\n')[0]!.trim();
      expect({ name, first }).toEqual({ name, first: `::add-mask::${used}` });
      const everything = {
        stdout: withoutMaskCommands(run.stdout, used),
        stderr: withoutMaskCommands(run.stderr, used),
        outputs: JSON.stringify(run.outputs),
        state: JSON.stringify(run.state),
        summary: run.summary
      };
      for (const [where, text] of Object.entries(everything))
        expect({ name, where, leaks: leaks(text, [key, ...wrongKeys]) }).toEqual({ name, where, leaks: [] });
    }
  });

  it("is not in the executor's log", () => {
    const log = executor.stderr();
    // The log is there and saw the requests (so the check below is not vacuous).
    expect(log).toMatch(/"msg":"request"/);
    expect(log.match(/"status":401/g)?.length).toBeGreaterThanOrEqual(wrongKeys.length);
    expect(leaks(log, [key, ...wrongKeys])).toEqual([]);
  });

  it('is not in the database or anywhere else in the data directory', () => {
    const files = filesUnder(data);
    expect(files.some(file => file.endsWith('executor.db'))).toBe(true);
    for (const file of files) {
      const bytes = readFileSync(file);
      // latin1 keeps every byte as one character, so ASCII forms are found wherever they are.
      expect({ file, leaks: leaks(bytes.toString('latin1'), [key, ...wrongKeys]) }).toEqual({
        file,
        leaks: []
      });
    }
  });
});
