// The statements a worker runs on its timers (every second or so, whatever the store holds) must
// find their rows through an index, never by walking the runs table: with a million runs a walk
// took 11 s and the pump asks again every second, so the node never answered a request again.
// SQLite's own query plan says which way it goes.

import { describe, expect, it } from '@jest/globals';
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { ClaimSql } from '../../src/executor/store/claim-sql.js';
import type { Dialect } from '../../src/executor/store/dialect.js';
import { SqliteStores } from '../../src/executor/store/sqlite.js';
import { SQLITE_CLOCK_MS } from '../../src/executor/store/sqlite/dialect.js';
import { tempDir } from '../support/executor.js';

describe("the worker's timer statements on SQLite", () => {
  it('find the held runs through the index of holds, not by walking every run', async () => {
    const dir = tempDir();
    const path = join(dir, 'executor.db');
    await (await SqliteStores.open(path)).close();
    const db = new DatabaseSync(path);
    try {
      const held = new ClaimSql({ clockMs: SQLITE_CLOCK_MS } as Dialect).held();
      const plan = db
        .prepare(`EXPLAIN QUERY PLAN ${held.text}`)
        .all(...(held.values as never[]))
        .map(row => String((row as { detail: unknown }).detail));
      expect(plan.join('\n')).toMatch(/USING INDEX runs_held/);
      expect(plan.filter(step => /^SCAN runs\b/.test(step))).toEqual([]);
    } finally {
      db.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
