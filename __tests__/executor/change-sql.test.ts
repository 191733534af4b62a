// The SQL each change of a run becomes on each dialect, written out: what the lifecycle table says a
// change writes and where it may start from is exactly what runs against the database (the lease
// given up in the changes that end a run, the bookkeeping only on the changes the transcript records).
import { afterAll, describe, expect, it } from '@jest/globals';
import pg from 'pg';
import * as lifecycle from '../../src/executor/runs/lifecycle.js';
import { ChangeSql } from '../../src/executor/store/change-sql.js';
import { sql } from '../../src/executor/store/dialect.js';
import { PostgresDialect } from '../../src/executor/store/postgres/dialect.js';
import { SqliteConnection } from '../../src/executor/store/sqlite/connection.js';
import { SqliteDialect } from '../../src/executor/store/sqlite/dialect.js';

const ENDING =
  'state = ?, status_message = ?, error_code = ?, completed_at = ?, updated_at = ?, version = version + 1, ' +
  'lease_owner = NULL, lease_expires_at = NULL';
const SQLITE_CLOCK = `CAST(unixepoch('subsec') * 1000 AS INTEGER)`;
const PG_CLOCK = '(extract(epoch from clock_timestamp()) * 1000)::bigint';

const closing: (() => Promise<void>)[] = [];
afterAll(async () => {
  for (const close of closing) await close();
});

async function dialects() {
  const sqlite = new SqliteDialect(await SqliteConnection.open(':memory:'), false);
  // A pool that is never used: building statements needs no server.
  const postgres = new PostgresDialect(new pg.Pool({ max: 1 }), 'postgres://nobody@127.0.0.1:1/none', 1000);
  closing.push(
    () => sqlite.close(),
    () => postgres.close()
  );
  return { sqlite: new ChangeSql(sqlite), postgres: new ChangeSql(postgres) };
}

describe('a change of a run as SQL', () => {
  it('finish, cancel and abandon end the run and give up its lease; claim takes one; renew only extends it', async () => {
    const { sqlite, postgres } = await dialects();
    const where = sql('run_id = ?', 'run_1');
    const at = '2026-01-01T00:00:00.000Z';
    const finish = { transition: lifecycle.finish({ state: 'SUCCEEDED' }), at };
    expect(sqlite.update('finish', finish, where)).toEqual({
      text: `UPDATE runs SET ${ENDING}, changed_at = ${SQLITE_CLOCK} WHERE state = 'INPROGRESS' AND run_id = ?`,
      values: ['SUCCEEDED', null, null, at, at, 'run_1']
    });
    expect(postgres.update('finish', finish, where).text).toBe(
      `UPDATE runs SET ${ENDING}, changed_at = clock_timestamp(), event_seq = event_seq + 1 ` +
        `WHERE state = 'INPROGRESS' AND run_id = ?`
    );
    const cancel = sqlite.update('cancel', { transition: lifecycle.cancelled('no'), at }, where);
    expect(cancel.text).toBe(
      `UPDATE runs SET ${ENDING}, changed_at = ${SQLITE_CLOCK} ` +
        `WHERE state IN ('QUEUED', 'PENDING', 'CLAIMED', 'INPROGRESS', 'BLOCKED') AND run_id = ?`
    );
    expect(cancel.values.slice(0, 3)).toEqual(['CANCELLED', 'cancelled by a client: no', 'cancelled']);
    expect(
      sqlite.update('abandon', { transition: lifecycle.abandon('gone'), at }, where).values.slice(0, 3)
    ).toEqual(['FAILED', 'gone', 'executor_restarted']);
    expect(
      postgres.update('claim', { transition: lifecycle.claim(), at, owner: 'w1', leaseMs: 5000 }, where)
    ).toEqual({
      text:
        `UPDATE runs SET state = ?, started_at = ?, updated_at = ?, version = version + 1, lease_owner = ?, ` +
        `lease_expires_at = ${PG_CLOCK} + ?, changed_at = clock_timestamp(), event_seq = event_seq + 1 ` +
        `WHERE state = 'QUEUED' AND run_id = ?`,
      values: ['INPROGRESS', at, at, 'w1', 5000, 'run_1']
    });
    expect(sqlite.update('renew', { transition: lifecycle.claim(), at, leaseMs: 5000 }, where)).toEqual({
      text: `UPDATE runs SET lease_expires_at = ${SQLITE_CLOCK} + ? WHERE state = 'INPROGRESS' AND run_id = ?`,
      values: [5000, 'run_1']
    });
  });

  it('keeps user text as bytes on PostgreSQL', async () => {
    const { postgres } = await dialects();
    const change = postgres.update(
      'finish',
      { transition: lifecycle.finish({ state: 'FAILED', status_message: 'boom' }), at: 'x' },
      sql('run_id = ?', 'r')
    );
    expect(change.values[1]).toEqual(Buffer.from('boom'));
  });
});
