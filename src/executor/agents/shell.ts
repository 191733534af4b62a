// Running a shell command in a workspace as its own process group, so stopping it stops everything
// it started: SIGTERM first, SIGKILL after a grace period.

import { spawn } from 'node:child_process';

export interface ShellResult {
  exitCode: number | null;
  signal: NodeJS.Signals | null;
  /** stdout and stderr interleaved, cut to the last `maxOutput` characters. */
  output: string;
  durationMs: number;
}

const KILL_GRACE_MS = 5000;

export function runShell(
  command: string,
  options: { cwd: string; env: Record<string, string>; signal: AbortSignal; maxOutput?: number }
): Promise<ShellResult> {
  const max = options.maxOutput ?? 64 * 1024;
  const started = Date.now();
  return new Promise(resolve => {
    const child = spawn('/bin/sh', ['-c', command], {
      cwd: options.cwd,
      env: {
        PATH: process.env.PATH ?? '/usr/bin:/bin',
        HOME: process.env.HOME ?? options.cwd,
        ...options.env
      },
      detached: true,
      stdio: ['ignore', 'pipe', 'pipe']
    });
    let output = '';
    const append = (chunk: Buffer) => {
      output += chunk.toString('utf8');
      if (output.length > 2 * max) output = output.slice(-max);
    };
    child.stdout.on('data', append);
    child.stderr.on('data', append);
    const stop = () => stopGroup(child.pid);
    options.signal.addEventListener('abort', stop, { once: true });
    const finish = (exitCode: number | null, signal: NodeJS.Signals | null) => {
      options.signal.removeEventListener('abort', stop);
      resolve({ exitCode, signal, output: output.slice(-max), durationMs: Date.now() - started });
    };
    child.on('error', error => {
      output += String(error.message);
      finish(127, null);
    });
    child.on('close', finish);
  });
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
