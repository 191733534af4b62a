// The executor's own walk for nested repositories (src/executor/workspace/nested.ts): it finds a
// `.git` entry of any type without opening it, and refuses a work tree with too many of them. It
// runs as the run's user in the reader sandbox (as root here when the tests run as root).

import { afterAll, describe, expect, it } from '@jest/globals';
import { execFileSync } from 'node:child_process';
import { mkdirSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { MAX_NESTED, excludeNested, nestedRepositories } from '../../src/executor/workspace/nested.js';
import { tempDir } from '../support/executor.js';

const identity = { confined: true };
const made: string[] = [];
const dir = (prefix: string) => {
  const path = tempDir(prefix);
  made.push(path);
  return path;
};

afterAll(() => {
  for (const path of made) rmSync(path, { recursive: true, force: true });
});

describe('nestedRepositories', () => {
  it('finds directories holding a .git of any type, never the root, never below a found one', async () => {
    const root = dir('nested-walk-');
    mkdirSync(join(root, '.git'));
    mkdirSync(join(root, 'a/b/.git/inner/.git'), { recursive: true });
    mkdirSync(join(root, 'file'));
    writeFileSync(join(root, 'file/.git'), 'gitdir: /elsewhere\n');
    mkdirSync(join(root, 'link'));
    symlinkSync('/dev/zero', join(root, 'link/.git'));
    mkdirSync(join(root, 'fifo'));
    execFileSync('mkfifo', [join(root, 'fifo/.git')]);
    mkdirSync(join(root, 'plain/deep'), { recursive: true });
    symlinkSync(root, join(root, 'plain/loop'));
    mkdirSync(join(root, 'a/b-c/.git'), { recursive: true });
    mkdirSync(join(root, 'a/b/x/.git'), { recursive: true });
    expect(await nestedRepositories(root, identity)).toEqual(['a/b', 'a/b-c', 'fifo', 'file', 'link']);
    expect(excludeNested(['a/b'])).toEqual(['--', '.', ':(exclude,literal)a/b']);
    expect(excludeNested([])).toEqual([]);
  });

  it('refuses more nested repositories than it passes to git, naming the bound', async () => {
    const root = dir('nested-many-');
    for (let i = 0; i <= MAX_NESTED; i++) mkdirSync(join(root, `r${i}/.git`), { recursive: true });
    await expect(nestedRepositories(root, identity)).rejects.toThrow(
      `more than ${MAX_NESTED} nested repositories`
    );
  });
});
