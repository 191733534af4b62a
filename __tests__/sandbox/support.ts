// Shared by the sandbox tests: the bubblewrap requirement (a clear failure, never a skip), and a
// small client for creating runs and reading them back.

import { spawnSync } from 'node:child_process';
import { closeSync, constants, openSync, writeSync } from 'node:fs';
import type { TestExecutor } from '../support/executor.js';

/** Fails the suite with the one command to run when bubblewrap is missing. */
export function requireBubblewrap(): void {
  const result = spawnSync('bwrap', ['--version'], { encoding: 'utf8' });
  if (result.error || result.status !== 0)
    throw new Error(
      'bubblewrap is not installed, and every run of the executor is confined with it: install it with `sudo apt-get install -y bubblewrap` (then re-run the tests)'
    );
}

export interface RunRecord {
  run_id: string;
  state: string;
  error_code?: string;
  status_message?: string;
}

export async function createRun(
  ex: TestExecutor,
  key: string,
  environment: string,
  prompt: string
): Promise<string> {
  const response = await ex.request('/api/v1/agent/run', {
    method: 'POST',
    key,
    body: JSON.stringify({ prompt, config: { environment_id: environment } })
  });
  if (response.status !== 200) throw new Error(`create run: ${response.status} ${await response.text()}`);
  return ((await response.json()) as { run_id: string }).run_id;
}

export async function transcript(
  ex: TestExecutor,
  key: string,
  id: string
): Promise<Record<string, unknown>[]> {
  const body = (await (await ex.request(`/api/v1/agent/runs/${id}/transcript`, { key })).json()) as {
    events: Record<string, unknown>[];
  };
  return body.events;
}

/** Everything the run's commands printed, in order. */
export async function commandOutput(ex: TestExecutor, key: string, id: string): Promise<string> {
  return (await transcript(ex, key, id))
    .filter(event => event.kind === 'command' || event.kind === 'setup')
    .map(event => `$ ${String(event.command)}\n${String(event.output)}`)
    .join('\n');
}

/**
 * Writes a HEAD line into a FIFO a run planted (without blocking), so that a git blocked on opening
 * it, were there one, would go on: the tests' own clean-up, never what lets them pass.
 */
export function releaseFifo(path: string): void {
  try {
    const fd = openSync(path, constants.O_WRONLY | constants.O_NONBLOCK);
    writeSync(fd, 'ref: refs/heads/main\n');
    closeSync(fd);
  } catch {
    // no reader (git is not blocked on it) or not there
  }
}
