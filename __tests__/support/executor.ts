// Executors for tests: in-process on a real port with a real SQLite file (or, when
// AGENT_EXECUTOR_TEST_STORE=postgres (jest's postgres project), a fresh database on the test run's
// one real PostgreSQL server), or the bundled executor (dist/executor/index.js) as a child process, exactly as
// users start it.

import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { type ExecutorConfig, parseConfig } from '../../src/executor/config/config.js';
import { issueKey } from '../../src/executor/store/keys.js';
import { type Executor, startExecutor } from '../../src/executor/node/serve.js';
import { PostgresStores } from '../../src/executor/store/postgres.js';
import { SqliteStores } from '../../src/executor/store/sqlite.js';
import type { Stores } from '../../src/executor/store/types.js';
import { createDatabase, databaseFolder } from './postgres.js';
import { sourceNodeArgs } from './source-child.js';

export const EXECUTOR_ENTRY = resolve('dist/executor/index.js');

export function tempDir(prefix = 'agent-executor-test-'): string {
  return mkdtempSync(join(tmpdir(), prefix));
}

export interface TestExecutor extends Executor {
  dataDir: string;
  config: ExecutorConfig;
  /** The files the store keeps its data in (the SQLite file and journal, or PostgreSQL's data dir). */
  storeFiles(): string[];
  /** A second handle on the executor's store (close it when done); works after the executor stopped. */
  openStore(): Promise<Stores>;
  key(team?: string, kind?: 'personal' | 'agent', name?: string): Promise<{ raw: string; id: string }>;
  request(path: string, init?: RequestInit & { key?: string }): Promise<Response>;
  /** The same data dir and database, for an executor started after this one (a restart). */
  restartStore(): Promise<TestStore>;
}

/**
 * Starts an executor in this process on port 0; `raw` is the config file's content as an object.
 * With `after` (an executor already stopped), the new one has its data dir and database: a restart.
 */
export async function startTestExecutor(
  raw: Record<string, unknown> = {},
  after?: TestExecutor
): Promise<TestExecutor> {
  const dir = after ? dirname(after.dataDir) : tempDir();
  const config = parseConfig({ log_level: 'silent', ...raw, data_dir: join(dir, 'data') }, dir);
  config.port = 0;
  const opened = after ? await after.restartStore() : await openTestStore(config);
  const { store, files, reopen } = opened;
  const executor = await startExecutor(config, { store, checkEnvironments: false });
  return Object.assign(executor, {
    dataDir: config.dataDir,
    config,
    storeFiles: files,
    openStore: reopen,
    restartStore: async () => ({ ...opened, store: await reopen() }),
    key(team = 'default', kind: 'personal' | 'agent' = 'personal', name = 'test') {
      return issueKey(store.accounts, { team, kind, name });
    },
    request(path: string, init: RequestInit & { key?: string } = {}) {
      const headers = new Headers(init.headers);
      if (init.key) headers.set('authorization', `Bearer ${init.key}`);
      if (init.body !== undefined && !headers.has('content-type'))
        headers.set('content-type', 'application/json');
      return fetch(executor.url + path, { ...init, headers });
    }
  });
}

/** Where the `postgres` project's global set-up (support/postgres-global.mjs) says its server is. */
const SHARED_POSTGRES = 'AGENT_RUN_TEST_POSTGRES';

/** The test run's one PostgreSQL server: the URL of its `postgres` database, and its data dir. */
function sharedPostgres(): { url: string; dataDir: string } {
  const shared = process.env[SHARED_POSTGRES];
  if (!shared)
    throw new Error(
      `AGENT_EXECUTOR_TEST_STORE=postgres, but ${SHARED_POSTGRES} is unset: run the file in jest's postgres project ` +
        '(npm run jest -- --selectProjects postgres FILE), whose global set-up starts the server'
    );
  return JSON.parse(shared) as { url: string; dataDir: string };
}

export interface TestStore {
  store: Stores;
  /** Another handle on the same database, as a second process would open it. */
  reopen(): Promise<Stores>;
  files(): string[];
}

/** The store the API suites run on: SQLite, or PostgreSQL when AGENT_EXECUTOR_TEST_STORE=postgres. */
async function openTestStore(config: ExecutorConfig): Promise<TestStore> {
  if (process.env.AGENT_EXECUTOR_TEST_STORE !== 'postgres') {
    const path = join(config.dataDir, 'executor.db');
    return {
      store: await SqliteStores.open(path),
      reopen: () => SqliteStores.open(path),
      files: () =>
        readdirSync(config.dataDir)
          .filter(name => name.startsWith('executor.db'))
          .map(name => join(config.dataDir, name))
    };
  }
  const server = sharedPostgres();
  const url = await createDatabase(server.url);
  // This database's own files and the server's write-ahead log: what holds what its executor wrote.
  const folders = [await databaseFolder(url, server.dataDir), join(server.dataDir, 'pg_wal')];
  return {
    store: await PostgresStores.open(url),
    reopen: () => PostgresStores.open(url),
    files: () => folders.flatMap(filesUnder)
  };
}

