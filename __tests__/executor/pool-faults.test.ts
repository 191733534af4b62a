// The worker pool when the store fails under it: a real pool on a real SQLite store, behind a
// proxy that makes chosen calls fail the way a store connection does (the call may have committed).
import { afterEach, describe, expect, it } from '@jest/globals';
import { join } from 'node:path';
import type { FastifyBaseLogger } from 'fastify';
import { parseConfig } from '../../src/executor/config/config.js';
import { SqliteStores } from '../../src/executor/store/sqlite.js';
import { type Stores, StoreUnavailableError } from '../../src/executor/store/types.js';
import { WorkerPool } from '../../src/executor/worker/pool.js';
import { eventually } from '../support/eventually.js';
import { tempDir } from '../support/executor.js';

const logged: string[] = [];
const log = {
  info: (_: unknown, message?: string) => void logged.push(`info ${message}`),
  warn: (_: unknown, message?: string) => void logged.push(`warn ${message}`),
  error: (_: unknown, message?: string) => void logged.push(`error ${message}`),
  debug: () => undefined,
  trace: () => undefined,
  fatal: () => undefined,
  child: () => log,
  level: 'info',
  silent: () => undefined
} as unknown as FastifyBaseLogger;

let pool: WorkerPool | undefined;
let store: Stores | undefined;
afterEach(async () => {
  await pool?.stop(1000);
  await store?.close();
  pool = store = undefined;
  logged.length = 0;
});

/** A store whose listed methods fail once each, after doing their work (an answer lost in transit). */
function losingAnswers<T extends object>(real: T, fail: Set<string>): T {
  const wrapped = new Set(fail);
  return new Proxy(real, {
    get(target, name, receiver) {
      const value = Reflect.get(target, name, receiver) as unknown;
      if (typeof value !== 'function') return value;
      if (!wrapped.has(String(name))) return (value as (...a: unknown[]) => unknown).bind(target);
      return async (...args: unknown[]) => {
        const result = await (value as (...a: unknown[]) => Promise<unknown>).apply(target, args);
        if (fail.delete(String(name)))
          throw new StoreUnavailableError('the PostgreSQL store is unavailable (Connection terminated)');
        return result;
      };
    }
  });
}

async function setup(fail: string[]) {
  const dir = tempDir();
  const config = parseConfig(
    { log_level: 'silent', data_dir: join(dir, 'data'), lease: '30s', workers: 2 },
    dir
  );
  const real = await SqliteStores.open(join(config.dataDir, 'executor.db'));
  store = real;
  const wrapped = { ...real, claims: losingAnswers(real.claims, new Set(fail)) };
  pool = new WorkerPool(wrapped, config, log);
  return { real, config };
}

async function until(read: () => Promise<string | undefined>, want: string): Promise<string | undefined> {
  let value: string | undefined;
  await eventually(async () => (value = await read()) === want, { what: want, timeoutMs: 30_000 }).catch(
    () => undefined
  );
  return value;
}

const newRun = (runId: string) => ({
  run_id: runId,
  team: 'default',
  environment_id: 'local',
  title: null,
  prompt: '@sim say done',
  config: '{"environment_id":"local"}',
  extra: '{}',
  creator_type: 'user',
  creator_uid: 'u',
  creator_name: 'u',
  created_at: new Date().toISOString()
});

describe('worker pool against a failing store', () => {
  it('runs a run whose claim committed but whose answer was lost, once, instead of leaving it to its lease', async () => {
    const { real } = await setup(['claimNext']);
    await real.runs.createRun(newRun('run_lost_claim'), undefined, 100);
    await pool!.start().catch(() => undefined); // the first claim "fails"
    const state = await until(
      async () => (await real.runs.getRunAnyTeam('run_lost_claim'))?.state,
      'SUCCEEDED'
    );
    expect(state).toBe('SUCCEEDED');
    const events = await real.transcript.listEvents('run_lost_claim');
    expect(events.filter(event => event.kind === 'state').map(event => event.state)).toEqual([
      'QUEUED',
      'INPROGRESS',
      'SUCCEEDED'
    ]);
    expect(events.filter(event => event.kind === 'message')).toHaveLength(1);
    expect(logged).toContain('info a claim whose answer was lost had committed: running the run');
  });

  it("retries a run's outcome when the store drops the answer, and the run ends as its agent said", async () => {
    const { real } = await setup(['finishRun']);
    await real.runs.createRun(newRun('run_lost_finish'), undefined, 100);
    await pool!.start();
    expect(
      await until(async () => (await real.runs.getRunAnyTeam('run_lost_finish'))?.state, 'SUCCEEDED')
    ).toBe('SUCCEEDED');
    expect(logged).toContain('warn store unavailable: the worker pauses until it is back');
  });
});
