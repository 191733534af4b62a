// A run that continues an earlier run's conversation (its create request's conversation_id)
// starts where that run ended: the earlier run's changes since its start commit are applied on the
// new workspace's start (so the new run's diff and patch include them), and a harness's HOME is
// copied, so its CLI resumes the earlier session.
//
// Everything read here was written by the earlier run, so two rules hold. Nothing of the earlier
// run may run meanwhile: the store holds that run (a follow-up of it stays queued, on every node,
// until the hold is released), so no agent swaps a directory for a link mid-copy. And nothing of it
// is read by root: the diff, the patch, its application and the HOME copy each run as the run's
// user in the reader sandbox (sandbox/run-files.ts), which shows only the two runs' trees. A start
// that fails half way leaves nothing: the new HOME is emptied and the workspace marked as one no
// follow-up may continue.

import { existsSync, lchownSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { asRunUser, readerReason } from '../sandbox/run-files.js';
import { gitReason, runTreeGit } from '../workspace/git.js';
import { removeTree } from '../workspace/remove.js';
import {
  type TreeUsage,
  type Workspace,
  markUnusable,
  reopenWorkspace,
  treeUsage
} from '../workspace/workspace.js';

/** Largest patch of an earlier run's changes carried over (its own max_patch bounded it already). */
const MAX_CARRIED_PATCH = 1024 ** 3;

export interface StartFromOptions {
  dataDir: string;
  runId: string;
  earlierId: string;
  workspace: Workspace;
  /** The new run's HOME (a harness's), made empty and given to the run's user. */
  home?: string;
  /** What the new run may write (its quota and workspaces.max_files): what it starts with counts. */
  limits: { quotaBytes: number; maxFiles: number };
  /**
   * The release of the store's hold on the earlier run, held while it is read; undefined when the
   * earlier run is running (again) and so could not be held, nor read now.
   */
  release: (() => Promise<void>) | undefined;
}

/**
 * Starts a run from the earlier run's final tree (its changes since its start commit, applied on
 * this workspace's start) and, for a harness, a copy of its HOME (the CLI session it resumes).
 */
export async function startFrom(options: StartFromOptions): Promise<void> {
  const { dataDir, runId, earlierId, workspace, home, release } = options;
  if (!release)
    throw new Error(
      `conversation_id ${earlierId}: that run is running again (a follow-up); start this run when it has ended`
    );
  try {
    const earlier = reopenWorkspace(dataDir, earlierId, workspace.identity);
    if (!earlier)
      throw new Error(
        `conversation_id ${earlierId}: that run's workspace is gone (removed after workspaces.continue_for); start without conversation_id`
      );
    await carryChanges(earlierId, earlier, workspace, options.limits.quotaBytes);
    const earlierHome = join(dataDir, 'homes', earlierId);
    if (home && existsSync(earlierHome)) {
      await copyHome(earlierHome, home, workspace);
      // What the copy made counts as the run's own (hard links stay links, but a copy is checked).
      const usage = await treeUsage(workspace.identity, [home]);
      const over = overLimits(usage, options.limits);
      if (over) throw new Error(`the HOME of the run being continued ${over}`);
    }
  } catch (error) {
    // Nothing half made is kept: a follow-up of this run must not go on over a partial copy.
    if (home) emptyHome(home, workspace);
    markUnusable(dataDir, runId, `its start from run ${earlierId} failed: ${(error as Error).message}`);
    throw error;
  } finally {
    await release();
  }
}

/** Why `usage` is past what a run may write, or undefined. */
function overLimits(usage: TreeUsage, limits: StartFromOptions['limits']): string | undefined {
  if (usage.bytes > limits.quotaBytes) return `is larger than the disk quota (${limits.quotaBytes} bytes)`;
  if (usage.files > limits.maxFiles)
    return `holds more than workspaces.max_files (${limits.maxFiles}) entries`;
  if (usage.unreadable) return `could not be measured: ${usage.unreadable}`;
  return undefined;
}

/** The earlier run's changes, read and applied as the runs' user. */
async function carryChanges(
  earlierId: string,
  earlier: Workspace,
  workspace: Workspace,
  quotaBytes: number
): Promise<void> {
  const { files } = await earlier.diff();
  if (files.length === 0) return;
  // Applied, the changes write every name anew (git knows no hard links): bounded before a byte is.
  const bytes = await earlier.changedBytes();
  if (bytes > quotaBytes)
    throw new Error(
      `conversation_id ${earlierId}: that run's changes hold ${bytes} bytes of files, more than the disk quota (${quotaBytes} bytes) a run may write`
    );
  // A patch larger than the quota could only write more than the run may.
  const max = Math.min(MAX_CARRIED_PATCH, quotaBytes);
  const patch = await earlier.patch(max);
  if (patch.size > max)
    throw new Error(`conversation_id ${earlierId}: that run's changes are over ${max} bytes`);
  await runTreeGit(
    { repository: workspace.git, borrowed: workspace.borrowed, identity: workspace.identity },
    [['apply', '--index', '--binary', '--whitespace=nowarn', '-']],
    { writeTree: true, stdin: patch.bytes }
  ).catch(error => {
    throw new Error(
      `conversation_id ${earlierId}: that run's changes do not apply to this workspace's start: ${gitReason(error)}`
    );
  });
}

/**
 * Copies the earlier run's HOME (what its agent left: links copied as links, never followed) with
 * the system's `cp` as the run's user, in a sandbox that shows the two HOMEs only: whatever the
 * earlier agent left there, the copy can reach nothing else (and, unlike Node's cpSync, no depth
 * of nesting can abort the executor).
 */
async function copyHome(from: string, to: string, workspace: Workspace): Promise<void> {
  const result = await asRunUser(workspace.identity, {
    read: [from],
    write: [to],
    program: 'cp',
    // Hard links stay links: a file linked a thousand times is copied once, as du counted it.
    args: ['-R', '-P', '--preserve=mode,timestamps,links', '--', `${from}/.`, to]
  }).catch(error => {
    // The earlier run's HOME is gone (it ran no harness, or was swept): nothing to copy.
    throw new Error(`the HOME of the run being continued could not be copied: ${(error as Error).message}`);
  });
  if (result.code !== 0)
    throw new Error(`the HOME of the run being continued could not be copied: ${readerReason(result)}`);
}

/** Empties a run's HOME again (made anew, the run user's). */
function emptyHome(home: string, workspace: Workspace): void {
  removeTree(home);
  mkdirSync(home, { recursive: true, mode: 0o700 });
  const user = workspace.identity.user;
  if (user) lchownSync(home, user.uid, user.gid);
}
