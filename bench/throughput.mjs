// Benchmark 3: executor reads and lists under load (autocannon), next to what the machine can do
// without the executor: `bare`, a node:http server answering the same bytes a read answers, and
// `fastify`, the executor's framework answering those bytes with no logic. Targets take turns in
// interleaved rounds (method.mjs); each ratio to `bare` is taken within its round.
//
// Targets (all GET, with the key where the executor is asked):
//   read           one finished run by id
//   list           the newest 20 runs, one unchanging page: after the first, every answer comes
//                  from the store's page cache (kept until the next write)
//   list-uncached  the same page, each request with its own `created_before` far in the future,
//                  so no two requests share a cache entry: what every list costs after a write
//   list-writes    `list` while another process commits to the same SQLite file --writes-per-second
//                  times a second (sqlite-writer.mjs), as a worker process sharing the file does when
//                  runs change state: each commit empties the page cache
// The executor runs with 4 workers and an idle queue (its 20 runs have ended before measuring).
//
//   node bench/throughput.mjs [--seconds 5] [--warmup 1] [--rounds 3] [--connections 50]
//                             [--targets bare,fastify,read,list,list-uncached,list-writes]
//                             [--writes-per-second 100]

import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import autocannon from 'autocannon';
import { ROOT, api, cpuMs, createKey, saveResult, sleep, startExecutor, tempDir } from './lib.mjs';
import { interleave, ratio, summarise } from './method.mjs';

const { values } = parseArgs({
  options: {
    seconds: { type: 'string', default: '5' },
    warmup: { type: 'string', default: '1' },
    rounds: { type: 'string', default: '3' },
    connections: { type: 'string', default: '50' },
    targets: { type: 'string', default: 'bare,fastify,read,list,list-uncached,list-writes' },
    'writes-per-second': { type: 'string', default: '100' }
  }
});
const seconds = Number(values.seconds);
const warmup = Number(values.warmup);
const rounds = Number(values.rounds);
const connectionCounts = values.connections.split(',').map(Number);
const KNOWN = ['bare', 'fastify', 'read', 'list', 'list-uncached', 'list-writes'];
const names = values.targets.split(',');
for (const name of names)
  if (!KNOWN.includes(name))
    throw new Error(`--targets: ${JSON.stringify(name)} is not one of ${KNOWN.join(', ')}`);

const source = tempDir('bench-source-');
const executor = await startExecutor({
  config: [
    'workers: 4',
    'log_level: warn',
    'limits:',
    '  rate_limit_per_minute: 0',
    '  max_queued_runs: 10000000',
    'environments:',
    `  - { id: bench, source: ${JSON.stringify(source)} }`
  ].join('\n')
});
const key = createKey(executor.dataDir);
const create = async (prompt, environment) =>
  (
    await api(executor.url, key, '/api/v1/agent/run', {
      method: 'POST',
      body: JSON.stringify({ prompt, config: { environment_id: environment } })
    })
  ).body.run_id;
async function waitFor(runId, states) {
  for (let i = 0; i < 600; i++) {
    const run = (await api(executor.url, key, `/api/v1/agent/runs/${runId}`)).body;
    if (states.includes(run.state)) return run;
    await sleep(100);
  }
  throw new Error(`run ${runId} did not reach ${states.join(' or ')} in 60 s`);
}
const ENDED = ['SUCCEEDED', 'FAILED', 'ERROR', 'CANCELLED'];
const ids = [];
for (let i = 0; i < 20; i++) ids.push(await create('@sim say hi', 'bench'));
for (const id of ids) await waitFor(id, ENDED);
const runId = ids[0];
const record = await fetch(`${executor.url}/api/v1/agent/runs/${runId}`, {
  headers: { authorization: `Bearer ${key}` }
}).then(r => r.text());

async function fixedBodyServer(args, cwd) {
  const child = spawn(process.execPath, args, { stdio: ['ignore', 'pipe', 'inherit'], cwd });
  const port = await new Promise(resolve =>
    child.stdout.once('data', chunk => resolve(Number(String(chunk).trim())))
  );
  return { child, port };
}
// node:http in its own process, answering the same bytes a read answers.
const bare = await fixedBodyServer([
  '-e',
  `const body = ${JSON.stringify(record)}; require('node:http').createServer((q, s) => { s.writeHead(200, {'content-type': 'application/json', 'content-length': Buffer.byteLength(body)}); s.end(body); }).listen(0, '127.0.0.1', function () { console.log(this.address().port); });`
]);
// Fastify (the executor's framework) answering the same bytes, no logic.
const fastify = await fixedBodyServer(
  [
    '--input-type=module',
    '-e',
    `import Fastify from 'fastify'; const body = ${JSON.stringify(record)}; const app = Fastify({ logger: false }); app.get('/api/v1/agent/runs/:id', (q, r) => r.type('application/json').send(body)); await app.listen({ port: 0, host: '127.0.0.1' }); console.log(app.server.address().port);`
  ],
  ROOT
);

