// Removing a directory tree a run wrote (its workspace, its own layer, its HOME, its output
// folder). A run chooses the tree's shape, and Node's recursive rmSync keeps a file descriptor open
// for each level: a tree nested deeper than the process's open-file limit (1,500 directories under
// the usual 1,024) made it throw EMFILE, and the sweep that met it stopped there every time, so
// no workspace, layer or HOME after it (secrets included) was ever removed and the disk filled.
// The system's `rm` walks any depth; it never follows a link and stays on the tree's file system.

import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';

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

/**
 * Removes the entries of the executor's folder `dir` that `leftOver` names (by name and path: it
 * never reads inside them); answers how many went. One that cannot go stays for the next sweep.
 */
export function removeLeftovers(dir: string, leftOver: (name: string, path: string) => boolean): number {
  let removed = 0;
  for (const name of existsSync(dir) ? readdirSync(dir) : []) {
    const path = join(dir, name);
    if (!leftOver(name, path)) continue;
    try {
      removeTree(path);
      removed++;
    } catch {
      continue;
    }
  }
  return removed;
}
