// A run that continues an earlier run's conversation (its create request's conversation_id)
// starts where that run ended: the earlier run's changes since its start commit are applied on the
// new workspace's start (so the new run's diff and patch include them), and a harness's HOME is
// copied, so its CLI resumes the earlier session. Both are read while the earlier run has ended
// and is checked again after: a follow-up may start that run's agent again meanwhile, and what an
// agent is writing (a directory swapped for a link mid-copy) must not be read by the executor.

import { execFile } from 'node:child_process';
import { existsSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { privateGit } from '../workspace/git.js';
import { type Workspace, reopenWorkspace } from '../workspace/workspace.js';

/**
 * A run that continues an earlier run's conversation (conversation_id) starts from that run's
 * final tree (its changes since its start commit, applied on this workspace's start) and, for a
 * harness, a copy of its HOME (the CLI session it resumes).
 */
export async function startFrom(
  dataDir: string,
  earlierId: string,
  workspace: Workspace,
  home: string | undefined,
  /** Whether the earlier run has ended now (it may run again after a follow-up). */
  ended: () => Promise<boolean>
): Promise<void> {
  const running = () =>
    new Error(
      `conversation_id ${earlierId}: that run is running again (a follow-up); start this run when it has ended`
    );
  if (!(await ended())) throw running();
  const earlier = reopenWorkspace(dataDir, earlierId);
  if (!earlier)
    throw new Error(
      `conversation_id ${earlierId}: that run's workspace is gone (removed after workspaces.continue_for); start without conversation_id`
    );
  const { files } = await earlier.diff();
  if (files.length > 0) {
    const patch = await earlier.patch();
    await privateGit(workspace.git, [
      '-C',
      workspace.root,
      'apply',
      '--index',
      '--binary',
      '--whitespace=nowarn',
      patch
    ]).catch(error => {
      throw new Error(
        `conversation_id ${earlierId}: that run's changes do not apply to this workspace's start: ${(error as Error).message}`
      );
    });
  }
  const earlierHome = join(dataDir, 'homes', earlierId);
  if (home && existsSync(earlierHome)) await copyHome(earlierHome, home);
  if (!(await ended())) {
    // What was copied while the agent wrote is not kept: a follow-up of this run would resume it.
    if (home) rmSync(home, { recursive: true, force: true });
    throw running();
  }
}

const exec = promisify(execFile);

/**
 * Copies the earlier run's HOME (what its agent left: links copied as links, never followed) with
 * the system's `cp`, in a process of its own. Node's cpSync walks the tree in native code that
 * aborts the whole process on a path longer than PATH_MAX: a HOME with directories nested 2,100
 * deep ended the executor, every run of the node with it.
 */
async function copyHome(from: string, to: string): Promise<void> {
  const cp = existsSync('/usr/bin/cp') ? '/usr/bin/cp' : '/bin/cp';
  await exec(cp, ['-R', '-P', '--preserve=mode,timestamps', '--', `${from}/.`, to]).catch(error => {
    const why =
      String((error as { stderr?: string }).stderr ?? '')
        .trim()
        .split('\n')[0] || (error as Error).message;
    throw new Error(`the HOME of the run being continued could not be copied: ${why.slice(0, 300)}`);
  });
}
