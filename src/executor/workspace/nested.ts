// Finds the nested repositories a run made in its work tree, so that the executor's post-run git
// never looks into them. `git add --all` probes every untracked directory for a `.git` (to record
// it as a gitlink) and reads what it finds: a FIFO there blocks it, a link to /dev/zero eats
// memory, a `gitdir:` file naming another repository publishes that repository's commit id. A
// directory excluded by a negative pathspec is never probed (git's dir.c returns before the probe;
// `.gitignore` exclusion does not), so each one found here is passed to git as
// `:(exclude,literal)<path>`. The walk is `find` as the run's user in the reader sandbox
// (sandbox/run-files.ts): it lists names only, never opens, follows or reads an entry, and what it
// prints is bounded.

import { type RunIdentity, asRunUser } from '../sandbox/run-files.js';

/** More nested repositories than this fail the run instead of becoming a giant argv. */
export const MAX_NESTED = 1000;
/** What find may print: far more than MAX_NESTED paths of any sensible length. */
const MAX_LISTING = 4 * 1024 * 1024;

function tooMany(): Error {
  return Object.assign(
    new Error(`the run made more than ${MAX_NESTED} nested repositories (directories holding .git)`),
    { code: 'workspace_tampered' }
  );
}

/** Work-tree-relative paths (with `/`) of directories below the root that hold an entry `.git`. */
export async function nestedRepositories(root: string, identity: RunIdentity): Promise<string[]> {
  const result = await asRunUser(identity, {
    read: [root],
    cwd: root,
    program: 'find',
    // The agent's own `.git` at the top is not a nested one and is never walked.
    args: ['.', '-path', './.git', '-prune', '-o', '-name', '.git', '-printf', '%h\\0'],
    maxStdout: MAX_LISTING,
    stopPastMax: true
  });
  if (result.stdoutBytes > MAX_LISTING) throw tooMany();
  // A directory find could not read is left to git, which then says so itself.
  const dirs = result.stdout
    .toString('utf8')
    .split('\0')
    .filter(dir => dir.startsWith('./'))
    .map(dir => dir.slice(2))
    .sort();
  const found = outermost(dirs);
  if (found.length > MAX_NESTED) throw tooMany();
  return found;
}

/** The directories of `dirs` not below another of them, sorted (git never looks below one). */
export function outermost(dirs: string[]): string[] {
  const found = new Set<string>();
  const depth = (dir: string) => dir.split('/').length;
  for (const dir of [...new Set(dirs)].sort((a, b) => depth(a) - depth(b))) {
    const parts = dir.split('/');
    if (parts.some((_, i) => i > 0 && found.has(parts.slice(0, i).join('/')))) continue;
    found.add(dir);
  }
  return [...found].sort();
}

/** The pathspecs that keep git out of `nested` (a lone `.` first: git needs a positive one). */
export function excludeNested(nested: string[]): string[] {
  return nested.length === 0 ? [] : ['--', '.', ...nested.map(path => `:(exclude,literal)${path}`)];
}
