// What a run may have changed in a copy-on-write workspace, read from its layers instead of a walk
// of the whole tree. The run's upper layer holds every file it wrote and a whiteout for every
// file it deleted; a directory it removed and made again hides everything below it (an opaque
// directory, marked by an xattr only root may read), so deletions are also found by comparing
// each directory of the upper layer with the same directory in the layers under it: a name below
// that the merged view no longer shows is gone. The kept setup layer (when there is one) is read
// the same way, since the start commit is under it too. The paths found are candidates: git then
// looks at them alone, in a temporary index of only those paths written as two small trees (see
// changedOnly in workspace.ts), and the diff, the patch and the size of the changes between those
// trees are what a full walk gives, byte for byte. Listing and comparing run as the run's user in the reader sandbox (run-files.ts):
// only names are printed, bounded, and parsed here as untrusted data.
//
// Where the layers say more than MAX_LAYER_PATHS candidates, or cannot all be read, undefined is
// answered and the caller walks the whole tree as a full checkout does.

import { type RunIdentity, asRunUser } from '../sandbox/run-files.js';
import { MAX_NESTED, outermost } from './nested.js';

/** Past this many candidate paths the whole tree is walked instead (git matches each pathspec). */
export const MAX_LAYER_PATHS = 2000;
/** What the listing may print: far more than MAX_LAYER_PATHS paths of any sensible length. */
const MAX_LISTING = 8 * 1024 * 1024;

/** The directories of a copy-on-write workspace. */
export interface Layers {
  /** The run's own layer. */
  upper: string;
  /** The kept setup layer's files, when the workspace is mounted over one. */
  setup?: string;
  /** The shared checkout's files (the start commit). */
  tree: string;
  /** The workspace as the run sees it (the overlay mount). */
  merged: string;
}

export interface LayerPaths {
  /** Work-tree-relative paths git must look at: every other path is as the index says. */
  candidates: string[];
  /** Directories below the top holding `.git` (nested.ts): git never looks into them. */
  nested: string[];
}

// $1 upper, $2 setup (or empty), $3 tree, $4 merged. Prints NUL-ended records:
//   u<type> <path>  an entry of the upper layer (find's %y type: f d l c p s b)
//   sf <path>       a non-directory of the setup layer (below directories the checkout has too)
//   g <path>        a `.git` of the setup layer below its top
//   x <path>        a name of a lower layer the merged view no longer shows, or a lower
//                   non-directory the upper layer made a directory
//   n <path>        a directory of the upper layer no lower layer has, or of the setup layer the
//                   checkout has not (all of it is the run's, or the setup's)
// The agent's own `.git` at the top is never listed. Exits 4 when a lower directory cannot be read.
const LISTING = [
  'set -o pipefail',
  'shopt -s nullglob dotglob',
  'U=$1 S=$2 T=$3 M=$4',
  '# Names below lower directory $1 (at work-tree path $2) that the merged view no longer shows.',
  'gone() {',
  '  { [ -r "$1" ] && [ -x "$1" ]; } || exit 4',
  '  local p rel',
  '  for p in "$1"/*; do',
  '    rel="${2:+$2/}${p##*/}"',
  '    [ -e "$M/$rel" ] || [ -L "$M/$rel" ] || printf \'x %s\\0\' "$rel"',
  '  done',
  '}',
  '# The setup layer, descending only into directories the checkout has too.',
  'setup() {',
  '  local p rel',
  '  { [ -r "$S${1:+/$1}" ] && [ -x "$S${1:+/$1}" ]; } || exit 4',
  '  [ -z "$1" ] || gone "$T/$1" "$1"',
  '  for p in "$S${1:+/$1}"/*; do',
  '    rel="${1:+$1/}${p##*/}"',
  '    [ "$rel" != .git ] || continue',
  '    if [ -d "$p" ] && [ ! -L "$p" ]; then',
  '      if [ -d "$T/$rel" ] && [ ! -L "$T/$rel" ]; then setup "$rel"; else printf \'n %s\\0\' "$rel"; fi',
  '    else',
  '      printf \'sf %s\\0\' "$rel"',
  '      if [ -d "$T/$rel" ] && [ ! -L "$T/$rel" ]; then printf \'x %s\\0\' "$rel"; fi',
  '    fi',
  '  done',
  '}',
  'find "$U" -mindepth 1 -path "$U/.git" -prune -o -printf \'u%y %P\\0\' || exit 3',
  'if [ -n "$S" ]; then',
  '  find "$S" -mindepth 1 -path "$S/.git" -prune -o -name .git -printf \'g %P\\0\' -prune || exit 3',
  "  setup '' || exit 4",
  'fi',
  'find "$U" -path "$U/.git" -prune -o -type d -printf \'%P\\0\' | while IFS= read -r -d \'\' d; do',
  '  found=',
  '  for L in "$S" "$T"; do',
  '    [ -n "$L" ] || continue',
  '    here="$L${d:+/$d}"',
  '    if [ -L "$here" ] || { [ -e "$here" ] && [ ! -d "$here" ]; }; then printf \'x %s\\0\' "$d"; found=1; continue; fi',
  '    [ -d "$here" ] || continue',
  '    found=1',
  '    gone "$here" "$d"',
  '  done',
  '  [ -n "$found" ] || printf \'n %s\\0\' "$d"',
  'done'
].join('\n');

