// Benchmark 1: how soon the action notices that a run ended, and how many requests waiting costs.
// Runs of random length (5 s to 10 min) are waited on side by side by five strategies:
//   (a) the action against the executor, which holds polls (Prefer: wait), with its defaults (the
//       live log of the conversation on: it reads the transcript too)
//   (a2) the same with log-conversation: false (only the run is read)
//   (b) the action against the same executor behind a proxy that strips Prefer and If-None-Match
//       (a server that ignores them)
//   (c) a fixed 5 s poller and (d) a fixed 30 s poller, as hand-written workflow scripts do.
// Latency = time from the run's completed_at to the moment the waiter knew (the action's exit).
// Requests = every request the waiter sent, the create included (the action's transcript reads
// counted apart as well).
//
//   node bench/detection.mjs [--runs 8] [--min 5] [--max 600] [--seed 1]

import { spawn } from 'node:child_process';
import { parseArgs } from 'node:util';
import {
  ACTION,
  ROOT,
  actionEnv,
  api,
  countingProxy,
  createKey,
  median,
  percentile,
  saveResult,
  sleep,
  startExecutor,
  tempDir
} from './lib.mjs';

const { values } = parseArgs({
  options: {
    runs: { type: 'string', default: '8' },
    min: { type: 'string', default: '5' },
    max: { type: 'string', default: '600' },
    seed: { type: 'string', default: '1' }
  }
});
const runs = Number(values.runs);
const [min, max] = [Number(values.min), Number(values.max)];
let seed = Number(values.seed);
const random = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
const lengths = Array.from({ length: runs }, () => Math.round((min + random() * (max - min)) * 10) / 10);

const source = tempDir('bench-source-');
const executor = await startExecutor({
  config: `workers: ${5 * runs + 4}\nlog_level: warn\nlimits:\n  rate_limit_per_minute: 0\nenvironments:\n  - id: bench\n    source: ${source}\n    timeout: 1h\n`
});
const key = createKey(executor.dataDir);
console.log(`executor at ${executor.url}; run lengths (s): ${lengths.join(', ')}`);

async function completedAt(runId) {
  const { body } = await api(executor.url, key, `/api/v1/agent/runs/${runId}`);
  return Date.parse(body.completed_at);
}

/** (a) and (b): the bundled action, exactly as the runner starts it, behind its own counting proxy. */
async function action(length, strip, inputs = {}) {
  let transcriptRequests = 0;
  const proxy = await countingProxy(executor.url, {
    strip,
    onRequest: req => (transcriptRequests += /\/transcript\b/.test(req.url) ? 1 : 0)
  });
  const env = actionEnv({
    prompt: `@sim sleep ${length}`,
    'environment-id': 'bench',
    'api-key': key,
    'base-url': proxy.url,
    timeout: '2h',
    ...inputs
  });
  const child = spawn(process.execPath, [ACTION], { env, cwd: ROOT, stdio: ['ignore', 'pipe', 'inherit'] });
  let out = '';
  child.stdout.on('data', chunk => (out += chunk));
  const exitedAt = await new Promise(resolve => child.on('exit', () => resolve(Date.now())));
  await proxy.close();
  const runId = /Created run (\S+) in/.exec(out)?.[1];
  if (!runId) throw new Error(`the action printed no run id:\n${out.slice(-2000)}`);
  return {
    latencyMs: exitedAt - (await completedAt(runId)),
    requests: proxy.stats.requests,
    transcriptRequests
  };
}

/** (c) and (d): create, then GET every `intervalMs` until the run has ended. */
async function poller(length, intervalMs) {
  let requests = 1;
  const { body } = await api(executor.url, key, '/api/v1/agent/run', {
    method: 'POST',
    body: JSON.stringify({ prompt: `@sim sleep ${length}`, config: { environment_id: 'bench' } })
  });
  for (;;) {
    await sleep(intervalMs);
    requests++;
    const { body: run } = await api(executor.url, key, `/api/v1/agent/runs/${body.run_id}`);
    if (['SUCCEEDED', 'FAILED', 'ERROR', 'CANCELLED'].includes(run.state)) {
      return { latencyMs: Date.now() - Date.parse(run.completed_at), requests };
    }
  }
}

const strategies = {
  'a: action, server holds polls': length => action(length, []),
  'a2: action, log-conversation false': length => action(length, [], { 'log-conversation': 'false' }),
  'b: action, server ignores Prefer: wait': length => action(length, ['prefer', 'if-none-match']),
  'c: fixed 5 s poller': length => poller(length, 5000),
  'd: fixed 30 s poller': length => poller(length, 30000)
};

const started = Date.now();
const rows = await Promise.all(
  lengths.flatMap(length =>
    Object.entries(strategies).map(async ([strategy, wait]) => ({
      strategy,
      length,
      ...(await wait(length))
    }))
  )
);
await executor.stop();

const summary = Object.keys(strategies).map(strategy => {
  const mine = rows.filter(row => row.strategy === strategy);
  const relative = mine.map(row => row.latencyMs / (row.length * 1000));
  return {
    strategy,
    p50LatencyMs: median(mine.map(row => row.latencyMs)),
    p90LatencyMs: percentile(
      mine.map(row => row.latencyMs),
      90
    ),
    maxLatencyOfRunLength: Math.max(...relative),
    medianRequests: median(mine.map(row => row.requests)),
    totalRequests: mine.reduce((sum, row) => sum + row.requests, 0),
    totalTranscriptRequests: mine.reduce((sum, row) => sum + (row.transcriptRequests ?? 0), 0)
  };
});
console.table(summary);
saveResult('detection', {
  command: `node bench/detection.mjs --runs ${runs} --min ${min} --max ${max} --seed ${values.seed}`,
  wallSeconds: Math.round((Date.now() - started) / 1000),
  lengths,
  rows,
  summary
});
