// Benchmark 5: the store at scale. With 1,000,000 runs in one team, one request at a time: latency
// of the first pages of the list and of pages 1,000 onwards (keyset paging should make them
// equal), of reading runs by id, and of a filter no run matches. Every list answer is uncached.
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
// The walk goes to page 999 + samples, 20 runs a page, and each page must have a next one.
if (!(total > (999 + samples) * 20))
  throw new Error(
    `--runs ${values.runs}: expected more than ${(999 + samples) * 20} for --samples ${samples}`
  );
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
/** A run id as the executor makes one (src/executor/runs/run-id.ts): a UUID v7 of its creation time. */
const runIdAt = ms => {
  const time = ms.toString(16).padStart(12, '0');
  return `${time.slice(0, 8)}-${time.slice(8)}-7${crypto.randomUUID().slice(15)}`;
};
db.exec('BEGIN');
// Recent enough (one run a second up to now) that retention does not prune them at start-up.
const base = Date.now() - total * 1000;
for (let i = 0; i < total; i++) {
  const id = runIdAt(base + i * 1000);
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

// The store keeps list pages until the next write (page-cache.ts), so no query is timed twice: the
// first pages and the deep pages are one walk, each page requested once, and the first-page and
// filter samples each carry their own far-future `created_before` (the same rows, a new query).
let distinct = 0;
const farFuture = () => new Date(Date.UTC(2100, 0, 1) + ++distinct).toISOString();
// Warm-up, not timed, with queries never asked again: the same walk under its own far-future
// `created_before` (so the timed walk's first pages are not its coldest), and the reads.
const warmupBefore = farFuture();
let warmCursor;
for (let page = 1; page < 1000 + samples; page++) {
  const cursorParam = warmCursor ? `&cursor=${warmCursor}` : '';
  warmCursor = (await timed(`/api/v1/agent/runs?limit=20&created_before=${warmupBefore}${cursorParam}`)).body
    .page_info?.next_cursor;
}
for (const id of ids) await timed(`/api/v1/agent/runs/${id}`);

const walk = [];
let cursor;
let deepBody;
for (let page = 1; page < 1000 + samples; page++) {
  const answer = await timed(`/api/v1/agent/runs?limit=20${cursor ? `&cursor=${cursor}` : ''}`);
  if (!answer.body.page_info?.next_cursor)
    throw new Error(`page ${page} has no next page: ${JSON.stringify(answer.body).slice(0, 300)}`);
  walk.push(answer.ms);
  if (page === 1000) deepBody = answer.body;
  cursor = answer.body.page_info.next_cursor;
}
const firstPages = walk.slice(0, samples);
const deepPages = walk.slice(999, 999 + samples);
const firstPageAgain = [];
for (let i = 0; i < samples; i++)
  firstPageAgain.push((await timed(`/api/v1/agent/runs?limit=20&created_before=${farFuture()}`)).ms);
const reads = [];
for (const id of ids) reads.push((await timed(`/api/v1/agent/runs/${id}`)).ms);
const filtered = [];
for (let i = 0; i < samples; i++)
  filtered.push((await timed(`/api/v1/agent/runs?limit=20&state=FAILED&created_before=${farFuture()}`)).ms);
await executor.stop();

const stats = values => ({ p50: +median(values).toFixed(2), p99: +percentile(values, 99).toFixed(2) });
const result = {
  command: `node bench/scale.mjs --runs ${total} --samples ${samples}`,
  runs: total,
  samples,
  fillSeconds,
  cache: 'none: every list request is a query not asked before',
  pages1ToSamplesMs: stats(firstPages),
  firstPageDistinctQueriesMs: stats(firstPageAgain),
  pages1000OnMs: stats(deepPages),
  page1000FirstPrompt: deepBody.runs?.[0]?.prompt ?? JSON.stringify(deepBody),
  readMs: stats(reads),
  filterWithNoMatchesMs: stats(filtered)
};
console.log(result);
saveResult('scale', result);
