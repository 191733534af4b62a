// Each run gets its own workspace under DATA_DIR/workspaces/<run id>: a detached git worktree when
// the environment's source is a git repository (a local path, or a URL cloned once into
// DATA_DIR/sources/ and fetched before each run), a copy otherwise. Concurrent runs never see each
// other's changes and the source is never written to. A copy is snapshotted in a fresh git
// repository so that, either way, the files the run changed come out as one unified diff.

import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import {
  copyFileSync,
  existsSync,
  mkdirSync,
  readFileSync,
  readdirSync,
  readlinkSync,
  rmSync,
  statSync,
  symlinkSync,
  utimesSync
} from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { promisify } from 'node:util';
import { type EnvironmentConfig, isRemoteSource } from '../config.js';

const exec = promisify(execFile);
const GIT_IDENTITY = ['-c', 'user.name=agent-executor', '-c', 'user.email=agent-executor@localhost'];
const MAX_DIFF_BYTES = 1024 * 1024;

export interface Workspace {
  /** Where the agent works (a subdirectory of the checkout when the source is one). */
  path: string;
  /** The workspace's own directory under the data dir. */
  root: string;
  kind: 'worktree' | 'copy';
  /** Unified diff of every file changed since the workspace was made, and the changed paths. */
  diff(): Promise<{ diff: string; truncated: boolean; files: { path: string; change: string }[] }>;
  /** Disk use of the workspace in bytes (measured by `du` in a child process, off the event loop). */
  size(): Promise<number>;
  /** Marks the workspace finished; it is removed once older than the retention time. */
  release(): void;
}

/** Runs a short shell script (git commands) in a directory; errors carry its stderr, redacted. */
async function shell(script: string, cwd: string): Promise<string> {
  try {
    const { stdout } = await exec('/bin/sh', ['-c', script], { cwd, maxBuffer: 64 * 1024 * 1024 });
    return stdout;
  } catch (error) {
    throw new Error(redactUrls(`git failed: ${gitReason(error)}`));
  }
}

/**
 * One line of why git failed, for a status message: its own `fatal:` (or `error:`) line, without
 * the `hint:` lines and suggestions around it; the first line it printed when it printed neither.
 */
export function gitReason(error: unknown): string {
  const lines = String((error as { stderr?: string }).stderr ?? '')
    .split('\n')
    .map(line => line.trim())
    .filter(line => line !== '' && !/^hint:/i.test(line));
  const reason = lines.find(line => /^fatal:/i.test(line)) ?? lines.find(line => /^error:/i.test(line));
  return reason ?? lines[0] ?? (error as Error).message.split('\n')[0]!;
}

/** Hides the credentials a git URL may carry (`https://user:token@host/…`). */
export function redactUrls(text: string): string {
  return text.replace(/\/\/[^/@\s]+@/g, '//***@');
}

async function git(args: string[], cwd?: string): Promise<string> {
  try {
    const { stdout } = await exec('git', cwd ? ['-C', cwd, ...args] : args, { maxBuffer: 64 * 1024 * 1024 });
    return stdout;
  } catch (error) {
    // The error's own message holds the whole command line; say which git command failed and why.
    throw new Error(redactUrls(`git ${args[0]} failed: ${gitReason(error)}`));
  }
}

/** Whether a directory is inside a git repository with a commit, cached: sources do not move. */
const topLevels = new Map<string, Promise<string | undefined>>();
function gitTopLevel(dir: string): Promise<string | undefined> {
  let top = topLevels.get(dir);
  if (!top) {
    top = git(['rev-parse', '--show-toplevel', '--verify', '--quiet', 'HEAD'], dir)
      .then(out => out.split('\n')[0]!.trim() || undefined)
      .catch(() => undefined);
    topLevels.set(dir, top);
  }
  return top;
}

/** A remote source is cloned once (bare) and fetched before each run. */
async function remoteCache(source: string, dataDir: string): Promise<string> {
  const cache = join(
    dataDir,
    'sources',
    createHash('sha256').update(source).digest('hex').slice(0, 16) + '.git'
  );
  if (!existsSync(cache)) {
    mkdirSync(join(dataDir, 'sources'), { recursive: true });
    await git(['clone', '--bare', '--quiet', source, cache]);
  } else {
    await git(['fetch', '--quiet', '--prune', 'origin', '+refs/heads/*:refs/heads/*'], cache);
  }
  return cache;
}

