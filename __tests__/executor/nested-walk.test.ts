// The executor's own walk for nested repositories (src/executor/workspace/nested.ts): it finds a
// `.git` entry of any type without opening it, and refuses a work tree with too many of them.

import { describe, expect, it } from '@jest/globals';
import { execFileSync } from 'node:child_process';
import { mkdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { MAX_NESTED, excludeNested, nestedRepositories } from '../../src/executor/workspace/nested.js';
import { tempDir } from '../support/executor.js';

describe('nestedRepositories', () => {
  it('finds directories holding a .git of any type, never the root, never below a found one', () => {
    const root = tempDir('nested-walk-');
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
    expect(nestedRepositories(root)).toEqual(['a/b', 'fifo', 'file', 'link']);
    expect(excludeNested(['a/b'])).toEqual(['--', '.', ':(exclude,literal)a/b']);
    expect(excludeNested([])).toEqual([]);
  });

  it('refuses more nested repositories than it passes to git, naming the bound', () => {
    const root = tempDir('nested-many-');
    for (let i = 0; i <= MAX_NESTED; i++) mkdirSync(join(root, `r${i}/.git`), { recursive: true });
    expect(() => nestedRepositories(root)).toThrow(`more than ${MAX_NESTED} nested repositories`);
  });
});
