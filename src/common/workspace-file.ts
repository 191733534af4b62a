// Reading a file that an input names (`prompt-file`, `output-schema`). In a workflow that checks out
// a stranger's pull request, every file of the workspace may be the stranger's: a symbolic link to
// /proc/self/environ or a `../../` path would send the runner's secrets to the service as the
// prompt. So a file is read only if it lies inside the workspace, every component of its path is a
// real directory or, last, a regular file (no symbolic link anywhere) with no other hard link, the
// opened file is the one checked, and it is not under `.git/`.
// Shared by both actions (the main action's `prompt-file` and `output-schema`, the executor helper's
// `config`), so it lives in common/, below both; it needs Node's fs, as every user of common/ runs on Node.

import {
  closeSync,
  constants,
  fstatSync,
  lstatSync,
  openSync,
  readlinkSync,
  readSync,
  realpathSync
} from 'node:fs';
import { isAbsolute, join, relative, resolve, sep } from 'node:path';

/** Longest file an input may name; a prompt or a schema is far smaller. */
export const MAX_INPUT_FILE_BYTES = 1024 * 1024;

/** The rule every path input follows, quoted in each refusal. */
export const PATH_RULE =
  'expected a regular file inside the workspace (GITHUB_WORKSPACE), reached without symbolic links and not under .git/';

/** Why a named file is not read; the message names the path and the rule it broke. */
export class WorkspaceFileError extends Error {}

/** The folder path inputs are relative to: the checkout, else the current directory. */
export function workspaceOf(env: NodeJS.ProcessEnv): string {
  return resolve(env.GITHUB_WORKSPACE || process.cwd());
}

/**
 * Where a path input points, checked lexically: inside the workspace and not under `.git/`.
 * Returns the absolute path and its components below the workspace.
 */
export function locateInWorkspace(raw: string, workspace: string): { path: string; parts: string[] } {
  const path = isAbsolute(raw) ? resolve(raw) : resolve(workspace, raw);
  let rel = relative(workspace, path);
  if (escapes(rel)) {
    // The workspace may itself be reached through a link the operator made: accept its real path too.
    const real = realRoot(workspace);
    if (real !== workspace && !escapes(relative(real, path))) rel = relative(real, path);
    else throw new WorkspaceFileError(`${path} is outside the workspace ${workspace}; ${PATH_RULE}`);
  }
  const parts = rel.split(sep).filter(part => part !== '');
  if (parts.length === 0) throw new WorkspaceFileError(`${path} is the workspace itself; ${PATH_RULE}`);
  if (parts.some(part => part.toLowerCase() === '.git')) {
    throw new WorkspaceFileError(`${path} is under .git/; ${PATH_RULE}`);
  }
  return { path, parts };
}

/**
 * Reads a file the way path inputs must be read: each component checked with lstat from the
 * workspace's real path down, the file opened without following a link, and its size bounded.
 */
export function readWorkspaceFile(raw: string, workspace: string): string {
  const { path, parts } = locateInWorkspace(raw, workspace);
  let current = realRoot(workspace);
  let expected: { dev: number; ino: number } | undefined;
  for (const [index, part] of parts.entries()) {
    current = join(current, part);
    let stat;
    try {
      stat = lstatSync(current);
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code ?? 'unreadable';
      throw new WorkspaceFileError(`cannot read ${path} (${code})`);
    }
    const last = index === parts.length - 1;
    if (stat.isSymbolicLink()) {
      throw new WorkspaceFileError(`${current} is a symbolic link; ${PATH_RULE}`);
    }
    if (!last && !stat.isDirectory()) throw new WorkspaceFileError(`cannot read ${path} (ENOTDIR)`);
    if (last && !stat.isFile()) throw new WorkspaceFileError(`${path} is not a regular file; ${PATH_RULE}`);
    if (last) expected = { dev: stat.dev, ino: stat.ino };
  }
  // O_NOFOLLOW closes the gap between the check and the open for the last component.
  let fd: number;
  try {
    fd = openSync(current, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code ?? 'unreadable';
    if (code === 'ELOOP') throw new WorkspaceFileError(`${current} is a symbolic link; ${PATH_RULE}`);
    throw new WorkspaceFileError(`cannot read ${path} (${code})`);
  }
  try {
    const stat = fstatSync(fd);
    if (!stat.isFile()) throw new WorkspaceFileError(`${path} is not a regular file; ${PATH_RULE}`);
    // A directory swapped for a link between the checks and the open lands on another file.
    if (stat.dev !== expected?.dev || stat.ino !== expected.ino || !openedAt(fd, current)) {
      throw new WorkspaceFileError(`${path} changed while it was being read; ${PATH_RULE}`);
    }
    // A hard link to a host file placed in the workspace looks like a regular file inside it.
    if (stat.nlink > 1) {
      throw new WorkspaceFileError(
        `${path} has ${stat.nlink} hard links; expected a file with one link only (a hard link may point at a file outside the workspace); ${PATH_RULE}`
      );
    }
    if (stat.size > MAX_INPUT_FILE_BYTES) {
      throw new WorkspaceFileError(
        `${path} has ${stat.size} bytes; expected at most ${MAX_INPUT_FILE_BYTES} (1 MiB)`
      );
    }
    const buffer = Buffer.alloc(stat.size);
    let read = 0;
    while (read < buffer.length) {
      const n = readSync(fd, buffer, read, buffer.length - read, read);
      if (n === 0) break;
      read += n;
    }
    return buffer.subarray(0, read).toString('utf8');
  } finally {
    closeSync(fd);
  }
}

/** Whether the kernel names the open file `path` (where /proc is mounted; elsewhere dev/ino decide). */
function openedAt(fd: number, path: string): boolean {
  try {
    return readlinkSync(`/proc/self/fd/${fd}`) === path;
  } catch {
    return true;
  }
}

function escapes(rel: string): boolean {
  return rel === '..' || rel.startsWith(`..${sep}`) || isAbsolute(rel);
}

function realRoot(workspace: string): string {
  try {
    return realpathSync(workspace);
  } catch {
    return workspace;
  }
}

/** Turns a checked absolute path into text: tests give their own, the action uses `readWorkspaceFile`. */
export type ReadFile = (path: string) => string;

/**
 * The text of the file input `name` names, or undefined with the problem recorded: the path is
 * checked lexically first (inside the workspace, not under .git/), then read by `readFile`.
 */
export function readInputFile(
  name: string,
  raw: string,
  env: NodeJS.ProcessEnv,
  readFile: ReadFile | undefined,
  problems: string[]
): string | undefined {
  const workspace = workspaceOf(env);
  const read = readFile ?? ((path: string) => readWorkspaceFile(path, workspace));
  let path = raw;
  try {
    path = locateInWorkspace(raw, workspace).path;
    return read(path);
  } catch (error) {
    const shown = JSON.stringify(raw.length > 200 ? `${raw.slice(0, 200)}…` : raw);
    if (error instanceof WorkspaceFileError) problems.push(`${name} ${shown}: ${error.message}`);
    else {
      const code = (error as NodeJS.ErrnoException).code;
      problems.push(`${name} ${shown}: cannot read ${path} (${code ?? (error as Error).message})`);
    }
    return undefined;
  }
}
