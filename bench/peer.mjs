// Benchmark 6: the read benchmark against a popular OpenAPI mock server (Stoplight Prism serving
// our own openapi.json), which is what a user would otherwise pick to test workflows against this
// API, next to the executor in the same run. Prism is installed into a temporary folder on first
// use (it is not a dependency of this project).
//
// The two take turns over --rounds (executor, prism, executor, …); the ratio is taken per round.
//
//   node bench/peer.mjs [--seconds 5] [--connections 50] [--rounds 3]

import { execFileSync, spawn } from 'node:child_process';
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import autocannon from 'autocannon';
import { api, createKey, saveResult, sleep, startExecutor, tempDir } from './lib.mjs';
import { interleave, ratio, summarise } from './method.mjs';

const { values } = parseArgs({
  options: {
    seconds: { type: 'string', default: '5' },
    connections: { type: 'string', default: '50' },
    rounds: { type: 'string', default: '3' }
  }
});
const seconds = Number(values.seconds);
const connections = Number(values.connections);
const rounds = Number(values.rounds);

const prismDir = join(tmpdir(), 'agent-run-bench-prism');
const prismBin = join(prismDir, 'node_modules/.bin/prism');
if (!existsSync(prismBin)) {
  mkdirSync(prismDir, { recursive: true });
  console.log('installing @stoplight/prism-cli into', prismDir);
  execFileSync(
    'npm',
    ['install', '--prefix', prismDir, '--no-audit', '--no-fund', '@stoplight/prism-cli@5'],
    { stdio: 'inherit' }
  );
}
const prismVersion = execFileSync(prismBin, ['--version']).toString().trim();

const source = tempDir('bench-source-');
const executor = await startExecutor({
  config: `log_level: warn\nlimits:\n  rate_limit_per_minute: 0\nenvironments:\n  - id: bench\n    source: ${source}\n`
});
const key = createKey(executor.dataDir);
const { body } = await api(executor.url, key, '/api/v1/agent/run', {
  method: 'POST',
  body: JSON.stringify({ prompt: '@sim say hi', config: { environment_id: 'bench' } })
});
await sleep(1000);
const spec = join(tempDir(), 'openapi.json');
writeFileSync(spec, await (await fetch(`${executor.url}/api/v1/openapi.json`)).text());

const port = 40000 + Math.floor(Math.random() * 20000);
const prism = spawn(prismBin, ['mock', spec, '-p', String(port), '-h', '127.0.0.1'], {
  stdio: ['ignore', 'pipe', 'pipe']
});
let prismLog = '';
prism.stdout.on('data', chunk => (prismLog += chunk));
prism.stderr.on('data', chunk => (prismLog += chunk));
for (let i = 0; i < 100 && !/Prism is listening/.test(prismLog); i++) await sleep(200);
if (!/Prism is listening/.test(prismLog)) throw new Error(`prism did not start:\n${prismLog.slice(-2000)}`);

const auth = { authorization: `Bearer ${key}` };
const targets = {
  executor: `${executor.url}/api/v1/agent/runs/${body.run_id}`,
  prism: `http://127.0.0.1:${port}/api/v1/agent/runs/${body.run_id}`
};
const rows = await interleave(rounds, Object.keys(targets), async name => {
  const result = await autocannon({ url: targets[name], headers: auth, connections, duration: seconds });
  return {
    requestsPerSecond: Math.round(result['2xx'] / seconds),
    p50Ms: result.latency.p50,
    p99Ms: result.latency.p99,
    non2xx: result.non2xx,
    errors: result.errors
  };
});
prism.kill();
await executor.stop();
saveResult('peer', {
  command: `node bench/peer.mjs --seconds ${seconds} --connections ${connections} --rounds ${rounds}`,
  prism: prismVersion,
  rows,
  summary: summarise(rows, ['requestsPerSecond', 'p50Ms', 'p99Ms']),
  ratio: ratio(rows, 'executor', 'prism')
});
