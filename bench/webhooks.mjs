// Benchmark: webhook deliveries. The bundled executor (`serve`, --workers 2) with one endpoint of
// the team on a local receiver that answers 200 at once; --runs runs are created, --concurrency at a
// time, and the receiver notes when each delivery arrives. Latency is from the change (the event's
// `timestamp`, the run's updated_at written in the change's transaction) to the receiver;
// deliveries per second count every delivery (queued, in progress, the end) from the first create
// to the last delivery. The queue limits are raised to 1,000: two workers end runs slower than they
// are created, so a team's default limit of 100 queued runs would refuse creates midway.
//
//   node bench/webhooks.mjs [--runs 300] [--concurrency 20]

import { createServer } from 'node:http';
import { parseArgs } from 'node:util';
import { api, createKey, percentile, saveResult, startExecutor, tempDir } from './lib.mjs';
import { join } from 'node:path';

const { values } = parseArgs({
  options: { runs: { type: 'string', default: '300' }, concurrency: { type: 'string', default: '20' } }
});
const runs = Number(values.runs);
const concurrency = Number(values.concurrency);

const latencies = [];
let received = 0;
let last = 0;
const receiver = createServer((request, response) => {
  const chunks = [];
  request.on('data', chunk => chunks.push(chunk));
  request.on('end', () => {
    const now = Date.now();
    const event = JSON.parse(Buffer.concat(chunks).toString());
    latencies.push(now - Date.parse(event.timestamp));
    received++;
    last = now;
    response.writeHead(200).end();
  });
});
await new Promise(resolve => receiver.listen(0, '127.0.0.1', resolve));
const port = receiver.address().port;

const dataDir = join(tempDir('agent-run-bench-webhooks-'), 'data');
const key = createKey(dataDir, 'bench');
const executor = await startExecutor({
  dataDir,
  config:
    'log_level: warn\nworkers: 2\nlimits:\n  rate_limit_per_minute: 0\n  max_queued_runs: 1000\n  max_queued_runs_per_team: 1000\nwebhooks:\n  allow_private_networks: true\n',
  args: []
});
try {
  const hook = await api(executor.url, key, '/api/v1/agent/webhooks', {
    method: 'POST',
    body: JSON.stringify({ url: `http://127.0.0.1:${port}/hooks` })
  });
  if (hook.status !== 200) throw new Error(`endpoint: ${hook.status} ${JSON.stringify(hook.body)}`);
  const started = Date.now();
  let next = 0;
  const ids = [];
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < runs) {
        next++;
        const created = await api(executor.url, key, '/api/v1/agent/runs', {
          method: 'POST',
          body: JSON.stringify({ prompt: '@sim result done', config: { environment_id: 'local' } })
        });
        if (created.status !== 200)
          throw new Error(`create: ${created.status} ${JSON.stringify(created.body)}`);
        ids.push(created.body.run_id);
      }
    })
  );
  // Every run ends; each sends three deliveries.
  const expected = runs * 3;
  const deadline = Date.now() + 600_000;
  while (received < expected && Date.now() < deadline) await new Promise(resolve => setTimeout(resolve, 100));
  const seconds = (last - started) / 1000;
  const result = {
    command: `node bench/webhooks.mjs --runs ${runs} --concurrency ${concurrency}`,
    runs,
    deliveries: received,
    expected,
    deliveriesPerSecond: Math.round(received / seconds),
    latencyMs: { p50: percentile(latencies, 50), p99: percentile(latencies, 99), max: Math.max(...latencies) }
  };
  console.log(JSON.stringify(result));
  saveResult('webhooks', result);
} finally {
  await executor.stop();
  receiver.close();
}
