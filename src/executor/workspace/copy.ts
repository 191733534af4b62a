// Copying a source that is not a git repository into a workspace. The copy is counted against the
// workspace quota as it goes and stops there, and it never descends into an executor's data dir
// (its own or another node's): two nodes whose data dirs sat inside one source directory once
// copied each other's workspaces until the disk was full.

import {
  chmodSync,
  copyFileSync,
  existsSync,
  lstatSync,
  mkdirSync,
  readdirSync,
  readlinkSync,
  symlinkSync,
  writeFileSync
} from 'node:fs';
import { join } from 'node:path';
import { type AgentOutcome, sourceOverQuota } from '../runs/outcomes.js';

/** Written into every data dir's workspaces folder, so any executor's copy recognises it. */
export const WORKSPACES_MARKER = '.agent-run-workspaces';

export class WorkspaceQuotaError extends Error {
  /** The run's outcome: execute.ts ends the run with it. */
  readonly outcome: AgentOutcome;

  constructor(quotaBytes: number) {
    const outcome = sourceOverQuota(quotaBytes);
    super(outcome.status_message);
    this.outcome = outcome;
  }
}

/**
 * Every directory the executor makes for a workspace: the run's user owns it once given, but the
 * sandbox enters it before that user is (bubblewrap's chdir, as a root without CAP_DAC_OVERRIDE),
 * so others must pass through it, whatever the executor's umask (077 would leave it 0700).
 */
export const WORKSPACE_DIR_MODE = 0o755;

/**
 * Makes a directory of a workspace, WORKSPACE_DIR_MODE whatever the umask. Only a directory made
 * here and now (new and empty) has its mode set: one that was there is left as it is.
 */
export function makeWorkspaceDir(dir: string): void {
  if (mkdirSync(dir, { recursive: true }) !== undefined) chmodSync(dir, WORKSPACE_DIR_MODE);
}

/** Marks a data dir's workspaces folder (see WORKSPACES_MARKER). */
export function markWorkspaces(dir: string): void {
  makeWorkspaceDir(dir);
  const marker = join(dir, WORKSPACES_MARKER);
  if (!existsSync(marker)) writeFileSync(marker, 'agent-run workspaces: never copied into a workspace\n');
}

/** Whether a directory is an executor's data dir or workspaces folder. */
export function isExecutorDir(dir: string): boolean {
  return (
    existsSync(join(dir, WORKSPACES_MARKER)) ||
    existsSync(join(dir, 'executor.pid')) ||
    existsSync(join(dir, 'executor.db')) ||
    existsSync(join(dir, 'workspaces', WORKSPACES_MARKER))
  );
}

/** Copies `from` to `to`, leaving out `skip` and executor dirs; throws past `quotaBytes`. */
export function copyTree(from: string, to: string, skip: string, quotaBytes: number): void {
  let used = 0;
  const walk = (source: string, target: string) => {
    // Made here, before anything is copied into it or any run exists.
    makeWorkspaceDir(target);
    for (const entry of readdirSync(source, { withFileTypes: true })) {
      const path = join(source, entry.name);
      const into = join(target, entry.name);
      if (path === skip) continue;
      if (entry.isDirectory()) {
        if (isExecutorDir(path)) continue;
        walk(path, into);
      } else if (entry.isSymbolicLink()) {
        symlinkSync(readlinkSync(path), into);
      } else if (entry.isFile()) {
        used += lstatSync(path).size;
        if (used > quotaBytes) throw new WorkspaceQuotaError(quotaBytes);
        copyFileSync(path, into);
      }
    }
  };
  if (isExecutorDir(from)) throw new Error(`source ${from} is an executor's data dir; it is never copied`);
  walk(from, to);
}
