// A run whose environment names a container image sees the image's unpacked file system as `/`.
// The run's sandbox is then two bubblewraps, one inside the other:
//   1. the usual one (bwrap.ts), made as root: the host's system directories read-only, the
//      workspace, HOME, /tmp, the output folder and the image's root bound at their host paths, its
//      first process dropping to the run's user with the host's own sh and setpriv;
//   2. started as the run's user by that process, with the host's bwrap: a user namespace that maps
//      only the run's own ids, whose root is made of the image's entries (each bound read-only, its
//      links made again as links), with the workspace, HOME, /tmp, /proc, /dev and the output folder
//      of sandbox 1 bound again at the same paths. `/` is made read-only last.
// No program of the image ever runs with a privilege: every root step runs the host's programs in
// sandbox 1, before the image is in view. A link of the image is only ever made again as a link
// inside sandbox 2, where it resolves inside the image (an absolute target names the image's own
// file; `..` stops at its root); nothing of the host is reached through one. The read-only binds
// are nosuid and nodev (bubblewrap's own flags), and the run has no_new_privs from sandbox 1, so a
// setuid file of the image changes no one's ids; the image was unpacked by an unprivileged user
// (images/cache.ts), so it holds no device node and no file of root's.

import { join } from 'node:path';

/** One entry of a directory of an image: its kind, and a link's target as written. */
export interface ImageEntry {
  name: string;
  type: 'dir' | 'file' | 'link';
  target?: string;
}

/** An unpacked image, as the sandbox needs it. */
export interface ImageRoot {
  /** The image's reference, for messages. */
  ref: string;
  /** The host path of its unpacked root file system (shown read-only to sandbox 1). */
  rootfs: string;
  /**
   * The entries of one directory of the image (`rel` from its root, '' for the root itself), or
   * undefined when that is not a directory of it. Only ever asked along paths whose every part is
   * a directory of the image (never through a link).
   */
  list(rel: string): ImageEntry[] | undefined;
  /** The image config's `Env`, as name → value. */
  env: Record<string, string>;
  /** Variables the environment itself passes (its `env`): they win over the image's. */
  keep: string[];
  /** Called when the run's sandbox closes (the image may be collected again). */
  release?: () => void;
}

/** What sandbox 2 binds again from sandbox 1, at the same path. */
export interface ImageBind {
  path: string;
  how: 'ro' | 'rw' | 'dev';
}

/** Top-level names of the image never shown: the sandbox mounts its own there. */
const OWN_TOP = new Set(['proc', 'dev', 'sys', 'tmp']);

function parts(path: string): string[] {
  return path.split('/').filter(part => part !== '' && part !== '.');
}

/**
 * The bubblewrap arguments of sandbox 2 (without the program): the image's entries, then the
 * binds. A directory of the image on the way to a bind's path is not bound whole but "spread": made
 * empty, then each of its entries bound (or linked) one by one, so the path below it can be made
 * (the image's own directories are read-only). An entry in the way (a link or a file where the
 * bind's path needs a directory) is left out: nothing is ever mounted through a link of the image.
 */
export function imageRootArgs(
  image: ImageRoot,
  ids: { uid: number; gid: number },
  binds: ImageBind[],
  cwd: string,
  /** Variables the sandbox itself sets (HOME, TMPDIR, the proxy's): never the image's. */
  own: string[] = []
): string[] {
  const spread = new Set<string>(['']);
  const dropped = new Set<string>();
  for (const bind of binds) {
    const names = parts(bind.path);
    let rel = '';
    for (let i = 0; i < names.length; i++) {
      const name = names[i]!;
      const next = rel ? `${rel}/${name}` : name;
      if (i === 0 && OWN_TOP.has(name)) break;
      const entry = image.list(rel)?.find(item => item.name === name);
      if (!entry) break;
      if (i === names.length - 1 || entry.type !== 'dir') {
        dropped.add(next);
        break;
      }
      spread.add(next);
      rel = next;
    }
  }
  const args = ['--unshare-user', '--disable-userns', '--uid', String(ids.uid), '--gid', String(ids.gid)];
  args.push('--die-with-parent');
  for (const rel of [...spread].sort((a, b) => parts(a).length - parts(b).length || a.localeCompare(b))) {
    if (rel !== '') args.push('--dir', `/${rel}`);
    for (const entry of image.list(rel) ?? []) {
      const next = rel ? `${rel}/${entry.name}` : entry.name;
      if (spread.has(next) || dropped.has(next) || (rel === '' && OWN_TOP.has(entry.name))) continue;
      if (entry.type === 'link') args.push('--symlink', entry.target ?? '', `/${next}`);
      else args.push('--ro-bind', join(image.rootfs, next), `/${next}`);
    }
  }
  // sandbox 1's /proc (a fresh one cannot be mounted in a user namespace under it), /dev and /tmp.
  args.push('--bind', '/proc', '/proc', '--dev-bind', '/dev', '/dev', '--bind', '/tmp', '/tmp');
  for (const bind of binds) {
    if (OWN_TOP.has(parts(bind.path)[0] ?? '') && parts(bind.path).length === 1) continue;
    args.push(
      bind.how === 'ro' ? '--ro-bind' : bind.how === 'dev' ? '--dev-bind' : '--bind',
      bind.path,
      bind.path
    );
  }
  args.push('--remount-ro', '/', ...imageVariables(image, own), '--chdir', cwd);
  return args;
}

/**
 * The image config's `Env` under the environment's own `env`, as `--setenv` arguments of sandbox 2
 * (a variable the environment passes keeps its value; the executor's PATH, LANG… give way to the
 * image's). Set only there: the root steps of sandbox 1 never see a variable of the image (an
 * LD_PRELOAD naming a file of the workspace would load it into them).
 */
export function imageVariables(image: ImageRoot, own: string[]): string[] {
  const args: string[] = [];
  for (const [name, value] of Object.entries(image.env))
    if (!image.keep.includes(name) && !own.includes(name)) args.push('--setenv', name, value);
  return args;
}
