// Graceful shutdown under load: the bundled executor gets SIGTERM while clients create and read
// runs. Every request the executor accepted is answered; new creates get 503 shutting_down while
// it drains; runs that were in progress either finish SUCCEEDED within the grace period or are
// recorded FAILED executor_restarted; nothing is claimed after the signal; and it exits 0.
//
// What happens at the very end, precisely: when the grace period is over the executor closes its
// port and then every open connection. A client that writes a new request on a kept-alive
// connection at that instant, before the executor has read it, gets ECONNRESET (or "other side
// closed"); a new connection gets ECONNREFUSED. The executor never saw those requests: the test
// proves it from the request ids (x-request-id, numbered in order by the executor) — every id up
// to the last one issued was answered, and the in-process test below counts, inside the server,
// every request it accepted while stopping and checks each response was sent in full. Clients
// retry such errors (the action's client does).
import { describe, expect, it } from '@jest/globals';
import { rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createKeyWithCli, spawnExecutor, startTestExecutor, tempDir } from '../support/executor.js';
import { poll } from './http-checks.js';

const GRACE_S = 2;
const CLIENTS = 6;
const MAX_REQUESTS_PER_CLIENT = 1000;
const PAUSE_MS = 15;

interface Sent {
  kind: 'create' | 'read' | 'held read' | 'ready';
  start: number;
  end: number;
  status?: number;
  body?: { run_id?: string; error_code?: string; state?: string; status?: string };
  requestId?: string | null;
  etag?: string | null;
  retryAfter?: string | null;
  contentType?: string | null;
  error?: string;
}

interface RunRecord {
  run_id: string;
  state: string;
  started_at: string | null;
  completed_at: string | null;
  error_code?: string;
}

