// Flood: one run whose agent prints a lot (200 MB by default) to stdout, against the bundled
// executor. While the agent prints, and again while the whole transcript, the conversation and
// the session page are read, a probe asks /healthz and GET run one after the other and times each
// answer; the executor's RSS is sampled every 50 ms. Reports p50/p99/max latency, peak RSS, how
// much the store grew and what the run stored, so RELIABILITY.md can quote them.
//
//   npm run build && node reliability/flood.mjs [--megabytes 200] [--limit 16MiB]

import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { api, createKey, percentile, saveResult, sleep, startExecutor, tempDir } from '../bench/lib.mjs';

const { values } = parseArgs({
  options: {
    megabytes: { type: 'string', default: '200' },
    limit: { type: 'string', default: '' },
    name: { type: 'string', default: 'flood' }
  }
});
const bytes = Math.round(Number(values.megabytes) * 1e6);
const source = tempDir('flood-source-');
const limits = values.limit ? `  transcript: ${values.limit}\n` : '';
const executor = await startExecutor({
  config:
    `workers: 2\nlog_level: warn\nworkspaces:\n  retention: 0s\nlimits:\n  rate_limit_per_minute: 0\n${limits}` +
    `environments:\n  - id: flood\n    source: ${source}\n    timeout: 30m\n    agent:\n      kind: command\n` +
    `      prompt: stdin\n      command: [/bin/sh, -c, 'cat >/dev/null; yes "flood line of output 0123456789 abcdefghijklmnopqrstuvwxyz" | head -c ${bytes}']\n`
});
const key = createKey(executor.dataDir);
const pid = executor.child.pid;

const rssMiB = () =>
  Math.round(Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))[1]) / 1024);
const storeMiB = () => {
  let total = 0;
  for (const name of readdirSync(executor.dataDir)) {
    if (name.startsWith('executor.db')) total += statSync(join(executor.dataDir, name)).size;
  }
  return +(total / 1024 ** 2).toFixed(1);
};

/** Probes /healthz and GET run in turn and samples RSS until `done()` says stop. */
async function measure(runId, done) {
  const health = [];
  const reads = [];
  let peak = rssMiB();
  const sampler = setInterval(() => (peak = Math.max(peak, rssMiB())), 50);
  const timed = async (list, path) => {
    const started = performance.now();
    const response = await fetch(executor.url + path, { headers: { authorization: `Bearer ${key}` } });
    await response.arrayBuffer();
    list.push(performance.now() - started);
    // Before the run exists (the quiet probe) GET run answers 404, which costs the same.
    if (!response.ok && response.status !== 404) throw new Error(`${path} answered ${response.status}`);
  };
  while (!done()) {
    await timed(health, '/healthz');
    await timed(reads, `/api/v1/agent/runs/${runId}`);
    await sleep(10);
  }
  clearInterval(sampler);
  const stats = list => ({
    count: list.length,
    p50Ms: +percentile(list, 50).toFixed(1),
    p99Ms: +percentile(list, 99).toFixed(1),
    maxMs: +Math.max(...list).toFixed(1)
  });
  return { healthz: stats(health), getRun: stats(reads), peakRssMiB: Math.max(peak, rssMiB()) };
}

// The same probe for three seconds with nothing running: what the shared machine gives at the moment.
const quietUntil = performance.now() + 3000;
const quiet = await measure('none', () => performance.now() > quietUntil);
const idle = { rssMiB: rssMiB(), storeMiB: storeMiB() };
const started = performance.now();
const created = await api(executor.url, key, '/api/v1/agent/run', {
  method: 'POST',
  body: JSON.stringify({ prompt: 'flood', config: { environment_id: 'flood' } })
});
const runId = created.body.run_id;
let run;
let ended = false;
const watcher = (async () => {
  for (;;) {
    run = (await api(executor.url, key, `/api/v1/agent/runs/${runId}`)).body;
    if (['SUCCEEDED', 'FAILED', 'CANCELLED'].includes(run.state)) break;
    await sleep(200);
  }
  ended = true;
})();
const flood = await measure(runId, () => ended);
await watcher;
const floodSeconds = +((performance.now() - started) / 1000).toFixed(1);

// The reads a user makes of such a run: the whole transcript page by page, the conversation, the session page.
let readDone = false;
const readStats = { transcriptPages: 0, transcriptEvents: 0, transcriptBytes: 0 };
const reader = (async () => {
  const readStarted = performance.now();
  for (let after = 0; ;) {
    const response = await fetch(
      `${executor.url}/api/v1/agent/runs/${runId}/transcript?after=${after}&limit=1000`,
      {
        headers: { authorization: `Bearer ${key}` }
      }
    );
    const text = await response.text();
    const page = JSON.parse(text);
    readStats.transcriptPages++;
    readStats.transcriptEvents += page.events.length;
    readStats.transcriptBytes += text.length;
    if (!page.has_more || page.events.length === 0) break;
    after = page.next_after;
  }
  const conversation = await fetch(`${executor.url}/api/v1/agent/runs/${runId}/conversation`, {
    headers: { authorization: `Bearer ${key}` }
  });
  readStats.conversationBytes = (await conversation.text()).length;
  readStats.sessionPageBytes = (await (await fetch(run.session_link)).text()).length;
  readStats.seconds = +((performance.now() - readStarted) / 1000).toFixed(1);
  readDone = true;
})();
const read = await measure(runId, () => readDone);
await reader;
await executor.stop();

const result = {
  command: `node reliability/flood.mjs --megabytes ${values.megabytes}${values.limit ? ` --limit ${values.limit}` : ''}`,
  printedBytes: bytes,
  state: run.state,
  errorCode: run.error_code,
  floodSeconds,
  idle,
  quiet,
  duringFlood: flood,
  storeMiBAfter: storeMiB(),
  duringReads: { ...read, ...readStats }
};
console.log(JSON.stringify(result, null, 2));
saveResult(`reliability-${values.name}`, result);
process.exitCode = run.state === 'SUCCEEDED' ? 0 : 1;
