// Runs a real agent CLI the way a HarnessSpec says — its arguments, stdin, HOME files and
// environment — as a child process in a fresh workspace and HOME, and feeds its stdout through the
// spec's translator: the spec-level check of a harness, before any executor is involved. Node-script
// CLIs run with this test's own node (Node 24), as the executor runs them with its own; a native
// program (Claude Code's) runs as it is.

import { spawn } from 'node:child_process';
import { closeSync, mkdirSync, mkdtempSync, openSync, readSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import type {
  HarnessEvent,
  HarnessFailure,
  HarnessInput,
  HarnessSpec
} from '../../src/executor/agents/harness/cli-spec.js';

export interface HarnessRun {
  events: HarnessEvent[];
  failure: HarnessFailure | undefined;
  exitCode: number | null;
  stdout: string;
  stderr: string;
  workspace: string;
  home: string;
  /** Milliseconds from spawn to exit. */
  elapsedMs: number;
}

export interface HarnessRunOptions {
  spec: HarnessSpec;
  /** The CLI's program (a Node script is run with process.execPath, a native program as it is). */
  program: string;
  input: Omit<HarnessInput, 'home' | 'workspace' | 'extraArgs' | 'listed'> & { extraArgs?: string[] };
  /** The variables the user listed under `env:`. */
  listed: Record<string, string>;
  /** The HOME and workspace of an earlier run to run in again (a follow-up); default: fresh ones. */
  reuse?: { home: string; workspace: string };
  /** More variables for the CLI's environment (e.g. a proxy), beside the spec's. */
  extraEnv?: Record<string, string>;
  /** Give up (kill the CLI) after this long. */
  timeoutMs?: number;
}

const roots: string[] = [];

/** Removes the HOMEs and workspaces of every run made so far (call in afterAll). */
export function removeHarnessDirs(): void {
  for (const root of roots.splice(0)) rmSync(root, { recursive: true, force: true });
}

export async function runHarness(options: HarnessRunOptions): Promise<HarnessRun> {
  let { home, workspace } = options.reuse ?? { home: '', workspace: '' };
  if (!options.reuse) {
    const root = mkdtempSync(join(tmpdir(), `harness-${options.spec.kind}-`));
    roots.push(root);
    home = join(root, 'home');
    workspace = join(root, 'workspace');
    mkdirSync(home);
    mkdirSync(workspace);
  }
  const input: HarnessInput = {
    extraArgs: [],
    ...options.input,
    home,
    workspace,
    listed: options.listed
  };
  for (const [path, content] of Object.entries(options.spec.homeFiles(input))) {
    mkdirSync(dirname(join(home, path)), { recursive: true });
    writeFileSync(join(home, path), content, { mode: 0o600 });
  }
  // The CLI's temporary files (Gemini writes error reports there) go with the run's HOME.
  mkdirSync(join(home, 'tmp'), { recursive: true });
  const env = {
    PATH: process.env.PATH ?? '/usr/bin:/bin',
    HOME: home,
    TMPDIR: join(home, 'tmp'),
    ...options.extraEnv,
    ...options.spec.env(input, options.listed)
  };
  const stdin = options.spec.stdin(input);
  const translator = options.spec.translator();
  const events: HarnessEvent[] = [];
  const started = Date.now();
  const command = isNative(options.program)
    ? [options.program, ...options.spec.args(input)]
    : [process.execPath, options.program, ...options.spec.args(input)];
  const child = spawn(command[0]!, command.slice(1), {
    cwd: workspace,
    env,
    stdio: ['pipe', 'pipe', 'pipe']
  });
  child.stdin.end(stdin ?? ''); // no stdin: closed at once
  let stdout = '';
  let stderr = '';
  let pending = '';
  let stopped: HarnessFailure | undefined;
  child.stdout.setEncoding('utf8');
  child.stderr.setEncoding('utf8');
  child.stdout.on('data', (chunk: string) => {
    stdout += chunk;
    pending += chunk;
    const lines = pending.split('\n');
    pending = lines.pop() ?? '';
    for (const line of lines) {
      if (!line.trim()) continue;
      try {
        events.push(...translator.line(JSON.parse(line)));
      } catch {
        // not JSON: a stray line of the CLI, not part of its stream
      }
      // As the harness does: a failure the translator is already sure of stops the CLI.
      stopped ??= translator.stopWith?.();
      if (stopped) child.kill('SIGTERM');
    }
  });
  child.stderr.on('data', (chunk: string) => (stderr += chunk));
  const timer = setTimeout(() => child.kill('SIGKILL'), options.timeoutMs ?? 120_000);
  const exitCode = await new Promise<number | null>(resolve => child.on('close', code => resolve(code)));
  clearTimeout(timer);
  const failure = stopped ?? translator.finish(exitCode, stderr.slice(-4000));
  return { events, failure, exitCode, stdout, stderr, workspace, home, elapsedMs: Date.now() - started };
}

/** Whether `program` is a native executable (it starts with ELF's magic) rather than a script. */
function isNative(program: string): boolean {
  const head = Buffer.alloc(4);
  const fd = openSync(program, 'r');
  try {
    readSync(fd, head, 0, 4, 0);
  } finally {
    closeSync(fd);
  }
  return head.equals(Buffer.from([0x7f, 0x45, 0x4c, 0x46]));
}

/** The events of one type, typed. */
export function eventsOf<T extends HarnessEvent['type']>(
  events: HarnessEvent[],
  type: T
): Extract<HarnessEvent, { type: T }>[] {
  return events.filter((event): event is Extract<HarnessEvent, { type: T }> => event.type === type);
}