export async function createWorkspace(
  environment: EnvironmentConfig,
  dataDir: string,
  runId: string
): Promise<Workspace> {
  const root = join(dataDir, 'workspaces', runId);
  mkdirSync(join(dataDir, 'workspaces'), { recursive: true });
  let repository: string | undefined;
  let sub = '';
  if (isRemoteSource(environment.source)) {
    repository = await remoteCache(environment.source, dataDir);
  } else {
    if (!existsSync(environment.source)) throw new Error(`source ${environment.source} does not exist`);
    repository = await gitTopLevel(environment.source);
    if (repository) sub = relative(repository, environment.source);
  }

  let kind: Workspace['kind'];
  if (repository) {
    await git(['worktree', 'add', '--detach', '--quiet', root, 'HEAD'], repository);
    kind = 'worktree';
  } else {
    copyTree(environment.source, root, dataDir);
    await git(['init', '--quiet'], root);
    await git([...GIT_IDENTITY, 'add', '--all'], root);
    await git(
      [...GIT_IDENTITY, 'commit', '--quiet', '--allow-empty', '--no-verify', '-m', 'workspace baseline'],
      root
    );
    kind = 'copy';
  }

  return {
    path: sub ? join(root, sub) : root,
    root,
    kind,
    async diff() {
      const separator = '\u0000--agent-run-diff--\u0000';
      const out = await shell(
        `git add --all && git diff --cached --name-status --no-renames HEAD && printf '${separator.split('\u0000').join('\\0')}' && git diff --cached --no-color --no-ext-diff HEAD`,
        root
      );
      const cut = out.indexOf(separator);
      const names = out.slice(0, cut);
      const files = names
        .split('\n')
        .filter(Boolean)
        .map(line => {
          const [status, ...path] = line.split('\t');
          const change = status === 'A' ? 'added' : status === 'D' ? 'deleted' : 'modified';
          return { path: path.join('\t'), change };
        });
      let diff =
        files.length > 0 ? await git(['diff', '--cached', '--no-color', '--no-ext-diff', 'HEAD'], root) : '';
      const truncated = Buffer.byteLength(diff) > MAX_DIFF_BYTES;
      if (truncated) diff = `${diff.slice(0, MAX_DIFF_BYTES)}\n[diff cut at ${MAX_DIFF_BYTES} bytes]\n`;
      return { diff, truncated, files };
    },
    size: () => diskUsage(root),
    release() {
      const now = new Date();
      if (existsSync(root)) utimesSync(root, now, now);
    }
  };
}

/**
 * Removes released workspaces older than `retentionMs` (and any left by a crashed process), then
 * lets git forget worktrees whose directories are gone.
 */
export async function sweepWorkspaces(
  dataDir: string,
  environments: EnvironmentConfig[],
  retentionMs: number,
  active: Set<string>
): Promise<number> {
  const dir = join(dataDir, 'workspaces');
  if (!existsSync(dir)) return 0;
  let removed = 0;
  for (const name of readdirSync(dir)) {
    if (active.has(name)) continue;
    const path = join(dir, name);
    if (Date.now() - statSync(path).mtimeMs < retentionMs) continue;
    await removeWorkspace(path);
    removed++;
  }
  if (removed > 0) {
    const repositories = new Set<string>();
    for (const env of environments) {
      if (isRemoteSource(env.source)) {
        repositories.add(
          join(
            dataDir,
            'sources',
            createHash('sha256').update(env.source).digest('hex').slice(0, 16) + '.git'
          )
        );
      } else {
        const top = await gitTopLevel(env.source);
        if (top) repositories.add(top);
      }
    }
    for (const repository of repositories)
      await git(['worktree', 'prune'], repository).catch(() => undefined);
  }
  return removed;
}

/** Removes a workspace; a worktree is also unregistered from its repository. */
async function removeWorkspace(path: string): Promise<void> {
  const link = join(path, '.git');
  try {
    if (existsSync(link) && statSync(link).isFile()) {
      const gitdir = /^gitdir:\s*(.+)$/m.exec(readFileSync(link, 'utf8'))?.[1]?.trim();
      // gitdir is <repository git dir>/worktrees/<name>
      if (gitdir) await git(['--git-dir', dirname(dirname(gitdir)), 'worktree', 'remove', '--force', path]);
    }
  } catch {
    // fall through: remove the files, and `worktree prune` below forgets the entry
  }
  rmSync(path, { recursive: true, force: true });
}

/** Bytes on disk under a directory, as `du` counts them (apparent sizes, links not followed). */
export async function diskUsage(dir: string): Promise<number> {
  const { stdout } = await exec('du', ['-s', '--apparent-size', '--block-size=1', dir]);
  return Number(stdout.split('\t')[0]);
}

/** Copies a directory tree, leaving out `skip` (the executor's own data dir may live inside it). */
function copyTree(from: string, to: string, skip: string): void {
  mkdirSync(to, { recursive: true });
  for (const entry of readdirSync(from, { withFileTypes: true })) {
    const source = join(from, entry.name);
    const target = join(to, entry.name);
    if (source === skip) continue;
    if (entry.isDirectory()) copyTree(source, target, skip);
    else if (entry.isSymbolicLink()) symlinkSync(readlinkSync(source), target);
    else if (entry.isFile()) copyFileSync(source, target);
  }
}
