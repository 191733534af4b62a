// Benchmark 4: durable creates. Creates per second the executor acknowledges (each committed with
// synchronous=FULL before the answer), next to two bare node:http servers doing the same durable
// work and nothing else (bare-create-server.mjs): `bare-row` commits each create on its own (one
// fsync per row), `bare-group` group-commits like the executor (one transaction and one fsync per
// turn of the event loop). executor / bare-group is what the executor's own work costs; executor /
// bare-row is how it compares with the naive durable server.
//
// Targets, each a fresh process on a fresh database in every round, interleaved over --rounds:
//   bare-row, bare-group, api (`serve --role api`: the API alone, nothing runs the runs),
//   all (`serve`, --workers workers running every run it accepts), split (optional: the API
//   process measured, a `--role worker` process beside it on the same SQLite file).
// Every target gets the same load: autocannon, 50 connections, --warmup s then --seconds s. Each row
// also gives the server process's CPU time per acknowledged create (from /proc).
//
//   node bench/durable.mjs [--seconds 5] [--warmup 1] [--rounds 3] [--workers 4]
//                          [--targets bare-row,bare-group,api,all]

import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import autocannon from 'autocannon';
import { ROOT, cpuMs, createKey, saveResult, startExecutor, tempDir } from './lib.mjs';
import { interleave, ratio, summarise } from './method.mjs';

const { values } = parseArgs({
  options: {
    seconds: { type: 'string', default: '5' },
    warmup: { type: 'string', default: '1' },
    rounds: { type: 'string', default: '3' },
    workers: { type: 'string', default: '4' },
    connections: { type: 'string', default: '50' },
    targets: { type: 'string', default: 'bare-row,bare-group,api,all' }
  }
});
const seconds = Number(values.seconds);
const warmup = Number(values.warmup);
const rounds = Number(values.rounds);
const connections = Number(values.connections);
const KNOWN = ['bare-row', 'bare-group', 'api', 'all', 'split'];
const targets = values.targets.split(',');
for (const target of targets)
  if (!KNOWN.includes(target))
    throw new Error(`--targets: ${JSON.stringify(target)} is not one of ${KNOWN.join(', ')}`);

const body = JSON.stringify({ prompt: '@sim say hi', config: { environment_id: 'bench' } });

async function startBare(mode) {
  const child = spawn(
    process.execPath,
    [join(ROOT, 'bench/bare-create-server.mjs'), join(tempDir(), 'bare.db'), mode],
    {
      stdio: ['ignore', 'pipe', 'inherit']
    }
  );
  const port = await new Promise((resolve, reject) => {
    child.stdout.once('data', chunk => resolve(Number(String(chunk).trim())));
    child.once('exit', code => reject(new Error(`bare-create-server ${mode} exited with ${code}`)));
  });
  return {
    pid: child.pid,
    url: `http://127.0.0.1:${port}/api/v1/agent/run`,
    headers: { 'content-type': 'application/json' },
    stop: () => new Promise(done => (child.once('exit', done), child.kill()))
  };
}

async function startTarget(target) {
  if (target.startsWith('bare-')) return startBare(target.slice('bare-'.length));
  const source = tempDir('bench-source-');
  const config = `workers: ${values.workers}\nlog_level: warn\nlimits:\n  rate_limit_per_minute: 0\n  max_queued_runs: 10000000\nenvironments:\n  - id: bench\n    source: ${source}\n`;
  const dataDir = join(tempDir(), 'data');
  const executor = await startExecutor({ dataDir, config, args: target === 'all' ? [] : ['--role', 'api'] });
  const worker =
    target === 'split' ? await startExecutor({ dataDir, config, args: ['--role', 'worker'] }) : undefined;
  const key = createKey(dataDir);
  return {
    pid: executor.child.pid,
    url: `${executor.url}/api/v1/agent/run`,
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    stop: async () => {
      await executor.stop();
      await worker?.stop();
    }
  };
}

const rows = await interleave(rounds, targets, async target => {
  const server = await startTarget(target);
  try {
    const load = { url: server.url, method: 'POST', headers: server.headers, body, connections };
    if (warmup > 0) await autocannon({ ...load, duration: warmup });
    const cpuBefore = cpuMs(server.pid);
    const result = await autocannon({ ...load, duration: seconds });
    const cpu = cpuMs(server.pid) - cpuBefore;
    return {
      requestsPerSecond: Math.round(result['2xx'] / seconds),
      // The server process's CPU per acknowledged create (fsync waits are not CPU): steadier than
      // the rate when other work loads the machine.
      cpuUsPerCreate: result['2xx'] > 0 ? Math.round((cpu * 1000) / result['2xx']) : null,
      p50Ms: result.latency.p50,
      p99Ms: result.latency.p99,
      non2xx: result.non2xx,
      errors: result.errors
    };
  } finally {
    await server.stop();
  }
});

const executorTargets = targets.filter(t => !t.startsWith('bare-'));
const ratios = [];
for (const target of executorTargets)
  for (const base of ['bare-group', 'bare-row'])
    if (targets.includes(base)) ratios.push(ratio(rows, target, base));
for (const r of ratios)
  console.log(`${r.of} / ${r.to}: median ${r.median} (${r.min}–${r.max}), rounds ${r.rounds.join(', ')}`);
const command = `node bench/durable.mjs --seconds ${seconds} --warmup ${warmup} --rounds ${rounds} --workers ${values.workers} --connections ${connections} --targets ${targets.join(',')}`;
saveResult('durable', {
  command,
  unit: 'acknowledged creates per second (2xx answers / seconds)',
  rows,
  summary: summarise(rows, ['requestsPerSecond', 'cpuUsPerCreate', 'p50Ms', 'p99Ms']),
  ratios
});
