// A run continued by a follow-up, as a user of `agent-run` sees it (issue 35): `followup --wait`
// shows the new turn only, with the files it changed even when an earlier turn changed the same;
// `artifacts --download` and the action's patch-file give the run's current patch as
// changes.patch (everything since the start commit). The bundled command line and the bundled
// executor, both run as users run them.
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type ExecutorProcess, spawnExecutorWithKey } from '../support/executor.js';
import { runCli } from './support.js';

let executor: ExecutorProcess;
let env: Record<string, string>;
const dir = mkdtempSync(join(tmpdir(), 'followup-turns-'));

beforeAll(async () => {
  const started = await spawnExecutorWithKey({ kind: 'personal', name: 'turns' });
  executor = started;
  env = { AGENT_RUN_BASE_URL: executor.url, AGENT_RUN_API_KEY: started.key, TMPDIR: dir };
});
afterAll(async () => {
  await executor.stop();
  rmSync(dir, { recursive: true, force: true });
});

const cli = (args: string[]) => runCli(args, { env });

describe('a run continued by a follow-up', () => {
  it('followup --wait shows the new turn only; the patch users get covers every turn', async () => {
    const first = await cli([
      'run',
      '--environment',
      'local',
      '@sim run echo setting up the first turn\n@sim write notes.txt one\n@sim say first turn done'
    ]);
    expect(first.code).toBe(0);
    const id = /Created run (\S+) in environment/.exec(first.stderr)![1]!;

    const second = await cli([
      'followup',
      id,
      '@sim write notes.txt two\n@sim say second turn done',
      '--wait'
    ]);
    expect(second.code).toBe(0);
    expect(second.stdout).toBe('second turn done\n');
    // The new turn, with the file it changed again (the diff names it as since the start commit).
    expect(second.stderr).toContain('turn 2 begins');
    expect(second.stderr).toContain('agent: second turn done');
    expect(second.stderr).toContain('file notes.txt modified');
    expect(second.stderr).toContain('file notes.txt added');
    // Nothing of the first turn again.
    expect(second.stderr).not.toContain('first turn');
    expect(second.stderr).not.toContain('setting up');

    // The whole run: each turn's changes shown, the second's too although the same file changed.
    const logs = await cli(['logs', id]);
    expect(logs.code).toBe(0);
    expect(logs.stdout.split('file notes.txt added')).toHaveLength(3);

    // artifacts --download: the current patch as changes.patch, the first turn's named by its turn.
    const out = join(dir, 'downloaded');
    const downloaded = await cli(['artifacts', id, '--download', out]);
    expect(downloaded.code).toBe(0);
    expect(readdirSync(out).sort()).toEqual(['changes-turn-1.patch', 'changes.patch']);
    expect(readFileSync(join(out, 'changes.patch'), 'utf8')).toContain('+two');
    expect(readFileSync(join(out, 'changes-turn-1.patch'), 'utf8')).toContain('+one');

    // The action attached to the run: patch-file is the current patch, named changes.patch.
    const action = await cli(['action', '--json', '--keep-temp', '--input', `run-id=${id}`]);
    expect(action.code).toBe(0);
    const { outputs } = JSON.parse(action.stdout) as { outputs: Record<string, string> };
    expect(outputs['patch-file']).toMatch(/\/changes\.patch$/);
    const patch = readFileSync(outputs['patch-file']!, 'utf8');
    expect(patch).toContain('+two');
    expect(patch).not.toContain('+one');
  });
});
