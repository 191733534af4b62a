// How a run starts processes: the one spawner of agents, setup commands and `@sim run`. Each
// process goes through the run's sandbox (when the run has one) and into its own process group,
// recorded in the data dir, so that stopping it stops everything it started: SIGTERM first,
// SIGKILL after a grace period. The worker makes a run's RunProcesses with its sandbox
// (confineRun) and hands it to the agent kind in its context: a kind has no other way to start a
// process (the lint forbids node:child_process under agents/).
//
// A process counts as ended when it exits; pipes still held open by something it left behind (a
// daemon, `setsid`) are closed shortly after, so a run can never hang on them (a pipe paused
// because its output is still being stored counts as busy, not held). A reader of the output may
// pause a pipe by answering a promise, so a program that prints faster than its output is stored
// waits instead of filling memory.

import { spawn } from 'node:child_process';
import { SANDBOX_HOME } from './bwrap.js';

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

export interface ProcessOptions {
  /** The directory it starts in; the run's workspace when unset. */
  cwd?: string;
  env: Record<string, string>;
  /** Stops it early; the run's own stop (cancel, timeout, shutdown) always stops it too. */
  signal?: AbortSignal;
  stdin?: string;
  /** A chunk of output; a returned promise pauses that stream until it settles (backpressure). */
  onStdout?: (chunk: Buffer) => void | Promise<void>;
  onStderr?: (chunk: Buffer) => void | Promise<void>;
}

export interface ShellResult {
  exitCode: number | null;
  signal: NodeJS.Signals | null;
  /** stdout and stderr interleaved, cut to the last `maxOutput` characters. */
  output: string;
  durationMs: number;
}

export interface ShellOptions {
  cwd?: string;
  env: Record<string, string>;
  signal?: AbortSignal;
  /** Characters of output kept (the end); 64 KiB when unset. */
  maxOutput?: number;
}

/** What an agent kind (and the worker's setup commands) may do with processes: start them confined. */
export interface Processes {
  /** HOME as the run's processes see it inside the sandbox; undefined for `sandbox: off`. */
  readonly home: string | undefined;
  /** Runs a program in its own process group inside the run's sandbox. */
  run(program: string, args: string[], options: ProcessOptions): Promise<ProcessResult>;
  /** Runs a shell command (`/bin/sh -c`) the same way, its output collected. */
  shell(command: string, options: ShellOptions): Promise<ShellResult>;
}

/** What the spawner needs of a run's sandbox (index.ts's RunSandbox). */
export interface Confinement {
  /** The command line that runs `program args` confined; undefined when the program is not found. */
  wrap(
    program: string,
    args: string[],
    cwd: string,
    env: Record<string, string>
  ): { program: string; args: string[]; env: Record<string, string> } | undefined;
  /** Stops a confined process and everything it started. */
  stop(pid: number | undefined, graceMs: number): void;
}

/** What a run's spawner is bound to. */
export interface RunProcessesOptions {
  /** Where processes start unless told otherwise: the run's workspace. */
  cwd: string;
  /** Aborted when the run is cancelled, times out or the executor stops. */
  signal: AbortSignal;
  /** The run's sandbox; undefined only for an environment with `sandbox: off`. */
  sandbox?: Confinement;
  /** Records a started process group in the data dir; the result forgets it. */
  record(pid: number | undefined): () => void;
  /** Variables added to every process when there is no sandbox (the survivor tag). */
  unconfinedEnv?: Record<string, string>;
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

/** The processes of one run, all started through its sandbox. */
export class RunProcesses implements Processes {
  constructor(private readonly bound: RunProcessesOptions) {}

  get home(): string | undefined {
    return this.bound.sandbox ? SANDBOX_HOME : undefined;
  }

  async run(program: string, args: string[], options: ProcessOptions): Promise<ProcessResult> {
    const started = Date.now();
    const { sandbox, record } = this.bound;
    const signal = options.signal ? AbortSignal.any([this.bound.signal, options.signal]) : this.bound.signal;
    const cwd = options.cwd ?? this.bound.cwd;
    if (signal.aborted) return { exitCode: null, signal: 'SIGTERM', durationMs: 0 };
    const wrapped = sandbox
      ? sandbox.wrap(program, args, cwd, options.env)
      : { program, args, env: { ...options.env, ...this.bound.unconfinedEnv } };
    if (!wrapped) {
      const spawnError = Object.assign(new Error(`spawn ${program} ENOENT`), { code: 'ENOENT' });
      return { exitCode: null, signal: null, spawnError, durationMs: 0 };
    }
    return new Promise(resolve => {
      const child = spawn(wrapped.program, wrapped.args, {
        cwd,
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
      const forget = record(child.pid);
      const stop = () => (sandbox ? sandbox.stop(child.pid, KILL_GRACE_MS) : stopGroup(child.pid));
      signal.addEventListener('abort', stop, { once: true });
      let settled = false;
      const settle = (result: Omit<ProcessResult, 'durationMs'>) => {
        if (settled) return;
        settled = true;
        forget();
        signal.removeEventListener('abort', stop);
        resolve({ ...result, durationMs: Date.now() - started });
      };
      child.on('error', error => settle({ exitCode: null, signal: null, spawnError: error }));
      child.on('close', (exitCode, exitSignal) => settle({ exitCode, signal: exitSignal }));
      child.on('exit', (exitCode, exitSignal) => {
        const drain = () =>
          setTimeout(() => {
            // A stream paused while its output is being stored is busy, not hung: wait for it.
            if (child.stdout!.isPaused() || child.stderr!.isPaused()) return void drain();
            child.stdout!.destroy();
            child.stderr!.destroy();
            settle({ exitCode, signal: exitSignal });
          }, DRAIN_MS).unref();
        drain();
      });
    });
  }

  async shell(command: string, options: ShellOptions): Promise<ShellResult> {
    const max = options.maxOutput ?? 64 * 1024;
    let output = '';
    const append = (chunk: Buffer) => {
      output += chunk.toString('utf8');
      if (output.length > 2 * max) output = output.slice(-max);
    };
    const cwd = options.cwd ?? this.bound.cwd;
    const env = {
      PATH: process.env.PATH ?? '/usr/bin:/bin',
      HOME: process.env.HOME ?? cwd,
      ...options.env
    };
    const result = await this.run('/bin/sh', ['-c', command], {
      cwd,
      env,
      signal: options.signal,
      onStdout: append,
      onStderr: append
    });
    if (result.spawnError)
      return {
        exitCode: 127,
        signal: null,
        output: result.spawnError.message,
        durationMs: result.durationMs
      };
    return {
      exitCode: result.exitCode,
      signal: result.signal,
      output: output.slice(-max),
      durationMs: result.durationMs
    };
  }
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
