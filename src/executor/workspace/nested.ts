// Finds the nested repositories a run made in its work tree, so that the executor's post-run git
// never looks into them. `git add --all` probes every untracked directory for a `.git` (to record
// it as a gitlink) and reads what it finds on the host, as root: a FIFO there blocks it, a link to
// /dev/zero eats memory, a `gitdir:` file naming a host repository publishes that repository's
// commit id. A directory excluded by a negative pathspec is never probed (git's dir.c returns
// before the probe; `.gitignore` exclusion does not), so each one found here is passed to git as
// `:(exclude,literal)<path>`. The walk reads directories only (readdir with file types), never
// opens, follows or reads an entry, is iterative and keeps at most MAX_NESTED paths.

import { readdirSync } from 'node:fs';
import { join } from 'node:path';

/** More nested repositories than this fail the run instead of becoming a giant argv. */
export const MAX_NESTED = 1000;

/** Work-tree-relative paths (with `/`) of directories below the root that hold an entry `.git`. */
export function nestedRepositories(root: string): string[] {
  const found: string[] = [];
  const pending: string[] = [''];
  while (pending.length > 0) {
    const dir = pending.pop()!;
    let entries;
    try {
      entries = readdirSync(dir === '' ? root : join(root, dir), { withFileTypes: true });
    } catch {
      continue; // gone or unreadable: git will say so itself
    }
    if (dir !== '' && entries.some(entry => entry.name === '.git')) {
      found.push(dir);
      if (found.length > MAX_NESTED)
        throw Object.assign(
          new Error(`the run made more than ${MAX_NESTED} nested repositories (directories holding .git)`),
          { code: 'workspace_tampered' }
        );
      continue; // nothing below it is looked at by git either
    }
    for (const entry of entries)
      if (entry.isDirectory() && entry.name !== '.git')
        pending.push(dir === '' ? entry.name : `${dir}/${entry.name}`);
  }
  return found.sort();
}

/** The pathspecs that keep git out of `nested` (a lone `.` first: git needs a positive one). */
export function excludeNested(nested: string[]): string[] {
  return nested.length === 0 ? [] : ['--', '.', ...nested.map(path => `:(exclude,literal)${path}`)];
}
