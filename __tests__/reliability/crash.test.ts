// Crash cycles: the executor is killed with SIGKILL at random moments while clients create runs
// (with idempotency keys) and runs execute. After each restart: every acknowledged run is readable,
// no idempotency key maps to two runs, no run is left INPROGRESS, and the database is intact.
// Quick form here; long form: `npm run reliability:crash` (200 cycles).
import { afterAll, describe, expect, it } from '@jest/globals';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { type ExecutorProcess, createKeyWithCli, spawnExecutor, tempDir } from '../support/executor.js';

const CYCLES = Number(process.env.CRASH_CYCLES ?? 3);
/** Creates each cycle acknowledges before its SIGKILL may come. */
const ACKNOWLEDGED_PER_CYCLE = 5;
const started: ExecutorProcess[] = [];
afterAll(async () => {
  for (const executor of started) await executor.stop('SIGKILL');
});

async function start(data: string, dir: string): Promise<ExecutorProcess> {
  const executor = await spawnExecutor(['--data-dir', data], { cwd: dir });
  started.push(executor);
  return executor;
}

describe('crash cycles', () => {
  it(
    `survives ${CYCLES} SIGKILLs under load without losing or duplicating an acknowledged run`,
    async () => {
      const dir = tempDir('crash-');
      const data = join(dir, 'data');
      writeFileSync(
        join(dir, 'agent-executor.yaml'),
        'workers: 3\nlease: 2s\nlog_level: warn\nlimits:\n  rate_limit_per_minute: 0\n  max_queued_runs: 1000000\n'
      );
      const key = await createKeyWithCli(dir, { name: 'crash', dataDir: data });
      const acknowledged = new Map<string, string>(); // idempotency key → run id
      let sent = 0;

      for (let cycle = 0; cycle < CYCLES; cycle++) {
        const restartedAt = Date.now();
        const executor = await start(data, dir);
        const headers = { authorization: `Bearer ${key}`, 'content-type': 'application/json' };
        // Everything acknowledged before is still there, and a retried create maps to the same run.
        // Every run acknowledged in the cycle just killed, and a sample of older ones (all are checked at the end).
        const entries = [...acknowledged];
        const recent = entries.filter(([idem]) => idem.startsWith(`crash-${cycle - 1}-`));
        const older = entries.filter(() => Math.random() < 50 / Math.max(50, entries.length));
        for (const [idem, runId] of [...recent, ...older]) {
          const read = await fetch(`${executor.url}/api/v1/agent/runs/${runId}`, { headers });
          expect(read.status).toBe(200);
          // A run the killed process held was failed at start-up; only this process's claims are INPROGRESS.
          const run = (await read.json()) as { state: string; started_at: string };
          if (run.state === 'INPROGRESS')
            expect(Date.parse(run.started_at)).toBeGreaterThanOrEqual(restartedAt - 50);
          if (Math.random() < 0.2) {
            const again = await fetch(`${executor.url}/api/v1/agent/run`, {
              method: 'POST',
              headers: { ...headers, 'idempotency-key': idem },
              body: JSON.stringify({ prompt: `@sim sleep 0.3\n${idem}`, config: { environment_id: 'local' } })
            });
            expect(((await again.json()) as { run_id: string }).run_id).toBe(runId);
          }
        }
        let stop = false;
        // Each cycle kills the process only after it acknowledged a few creates (an event, not a
        // time: a loaded machine acknowledges fewer per second), then at a random moment after.
        let thisCycle = 0;
        let loaded!: () => void;
        const underLoad = new Promise<void>(resolve => (loaded = resolve));
        const clients = Array.from({ length: 4 }, async () => {
          while (!stop) {
            const idem = `crash-${cycle}-${sent++}`;
            try {
              const response = await fetch(`${executor.url}/api/v1/agent/run`, {
                method: 'POST',
                headers: { ...headers, 'idempotency-key': idem },
                body: JSON.stringify({
                  prompt: `@sim sleep 0.3\n${idem}`,
                  config: { environment_id: 'local' }
                })
              });
              if (response.status === 200) {
                acknowledged.set(idem, ((await response.json()) as { run_id: string }).run_id);
                if (++thisCycle >= ACKNOWLEDGED_PER_CYCLE) loaded();
              }
            } catch {
              return; // the server died mid-request: that create was never acknowledged
            }
          }
        });
        await underLoad;
        await new Promise(resolve => setTimeout(resolve, Math.random() * 800));
        await executor.stop('SIGKILL');
        stop = true;
        await Promise.all(clients);
      }

      // Final restart: check every acknowledged run, then the database itself.
      const executor = await start(data, dir);
      const headers = { authorization: `Bearer ${key}` };
      for (const runId of acknowledged.values()) {
        expect((await fetch(`${executor.url}/api/v1/agent/runs/${runId}`, { headers })).status).toBe(200);
      }
      await executor.stop();
      const db = new DatabaseSync(join(data, 'executor.db'));
      expect(db.prepare('PRAGMA integrity_check').get()).toEqual({ integrity_check: 'ok' });
      const duplicates = db
        .prepare(
          'SELECT idempotency_key FROM runs WHERE idempotency_key IS NOT NULL GROUP BY team, idempotency_key HAVING COUNT(*) > 1'
        )
        .all();
      expect(duplicates).toEqual([]);
      expect(db.prepare(`SELECT COUNT(*) AS n FROM runs WHERE state = 'INPROGRESS'`).get()).toEqual({ n: 0 });
      const counted = db.prepare('SELECT COUNT(*) AS n FROM runs').get() as { n: number };
      db.close();
      expect(counted.n).toBeGreaterThanOrEqual(acknowledged.size);
      expect(acknowledged.size).toBeGreaterThanOrEqual(CYCLES * ACKNOWLEDGED_PER_CYCLE);
      console.log(
        `crash: ${CYCLES} SIGKILLs, ${acknowledged.size} acknowledged runs of ${sent} creates sent, ${counted.n} runs stored, integrity ok`
      );
    },
    30_000 + CYCLES * 10_000
  );
});
