// Runs the bundled command line (dist/cli/index.js) as a child process, as users run it.
import { type ChildProcess, spawn } from 'node:child_process';
import { resolve } from 'node:path';

export const CLI_ENTRY = resolve('dist/cli/index.js');

export interface CliRun {
  code: number | null;
  stdout: string;
  stderr: string;
  argv: string[];
}

export function runCli(
  args: string[],
  options: {
    env?: Record<string, string>;
    stdin?: string;
    /** Sees the whole stderr so far, with the child, after each chunk. */
    onStderr?: (text: string, child: ChildProcess) => void;
    /** Sees the whole stdout so far, with the child, after each chunk. */
    onStdout?: (text: string, child: ChildProcess) => void;
    cwd?: string;
  } = {}
): Promise<CliRun> {
  const argv = [CLI_ENTRY, ...args];
  const child = spawn(process.execPath, argv, {
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '/tmp', ...options.env },
    stdio: ['pipe', 'pipe', 'pipe'],
    ...(options.cwd ? { cwd: options.cwd } : {})
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', chunk => {
    stdout += chunk;
    options.onStdout?.(stdout, child);
  });
  child.stderr.on('data', chunk => {
    stderr += chunk;
    options.onStderr?.(stderr, child);
  });
  child.stdin.end(options.stdin ?? '');
  return new Promise(resolveRun =>
    child.on('close', code => resolveRun({ code, stdout, stderr, argv: [process.execPath, ...argv] }))
  );
}
