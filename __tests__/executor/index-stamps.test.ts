// The index of a shared checkout after its files are given to the run's user (index-stamps.ts): git
// sees every file whose owner alone changed as unchanged, without reading it again, and still sees
// a file whose content changed.
import { describe, expect, it } from '@jest/globals';
import { execFileSync } from 'node:child_process';
import { chownSync, mkdirSync, symlinkSync, utimesSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { restampIndex } from '../../src/executor/workspace/index-stamps.js';
import { tempDir } from '../support/executor.js';

const OWNER = { uid: 4242, gid: 4343 };

function repository(): { dir: string; git: (...args: string[]) => string } {
  const dir = tempDir('index-stamps-');
  const git = (...args: string[]) =>
    execFileSync('git', ['-C', dir, '-c', 'user.name=t', '-c', 'user.email=t@t', ...args], {
      encoding: 'utf8'
    });
  mkdirSync(join(dir, 'src'));
  for (let i = 0; i < 20; i++) writeFileSync(join(dir, 'src', `f${i}.txt`), `file ${i}\n`);
  writeFileSync(join(dir, 'same-size.txt'), 'aaaa\n');
  symlinkSync('src/f0.txt', join(dir, 'link'));
  git('init', '--quiet');
  git('add', '--all');
  git('commit', '--quiet', '-m', 'initial');
  // An old mtime for every file, so that none is racily clean (stored with size 0 by git).
  const past = new Date(Date.now() - 60_000);
  for (const file of git('ls-files', '-z').split('\0').filter(Boolean))
    if (file !== 'link') utimesSync(join(dir, file), past, past);
  git('update-index', '--really-refresh');
  return { dir, git };
}

/** chown -R -h of the work tree, as the executor gives a shared checkout to the run's user. */
function giveAway(dir: string, git: (...args: string[]) => string): void {
  for (const file of git('ls-files', '-z').split('\0').filter(Boolean))
    execFileSync('chown', ['-h', `${OWNER.uid}:${OWNER.gid}`, join(dir, file)]);
  chownSync(join(dir, 'src'), OWNER.uid, OWNER.gid);
}

describe('restampIndex', () => {
  it('makes files whose owner changed unchanged to git, and leaves a changed one changed', () => {
    const { dir, git } = repository();
    giveAway(dir, git);
    // Without the new stamps git's stat check finds every file changed.
    expect(git('diff-files', '--name-only').split('\n').filter(Boolean)).toHaveLength(22);
    // A change of content that keeps the size and the mtime's second is caught by the inode or ns.
    const changed = join(dir, 'same-size.txt');
    const { atime, mtime } = { atime: new Date(), mtime: new Date(Date.now() - 30_000) };
    writeFileSync(`${changed}.new`, 'bbbb\n');
    execFileSync('mv', [`${changed}.new`, changed]);
    utimesSync(changed, atime, mtime);

    const updated = restampIndex(join(dir, '.git', 'index'), dir, 'sha1');

    expect(updated).toBe(21);
    expect(git('diff-files', '--name-only')).toBe('same-size.txt\n');
    // git accepts the rewritten index (its checksum) and its refresh reads the changed file.
    git('update-index', '-q', '--refresh');
    expect(git('status', '--porcelain')).toBe(' M same-size.txt\n');
    expect(git('ls-files', '--debug', 'src/f3.txt')).toContain(`uid: ${OWNER.uid}\tgid: ${OWNER.gid}`);
  });

  it('leaves an index it cannot read as it was', () => {
    const dir = tempDir('index-stamps-');
    writeFileSync(join(dir, 'index'), 'not an index');
    expect(restampIndex(join(dir, 'index'), dir, 'sha1')).toBe(0);
  });
});
