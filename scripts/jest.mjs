// Runs jest with a temp dir of its own (TMPDIR for every test, every executor and every run it
// starts), and removes it whole afterwards, whatever the tests left: a test suite of real
// executors, checkouts, overlay mounts and databases leaves nothing in the machine's temp dir.
// Arguments go to jest as they are: `node scripts/jest.mjs __tests__/unit`.

import { spawnSync } from 'node:child_process';
import { chmodSync, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const root = mkdtempSync(join(tmpdir(), 'agent-run-tests-'));
// Open as /tmp is: runs of a root executor are an unprivileged user who must reach their folders.
chmodSync(root, 0o1777);
const jest = spawnSync(
  process.execPath,
  [
    '--experimental-vm-modules',
    '--no-warnings',
    'node_modules/jest/bin/jest.js',
    '--forceExit',
    ...process.argv.slice(2)
  ],
  { stdio: 'inherit', env: { ...process.env, TMPDIR: root } }
);
// Overlay workspaces a failed test left mounted go first (deepest first), then the tree.
const mounted = readFileSync('/proc/self/mountinfo', 'utf8')
  .split('\n')
  .map(line => line.split(' ')[4]?.replace(/\\040/g, ' '))
  .filter(path => path && path.startsWith(`${root}/`))
  .sort((a, b) => b.length - a.length);
for (const path of mounted) spawnSync('umount', ['-l', path], { stdio: 'ignore' });
spawnSync('rm', ['-rf', '--one-file-system', '--', root], { stdio: 'ignore' });
process.exit(jest.status ?? 1);
