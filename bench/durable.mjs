// Benchmark 4: durable creates. Creates per second the executor acknowledges (each one committed
// with synchronous=FULL before the answer), next to a bare loop of single-row INSERT + COMMIT on
// node:sqlite with the same pragmas: the disk's own limit for one-commit-per-row.
// --setup picks the processes on the one data dir: `all` (one process that also runs every run),
// `api` (the API process alone), `split` (the API process measured, a --role worker process beside
// it running the runs on the same SQLite file).
//
//   node bench/durable.mjs [--seconds 5] [--workers 4] [--setup all|api|split]

import { DatabaseSync } from 'node:sqlite';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import autocannon from 'autocannon';
import { createKey, saveResult, startExecutor, tempDir } from './lib.mjs';

const { values } = parseArgs({
  options: {
    seconds: { type: 'string', default: '5' },
    workers: { type: 'string', default: '4' },
    setup: { type: 'string', default: 'all' }
  }
});
if (!['all', 'api', 'split'].includes(values.setup))
  throw new Error(`--setup ${JSON.stringify(values.setup)}: expected all, api or split`);
const seconds = Number(values.seconds);

function bareLoop() {
  const db = new DatabaseSync(join(tempDir(), 'bare.db'));
  db.exec('PRAGMA journal_mode = WAL; PRAGMA synchronous = FULL;');
  db.exec(
    'CREATE TABLE runs (seq INTEGER PRIMARY KEY AUTOINCREMENT, run_id TEXT UNIQUE, prompt TEXT, created_at TEXT)'
  );
  const insert = db.prepare('INSERT INTO runs (run_id, prompt, created_at) VALUES (?, ?, ?)');
  const end = Date.now() + seconds * 1000;
  let n = 0;
  while (Date.now() < end) {
    db.exec('BEGIN IMMEDIATE');
    insert.run(crypto.randomUUID(), '@sim say hi', new Date().toISOString());
    db.exec('COMMIT');
    n++;
  }
  db.close();
  return Math.round(n / seconds);
}

const bare = bareLoop();
console.log(`bare INSERT + COMMIT loop: ${bare} commits/s`);

const source = tempDir('bench-source-');
const config = `workers: ${values.workers}\nlog_level: warn\nlimits:\n  rate_limit_per_minute: 0\n  max_queued_runs: 10000000\nenvironments:\n  - id: bench\n    source: ${source}\n`;
const dataDir = join(tempDir(), 'data');
const role = values.setup === 'all' ? [] : ['--role', 'api'];
const executor = await startExecutor({ dataDir, config, args: role });
const worker =
  values.setup === 'split' ? await startExecutor({ dataDir, config, args: ['--role', 'worker'] }) : undefined;
const key = createKey(executor.dataDir);
const result = await autocannon({
  url: `${executor.url}/api/v1/agent/run`,
  method: 'POST',
  connections: 50,
  duration: seconds,
  headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
  body: JSON.stringify({ prompt: '@sim say hi', config: { environment_id: 'bench' } })
});
await executor.stop();
await worker?.stop();
const creates = Math.round(result.requests.average);
console.log(
  `executor creates: ${creates}/s (p50 ${result.latency.p50} ms, p99 ${result.latency.p99} ms, non-2xx ${result.non2xx}); ratio ${(creates / bare).toFixed(2)}`
);
saveResult(`durable-${values.setup}-workers-${values.workers}`, {
  command: `node bench/durable.mjs --seconds ${seconds} --workers ${values.workers} --setup ${values.setup}`,
  bareCommitsPerSecond: bare,
  executorCreatesPerSecond: creates,
  ratio: Math.round((creates / bare) * 100) / 100,
  createP50Ms: result.latency.p50,
  createP99Ms: result.latency.p99,
  non2xx: result.non2xx
});
