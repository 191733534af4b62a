// The SQLite store keeps list pages between writes (src/executor/store/page-cache.ts). A kept page
// must never hide a write: one made by this store, by another connection to the same file (another
// process), or one that changed a run without adding one.
import { afterAll, describe, expect, it } from '@jest/globals';
import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import { SqliteStores } from '../../src/executor/store/sqlite.js';
import type { NewRun, StoredRun } from '../../src/executor/store/types.js';
import { tempDir } from '../support/executor.js';

const opened: SqliteStores[] = [];
afterAll(async () => {
  for (const store of opened) await store.close();
});

async function open(path: string): Promise<SqliteStores> {
  const store = await SqliteStores.open(path);
  opened.push(store);
  return store;
}

function newRun(): NewRun {
  return {
    run_id: `run_${randomUUID()}`,
    team: 'team-a',
    environment_id: 'env-1',
    title: null,
    prompt: 'fix the build',
    config: '{"environment_id":"env-1"}',
    extra: '{}',
    creator_type: 'user',
    creator_uid: 'u1',
    creator_name: 'alice',
    created_at: new Date().toISOString()
  };
}

async function created(store: SqliteStores): Promise<StoredRun> {
  const result = await store.runs.createRun(newRun(), undefined, 100);
  if (result.kind !== 'created') throw new Error(`expected a created run, got ${result.kind}`);
  return result.run;
}

const ids = async (store: SqliteStores) =>
  (await store.runs.listRuns('team-a', { limit: 10 })).map(run => `${run.run_id}:${run.state}`);

describe('SQLite list pages kept between writes', () => {
  it('answers the same page again, and a write here or on another connection shows at once', async () => {
    const path = join(tempDir(), 'executor.db');
    const store = await open(path);
    const other = await open(path);
    const first = await created(store);
    const before = await ids(store);
    expect(before).toEqual([`${first.run_id}:QUEUED`]);
    expect(await ids(store)).toEqual(before);

    // Another connection (as another process would) adds a run: the next list has it.
    const second = await created(other);
    expect(await ids(store)).toEqual([`${second.run_id}:QUEUED`, `${first.run_id}:QUEUED`]);

    // This store changes a run without adding one: the next list shows the new state.
    await store.runs.cancelRun('team-a', first.run_id, new Date().toISOString());
    expect(await ids(store)).toEqual([`${second.run_id}:QUEUED`, `${first.run_id}:CANCELLED`]);

    // The other connection changes a run: seen too.
    await other.runs.cancelRun('team-a', second.run_id, new Date().toISOString());
    expect(await ids(store)).toEqual([`${second.run_id}:CANCELLED`, `${first.run_id}:CANCELLED`]);
  });

  it('gives each caller its own array, and rows that cannot be changed behind the cache', async () => {
    const store = await open(join(tempDir(), 'executor.db'));
    await store.runs.createRun(newRun(), undefined, 100);
    const page = await store.runs.listRuns('team-a', { limit: 10 });
    page.pop();
    expect(await store.runs.listRuns('team-a', { limit: 10 })).toHaveLength(1);
    const [row] = await store.runs.listRuns('team-a', { limit: 10 });
    expect(() => {
      (row as { state: string }).state = 'SUCCEEDED';
    }).toThrow(TypeError);
    expect((await store.runs.listRuns('team-a', { limit: 10 }))[0]!.state).toBe('QUEUED');
  });

  it('exposes its change stamp: still while nothing is written, moved by a write here or on another connection', async () => {
    const path = join(tempDir(), 'executor.db');
    const store = await open(path);
    const other = await open(path);
    const stamp = store.changeStamp();
    await store.runs.listRuns('team-a', { limit: 10 });
    expect(store.changeStamp()).toBe(stamp);
    const run = await created(store);
    const afterOwn = store.changeStamp();
    expect(afterOwn).not.toBe(stamp);
    await other.runs.cancelRun('team-a', run.run_id, new Date().toISOString());
    expect(store.changeStamp()).not.toBe(afterOwn);
  });
});
