// The arguments of the inner sandbox of an image's run (sandbox/image-root.ts), and what the outer
// one is given: a link of the image in the way of a mount point is never mounted through, a folder
// of the image on the way is spread, and no variable of the image reaches the root steps outside.
import { describe, expect, it } from '@jest/globals';
import { mkdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { type ImageEntry, type ImageRoot, imageRootArgs } from '../../src/executor/sandbox/image-root.js';
import { RunSandbox } from '../../src/executor/sandbox/index.js';
import { DEFAULT_SANDBOX } from '../../src/executor/sandbox/config.js';
import { tempDir } from '../support/executor.js';

/** An image whose folders are given as a map: path from the root → entries. */
function image(dirs: Record<string, ImageEntry[]>, env: Record<string, string> = {}): ImageRoot {
  return { ref: 'oci:/x:y', rootfs: '/images/r', list: rel => dirs[rel], env, keep: [] };
}

/** The pairs of an argument list that name `path` as a destination. */
function at(args: string[], path: string): string[][] {
  const found: string[][] = [];
  for (let i = 0; i < args.length; i++) {
    if (['--ro-bind', '--bind', '--dev-bind', '--symlink'].includes(args[i]!) && args[i + 2] === path)
      found.push(args.slice(i, i + 3));
    if (['--dir', '--remount-ro'].includes(args[i]!) && args[i + 1] === path)
      found.push(args.slice(i, i + 2));
  }
  return found;
}

describe("an image run's inner sandbox", () => {
  const dirs: Record<string, ImageEntry[]> = {
    '': [
      { name: 'usr', type: 'dir' },
      { name: 'bin', type: 'link', target: 'usr/bin' },
      { name: 'home', type: 'link', target: '/etc' },
      { name: 'var', type: 'dir' },
      { name: 'escape', type: 'link', target: '../../../../etc/shadow' },
      { name: 'proc', type: 'dir' },
      { name: 'tmp', type: 'dir' }
    ],
    var: [
      { name: 'cache', type: 'dir' },
      { name: 'lib', type: 'dir' }
    ],
    'var/lib': [
      { name: 'dpkg', type: 'dir' },
      { name: 'agent', type: 'link', target: '/' }
    ]
  };
  const binds = [
    { path: '/home/agent', how: 'rw' as const },
    { path: '/var/lib/agent/ws', how: 'rw' as const }
  ];
  const args = imageRootArgs(image(dirs), { uid: 999, gid: 995 }, binds, '/var/lib/agent/ws');

  it("makes the image's links again as links, and binds its folders read-only", () => {
    expect(at(args, '/bin')).toEqual([['--symlink', 'usr/bin', '/bin']]);
    expect(at(args, '/escape')).toEqual([['--symlink', '../../../../etc/shadow', '/escape']]);
    expect(at(args, '/usr')).toEqual([['--ro-bind', '/images/r/usr', '/usr']]);
    // The sandbox's own /proc and /tmp, never the image's.
    expect(at(args, '/proc')).toEqual([['--bind', '/proc', '/proc']]);
    expect(at(args, '/tmp')).toEqual([['--bind', '/tmp', '/tmp']]);
    expect(args.slice(0, 6)).toEqual(['--unshare-user', '--disable-userns', '--uid', '999', '--gid', '995']);
    expect(at(args, '/')).toEqual([['--remount-ro', '/']]);
  });

  it('never mounts through a link of the image in the way of a mount point; spreads folders on the way', () => {
    // /home is a link to /etc in the image: left out, HOME made in a folder of the sandbox's own.
    expect(at(args, '/home')).toEqual([]);
    expect(at(args, '/home/agent')).toEqual([['--bind', '/home/agent', '/home/agent']]);
    // /var and /var/lib are spread: made empty, their other entries bound one by one.
    expect(at(args, '/var')).toEqual([['--dir', '/var']]);
    expect(at(args, '/var/cache')).toEqual([['--ro-bind', '/images/r/var/cache', '/var/cache']]);
    expect(at(args, '/var/lib')).toEqual([['--dir', '/var/lib']]);
    expect(at(args, '/var/lib/dpkg')).toEqual([['--ro-bind', '/images/r/var/lib/dpkg', '/var/lib/dpkg']]);
    // /var/lib/agent is a link to / in the image: never made, never mounted through.
    expect(at(args, '/var/lib/agent')).toEqual([]);
    expect(at(args, '/var/lib/agent/ws')).toEqual([['--bind', '/var/lib/agent/ws', '/var/lib/agent/ws']]);
  });

  it("sets the image's variables only inside, under the environment's own and the sandbox's", async () => {
    const hostile = image(dirs, {
      LD_PRELOAD: '/var/lib/agent/ws/evil.so',
      PATH: '/usr/bin',
      KEPT: 'image',
      HOME: '/root'
    });
    hostile.keep = ['KEPT'];
    const dir = tempDir('image-root-');
    const workspace = join(dir, 'ws');
    mkdirSync(workspace);
    const sandbox = await RunSandbox.create({
      runId: 'image-root-test',
      sandbox: { ...DEFAULT_SANDBOX },
      dataDir: join(dir, 'data'),
      workspace,
      read: [],
      image: hostile
    });
    try {
      const wrapped = sandbox.wrap('sh', ['-c', 'true'], workspace, { PATH: '/host/bin', KEPT: 'mine' })!;
      // The outer sandbox's processes (root's sh, chown, setpriv) get none of the image's variables.
      expect(wrapped.env.LD_PRELOAD).toBeUndefined();
      expect(wrapped.env.PATH).toBe('/host/bin');
      const inner = wrapped.args.slice(wrapped.args.lastIndexOf('--unshare-user'));
      const set = (name: string) => inner.findIndex((arg, i) => arg === '--setenv' && inner[i + 1] === name);
      expect(set('LD_PRELOAD')).toBeGreaterThan(0);
      expect(inner[set('PATH') + 2]).toBe('/usr/bin');
      // The environment's own variable and the sandbox's HOME win over the image's.
      expect(set('KEPT')).toBe(-1);
      expect(set('HOME')).toBe(-1);
      expect(inner.slice(inner.indexOf('--')).slice(1, 3)).toEqual(['sh', '-c']);
    } finally {
      await sandbox.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