function filesUnder(dir: string): string[] {
  return readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter(entry => entry.isFile())
    .map(entry => join(entry.parentPath, entry.name));
}

export interface ExecutorProcess {
  child: ChildProcess;
  url: string;
  stderr(): string;
  stop(signal?: NodeJS.Signals): Promise<number | null>;
}

/**
 * Starts the bundled executor as a child process and waits for its "listening on" line; with
 * `source`, the executor of the TypeScript source instead (no build needed: a test of a change
 * that a crash would show as the child's end); with `umask` (such as '000'), started by a shell
 * that set that umask first.
 */
export function spawnExecutor(
  args: string[],
  options: { cwd?: string; env?: Record<string, string>; source?: boolean; umask?: string } = {}
): Promise<ExecutorProcess> {
  const entry = options.source ? [...sourceNodeArgs(), resolve('src/executor/index.ts')] : [EXECUTOR_ENTRY];
  const command = [process.execPath, ...entry, 'serve', '--port', '0', ...args];
  const [program, programArgs] =
    options.umask === undefined
      ? [command[0]!, command.slice(1)]
      : ['/bin/sh', ['-c', `umask ${options.umask} && exec "$@"`, 'sh', ...command]];
  const child = spawn(program, programArgs, {
    cwd: options.cwd,
    env: { ...process.env, ...options.env },
    stdio: ['ignore', 'pipe', 'pipe']
  });
  let stdout = '';
  let stderr = '';
  child.stderr!.on('data', chunk => (stderr += chunk));
  const exited = new Promise<number | null>(resolveExit => child.on('exit', code => resolveExit(code)));
  return new Promise((resolveStart, reject) => {
    const timer = setTimeout(() => reject(new Error(`executor did not start:\n${stderr}`)), 60_000);
    child.stdout!.on('data', chunk => {
      stdout += chunk;
      const match = /listening on (http:\/\/\S+)/.exec(stdout);
      if (!match) return;
      clearTimeout(timer);
      resolveStart({
        child,
        url: match[1]!,
        stderr: () => stderr,
        stop(signal = 'SIGTERM') {
          if (child.exitCode === null && child.signalCode === null) child.kill(signal);
          return exited;
        }
      });
    });
    void exited.then(code => {
      clearTimeout(timer);
      reject(new Error(`executor exited with ${code}:\n${stderr}`));
    });
  });
}

const execFileAsync = promisify(execFile);

/** Runs an executor CLI command; resolves with its output and exit code. */
export async function executorCli(args: string[], options: { cwd?: string; node?: string } = {}) {
  try {
    const { stdout, stderr } = await execFileAsync(
      options.node ?? process.execPath,
      [EXECUTOR_ENTRY, ...args],
      { cwd: options.cwd }
    );
    return { code: 0, stdout, stderr };
  } catch (error) {
    const e = error as { code: number; stdout: string; stderr: string };
    return { code: e.code, stdout: e.stdout, stderr: e.stderr };
  }
}

/** Creates a key with the bundled CLI (`keys create`), as a user would; returns the raw key. */
export async function createKeyWithCli(
  dir: string,
  options: { kind?: 'personal' | 'agent'; name?: string; team?: string; dataDir?: string } = {}
): Promise<string> {
  const { kind = 'agent', name = 'test', team, dataDir = join(dir, 'data') } = options;
  const args = ['keys', 'create', '--kind', kind, '--name', name, ...(team ? ['--team', team] : [])];
  const created = await executorCli([...args, '--data-dir', dataDir], { cwd: dir });
  if (created.code !== 0) throw new Error(`keys create exited with ${created.code}:\n${created.stderr}`);
  return created.stdout.trim().split('\n').at(-1)!;
}

export interface ExecutorWithKey extends ExecutorProcess {
  key: string;
  dir: string;
  dataDir: string;
}

/**
 * The set-up most process-level suites share: a temp dir (with `config` as its
 * agent-executor.yaml), a key created with the CLI, then the bundled executor serving that data dir.
 */
export async function spawnExecutorWithKey(
  options: {
    prefix?: string;
    config?: string;
    kind?: 'personal' | 'agent';
    name?: string;
    args?: string[];
  } = {}
): Promise<ExecutorWithKey> {
  const dir = tempDir(options.prefix);
  const dataDir = join(dir, 'data');
  if (options.config !== undefined) writeFileSync(join(dir, 'agent-executor.yaml'), options.config);
  const key = await createKeyWithCli(dir, { kind: options.kind, name: options.name, dataDir });
  const executor = await spawnExecutor(['--data-dir', dataDir, ...(options.args ?? [])], { cwd: dir });
  return Object.assign(executor, { key, dir, dataDir });
}
