// Runs jest with a temp dir of its own (TMPDIR for every test, every executor and every run it
// starts), and removes it whole afterwards, whatever the tests left: a test suite of real
// executors, checkouts, overlay mounts and databases leaves nothing in the machine's temp dir.
// Arguments go to jest as they are: `node scripts/jest.mjs __tests__/unit`.

import { spawnSync } from 'node:child_process';
import { chmodSync, copyFileSync, mkdirSync, mkdtempSync, readFileSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';

const root = mkdtempSync(join(tmpdir(), 'agent-run-tests-'));
// Open as /tmp is: runs of a root executor are an unprivileged user who must reach their folders.
chmodSync(root, 0o1777);

/**
 * The Node to run jest on. A root executor runs a Node-script agent CLI (Codex, Gemini) and MCP
 * servers on its own Node as the runs' unprivileged user, who cannot reach a Node inside a clone
 * under a private folder (root's home, a `mktemp -d` folder: mode 700). Then Node is copied into
 * this run's temp dir, which every user can enter, and jest runs on the copy (removed with it), as
 * the PostgreSQL tests copy their server's programs.
 */
function reachableNode() {
  if (process.getuid?.() !== 0) return process.execPath;
  let open = (statSync(process.execPath).mode & 0o001) !== 0;
  for (let dir = dirname(process.execPath); open; dir = dirname(dir)) {
    open = (statSync(dir).mode & 0o001) !== 0;
    if (dir === dirname(dir)) break;
  }
  if (open) return process.execPath;
  const copy = join(root, 'node', 'bin', 'node');
  mkdirSync(dirname(copy), { recursive: true, mode: 0o755 });
  chmodSync(join(root, 'node'), 0o755);
  copyFileSync(process.execPath, copy);
  chmodSync(copy, 0o755);
  return copy;
}

const node = reachableNode();
const jest = spawnSync(
  node,
  [
    '--experimental-vm-modules',
    '--no-warnings',
    'node_modules/jest/bin/jest.js',
    '--forceExit',
    ...process.argv.slice(2)
  ],
  // PATH: the copy first, for what the tests start as `node`.
  {
    stdio: 'inherit',
    env: {
      ...process.env,
      TMPDIR: root,
      PATH: node === process.execPath ? process.env.PATH : `${dirname(node)}:${process.env.PATH ?? ''}`
    }
  }
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
