// Files the executor itself writes in a workspace (`@sim write`, say): only inside the workspace,
// and never through a symbolic link. The run's processes may have replaced any path there with a
// link to the database or the config; the executor, which runs unconfined, must not follow it.

import { closeSync, constants, lstatSync, mkdirSync, openSync, writeSync } from 'node:fs';
import { join, relative, resolve, sep } from 'node:path';

/** Writes `text` to `path` (relative to `root`), refusing a path that leaves the root or has a link in it. */
export function writeInside(root: string, path: string, text: string): void {
  const target = resolve(root, path);
  const inside = relative(root, target);
  if (inside === '' || inside.startsWith('..') || resolve(root, inside) !== target)
    throw new Error(`${path}: not a path inside the workspace`);
  let dir = root;
  const parts = inside.split(sep);
  for (const part of parts.slice(0, -1)) {
    dir = join(dir, part);
    const stat = lstatSync(dir, { throwIfNoEntry: false });
    if (!stat) mkdirSync(dir);
    else if (!stat.isDirectory())
      throw new Error(`${path}: ${relative(root, dir)} is not a directory (a link is never followed)`);
  }
  let fd: number;
  try {
    fd = openSync(
      target,
      constants.O_WRONLY | constants.O_CREAT | constants.O_TRUNC | constants.O_NOFOLLOW,
      0o644
    );
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ELOOP')
      throw new Error(`${path}: is a symbolic link; the executor never writes through one`);
    throw error;
  }
  try {
    writeSync(fd, text);
  } finally {
    closeSync(fd);
  }
}