const auth = { authorization: `Bearer ${key}` };
const listPath = '/api/v1/agent/runs?limit=20';
let distinct = 0;
const targets = {
  bare: { pid: bare.child.pid, url: `http://127.0.0.1:${bare.port}/api/v1/agent/runs/${runId}` },
  fastify: { pid: fastify.child.pid, url: `http://127.0.0.1:${fastify.port}/api/v1/agent/runs/${runId}` },
  read: { url: `${executor.url}/api/v1/agent/runs/${runId}`, headers: auth },
  list: { url: executor.url + listPath, headers: auth },
  'list-uncached': {
    url: executor.url + listPath,
    headers: auth,
    requests: [
      {
        setupRequest: request => ({
          ...request,
          path: `${listPath}&created_before=${new Date(Date.UTC(2100, 0, 1) + ++distinct).toISOString()}`
        })
      }
    ]
  },
  'list-writes': { url: executor.url + listPath, headers: auth }
};
const writesPerSecond = Number(values['writes-per-second']);

/** Starts sqlite-writer.mjs on the executor's database; stop() resolves with the commits it made. */
async function startWriter() {
  const child = spawn(
    process.execPath,
    [join(ROOT, 'bench/sqlite-writer.mjs'), join(executor.dataDir, 'executor.db'), String(writesPerSecond)],
    { stdio: ['ignore', 'pipe', 'inherit'] }
  );
  let out = '';
  await new Promise((resolve, reject) => {
    child.stdout.on('data', chunk => {
      out += chunk;
      if (/ready/.test(out)) resolve();
    });
    child.once('exit', code => reject(new Error(`sqlite-writer exited with ${code}`)));
  });
  return {
    stop: () =>
      new Promise(resolve => {
        child.once('exit', () => resolve(Number(out.trim().split('\n').at(-1))));
        child.kill('SIGTERM');
      })
  };
}

async function measure(name, connections) {
  const { pid = executor.child.pid, ...target } = targets[name];
  const load = { ...target, connections };
  if (warmup > 0) await autocannon({ ...load, duration: warmup });
  const writer = name === 'list-writes' ? await startWriter() : undefined;
  const started = performance.now();
  const cpuBefore = cpuMs(pid);
  const result = await autocannon({ ...load, duration: seconds });
  const cpu = cpuMs(pid) - cpuBefore;
  const written = await writer?.stop();
  const writtenSeconds = (performance.now() - started) / 1000;
  return {
    connections,
    requestsPerSecond: Math.round(result['2xx'] / seconds),
    // The answering process's CPU per answer: steadier than the rate when other work loads the machine.
    cpuUsPerAnswer: result['2xx'] > 0 ? Math.round(((cpu * 1000) / result['2xx']) * 10) / 10 : null,
    p50Ms: result.latency.p50,
    p99Ms: result.latency.p99,
    non2xx: result.non2xx,
    errors: result.errors,
    ...(writer ? { writesPerSecond: Math.round(written / writtenSeconds) } : {})
  };
}

const byConnections = {};
try {
  for (const connections of connectionCounts) {
    const rows = await interleave(rounds, names, name => measure(name, connections));
    byConnections[connections] = {
      rows,
      summary: summarise(rows, ['requestsPerSecond', 'cpuUsPerAnswer', 'p50Ms', 'p99Ms', 'writesPerSecond']),
      ratios: names.filter(n => n !== 'bare').map(name => ratio(rows, name, 'bare'))
    };
    for (const r of byConnections[connections].ratios)
      console.log(
        `${connections} connections, ${r.of} / bare: median ${r.median} (${r.min}–${r.max}), rounds ${r.rounds.join(', ')}`
      );
  }
} finally {
  bare.child.kill();
  fastify.child.kill();
  await executor.stop();
}

saveResult('throughput', {
  command: `node bench/throughput.mjs --seconds ${seconds} --warmup ${warmup} --rounds ${rounds} --connections ${values.connections} --targets ${names.join(',')} --writes-per-second ${writesPerSecond}`,
  unit: '2xx answers per second',
  responseBytes: Buffer.byteLength(record),
  writesPerSecondAsked: writesPerSecond,
  byConnections
});
