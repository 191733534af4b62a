// Runs the bundled action exactly as the GitHub runner does: `node dist/index.js` with INPUT_*
// variables and the GITHUB_OUTPUT, GITHUB_STATE and GITHUB_STEP_SUMMARY files.

import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';

export const ACTION_ENTRY = resolve('dist/index.js');

export interface ActionRun {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
  outputs: Record<string, string>;
  state: Record<string, string>;
  summary: string;
  /** Milliseconds from spawn to exit. */
  ms: number;
}

export interface StartedAction {
  child: ChildProcess;
  /** Resolves once stdout contains the text. */
  waitFor(text: string | RegExp, timeoutMs?: number): Promise<void>;
  done: Promise<ActionRun>;
}

/** Parses the `name<<DELIMITER … DELIMITER` file format of GITHUB_OUTPUT and GITHUB_STATE. */
export function parseCommandFile(text: string): Record<string, string> {
  const values: Record<string, string> = {};
  const lines = text.split(/\r?\n/);
  for (let i = 0; i < lines.length; i++) {
    const match = /^([^<=]+)<<(.+)$/.exec(lines[i]!);
    if (!match) continue;
    const value: string[] = [];
    for (i++; i < lines.length && lines[i] !== match[2]; i++) value.push(lines[i]!);
    values[match[1]!] = value.join('\n');
  }
  return values;
}

export function startAction(
  inputs: Record<string, string>,
  options: { env?: Record<string, string>; state?: Record<string, string>; entry?: string } = {}
): StartedAction {
  const dir = mkdtempSync(join(tmpdir(), 'agent-run-e2e-'));
  const files = { GITHUB_OUTPUT: 'output', GITHUB_STATE: 'state', GITHUB_STEP_SUMMARY: 'summary' };
  const env: Record<string, string> = {
    PATH: process.env.PATH ?? '',
    HOME: process.env.HOME ?? dir,
    GITHUB_ACTIONS: 'true',
    GITHUB_WORKSPACE: dir,
    RUNNER_TEMP: dir
  };
  for (const [name, file] of Object.entries(files)) {
    env[name] = join(dir, file);
    writeFileSync(env[name]!, '');
  }
  for (const [name, value] of Object.entries(inputs))
    env[`INPUT_${name.replace(/ /g, '_').toUpperCase()}`] = value;
  for (const [name, value] of Object.entries(options.state ?? {})) env[`STATE_${name}`] = value;
  Object.assign(env, options.env);

  const started = Date.now();
  const child = spawn(process.execPath, [options.entry ?? ACTION_ENTRY], {
    env,
    cwd: dir,
    stdio: ['ignore', 'pipe', 'pipe']
  });
  let stdout = '';
  let stderr = '';
  const listeners = new Set<() => void>();
  child.stdout!.on('data', chunk => {
    stdout += chunk;
    for (const listener of listeners) listener();
  });
  child.stderr!.on('data', chunk => (stderr += chunk));
  const done = new Promise<ActionRun>(resolveRun => {
    child.on('close', (code, signal) =>
      resolveRun({
        code,
        signal,
        stdout,
        stderr,
        outputs: parseCommandFile(readFileSync(env.GITHUB_OUTPUT!, 'utf8')),
        state: parseCommandFile(readFileSync(env.GITHUB_STATE!, 'utf8')),
        summary: env.GITHUB_STEP_SUMMARY ? readFileSync(env.GITHUB_STEP_SUMMARY, 'utf8') : '',
        ms: Date.now() - started
      })
    );
  });
  return {
    child,
    done,
    waitFor(text, timeoutMs = 60_000) {
      const seen = () => (typeof text === 'string' ? stdout.includes(text) : text.test(stdout));
      return new Promise((resolveWait, reject) => {
        if (seen()) return resolveWait();
        const timer = setTimeout(
          () => reject(new Error(`timed out waiting for ${text} in:\n${stdout}`)),
          timeoutMs
        );
        const listener = () => {
          if (!seen()) return;
          clearTimeout(timer);
          listeners.delete(listener);
          resolveWait();
        };
        listeners.add(listener);
        void done.then(() => listener());
      });
    }
  };
}

export function runAction(
  inputs: Record<string, string>,
  options: { env?: Record<string, string>; state?: Record<string, string>; entry?: string } = {}
): Promise<ActionRun> {
  return startAction(inputs, options).done;
}
