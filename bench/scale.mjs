// Benchmark 5: the store at scale. With 1,000,000 runs in one team: latency of the first page of
// the list and of page 1,000 (keyset paging should make them equal), and of reading runs by id.
//
//   node bench/scale.mjs [--runs 1000000] [--samples 200]

import { DatabaseSync } from 'node:sqlite';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { api, createKey, median, percentile, saveResult, startExecutor, tempDir } from './lib.mjs';

const { values } = parseArgs({
  options: { runs: { type: 'string', default: '1000000' }, samples: { type: 'string', default: '200' } }
});
const total = Number(values.runs);
const samples = Number(values.samples);
const dir = tempDir();
const dataDir = join(dir, 'data');
const key = createKey(dataDir); // creates the database with the current schema

// Fill the store directly: one transaction, rows shaped like the executor's own.
const started = Date.now();
const db = new DatabaseSync(join(dataDir, 'executor.db'));
const team = db.prepare('SELECT team FROM api_keys LIMIT 1').get().team;
const insert = db.prepare(
  `INSERT INTO runs (run_id, team, environment_id, state, title, prompt, config, extra, creator_type, creator_uid,
     creator_name, created_at, updated_at, started_at, completed_at, version)
   VALUES (?, ?, 'bench', 'SUCCEEDED', NULL, ?, '{"environment_id":"bench"}', '{}', 'agent', 'key_bench', 'bench', ?, ?, ?, ?, 3)`
);
const ids = [];
db.exec('BEGIN');
// Recent enough (one run a second up to now) that retention does not prune them at start-up.
const base = Date.now() - total * 1000;
for (let i = 0; i < total; i++) {
  const id = crypto.randomUUID();
  if (i % Math.ceil(total / samples) === 0) ids.push(id);
  const at = new Date(base + i * 1000).toISOString();
  insert.run(id, team, `prompt ${i}`, at, at, at, at);
}
db.exec('COMMIT');
db.close();
const fillSeconds = Math.round((Date.now() - started) / 1000);
console.log(`inserted ${total} runs in ${fillSeconds} s`);

const executor = await startExecutor({
  dataDir,
  config:
    'log_level: warn\nlimits:\n  rate_limit_per_minute: 0\nenvironments:\n  - id: bench\n    source: .\n'
});
async function timed(path) {
  const t = performance.now();
  const response = await api(executor.url, key, path);
  return { ms: performance.now() - t, body: response.body };
}

const first = [];
for (let i = 0; i < samples; i++) first.push((await timed('/api/v1/agent/runs?limit=20')).ms);
let cursor;
for (let page = 1; page < 1000; page++) {
  const body = (await timed(`/api/v1/agent/runs?limit=20${cursor ? `&cursor=${cursor}` : ''}`)).body;
  if (!body.page_info?.next_cursor)
    throw new Error(`page ${page} has no next page: ${JSON.stringify(body).slice(0, 300)}`);
  cursor = body.page_info.next_cursor;
}
const deep = [];
let deepBody;
for (let i = 0; i < samples; i++) {
  const answer = await timed(`/api/v1/agent/runs?limit=20&cursor=${cursor}`);
  deep.push(answer.ms);
  deepBody = answer.body;
}
const reads = [];
for (const id of ids) reads.push((await timed(`/api/v1/agent/runs/${id}`)).ms);
const filtered = [];
for (let i = 0; i < samples; i++) filtered.push((await timed('/api/v1/agent/runs?limit=20&state=FAILED')).ms);
await executor.stop();

const stats = values => ({ p50: +median(values).toFixed(2), p99: +percentile(values, 99).toFixed(2) });
const result = {
  command: `node bench/scale.mjs --runs ${total} --samples ${samples}`,
  runs: total,
  fillSeconds,
  firstPageMs: stats(first),
  page1000Ms: stats(deep),
  page1000FirstPrompt: deepBody.runs?.[0]?.prompt ?? JSON.stringify(deepBody),
  readMs: stats(reads),
  filterWithNoMatchesMs: stats(filtered)
};
console.log(result);
saveResult('scale', result);