describe('graceful shutdown', () => {
  it('answers accepted requests, refuses new runs with 503, settles running runs and exits 0', async () => {
    const dir = tempDir('shutdown-');
    const data = join(dir, 'data');
    writeFileSync(
      join(dir, 'agent-executor.yaml'),
      `workers: 4\nshutdown_grace: ${GRACE_S}s\nlog_level: warn\nlimits:\n  rate_limit_per_minute: 0\n`
    );
    const key = await createKeyWithCli(dir, { name: 'load', dataDir: data });
    const headers = { authorization: `Bearer ${key}`, 'content-type': 'application/json' };
    const executor = await spawnExecutor(['--data-dir', data], { cwd: dir });
    const exited = new Promise<{ code: number | null; at: number }>(resolve =>
      executor.child.once('exit', code => resolve({ code, at: Date.now() }))
    );
    let exitedAt = Infinity;
    void exited.then(exit => (exitedAt = exit.at));

    // Every request to the first executor goes through here and is recorded.
    const sent: Sent[] = [];
    const send = async (kind: Sent['kind'], path: string, init: RequestInit = {}): Promise<Sent> => {
      const record: Sent = { kind, start: Date.now(), end: 0 };
      sent.push(record);
      try {
        const response = await fetch(executor.url + path, {
          ...init,
          headers: { ...headers, ...init.headers }
        });
        record.status = response.status;
        record.requestId = response.headers.get('x-request-id');
        record.etag = response.headers.get('etag');
        record.retryAfter = response.headers.get('retry-after');
        record.contentType = response.headers.get('content-type');
        const text = await response.text();
        record.body = text ? (JSON.parse(text) as Sent['body']) : {};
      } catch (error) {
        const cause = (error as { cause?: { code?: string; message?: string } }).cause;
        record.error = cause?.code ?? cause?.message ?? (error as Error).message;
      } finally {
        record.end = Date.now();
      }
      return record;
    };
    const create = (prompt: string) =>
      send('create', '/api/v1/agent/run', {
        method: 'POST',
        body: JSON.stringify({ prompt, config: { environment_id: 'local' } })
      });

    let stop = false;
    const clients: Promise<void>[] = [];
    const held: Promise<Sent>[] = [];
    try {
      // Two runs that cannot finish within the grace period, in progress before the load starts.
      const long: string[] = [];
      for (let i = 0; i < 2; i++) long.push((await create(`@sim sleep 30\nlong ${i}`)).body!.run_id!);
      const etags: string[] = [];
      for (const id of long) {
        etags.push(
          await poll(async () => {
            const read = await send('read', `/api/v1/agent/runs/${id}`);
            return read.body?.state === 'INPROGRESS' ? read.etag! : undefined;
          }, `run ${id} to start`)
        );
      }
      // Held reads on them, in flight across the signal: answered when the runs end at the grace.
      long.forEach((id, i) =>
        held.push(
          send('held read', `/api/v1/agent/runs/${id}`, {
            headers: { 'if-none-match': etags[i]!, prefer: 'wait=60' }
          })
        )
      );

      // The load: each client creates a short run every 250 ms, reads (and now and then asks
      // /readyz) in between, until the process is gone; bounded in requests and time.
      const deadline = Date.now() + 20_000;
      const acknowledged: string[] = [];
      for (let c = 0; c < CLIENTS; c++) {
        clients.push(
          (async () => {
            let nextCreate = Date.now() + c * 40;
            for (let i = 0; i < MAX_REQUESTS_PER_CLIENT && !stop && Date.now() < deadline; i++) {
              if (Date.now() >= nextCreate) {
                nextCreate += 250;
                const { body, status } = await create(`@sim sleep 0.5\nshort ${c}-${i}`);
                if (status === 200) acknowledged.push(body!.run_id!);
              } else if (i % 10 === 5) {
                await send('ready', '/readyz');
              } else {
                await send('read', `/api/v1/agent/runs/${acknowledged.at(-1) ?? long[0]}`);
              }
              if (Date.now() > exitedAt + 300) break; // only refused connections from here on
              await new Promise(resolve => setTimeout(resolve, PAUSE_MS));
            }
          })()
        );
      }

      // The signal comes once the load is under way: more than 50 requests answered (however long a
      // loaded machine takes to answer them).
      await poll(
        async () => sent.filter(r => r.status !== undefined).length > 50 || undefined,
        'more than 50 requests answered before the signal'
      );
      const sigtermAt = Date.now();
      executor.child.kill('SIGTERM');
      let noExit: NodeJS.Timeout | undefined;
      const exit = await Promise.race([
        exited,
        new Promise<never>((_, reject) => {
          noExit = setTimeout(() => reject(new Error('no exit within 15 s')), 15_000);
        })
      ]).finally(() => clearTimeout(noExit));
      stop = true;
      await Promise.all([...clients, ...held]);

      // ---- what the clients saw ----
      const phase = (r: Sent) =>
        r.start < sigtermAt ? 'before' : r.end < exit.at ? 'draining' : 'after exit';
      const summary: Record<string, number> = {};
      for (const r of sent) {
        const label = `${phase(r)} ${r.kind} ${r.status ?? r.error} ${r.body?.error_code ?? ''}`.trim();
        summary[label] = (summary[label] ?? 0) + 1;
      }
      const context = JSON.stringify(summary);
      expect(exit.code).toBe(0);
      expect({ context, before: sent.filter(r => r.start < sigtermAt).length > 50 }).toEqual({
        context,
        before: true
      });

      // Every request sent before the signal was answered: nothing was reset.
      for (const r of sent.filter(s => s.start < sigtermAt))
        expect({ ...r, answered: r.status !== undefined }).toMatchObject({ answered: true });
      // Every request id the executor issued, up to the last one, reached its client.
      const ids = sent.filter(r => r.requestId).map(r => r.requestId!);
      const prefixes = new Set(ids.map(id => id.split('-')[0]));
      expect(prefixes.size).toBe(1);
      const numbers = new Set(ids.map(id => parseInt(id.split('-')[1]!, 36)));
      const last = Math.max(...numbers);
      const lost = Array.from({ length: last }, (_, i) => i + 1).filter(n => !numbers.has(n));
      expect({ context, lost }).toEqual({ context, lost: [] });

      // Once the executor has refused one request as draining, every create is refused: 503
      // shutting_down, problem+json, Retry-After. (A create sent in the instant between kill()
      // and the executor handling the signal may still be accepted; it is then kept and run.)
      const during = sent.filter(r => r.start >= sigtermAt && r.status !== undefined);
      const draining = Math.min(...during.filter(r => r.status === 503).map(r => r.end));
      const refused = during.filter(r => r.kind === 'create' && r.start >= draining);
      expect({ context, refused: refused.length > 0 }).toEqual({ context, refused: true });
      for (const r of refused) {
        expect(r).toMatchObject({ status: 503, body: { error_code: 'shutting_down', status: 503 } });
        expect(r.retryAfter).toMatch(/^\d+$/);
        expect(r.contentType).toMatch(/^application\/problem\+json/);
      }
      for (const r of during.filter(s => s.kind === 'create' && s.status === 200))
        expect(r.start).toBeLessThan(draining);
      // Reads keep working while the executor drains, and it says it is not ready.
      const reads = during.filter(r => r.kind === 'read');
      expect({ context, reads: reads.length > 0 }).toEqual({ context, reads: true });
      for (const r of reads) expect(r.status).toBe(200);
      for (const r of during.filter(s => s.kind === 'ready' && s.start >= draining))
        expect(r).toMatchObject({ status: 503, body: { status: 'shutting_down' } });
      for (const r of sent.filter(s => s.kind === 'ready' && s.end < sigtermAt)) expect(r.status).toBe(200);
      // The held reads were answered with the runs' final state.
      for (const r of await Promise.all(held))
        expect(r).toMatchObject({ status: 200, body: { state: 'FAILED' } });

      // The requests without an answer all came at the very end, after the grace period, and
      // failed as a closed port or connection does.
      const graceEnd = sigtermAt + GRACE_S * 1000;
      for (const r of sent.filter(s => s.status === undefined)) {
        expect(r.end).toBeGreaterThanOrEqual(graceEnd);
        expect(r.error).toMatch(/ECONNREFUSED|ECONNRESET|UND_ERR_SOCKET|other side closed/);
      }
      // Draining took the grace period (the long runs held it open), and not much more.
      expect(exit.at - sigtermAt).toBeGreaterThanOrEqual(GRACE_S * 1000 - 100);
      expect(exit.at - sigtermAt).toBeLessThan(GRACE_S * 1000 + 5000);

      // ---- what the store says, read by a new executor on the same data dir ----
      const restartedAt = Date.now();
      const again = await spawnExecutor(['--data-dir', data], { cwd: dir });
      try {
        const read = async (id: string) =>
          (await (await fetch(`${again.url}/api/v1/agent/runs/${id}`, { headers })).json()) as RunRecord;
        for (const id of long) {
          // Still in progress when the grace ran out: recorded FAILED, never re-run.
          expect(await read(id)).toMatchObject({ state: 'FAILED', error_code: 'executor_restarted' });
        }
        expect(acknowledged.length).toBeGreaterThan(5);
        const runs = await poll(
          async () => {
            const all = await Promise.all(acknowledged.map(read));
            return all.every(run => run.state !== 'QUEUED' && run.state !== 'INPROGRESS') ? all : undefined;
          },
          'queued runs to finish after the restart',
          20_000,
          200
        );
        for (const run of runs) {
          const started = Date.parse(run.started_at!);
          // Nothing was claimed between the start of draining and the restart.
          expect({
            id: run.run_id,
            claimedWhileDraining: started > draining && started < restartedAt
          }).toEqual({
            id: run.run_id,
            claimedWhileDraining: false
          });
          // Short runs in progress at the signal finished within the grace; the rest ran after the restart.
          expect({ id: run.run_id, state: run.state }).toEqual({ id: run.run_id, state: 'SUCCEEDED' });
        }
        // Some short runs were in progress at the signal and finished during the drain.
        const drained = runs.filter(
          run => Date.parse(run.started_at!) < sigtermAt && Date.parse(run.completed_at!) > sigtermAt
        );
        expect(drained.length).toBeGreaterThan(0);
      } finally {
        expect(await again.stop('SIGTERM')).toBe(0);
      }
    } finally {
      stop = true;
      await executor.stop('SIGKILL');
      await Promise.all(clients);
      rmSync(dir, { recursive: true, force: true });
    }
  }, 120_000);

  it('sends every response in full for the requests it accepted while stopping (counted inside the server)', async () => {
    for (let trial = 0; trial < 3; trial++) {
      const ex = await startTestExecutor({ workers: 4, limits: { rate_limit_per_minute: 0 } });
      const key = (await ex.key()).raw;
      const headers = { authorization: `Bearer ${key}`, 'content-type': 'application/json' };
      const body = JSON.stringify({ prompt: '@sim sleep 0.3', config: { environment_id: 'local' } });
      const first = await fetch(`${ex.url}/api/v1/agent/run`, { method: 'POST', headers, body });
      const { run_id: runId } = (await first.json()) as { run_id: string };
      // Node emits 'request' once it has parsed a request: from then on the server owns an answer.
      let accepted = 0;
      const unfinished: string[] = [];
      ex.app.server.on('request', (request, response) => {
        accepted++;
        response.on('close', () => {
          if (!response.writableFinished) unfinished.push(`${request.method} ${request.url}`);
        });
      });
      let answered = 0;
      let stop = false;
      const failures: string[] = [];
      const clients = Array.from({ length: 8 }, async (_, c) => {
        for (let i = 0; i < 2000 && !stop; i++) {
          try {
            const response =
              c % 2 === 0
                ? await fetch(`${ex.url}/api/v1/agent/run`, { method: 'POST', headers, body })
                : await fetch(`${ex.url}/api/v1/agent/runs/${runId}`, { headers });
            await response.text();
            answered++;
          } catch (error) {
            const cause = (error as { cause?: { code?: string } }).cause;
            failures.push(cause?.code ?? String(error));
            if (cause?.code === 'ECONNREFUSED') return;
          }
        }
      });
      await new Promise(resolve => setTimeout(resolve, 300));
      await ex.stop(1000);
      stop = true;
      await Promise.all(clients);
      expect(accepted).toBeGreaterThan(50);
      expect(unfinished).toEqual([]);
      // Every request the server accepted reached its client; the failures are the others.
      expect(answered).toBe(accepted);
      for (const failure of failures) expect(failure).toMatch(/ECONNREFUSED|ECONNRESET|UND_ERR_SOCKET/);
    }
  }, 120_000);
});
