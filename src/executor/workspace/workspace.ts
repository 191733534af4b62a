// Each run gets its own workspace under the data dir: a detached git worktree when the
// environment's source is a git repository, a copy otherwise. Concurrent runs never see each
// other's changes, and the source itself is never written to.

import { execFile } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, readdirSync, readlinkSync, rmSync, symlinkSync } from 'node:fs';
import { join, relative } from 'node:path';
import { promisify } from 'node:util';
import type { EnvironmentConfig } from '../config.js';

const exec = promisify(execFile);

export interface Workspace {
  path: string;
  kind: 'worktree' | 'copy';
  remove(): Promise<void>;
}

async function gitTopLevel(dir: string): Promise<string | undefined> {
  try {
    const { stdout } = await exec('git', ['-C', dir, 'rev-parse', '--show-toplevel']);
    await exec('git', ['-C', dir, 'rev-parse', '--verify', '--quiet', 'HEAD']);
    return stdout.trim();
  } catch {
    return undefined;
  }
}

export async function createWorkspace(
  environment: EnvironmentConfig,
  dataDir: string,
  runId: string
): Promise<Workspace> {
  const root = join(dataDir, 'workspaces');
  const path = join(root, runId);
  mkdirSync(root, { recursive: true });
  if (!existsSync(environment.source)) {
    throw new Error(`environment ${environment.id}: source ${environment.source} does not exist`);
  }
  const top = await gitTopLevel(environment.source);
  if (top !== undefined) {
    await exec('git', ['-C', top, 'worktree', 'add', '--detach', '--quiet', path, 'HEAD']);
    const sub = relative(top, environment.source);
    return {
      path: sub ? join(path, sub) : path,
      kind: 'worktree',
      async remove() {
        await exec('git', ['-C', top, 'worktree', 'remove', '--force', path]).catch(() => {
          rmSync(path, { recursive: true, force: true });
          return exec('git', ['-C', top, 'worktree', 'prune']).catch(() => undefined);
        });
      }
    };
  }
  copyTree(environment.source, path, dataDir);
  return {
    path,
    kind: 'copy',
    async remove() {
      rmSync(path, { recursive: true, force: true });
    }
  };
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
