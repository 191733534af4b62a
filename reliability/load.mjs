// Load and soak: autocannon against the bundled executor with a mix of creates, reads and lists.
// Reports errors (anything but 2xx and 429 counts), p99 latency, and the executor's memory, open
// files and WAL size before and after.
//
//   node reliability/load.mjs [--connections 100] [--seconds 60]      (load)
//   node reliability/load.mjs --connections 50 --seconds 600          (soak)

import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import autocannon from 'autocannon';
import { api, createKey, saveResult, sleep, startExecutor, tempDir } from '../bench/lib.mjs';

const { values } = parseArgs({
  options: {
    connections: { type: 'string', default: '100' },
    seconds: { type: 'string', default: '60' },
    name: { type: 'string', default: 'load' }
  }
});
const connections = Number(values.connections);
const seconds = Number(values.seconds);

const source = tempDir('load-source-');
const executor = await startExecutor({
  config: `workers: 4\nlog_level: warn\nworkspaces:\n  retention: 0s\nlimits:\n  rate_limit_per_minute: 0\n  max_queued_runs: 2000\nenvironments:\n  - id: load\n    source: ${source}\n`
});
const key = createKey(executor.dataDir);
const { body } = await api(executor.url, key, '/api/v1/agent/run', {
  method: 'POST',
  body: JSON.stringify({ prompt: '@sim say hi', config: { environment_id: 'load' } })
});
await sleep(1000);

function probe() {
  const pid = executor.child.pid;
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const rssKb = Number(/VmRSS:\s+(\d+)/.exec(status)[1]);
  const wal = join(executor.dataDir, 'executor.db-wal');
  let walBytes = 0;
  try {
    walBytes = statSync(wal).size;
  } catch {
    walBytes = 0;
  }
  return {
    rssMiB: Math.round(rssKb / 1024),
    openFiles: readdirSync(`/proc/${pid}/fd`).length,
    walMiB: +(walBytes / 1024 ** 2).toFixed(1)
  };
}

const before = probe();
const auth = { authorization: `Bearer ${key}`, 'content-type': 'application/json' };
const share = fraction => Math.max(1, Math.round(connections * fraction));
const samples = [];
const sampler = setInterval(() => samples.push(probe()), 5000);
const [creates, reads, lists] = await Promise.all([
  autocannon({
    url: `${executor.url}/api/v1/agent/run`,
    method: 'POST',
    headers: auth,
    body: JSON.stringify({ prompt: '@sim say load', config: { environment_id: 'load' } }),
    connections: share(0.1),
    duration: seconds
  }),
  autocannon({
    url: `${executor.url}/api/v1/agent/runs/${body.run_id}`,
    headers: auth,
    connections: share(0.6),
    duration: seconds
  }),
  autocannon({
    url: `${executor.url}/api/v1/agent/runs?limit=20`,
    headers: auth,
    connections: share(0.3),
    duration: seconds
  })
]);
clearInterval(sampler);
const after = probe();
await sleep(5000);
const settled = probe();
const exitCode = await new Promise(resolve => {
  executor.child.once('exit', resolve);
  executor.child.kill('SIGTERM');
});

const summary = (name, r) => ({
  name,
  requests: r.requests.total,
  perSecond: Math.round(r.requests.average),
  p99Ms: r.latency.p99,
  status2xx: r['2xx'],
  status429: r.statusCodeStats?.['429']?.count ?? 0,
  otherNon2xx: r.non2xx - (r.statusCodeStats?.['429']?.count ?? 0),
  errors: r.errors,
  timeouts: r.timeouts
});
const result = {
  command: `node reliability/load.mjs --connections ${connections} --seconds ${seconds} --name ${values.name}`,
  traffic: [summary('create', creates), summary('read', reads), summary('list', lists)],
  before,
  after,
  fiveSecondsLater: settled,
  peakRssMiB: Math.max(...samples.map(s => s.rssMiB), after.rssMiB),
  peakWalMiB: Math.max(...samples.map(s => s.walMiB), after.walMiB),
  peakOpenFiles: Math.max(...samples.map(s => s.openFiles), after.openFiles),
  exitCode
};
console.log(JSON.stringify(result, null, 2));
saveResult(`reliability-${values.name}`, result);
const bad = result.traffic.some(t => t.otherNon2xx > 0 || t.errors > 0) || exitCode !== 0;
process.exitCode = bad ? 1 : 0;
