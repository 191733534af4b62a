// Clusters of executor nodes (the bundled executor, as child processes) on one PostgreSQL server
// that the test file importing this starts for itself (its hooks are registered on import), for the
// scale-out suites. Executions are counted by the agent, not by states: each run's agent appends
// "<run id> <node>" to one shared file, so a run executed twice shows up twice.
import { afterAll, beforeAll, expect } from '@jest/globals';
import { chmodSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import pg from 'pg';
import { type ExecutorProcess, executorCli, spawnExecutor, tempDir } from './executor.js';
import { eventually } from './eventually.js';
import { type TestPostgres, startPostgres } from './postgres.js';

let server: TestPostgres;
/** The file's PostgreSQL server (stopped and started by the restart tests). */
export const postgres = (): TestPostgres => server;
const started: ExecutorProcess[] = [];
beforeAll(async () => {
  server = await startPostgres();
}, 60_000);
afterAll(async () => {
  for (const node of started) await node.stop('SIGKILL');
  await server?.destroy();
});

/** Quick form in the suites; long form: `npm run reliability:scale-out` (3,000 runs, 5 restarts). */
// 90 runs from 12 clients at once keep the three nodes' 12 workers claiming against each other.
export const RUNS = Number(process.env.SCALE_OUT_RUNS ?? 90);
export const RESTARTS = Number(process.env.PG_RESTARTS ?? 1);

export interface Cluster {
  url: string;
  key: string;
  log: string;
  nodes: ExecutorProcess[];
  db: pg.Client;
}

/**
 * A fresh database and `roles.length` nodes on it. The one environment runs a shell agent that logs
 * the execution, then sleeps as many seconds as the prompt says.
 */
export async function cluster(
  roles: string[],
  options: { lease?: string; workers?: number } = {}
): Promise<Cluster> {
  const url = await server.freshDatabase();
  const dir = tempDir('scale-out-');
  // The agent's own log of executions, in the one folder outside its workspace its sandbox may write.
  // A root executor's runs are an unprivileged host user: the folder must be theirs to write.
  mkdirSync(join(dir, 'log'), { mode: 0o777 });
  chmodSync(join(dir, 'log'), 0o777);
  const log = join(dir, 'log', 'executions.log');
  writeFileSync(log, '', { mode: 0o666 });
  chmodSync(log, 0o666);
  mkdirSync(join(dir, 'source'));
  const config = join(dir, 'agent-executor.yaml');
  writeFileSync(
    config,
    [
      `workers: ${options.workers ?? 4}`,
      `lease: ${options.lease ?? '3s'}`,
      'log_level: warn',
      'limits:',
      '  rate_limit_per_minute: 0',
      '  max_queued_runs: 100000',
      'environments:',
      '  - id: sh',
      '    source: source',
      '    env: [NODE_NAME]',
      `    sandbox: {write: [${join(dir, 'log')}]}`,
      '    agent:',
      '      kind: command',
      '      prompt: arg',
      `      command: [sh, -c, 'echo "$AGENT_RUN_ID $NODE_NAME" >> ${log}; sleep "$1"', sh, '{prompt}']`
    ].join('\n')
  );
  const created = await executorCli(
    ['keys', 'create', '--kind', 'agent', '--name', 'scale', '--store', url],
    {
      cwd: dir
    }
  );
  expect(created.code).toBe(0);
  const key = created.stdout.trim().split('\n').at(-1)!;
  const nodes = await Promise.all(
    roles.map(async (role, index) => {
      const node = await spawnExecutor(
        ['--config', config, '--data-dir', join(dir, `node-${index}`), '--store', url, '--role', role],
        { cwd: dir, env: { NODE_NAME: `node-${index}` } }
      );
      started.push(node);
      return node;
    })
  );
  const db = observer(url);
  await db.connect();
  return { url, key, log, nodes, db };
}

export async function close(c: Cluster): Promise<void> {
  await Promise.all(c.nodes.map(node => node.stop()));
  await c.db.end();
}

export function headers(c: Cluster, extra: Record<string, string> = {}) {
  return { authorization: `Bearer ${c.key}`, 'content-type': 'application/json', ...extra };
}

export async function create(c: Cluster, node: ExecutorProcess, seconds: number, idempotencyKey?: string) {
  const response = await fetch(`${node.url}/api/v1/agent/run`, {
    method: 'POST',
    headers: headers(c, idempotencyKey ? { 'idempotency-key': idempotencyKey } : {}),
    body: JSON.stringify({ prompt: String(seconds), config: { environment_id: 'sh' } })
  });
  return {
    status: response.status,
    body: (await response.json()) as { run_id: string; error_code?: string }
  };
}

/** run id → nodes that executed it, from the agent's own log. */
export function executions(c: Cluster): Map<string, string[]> {
  const seen = new Map<string, string[]>();
  for (const line of readFileSync(c.log, 'utf8').split('\n')) {
    const [runId, node] = line.split(' ');
    if (!runId) continue;
    seen.set(runId, [...(seen.get(runId) ?? []), node!]);
  }
  return seen;
}

export async function states(c: Cluster): Promise<Map<string, { state: string; error_code: string | null }>> {
  const rows = await c.db.query<{ run_id: string; state: string; error_code: string | null }>(
    'SELECT run_id, state, error_code FROM runs'
  );
  return new Map(rows.rows.map(row => [row.run_id, row]));
}

/**
 * The test's own client on the database. A test that failed before close() leaves it open: a later
 * restart of PostgreSQL must not turn that into an unhandled error of another test.
 */
export function observer(url: string): pg.Client {
  const db = new pg.Client({ connectionString: url });
  db.on('error', () => undefined);
  return db;
}

/** Why a run did not succeed, as its record says (for a failing assertion's message). */
export async function why(c: Cluster, id: string): Promise<string> {
  const rows = await c.db.query<{ error_code: string | null; status_message: Buffer | string | null }>(
    'SELECT error_code, status_message FROM runs WHERE run_id = $1',
    [id]
  );
  const row = rows.rows[0];
  return row ? `${row.error_code}: ${String(row.status_message)}` : 'no such run';
}

export async function untilAllEnded(c: Cluster, timeoutMs: number): Promise<void> {
  const open = async () =>
    Number(
      (
        await c.db.query<{ n: string }>(
          `SELECT COUNT(*) AS n FROM runs WHERE state IN ('QUEUED', 'INPROGRESS')`
        )
      ).rows[0]!.n
    );
  await eventually(async () => (await open()) === 0, { what: 'no open runs', timeoutMs, intervalMs: 200 });
}
