// Benchmark 3: executor API throughput and latency (autocannon) for read, list and create, next
// to a bare node:http server answering a fixed JSON body of the same size (this machine's ceiling),
// measured in the same run at several connection counts. With --rounds N the targets take turns N
// times (bare, fastify, read, list, bare, …; creates last, since the runs they queue load the
// executor afterwards) and each figure is the median of its rounds, ratios being taken within a
// round: on a shared, noisy machine the load then falls on all alike.
//
//   node bench/throughput.mjs [--seconds 5] [--connections 1,10,50,100] [--rounds 1]

import { spawn } from 'node:child_process';
import { parseArgs } from 'node:util';
import autocannon from 'autocannon';
import { ROOT, api, createKey, saveResult, sleep, startExecutor, tempDir } from './lib.mjs';

const { values } = parseArgs({
  options: {
    seconds: { type: 'string', default: '5' },
    connections: { type: 'string', default: '1,10,50,100' },
    rounds: { type: 'string', default: '1' }
  }
});
const seconds = Number(values.seconds);
const connectionCounts = values.connections.split(',').map(Number);
const rounds = Number(values.rounds);

const source = tempDir('bench-source-');
const executor = await startExecutor({
  config: `workers: 4\nlog_level: warn\nlimits:\n  rate_limit_per_minute: 0\n  max_queued_runs: 10000000\nenvironments:\n  - id: bench\n    source: ${source}\n`
});
const key = createKey(executor.dataDir);
const created = await api(executor.url, key, '/api/v1/agent/run', {
  method: 'POST',
  body: JSON.stringify({ prompt: '@sim say hi', config: { environment_id: 'bench' } })
});
const runId = created.body.run_id;
await sleep(1500);
const record = await fetch(`${executor.url}/api/v1/agent/runs/${runId}`, {
  headers: { authorization: `Bearer ${key}` }
}).then(r => r.text());
for (let i = 0; i < 19; i++)
  await api(executor.url, key, '/api/v1/agent/run', {
    method: 'POST',
    body: JSON.stringify({ prompt: '@sim say hi', config: { environment_id: 'bench' } })
  });

// The ceiling: node:http in its own process, answering the same bytes a read answers.
const bare = spawn(
  process.execPath,
  [
    '-e',
    `const body = ${JSON.stringify(record)}; require('node:http').createServer((q, s) => { s.writeHead(200, {'content-type': 'application/json', 'content-length': Buffer.byteLength(body)}); s.end(body); }).listen(0, '127.0.0.1', function () { console.log(this.address().port); });`
  ],
  { stdio: ['ignore', 'pipe', 'inherit'] }
);
const barePort = await new Promise(resolve =>
  bare.stdout.once('data', chunk => resolve(Number(String(chunk).trim())))
);
// The framework's floor: Fastify (the executor's framework) answering the same bytes, no logic.
const fastify = spawn(
  process.execPath,
  [
    '--input-type=module',
    '-e',
    `import Fastify from 'fastify'; const body = ${JSON.stringify(record)}; const app = Fastify({ logger: false }); app.get('/api/v1/agent/runs/:id', (q, r) => r.type('application/json').send(body)); await app.listen({ port: 0, host: '127.0.0.1' }); console.log(app.server.address().port);`
  ],
  { stdio: ['ignore', 'pipe', 'inherit'], cwd: ROOT }
);
const fastifyPort = await new Promise(resolve =>
  fastify.stdout.once('data', chunk => resolve(Number(String(chunk).trim())))
);

const auth = { authorization: `Bearer ${key}` };
const targets = {
  bare: { url: `http://127.0.0.1:${barePort}/api/v1/agent/runs/${runId}` },
  fastify: { url: `http://127.0.0.1:${fastifyPort}/api/v1/agent/runs/${runId}` },
  read: { url: `${executor.url}/api/v1/agent/runs/${runId}`, headers: auth },
  list: { url: `${executor.url}/api/v1/agent/runs?limit=20`, headers: auth },
  create: {
    url: `${executor.url}/api/v1/agent/run`,
    method: 'POST',
    headers: { ...auth, 'content-type': 'application/json' },
    body: JSON.stringify({ prompt: '@sim say hi', config: { environment_id: 'bench' } })
  }
};

const median = numbers => {
  const sorted = [...numbers].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2;
};
const measured = [];
// Creates queue runs the executor then works on for a while: they go after every read round.
const plan = [];
for (let round = 1; round <= rounds; round++)
  for (const name of Object.keys(targets)) if (name !== 'create') plan.push({ name, round });
for (let round = 1; round <= rounds; round++) plan.push({ name: 'create', round });
for (const { name, round } of plan) {
  for (const connections of connectionCounts) {
    if (name === 'create' && connections !== 50) continue;
    const result = await autocannon({ ...targets[name], connections, duration: seconds });
    const row = {
      round,
      target: name,
      connections,
      requestsPerSecond: Math.round(result.requests.average),
      p50Ms: result.latency.p50,
      p99Ms: result.latency.p99,
      non2xx: result.non2xx,
      errors: result.errors,
      timeouts: result.timeouts
    };
    measured.push(row);
    console.log(JSON.stringify(row));
  }
}
// One row per target and connection count: the median of its rounds.
const rows = [];
for (const connections of connectionCounts) {
  for (const name of Object.keys(targets)) {
    const mine = measured.filter(row => row.target === name && row.connections === connections);
    if (mine.length === 0) continue;
    const pick = field => median(mine.map(row => row[field]));
    const sum = field => mine.reduce((total, row) => total + row[field], 0);
    rows.push({
      target: name,
      connections,
      requestsPerSecond: Math.round(pick('requestsPerSecond')),
      p50Ms: pick('p50Ms'),
      p99Ms: pick('p99Ms'),
      non2xx: sum('non2xx'),
      errors: sum('errors'),
      timeouts: sum('timeouts')
    });
  }
}
bare.kill();
fastify.kill();
await executor.stop();

// Each round's ratio to the bare server at 50 connections (measured minutes apart at most), then
// the median over the rounds.
const ratioIn = (name, round) => {
  const at = target =>
    measured.find(row => row.target === target && row.connections === 50 && row.round === round);
  return at(name) && at('bare') ? at(name).requestsPerSecond / at('bare').requestsPerSecond : null;
};
const ratios = Object.fromEntries(
  ['fastify', 'read', 'list', 'create'].map(name => {
    const each = Array.from({ length: rounds }, (_, i) => ratioIn(name, i + 1)).filter(r => r !== null);
    return [name, each.length ? Math.round(median(each) * 100) / 100 : null];
  })
);
for (const row of rows) console.log('median', JSON.stringify(row));
console.log('ratio to the bare server at 50 connections:', ratios);
saveResult('throughput', {
  command: `node bench/throughput.mjs --seconds ${seconds} --connections ${values.connections} --rounds ${rounds}`,
  rounds: measured,
  responseBytes: Buffer.byteLength(record),
  rows,
  ratiosAt50: ratios
});
