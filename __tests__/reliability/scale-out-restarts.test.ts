// Several executor nodes on one PostgreSQL server (support/scale-out-cluster.ts) while the server
// restarts under load, goes away shorter than a lease, or stays down. The rest: scale-out.test.ts.
import { describe, expect, it } from '@jest/globals';
import {
  RESTARTS,
  close,
  cluster,
  create,
  executions,
  headers,
  observer,
  postgres,
  states,
  untilAllEnded
} from '../support/scale-out-cluster.js';
import type { ExecutorProcess } from '../support/executor.js';
import { eventually } from '../support/eventually.js';
import { sleep } from '../support/wait.js';

describe('several executor nodes on one PostgreSQL: the server restarted or down', () => {
  it(
    'PostgreSQL restarted under load: no acknowledged run lost, none executed twice',
    async () => {
      const c = await cluster(['all', 'all'], { lease: '20s' });
      const acknowledged = new Map<string, string>(); // idempotency key → run id
      const unavailable = { count: 0 };
      let stop = false;
      let sent = 0;
      /** Creates like a client should: the same idempotency key until the run is acknowledged. */
      const client = async (index: number) => {
        while (!stop) {
          const idem = `restart-${index}-${sent++}`;
          for (let attempt = 0; ; attempt++) {
            try {
              const created = await create(c, c.nodes[sent % 2]!, 0.1, idem);
              if (created.status === 200) {
                acknowledged.set(idem, created.body.run_id);
                await sleep(50); // a steady load, not a flood the machine needs a minute to run
                break;
              }
              expect(created.status).toBe(503);
              expect(created.body.error_code).toBe('store_unavailable');
              unavailable.count++;
            } catch (error) {
              const logs = c.nodes.map(node => `exit ${node.child.exitCode}: ${node.stderr().slice(-2000)}`);
              throw new Error(`create failed outright: ${(error as Error).message}\n${logs.join('\n')}`);
            }
            if (attempt > 200) throw new Error(`no answer for ${idem} after 200 tries`);
            await sleep(100);
          }
        }
      };
      const clients = Promise.all(Array.from({ length: 4 }, (_, i) => client(i)));
      await c.db.end().catch(() => undefined);
      // Each restart under load: runs acknowledged before it, creates refused while the server is
      // down, and runs acknowledged again after it (waited for, not timed).
      const acknowledgedPast = (count: number, what: string) =>
        eventually(() => acknowledged.size >= count, { what, timeoutMs: 60_000, intervalMs: 20 });
      for (let restart = 0; restart < RESTARTS; restart++) {
        await acknowledgedPast(acknowledged.size + 30, 'runs acknowledged before the restart');
        const refusedBefore = unavailable.count;
        await postgres().stop();
        await eventually(() => unavailable.count >= refusedBefore + 4, {
          what: 'creates answered 503 while PostgreSQL is down',
          timeoutMs: 60_000,
          intervalMs: 20
        });
        await postgres().start();
      }
      await acknowledgedPast(acknowledged.size + 30, 'runs acknowledged after the last restart');
      stop = true;
      await clients;
      expect(unavailable.count).toBeGreaterThan(0);
      c.db = observer(c.url);
      await c.db.connect();
      await untilAllEnded(c, 60_000);
      const final = await states(c);
      const ran = executions(c);
      // Every acknowledged run is stored, under one run id per idempotency key.
      for (const [idem, runId] of acknowledged)
        expect({ idem, stored: final.has(runId) }).toEqual({ idem, stored: true });
      const keys = await c.db.query<{ idempotency_key: string; n: string }>(
        'SELECT idempotency_key, COUNT(*) AS n FROM runs GROUP BY idempotency_key HAVING COUNT(*) > 1'
      );
      expect(keys.rows).toEqual([]);
      // No run executed twice; runs that succeeded executed exactly once.
      for (const [id, nodes] of ran) expect({ id, executions: nodes.length }).toEqual({ id, executions: 1 });
      const succeeded = [...final.values()].filter(run => run.state === 'SUCCEEDED').length;
      for (const [id, run] of final) if (run.state === 'SUCCEEDED') expect(ran.has(id)).toBe(true);
      expect(succeeded).toBeGreaterThan(acknowledged.size * 0.9);
      console.log(
        `PostgreSQL restarts: ${RESTARTS}, ${acknowledged.size} runs acknowledged, ${unavailable.count} answers 503 store_unavailable, ` +
          `${succeeded} SUCCEEDED, ${[...final.values()].filter(run => run.state !== 'SUCCEEDED').length} not (${[
            ...final.values()
          ]
            .filter(run => run.state !== 'SUCCEEDED')
            .map(run => run.error_code)
            .join(', ')})`
      );
      await close(c);
    },
    120_000 + RESTARTS * 10_000
  );

  it('a run in progress rides out a PostgreSQL outage shorter than its lease', async () => {
    const c = await cluster(['all'], { lease: '6s' });
    const { body } = await create(c, c.nodes[0]!, 5);
    for (let i = 0; i < 100 && !executions(c).has(body.run_id); i++) await sleep(50);
    expect(executions(c).has(body.run_id)).toBe(true);
    await c.db.end();
    await postgres().stop();
    await sleep(3000);
    await postgres().start();
    c.db = observer(c.url);
    await c.db.connect();
    await untilAllEnded(c, 30_000);
    expect((await states(c)).get(body.run_id)).toEqual({
      run_id: body.run_id,
      state: 'SUCCEEDED',
      error_code: null
    });
    expect(executions(c).get(body.run_id)).toEqual(['node-0']);
    await close(c);
  }, 120_000);

  it('while PostgreSQL is down: 503 store_unavailable with Retry-After, /readyz 503, and back when it returns', async () => {
    const c = await cluster(['all']);
    const [node] = c.nodes as [ExecutorProcess];
    const { body } = await create(c, node, 0);
    await c.db.end();
    await postgres().stop();
    try {
      const read = await fetch(`${node.url}/api/v1/agent/runs/${body.run_id}`, { headers: headers(c) });
      expect(read.status).toBe(503);
      expect(read.headers.get('retry-after')).toBe('2');
      const text = await read.text();
      expect(JSON.parse(text)).toMatchObject({ error_code: 'store_unavailable', retryable: true });
      expect(text).not.toContain('test-only-password');
      const created = await create(c, node, 0);
      expect(created).toMatchObject({ status: 503, body: { error_code: 'store_unavailable' } });
      expect((await fetch(`${node.url}/readyz`)).status).toBe(503);
      expect((await fetch(`${node.url}/healthz`)).status).toBe(200);
    } finally {
      await postgres().start();
    }
    let status = 0;
    for (let i = 0; i < 50 && status !== 200; i++) {
      status = (await fetch(`${node.url}/api/v1/agent/runs/${body.run_id}`, { headers: headers(c) })).status;
      if (status !== 200) await sleep(100);
    }
    expect(status).toBe(200);
    expect(node.stderr()).not.toContain('test-only-password');
    c.db = observer(c.url);
    await c.db.connect();
    await close(c);
  }, 120_000);
});