/** Whether `path` has a `.git` component (git never tracks such a path). */
function underGit(path: string): boolean {
  return path.split('/').includes('.git');
}

/** The outermost of `path` and the directories above it that `dirs` holds. */
function outermostIn(path: string, dirs: Set<string>): string | undefined {
  if (dirs.size === 0) return undefined;
  for (let at = path.indexOf('/'); at !== -1; at = path.indexOf('/', at + 1))
    if (dirs.has(path.slice(0, at))) return path.slice(0, at);
  return dirs.has(path) ? path : undefined;
}

/**
 * The paths of a copy-on-write workspace the run may have changed, from its layers; undefined
 * when they say too much or cannot all be read (the caller then walks the whole tree).
 */
export async function layerPaths(identity: RunIdentity, layers: Layers): Promise<LayerPaths | undefined> {
  const result = await asRunUser(identity, {
    read: [layers.upper, ...(layers.setup ? [layers.setup] : []), layers.tree, layers.merged],
    program: '/bin/bash',
    args: ['-c', LISTING, 'layers', layers.upper, layers.setup ?? '', layers.tree, layers.merged],
    maxStdout: MAX_LISTING,
    stopPastMax: true
  });
  if (result.code !== 0 || result.stdoutBytes > MAX_LISTING) return undefined;
  const records = result.stdout.toString('utf8').split('\0');
  records.pop();
  const paths: string[] = [];
  const gitDirs: string[] = [];
  const fresh: string[] = [];
  for (const record of records) {
    const space = record.indexOf(' ');
    const [tag, path] = [record.slice(0, space), record.slice(space + 1)];
    if (space < 1 || path === '') continue;
    if (tag === 'g') gitDirs.push(path.slice(0, -'/.git'.length));
    else if ((tag[0] === 'u' || tag[0] === 's') && tag.length === 2) {
      if (path.endsWith('/.git') || path === '.git') {
        if (path.includes('/')) gitDirs.push(path.slice(0, -'/.git'.length));
        continue;
      }
      if (tag[1] !== 'd') paths.push(path);
    } else if (tag === 'x') paths.push(path);
    else if (tag === 'n') fresh.push(path);
  }
  const nested = outermost(gitDirs);
  if (nested.length > MAX_NESTED) return undefined;
  const nestedSet = new Set(nested);
  // Whatever lies in a directory only the run (or the setup) made is looked at through that
  // directory: one path for git, however many files it holds.
  const freshTops = new Set(outermost(fresh));
  const candidates = new Set<string>();
  for (const path of [...freshTops, ...paths]) {
    if (underGit(path) || outermostIn(path, nestedSet)) continue;
    candidates.add(outermostIn(path, freshTops) ?? path);
    if (candidates.size > MAX_LAYER_PATHS) return undefined;
  }
  return { candidates: [...candidates].sort(), nested };
}
