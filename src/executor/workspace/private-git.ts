// Each run's private git dir, DATA_DIR/gitdirs/<run id>.git: the executor's own record of the
// workspace, outside it and outside everything the sandbox shows (the data dir is hidden from a
// run). It borrows the source's objects (alternates the executor writes), its config, HEAD, index
// and info/ are written only by the executor, and its HEAD is the commit the run starts at. Every
// git step after the agent (the diff, the patch, the commit and push of publishing) runs through
// it with `--work-tree <workspace>`: whatever the agent did to the `.git` in its workspace (a
// gitfile, a symbolic link, `commondir`, hooks, filters, a rewritten history) is never read, and
// the changes are always the work tree against the start commit.
//
// The agent gets an ordinary repository of its own in the workspace, made here before it starts
// (the same start commit, the same index, its own objects or the source's borrowed); it may wreck
// it at will.

import {
  copyFileSync,
  cpSync,
  existsSync,
  lchownSync,
  lstatSync,
  mkdirSync,
  readdirSync,
  rmSync
} from 'node:fs';
import { join } from 'node:path';
import { makeWorkspaceDir } from './copy.js';
import {
  type FileOwner,
  type PrivateRepository,
  privateGit,
  privateGitAll,
  privateGitlinks,
  replaceFile
} from './git.js';

const CONFIG = '[core]\n\trepositoryformatversion = 0\n\tfilemode = true\n\tbare = false\n';
const COMMIT = /^(?:[0-9a-f]{40}|[0-9a-f]{64})$/;

/** Where a run's private git dir lives. */
export function privateGitDir(dataDir: string, runId: string): string {
  return join(dataDir, 'gitdirs', `${runId}.git`);
}

/** The skeleton of a git dir, written file by file (no template, no hooks, no process). */
function writeGitDir(gitDir: string, head: string, alternates: string[], shallow?: string): void {
  for (const dir of ['objects/info', 'objects/pack', 'refs/heads', 'refs/tags', 'info'])
    mkdirSync(join(gitDir, dir), { recursive: true, mode: 0o755 });
  replaceFile(join(gitDir, 'config'), CONFIG);
  replaceFile(join(gitDir, 'HEAD'), `${head}\n`);
  if (alternates.length > 0)
    replaceFile(join(gitDir, 'objects', 'info', 'alternates'), alternates.map(p => `${p}\n`).join(''));
  // A shallow source (actions/checkout's default) has commits whose parents are not there.
  if (shallow && existsSync(shallow)) copyFileSync(shallow, join(gitDir, 'shallow'));
}

/**
 * A repository source: the private git dir at `head`, borrowing `borrowed`, its files checked out
 * into `workTree`; then the agent's own `.git` beside them. Answers the start commit. With `owner`
 * every file of the work tree is the owner's from the start (git writes them as the owner: see
 * git.ts), so the index git writes already holds the owner and the files' times, and nothing is
 * given away (chown) afterwards, which would change every file's ctime and make git read every
 * file again; the private git dir stays root's.
 */
export async function checkoutRepository(
  repository: PrivateRepository,
  head: string,
  borrowed: string[],
  shallow: string,
  owner?: FileOwner
): Promise<string> {
  if (!COMMIT.test(head)) throw new Error(`the source's start ${JSON.stringify(head)} is not a commit id`);
  makeWorkspaceDir(repository.workTree);
  writeGitDir(repository.gitDir, head, borrowed, shallow);
  await privateGit(repository, ['read-tree', '--reset', '-u', head], { owner });
  if (owner) lchownSync(join(repository.gitDir, 'index'), 0, 0);
  await leaveSubmodulesAlone(repository);
  agentRepository(repository, head, { borrowed, shallow });
  if (owner) {
    lchownSync(repository.workTree, owner.uid, owner.gid);
    giveAll(join(repository.workTree, '.git'), owner);
  }
  return head;
}

/** Gives a directory the executor just wrote (no link in it) and all below it to `owner`. */
function giveAll(path: string, owner: FileOwner): void {
  lchownSync(path, owner.uid, owner.gid);
  if (!lstatSync(path).isDirectory()) return;
  for (const name of readdirSync(path)) giveAll(join(path, name), owner);
}

/**
 * A copied source: its files (already in `workTree`) committed in the private git dir as the
 * baseline; the agent's own `.git` gets a copy of those objects. Answers the baseline commit.
 */
export async function snapshotCopy(repository: PrivateRepository): Promise<string> {
  writeGitDir(repository.gitDir, 'ref: refs/heads/baseline', []);
  const out = await privateGitAll(repository, [
    ['add', '--all'],
    ['commit', '--quiet', '--allow-empty', '--no-verify', '-m', 'workspace baseline'],
    ['rev-parse', '--verify', 'HEAD^{commit}']
  ]);
  const head = out.trim();
  if (!COMMIT.test(head)) throw new Error(`the workspace baseline came out as ${JSON.stringify(head)}`);
  replaceFile(join(repository.gitDir, 'HEAD'), `${head}\n`);
  await leaveSubmodulesAlone(repository);
  agentRepository(repository, head, { objects: join(repository.gitDir, 'objects') });
  return head;
}

/**
 * Marks the start's submodule entries (gitlinks) skip-worktree in the private index. git looks
 * into a submodule's directory when its entry is unchanged (`git add` runs `git status` there, in
 * a repository the agent may have made, with its filters and config): a skip-worktree entry is
 * never compared with the work tree, so the executor's git never enters one. A submodule's
 * recorded commit therefore never changes in a run's patch or published commit.
 */
async function leaveSubmodulesAlone(repository: PrivateRepository): Promise<void> {
  const links = await privateGitlinks(repository);
  if (links.length > 0) await privateGit(repository, ['update-index', '--skip-worktree', '--', ...links]);
}

/**
 * The agent's `.git` in its workspace: detached at `head`, with a copy of the private index (same
 * files, same stat data: `git status` is clean), the source's objects borrowed or the baseline's
 * copied. Written before the agent starts; never read by the executor afterwards.
 */
function agentRepository(
  repository: PrivateRepository,
  head: string,
  from: { borrowed?: string[]; shallow?: string; objects?: string }
): void {
  const dotGit = join(repository.workTree, '.git');
  rmSync(dotGit, { recursive: true, force: true });
  if (from.objects) cpSync(from.objects, join(dotGit, 'objects'), { recursive: true });
  writeGitDir(dotGit, head, from.borrowed ?? [], from.shallow);
  const index = join(repository.gitDir, 'index');
  if (existsSync(index)) copyFileSync(index, join(dotGit, 'index'));
}

/** Removes a run's private git dir (a plain recursive delete: it holds no link to follow). */
export function removePrivateGitDir(gitDir: string): void {
  rmSync(gitDir, { recursive: true, force: true });
}
