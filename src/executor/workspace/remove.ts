// Removing a directory tree a run wrote (its workspace, its own layer, its HOME, its output
// folder). A run chooses the tree's shape, and Node's recursive rmSync keeps a file descriptor open
// for each level: a tree nested deeper than the process's open-file limit (1,500 directories under
// the usual 1,024) made it throw EMFILE, and the sweep that met it stopped there every time, so
// no workspace, layer or HOME after it (secrets included) was ever removed and the disk filled.
// The system's `rm` walks any depth; it never follows a link and stays on the tree's file system.

import { execFileSync } from 'node:child_process';
import { existsSync, rmSync } from 'node:fs';

const RM = existsSync('/usr/bin/rm') ? '/usr/bin/rm' : '/bin/rm';

/** Removes `path` and everything under it (nothing when it is absent); throws when it stays. */
export function removeTree(path: string): void {
  try {
    rmSync(path, { recursive: true, force: true });
    return;
  } catch {
    // deeper than rmSync goes: the system's rm below
  }
  execFileSync(RM, ['-rf', '--one-file-system', '--', path], { stdio: 'ignore' });
}
