// `npm run demo` (scripts/demo.mjs) cleans up after itself: the files the action writes for the
// run (patch-file, transcript-file) are removed at the end, unless --keep asks to keep the demo
// going, and then the demo says where they are. Runs the real script, executor and action bundles.
import { describe, expect, it } from '@jest/globals';
import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, readdirSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { eventually } from '../support/eventually.js';
import { tempDir } from '../support/executor.js';

const DEMO = resolve('scripts/demo.mjs');

function startDemo(tmp: string, args: string[] = []) {
  const child = spawn(process.execPath, [DEMO, ...args], {
    env: { ...process.env, TMPDIR: tmp },
    stdio: ['ignore', 'pipe', 'pipe']
  });
  let output = '';
  child.stdout.on('data', chunk => (output += chunk));
  child.stderr.on('data', chunk => (output += chunk));
  const ended = new Promise<number | null>(done => child.on('close', done));
  return { child, ended, output: () => output };
}

function runIdOf(output: string): string {
  const id = /^ {2}run-id +(\S+)$/m.exec(output)?.[1];
  if (!id) throw new Error(`no run-id in the demo's output:\n${output}`);
  return id;
}

function outputValue(output: string, name: string): string {
  return new RegExp(`^ {2}${name} +(\\S+)$`, 'm').exec(output)?.[1] ?? '';
}

describe('npm run demo', () => {
  it('leaves no files behind: not in its temp folder, not in /tmp/agent-run-<id>', async () => {
    const tmp = tempDir('agent-run-demo-test-');
    const demo = startDemo(tmp);
    expect(await demo.ended).toBe(0);
    const id = runIdOf(demo.output());
    expect(outputValue(demo.output(), 'transcript-file')).not.toBe('');
    // The action's workflow commands shown as `agent-run action` shows them, never raw (issue 35).
    expect(demo.output()).toContain('  | ▸ $ git log --oneline -1 (exit code 0)');
    expect(demo.output()).not.toMatch(/::(end)?group::/);
    expect(existsSync(join('/tmp', `agent-run-${id}`))).toBe(false);
    expect(readdirSync(tmp)).toEqual([]);
  }, 120_000);

  it('with --keep, keeps the files and says where they are', async () => {
    const tmp = tempDir('agent-run-demo-test-');
    const demo = startDemo(tmp, ['--keep']);
    let child: ChildProcess | undefined = demo.child;
    try {
      await eventually(() => demo.output().includes('press Ctrl-C to stop it'), {
        what: 'the demo to keep serving',
        timeoutMs: 100_000
      });
      child.kill('SIGINT');
      expect(await demo.ended).toBe(0);
      child = undefined;
      const kept = /the action's files \(patch-file, transcript-file\) are kept in (\S+)/.exec(
        demo.output()
      )?.[1];
      expect(kept).toBeDefined();
      const transcript = outputValue(demo.output(), 'transcript-file');
      expect(transcript.startsWith(`${kept!}/`)).toBe(true);
      expect(existsSync(transcript)).toBe(true);
    } finally {
      child?.kill('SIGTERM');
    }
  }, 120_000);
});
