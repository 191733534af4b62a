// What the main step leaves for the post step, saved through the runner (GITHUB_STATE). The only
// place that knows the names: everything else calls these accessors.

import * as core from '@actions/core';

const IS_POST = 'isPost';
const RUN_ID = 'run-id';
const SETTLED = 'settled';
const RUN_IDS = 'run-ids';

/** Whether this invocation is the post step (the runner runs the same bundle for both). */
export function isPost(): boolean {
  return core.getState(IS_POST) === 'true';
}

/** Marks that the main step ran, so the next invocation is the post step. */
export function markPost(): void {
  core.saveState(IS_POST, 'true');
}

/** The run the main step created or attached to, if it got that far. */
export function runId(): string | undefined {
  return core.getState(RUN_ID) || undefined;
}

export function saveRunId(id: string): void {
  core.saveState(RUN_ID, id);
}

/** A fan-out's runs, as they are created (the post step cancels those still going). */
export function saveRunIds(ids: string[]): void {
  core.saveState(RUN_IDS, JSON.stringify(ids));
}

/** The fan-out's runs the main step created; empty for a single run. */
export function runIds(): string[] {
  try {
    const ids: unknown = JSON.parse(core.getState(RUN_IDS) || '[]');
    return Array.isArray(ids) ? ids.filter((id): id is string => typeof id === 'string') : [];
  } catch {
    return [];
  }
}

/** Whether the main step dealt with the run (ended, cancelled or left on purpose): the post step leaves it be. */
export function settled(): boolean {
  return core.getState(SETTLED) === 'true';
}

export function markSettled(): void {
  core.saveState(SETTLED, 'true');
}
