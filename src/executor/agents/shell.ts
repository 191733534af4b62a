// Child processes for agents and commands, each in its own process group so that stopping it
// stops everything it started: SIGTERM first, SIGKILL after a grace period. A process counts as
// ended when it exits; pipes still held open by something it left behind (a daemon, `setsid`)
// are closed shortly after, so a run can never hang on them (a pipe paused because its output is
// still being stored counts as busy, not held). A reader of the output may pause a pipe by answering
// a promise, so a program that prints faster than its output is stored waits instead of filling memory.

import { spawn } from 'node:child_process';
import { runOf } from '../sandbox/index.js';

const KILL_GRACE_MS = 5000;
/** After exit, output still in the pipes gets this long to arrive. */
const DRAIN_MS = 250;

export interface ProcessResult {
  exitCode: number | null;
  signal: NodeJS.Signals | null;
  /** Set when the program could not be started at all (e.g. ENOENT). */
  spawnError?: NodeJS.ErrnoException;
  durationMs: number;
}

export interface GroupOptions {
  cwd: string;
  env: Record<string, string>;
  signal: AbortSignal;
  /** Stops the group too, while `signal` still names the run (a harness stopping its CLI early). */
  stop?: AbortSignal;
  stdin?: string;
  /** A chunk of output; a returned promise pauses that stream until it settles (backpressure). */
  onStdout?: (chunk: Buffer) => void | Promise<void>;
  onStderr?: (chunk: Buffer) => void | Promise<void>;
}

/** Hands each chunk of `stream` to `take`, pausing the stream while `take` is busy with it. */
function pipeInto(
  stream: NodeJS.ReadableStream,
  take: ((chunk: Buffer) => void | Promise<void>) | undefined
) {
  stream.on('data', (chunk: Buffer) => {
    const busy = take?.(chunk);
    if (!busy) return;
    stream.pause();
    const resume = () => void stream.resume();
    busy.then(resume, resume);
  });
}

/** Runs a program in its own process group; the signal stops the group. */
export async function runInGroup(
  program: string,
  args: string[],
  options: GroupOptions
): Promise<ProcessResult> {
  const started = Date.now();
  // A run's processes go through its sandbox (found by the run's signal), when it has one; a root
  // executor's run gets its files before its first process.
  const run = runOf(options.signal);
  await run?.sandbox?.prepare();
  if (options.signal.aborted) return { exitCode: null, signal: 'SIGTERM', durationMs: 0 };
  const wrapped = run?.sandbox
    ? run.sandbox.wrap(program, args, options.cwd, options.env)
    : { program, args, env: options.env };
  if (!wrapped) {
    const spawnError = Object.assign(new Error(`spawn ${program} ENOENT`), { code: 'ENOENT' });
    return { exitCode: null, signal: null, spawnError, durationMs: 0 };
  }
  return new Promise(resolve => {
    const child = spawn(wrapped.program, wrapped.args, {
      cwd: options.cwd,
      env: wrapped.env,
      detached: true,
      stdio: [options.stdin === undefined ? 'ignore' : 'pipe', 'pipe', 'pipe']
    });
    pipeInto(child.stdout!, options.onStdout);
    pipeInto(child.stderr!, options.onStderr);
    if (options.stdin !== undefined) {
      child.stdin!.on('error', () => undefined); // the program may exit without reading its input
      child.stdin!.end(options.stdin);
    }
    const forget = run?.record(child.pid) ?? (() => undefined);
    const stop = () => (run?.sandbox ? run.sandbox.stop(child.pid, KILL_GRACE_MS) : stopGroup(child.pid));
    options.signal.addEventListener('abort', stop, { once: true });
    options.stop?.addEventListener('abort', stop, { once: true });
    let settled = false;
    const settle = (result: Omit<ProcessResult, 'durationMs'>) => {
      if (settled) return;
      settled = true;
      forget();
      options.signal.removeEventListener('abort', stop);
      options.stop?.removeEventListener('abort', stop);
      resolve({ ...result, durationMs: Date.now() - started });
    };
    child.on('error', error => settle({ exitCode: null, signal: null, spawnError: error }));
    child.on('close', (exitCode, signal) => settle({ exitCode, signal }));
    child.on('exit', (exitCode, signal) => {
      const drain = () =>
        setTimeout(() => {
          // A stream paused while its output is being stored is busy, not hung: wait for it.
          if (child.stdout!.isPaused() || child.stderr!.isPaused()) return void drain();
          child.stdout!.destroy();
          child.stderr!.destroy();
          settle({ exitCode, signal });
        }, DRAIN_MS).unref();
      drain();
    });
  });
}

export interface ShellResult {
  exitCode: number | null;
  signal: NodeJS.Signals | null;
  /** stdout and stderr interleaved, cut to the last `maxOutput` characters. */
  output: string;
  durationMs: number;
}

/** Runs a shell command in the workspace (setup commands, `@sim run`). */
export async function runShell(
  command: string,
  options: { cwd: string; env: Record<string, string>; signal: AbortSignal; maxOutput?: number }
): Promise<ShellResult> {
  const max = options.maxOutput ?? 64 * 1024;
  let output = '';
  const append = (chunk: Buffer) => {
    output += chunk.toString('utf8');
    if (output.length > 2 * max) output = output.slice(-max);
  };
  const env = {
    PATH: process.env.PATH ?? '/usr/bin:/bin',
    HOME: process.env.HOME ?? options.cwd,
    ...options.env
  };
  const result = await runInGroup('/bin/sh', ['-c', command], {
    cwd: options.cwd,
    env,
    signal: options.signal,
    onStdout: append,
    onStderr: append
  });
  if (result.spawnError)
    return { exitCode: 127, signal: null, output: result.spawnError.message, durationMs: result.durationMs };
  return {
    exitCode: result.exitCode,
    signal: result.signal,
    output: output.slice(-max),
    durationMs: result.durationMs
  };
}

/** SIGTERM to the whole process group, SIGKILL to whatever is left after the grace period. */
export function stopGroup(pid: number | undefined, graceMs = KILL_GRACE_MS): void {
  if (pid === undefined) return;
  try {
    process.kill(-pid, 'SIGTERM');
  } catch {
    return;
  }
  setTimeout(() => {
    try {
      process.kill(-pid, 'SIGKILL');
    } catch {
      // already gone
    }
  }, graceMs).unref();
}
