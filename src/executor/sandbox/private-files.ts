// The data dir is the executor's alone: its database holds every team's prompts and transcripts,
// the keys' hashes and the secrets that sign session and artifact links. So the data dir is 0700
// and each file the executor keeps in it (the database and SQLite's -wal and -shm beside it, the
// role locks, the process records) 0600, whatever umask the executor was started with: modes are
// set with chmod after the create, never left to the umask. A run's own directories in the data
// dir get their modes and owner where they are made (workspace/, worker/): a root executor's
// bubblewrap binds them into the sandbox, so the run's user never walks through the data dir.

import { chmodSync, closeSync, fchmodSync, mkdirSync, openSync, statSync, writeSync } from 'node:fs';

export const PRIVATE_DIR_MODE = 0o700;
export const PRIVATE_FILE_MODE = 0o600;

const octal = (mode: number) => `0${(mode & 0o7777).toString(8).padStart(3, '0')}`;

/**
 * Makes `dir` 0700 (creating it, and any missing parent 0700 too, when absent). A data dir that
 * other users could enter or read is tightened: answers the one warning that says so, naming the
 * path and both modes; undefined when nothing changed. A shared directory (sticky bit, as /tmp)
 * is refused rather than made 0700 under its other users.
 */
export function privateDir(dir: string): string | undefined {
  let mode: number;
  try {
    mode = statSync(dir).mode;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
    mkdirSync(dir, { recursive: true, mode: PRIVATE_DIR_MODE });
    chmodSync(dir, PRIVATE_DIR_MODE);
    return undefined;
  }
  if ((mode & 0o7777) === PRIVATE_DIR_MODE) return undefined;
  // The sticky bit marks a directory other users share (/tmp, /var/tmp): never taken over.
  if (mode & 0o1000)
    throw new Error(
      `data dir ${dir} is mode ${octal(mode)}, a directory shared with other users (sticky bit); ` +
        'the executor makes its data dir 0700: use a directory of its own, such as a folder inside it'
    );
  try {
    chmodSync(dir, PRIVATE_DIR_MODE);
  } catch (error) {
    throw new Error(
      `data dir ${dir} is mode ${octal(mode)} and cannot be made ${octal(PRIVATE_DIR_MODE)} ` +
        `(${(error as NodeJS.ErrnoException).code}); it holds every prompt and the link secrets: ` +
        "make it the executor user's own, or use another --data-dir"
    );
  }
  if ((mode & 0o077) === 0) return undefined;
  return (
    `data dir ${dir} was mode ${octal(mode)}, open to other users of this machine (it holds every prompt ` +
    `and the link secrets): made it ${octal(PRIVATE_DIR_MODE)}`
  );
}

/** Writes `text` to `path` as a 0600 file (replacing its content; an existing file is made 0600 too). */
export function writePrivateFile(path: string, text: string): void {
  const fd = openSync(path, 'w', PRIVATE_FILE_MODE);
  try {
    fchmodSync(fd, PRIVATE_FILE_MODE);
    writeSync(fd, text);
  } finally {
    closeSync(fd);
  }
}

/** Creates `path` empty when absent, and makes it 0600 either way (its content is left as it is). */
export function privateFile(path: string): void {
  const fd = openSync(path, 'a', PRIVATE_FILE_MODE);
  try {
    fchmodSync(fd, PRIVATE_FILE_MODE);
  } finally {
    closeSync(fd);
  }
}

/** Makes `path` 0600 when it exists. */
export function tightenFile(path: string): void {
  try {
    chmodSync(path, PRIVATE_FILE_MODE);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
  }
}
