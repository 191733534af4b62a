// Benchmark: many event streams on one node. The bundled executor (`serve`) runs one simulated run
// that records an event every --interval seconds (--events of them); --streams clients follow it
// at once on `GET /runs/{id}/events` (Accept: text/event-stream, the `eventsource` client from
// npm, one connection each). Measured: the executor's resident memory (VmRSS) before the streams,
// with all of them open, and at the end; each event's latency from its `at` (written when it was
// recorded) to each client; and that every client got every event once, then `done`.
//
//   node bench/streams.mjs [--streams 1000] [--events 20] [--interval 0.5]

import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { EventSource } from 'eventsource';
import { api, createKey, percentile, saveResult, startExecutor, tempDir } from './lib.mjs';

const { values } = parseArgs({
  options: {
    streams: { type: 'string', default: '1000' },
    events: { type: 'string', default: '20' },
    interval: { type: 'string', default: '0.5' }
  }
});
const streams = Number(values.streams);
const events = Number(values.events);
const interval = Number(values.interval);

const rssKb = pid => Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))[1]);

const dataDir = join(tempDir('agent-run-bench-streams-'), 'data');
const key = createKey(dataDir, 'bench');
const executor = await startExecutor({
  dataDir,
  config: [
    'log_level: warn',
    'workers: 1',
    'limits:',
    '  rate_limit_per_minute: 0',
    `  max_streams_per_key: ${streams + 10}`,
    `  max_streams: ${streams + 10}`
  ].join('\n')
});
try {
  const idle = rssKb(executor.child.pid);
  // The run waits until every stream is open, then records its events.
  const prompt = [
    '@sim sleep 20',
    ...Array.from({ length: events }, (_, i) => `@sim say tick ${i}\n@sim sleep ${interval}`)
  ].join('\n');
  const created = await api(executor.url, key, '/api/v1/agent/runs', {
    method: 'POST',
    body: JSON.stringify({ prompt, config: { environment_id: 'local' } })
  });
  if (created.status !== 200) throw new Error(`create: ${created.status} ${JSON.stringify(created.body)}`);
  const id = created.body.run_id;
  const init = {
    fetch: (url, request) =>
      fetch(url, { ...request, headers: { ...request.headers, authorization: `Bearer ${key}` } })
  };
  const latencies = [];
  let opened = 0;
  let failures = 0;
  let peak = 0;
  const clients = Array.from({ length: streams }, () => {
    const source = new EventSource(`${executor.url}/api/v1/agent/runs/${id}/events`, init);
    const seen = new Set();
    return new Promise(resolve => {
      source.onopen = () => opened++;
      source.onerror = () => {
        failures++;
      };
      source.addEventListener('done', () => {
        source.close();
        resolve(seen.size);
      });
      for (const kind of ['message', 'state'])
        source.addEventListener(kind, message => {
          const event = JSON.parse(message.data);
          if (kind === 'message' && !seen.has(event.seq)) {
            seen.add(event.seq);
            latencies.push(Date.now() - Date.parse(event.at));
          }
        });
    });
  });
  const sampler = setInterval(() => (peak = Math.max(peak, rssKb(executor.child.pid))), 200);
  const openedAt = Date.now();
  while (opened < streams && Date.now() - openedAt < 60_000) await new Promise(r => setTimeout(r, 50));
  const openSeconds = (Date.now() - openedAt) / 1000;
  const allOpen = rssKb(executor.child.pid);
  const counts = await Promise.all(clients);
  clearInterval(sampler);
  const end = rssKb(executor.child.pid);
  const result = {
    command: `node bench/streams.mjs --streams ${streams} --events ${events} --interval ${interval}`,
    streams,
    opened,
    openSeconds,
    errors: failures,
    // Every client got the same messages, at least the run's ticks, each once.
    messagesPerClient: [...new Set(counts)],
    everyEventEverywhere: new Set(counts).size === 1 && counts[0] >= events,
    rssMb: {
      idle: Math.round(idle / 1024),
      allOpen: Math.round(allOpen / 1024),
      peak: Math.round(peak / 1024),
      end: Math.round(end / 1024)
    },
    perStreamKb: Math.round((allOpen - idle) / streams),
    latencyMs: { p50: percentile(latencies, 50), p99: percentile(latencies, 99), max: Math.max(...latencies) }
  };
  console.log(JSON.stringify(result));
  saveResult('streams', result);
} finally {
  await executor.stop();
}
