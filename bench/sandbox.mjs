// Benchmark 8: what the sandbox costs a run. One bundled executor serves the same source in
// three environments: confined (network none), confined with a host:port list (the proxy), and
// `sandbox: off`. Runs alternate between them, one at a time (a round is one run of each, after
// --warmup rounds not counted); for each run we take the duration
// of its one command (`@sim run true`: spawn to exit, as the transcript records it) and the
// run's whole time from started_at to completed_at (workspace, sandbox, command, diff).
//
//   node bench/sandbox.mjs [--runs 30] [--warmup 1]

import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { api, createKey, median, percentile, saveResult, sleep, startExecutor, tempDir } from './lib.mjs';
import { spread } from './method.mjs';

const { values } = parseArgs({
  options: { runs: { type: 'string', default: '30' }, warmup: { type: 'string', default: '1' } }
});
const runs = Number(values.runs);
const warmup = Number(values.warmup);
const source = tempDir('agent-run-bench-source-');
const dataDir = join(tempDir(), 'data');
const config = [
  'log_level: warn',
  'workers: 1',
  'environments:',
  `  - { id: confined, source: ${JSON.stringify(source)} }`,
  `  - { id: proxied, source: ${JSON.stringify(source)}, sandbox: { network: ["127.0.0.1:9"] } }`,
  `  - { id: off, source: ${JSON.stringify(source)}, sandbox: off }`
].join('\n');
const executor = await startExecutor({ dataDir, config });
const key = createKey(dataDir);
const kinds = ['confined', 'proxied', 'off'];
const samples = Object.fromEntries(kinds.map(kind => [kind, { command: [], run: [] }]));

const rounds = [];
try {
  for (let i = 0; i < (warmup + runs) * kinds.length; i++) {
    const kind = kinds[i % kinds.length];
    const round = Math.floor(i / kinds.length) + 1 - warmup;
    const created = await api(executor.url, key, '/api/v1/agent/run', {
      method: 'POST',
      body: JSON.stringify({ prompt: '@sim run true', config: { environment_id: kind } })
    });
    const id = created.body.run_id;
    let run;
    for (;;) {
      run = (await api(executor.url, key, `/api/v1/agent/runs/${id}`)).body;
      if (['SUCCEEDED', 'FAILED'].includes(run.state)) break;
      await sleep(20);
    }
    if (run.state !== 'SUCCEEDED') throw new Error(`run ${id} (${kind}) ${run.state}: ${run.status_message}`);
    const events = (await api(executor.url, key, `/api/v1/agent/runs/${id}/transcript`)).body.events;
    if (round < 1) continue; // warm-up: the first run of each kind is not counted
    const command = events.find(e => e.kind === 'command').duration_ms;
    const whole = Date.parse(run.completed_at) - Date.parse(run.started_at);
    samples[kind].command.push(command);
    samples[kind].run.push(whole);
    rounds.push({ round, target: kind, commandMs: command, runMs: whole });
  }
} finally {
  await executor.stop();
}

const summary = Object.fromEntries(
  kinds.map(kind => [
    kind,
    {
      command_ms: { p50: median(samples[kind].command), p90: percentile(samples[kind].command, 90) },
      run_ms: { p50: median(samples[kind].run), p90: percentile(samples[kind].run, 90) }
    }
  ])
);
console.table(
  Object.fromEntries(
    kinds.map(kind => [
      kind,
      {
        'command p50 ms': summary[kind].command_ms.p50,
        'command p90 ms': summary[kind].command_ms.p90,
        'run p50 ms': summary[kind].run_ms.p50,
        'run p90 ms': summary[kind].run_ms.p90
      }
    ])
  )
);
// What confinement adds, taken within each round (one run of each kind, one after the other).
const added = (kind, field) =>
  spread(
    Array.from({ length: runs }, (_, i) => {
      const at = target => rounds.find(row => row.round === i + 1 && row.target === target)?.[field];
      return at(kind) - at('off');
    }),
    0
  );
const overOff = {
  confined: { commandMs: added('confined', 'commandMs'), runMs: added('confined', 'runMs') },
  proxied: { commandMs: added('proxied', 'commandMs'), runMs: added('proxied', 'runMs') }
};
console.log('added over sandbox: off, per round (median, min, max):', JSON.stringify(overOff));
saveResult('sandbox', {
  command: `node bench/sandbox.mjs --runs ${runs} --warmup ${warmup}`,
  runs,
  summary,
  addedOverOff: overOff,
  rounds
});
