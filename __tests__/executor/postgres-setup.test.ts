// The test set-up's PostgreSQL server (support/postgres.ts) wherever a user clones: as root the
// server runs as the `postgres` user, which cannot enter a private directory (root's home, a
// `mktemp -d` folder) holding the checkout and so the packaged binaries; and a server that cannot
// start fails at once with its own words rather than leaving `beforeAll` to time out.
import { afterAll, describe, expect, it } from '@jest/globals';
import { chmodSync, cpSync, mkdirSync, mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import pg from 'pg';
import { packagedBinaries } from '../support/postgres-binaries.js';
import { type TestPostgres, startPostgres } from '../support/postgres.js';

const made: string[] = [];
const servers: TestPostgres[] = [];
afterAll(async () => {
  for (const server of servers) await server.destroy();
  for (const dir of made) rmSync(dir, { recursive: true, force: true });
});

describe('the test PostgreSQL server', () => {
  it('starts from binaries inside a directory only its owner can enter, and answers queries', async () => {
    const packaged = await packagedBinaries();
    const private700 = mkdtempSync(join(tmpdir(), 'agent-private-'));
    made.push(private700);
    expect(statSync(private700).mode & 0o777).toBe(0o700);
    const native = join(private700, 'checkout', 'native');
    cpSync(dirname(dirname(packaged.postgres)), native, {
      recursive: true,
      verbatimSymlinks: true,
      preserveTimestamps: true
    });
    const server = await startPostgres({
      binaries: { initdb: join(native, 'bin', 'initdb'), postgres: join(native, 'bin', 'postgres') }
    });
    servers.push(server);
    const client = new pg.Client({ connectionString: await server.freshDatabase() });
    await client.connect();
    try {
      expect((await client.query<{ answer: number }>('SELECT 6 * 7 AS answer')).rows).toEqual([
        { answer: 42 }
      ]);
    } finally {
      await client.end();
    }
  });

  it('that cannot start fails with the cause in its words', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'agent-broken-pg-'));
    made.push(dir);
    chmodSync(dir, 0o755);
    const bin = join(dir, 'native', 'bin');
    mkdirSync(bin, { recursive: true });
    for (const sub of ['lib', 'share']) mkdirSync(join(dir, 'native', sub));
    for (const [name, body] of [
      ['initdb', 'exit 0'],
      ['postgres', "echo 'FATAL:  could not map anonymous shared memory: out of memory' >&2; exit 1"]
    ]) {
      const file = join(bin, name!);
      writeFileSync(
        file,
        `#!/bin/sh\n[ "$1" = --version ] && { echo "${name} (PostgreSQL) 18"; exit 0; }\n${body}\n`
      );
      chmodSync(file, 0o755);
    }
    await expect(
      startPostgres({ binaries: { initdb: join(bin, 'initdb'), postgres: join(bin, 'postgres') } })
    ).rejects.toThrow(/exited with 1 while starting:\nFATAL: {2}could not map anonymous shared memory/);
  });
});
