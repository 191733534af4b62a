// Benchmark 3: executor API throughput and latency (autocannon) for read, list and create, next
// to a bare node:http server answering a fixed JSON body of the same size (this machine's ceiling),
// measured in the same run at several connection counts.
//
//   node bench/throughput.mjs [--seconds 5] [--connections 1,10,50,100]

import { spawn } from 'node:child_process';
import { parseArgs } from 'node:util';
import autocannon from 'autocannon';
import { ROOT, api, createKey, saveResult, sleep, startExecutor, tempDir } from './lib.mjs';

const { values } = parseArgs({
  options: {
    seconds: { type: 'string', default: '5' },
    connections: { type: 'string', default: '1,10,50,100' }
  }
});
const seconds = Number(values.seconds);
const connectionCounts = values.connections.split(',').map(Number);

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

const rows = [];
for (const connections of connectionCounts) {
  for (const [name, target] of Object.entries(targets)) {
    if (name === 'create' && connections !== 50) continue;
    const result = await autocannon({ ...target, connections, duration: seconds });
    const row = {
      target: name,
      connections,
      requestsPerSecond: Math.round(result.requests.average),
      p50Ms: result.latency.p50,
      p99Ms: result.latency.p99,
      non2xx: result.non2xx,
      errors: result.errors,
      timeouts: result.timeouts
    };
    rows.push(row);
    console.log(JSON.stringify(row));
  }
}
bare.kill();
fastify.kill();
await executor.stop();

const at50 = name => rows.find(row => row.target === name && row.connections === 50);
const ratios = Object.fromEntries(
  ['fastify', 'read', 'list', 'create'].map(name => [
    name,
    at50(name) && at50('bare')
      ? Math.round((at50(name).requestsPerSecond / at50('bare').requestsPerSecond) * 100) / 100
      : null
  ])
);
console.log('ratio to the bare server at 50 connections:', ratios);
saveResult('throughput', {
  command: `node bench/throughput.mjs --seconds ${seconds} --connections ${values.connections}`,
  responseBytes: Buffer.byteLength(record),
  rows,
  ratiosAt50: ratios
});
