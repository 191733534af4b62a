// Renders the results of `npm run bench:all` (all.mjs) as the markdown BENCHMARKS.md shows: the
// goals with "met" or "not met" decided from the figures, then one table per benchmark, each under
// the command that produced it, its date, commit and the machine's load before and after.

import { describe } from './method.mjs';

const n = value => (typeof value === 'number' ? value.toLocaleString('en-US') : 'n/a');
const load = state => state?.uptime?.text?.replace(/^.*load average:\s*/, '') ?? 'unknown';
const verdict = met => (met === null ? 'not measured' : met ? '**met**' : '**not met**');

/** "command · date · commit · load" lines under a benchmark's heading. */
function provenance(step) {
  const { result } = step;
  if (!result) return [`Not measured: \`${step.command}\` exited with ${step.exitCode}.`, ''];
  const { before, after } = result.machine;
  return [
    `\`${step.command}\` — ${before.date} to ${after.date} (${step.wallSeconds} s), commit \`${before.commit}\`, ` +
      `Node ${before.node}, ${before.nproc} cores; load average (1, 5, 15 min) before ${load(before)}, after ${load(after)}.`,
    ''
  ];
}

const find = (all, name) => all.steps.find(step => step.name === name && step.result)?.result;
const rps = s => (s ? `${n(s.median)}/s (${n(s.min)}–${n(s.max)})` : 'n/a');
const ms = s => (s ? `${s.median} ms (${s.min}–${s.max})` : 'n/a');

/** Each goal: what it asks, what was measured, and whether it holds. */
export function goals(all) {
  const rows = [];
  const detection = find(all, 'detection');
  if (detection) {
    const of = prefix => detection.summary.find(row => row.strategy.startsWith(prefix));
    const [a, b, d] = [of('a:'), of('b:'), of('d:')];
    rows.push([
      'detection (a): the action hears of a run\u2019s end in p50 < 100 ms, with fewer requests than a 30 s poller (d)',
      `p50 ${a.p50LatencyMs} ms; requests ${a.totalRequests} vs ${d.totalRequests} for (d)`,
      a.p50LatencyMs < 100 && a.totalRequests < d.totalRequests
    ]);
    rows.push([
      'detection (b): against a server that ignores `Prefer: wait`, worst lag within 15 % of the run\u2019s length',
      `worst ${(b.maxLatencyOfRunLength * 100).toFixed(1)} %`,
      b.maxLatencyOfRunLength <= 0.15
    ]);
  }
  const overhead = find(all, 'overhead');
  if (overhead)
    rows.push([
      'action overhead: spawn to first request < 300 ms (median)',
      `${overhead.medianToFirstRequestMs} ms`,
      overhead.medianToFirstRequestMs < 300
    ]);
  const throughput = find(all, 'throughput')?.byConnections?.['50'];
  if (throughput) {
    const r = name => throughput.ratios.find(x => x.of === name);
    const readP99 = throughput.summary.read?.p99Ms;
    rows.push([
      'reads: ≥ 0.60 of bare node:http (median of the rounds\u2019 ratios) with p99 < 10 ms, 50 connections',
      `${describe(r('read'))}; p99 ${ms(readP99)}`,
      r('read')?.median >= 0.6 && readP99?.median < 10
    ]);
    rows.push([
      'lists (page cache hit): ≥ 0.25 of bare node:http, 50 connections',
      describe(r('list')),
      r('list') ? r('list').median >= 0.25 : null
    ]);
  }
  const durable = find(all, 'durable');
  if (durable) {
    const r = durable.ratios.find(x => x.of === 'api' && x.to === 'bare-group');
    rows.push([
      'durable creates: the API process ≥ 0.5 of a bare server doing the same group-committed inserts',
      describe(r),
      r ? r.median >= 0.5 : null
    ]);
  }
  const workspaces = find(all, 'workspaces');
  if (workspaces) {
    const later = workspaces.results
      .filter(r => r.kind === 'overlay')
      .sort((a, b) => a.files - b.files)
      .map(r => ({ files: r.files, ms: r.later.runMs.p50 }));
    if (later.length >= 2) {
      const [small, large] = [later[0], later[later.length - 1]];
      rows.push([
        `a later run's create → SUCCEEDED at ${n(large.files)} files within 1.5× of ${n(small.files)} files (copy-on-write, p50)`,
        `${large.ms} ms vs ${small.ms} ms (${(large.ms / small.ms).toFixed(2)}×)`,
        large.ms <= 1.5 * small.ms
      ]);
    }
  }
  const scale = find(all, 'scale');
  if (scale)
    rows.push([
      `store at ${n(scale.runs)} runs: pages from 1,000 on no slower than 1.5× the first pages (p50, uncached)`,
      `${scale.pages1000OnMs.p50} ms vs ${scale.pages1ToSamplesMs.p50} ms`,
      scale.pages1000OnMs.p50 <= 1.5 * scale.pages1ToSamplesMs.p50
    ]);
  return rows;
}

function section(all, name, title, body) {
  const step = all.steps.find(s => s.name === name);
  if (!step) return [];
  return [`### ${title}`, '', ...provenance(step), ...(step.result ? body(step.result) : []), ''];
}

/** A warning when the machine was not quiet: its 1-minute load above half its cores, before or after. */
export function quietness(before, after) {
  const busiest = Math.max(before.uptime?.load?.[0] ?? 0, after.uptime?.load?.[0] ?? 0);
  if (busiest <= before.nproc / 2) return [];
  return [
    `**Not a quiet machine**: a 1-minute load average of ${busiest} on ${before.nproc} cores. Contention takes most ` +
      'from the fastest process, so ratios to the bare baselines come out higher than on a quiet machine: do not ' +
      'publish these figures as results.',
    ''
  ];
}

export function render(all) {
  const { before, after } = all.machine;
  const out = [
    `## Results of \`${all.command}\`${all.quick ? ' (QUICK: a check of the chain, not figures)' : ''}`,
    '',
    `${before.date} to ${after.date} (${all.wallSeconds} s), commit \`${before.commit}\`, Node ${before.node}, ` +
      `${before.nproc} cores, ${before.platform}; load average before ${load(before)}, after ${load(after)}.`,
    '',
    ...quietness(before, after),
    '| goal | measured | verdict |',
    '|---|---|---|',
    ...goals(all).map(([goal, measured, met]) => `| ${goal} | ${measured} | ${verdict(met)} |`),
    ''
  ];
  out.push(
    ...section(all, 'throughput', 'Reads and lists (50 connections)', r => {
      const at = r.byConnections['50'] ?? Object.values(r.byConnections)[0];
      const ratio = name => at.ratios.find(x => x.of === name);
      return [
        `Medians of the rounds, with min–max. Each answer ${n(r.responseBytes)} bytes for a read.`,
        '',
        '| target | answers/s | p50 | p99 | / bare (per round) |',
        '|---|---|---|---|---|',
        ...Object.entries(at.summary).map(
          ([name, s]) =>
            `| ${name}${s.writesPerSecond?.median != null ? ` (another process committing ${n(s.writesPerSecond.median)} times/s)` : ''} | ${rps(s.requestsPerSecond)} | ${ms(s.p50Ms)} | ${ms(s.p99Ms)} | ${name === 'bare' ? '1' : ratio(name) ? `${ratio(name).median} (${ratio(name).rounds.join(', ')})` : 'n/a'} |`
        )
      ];
    }),
    ...section(all, 'durable', 'Durable creates (50 connections)', r => [
      '| target | creates/s | p50 | p99 |',
      '|---|---|---|---|',
      ...Object.entries(r.summary).map(
        ([name, s]) => `| ${name} | ${rps(s.requestsPerSecond)} | ${ms(s.p50Ms)} | ${ms(s.p99Ms)} |`
      ),
      '',
      '| ratio | median (min–max) | per round |',
      '|---|---|---|',
      ...r.ratios.map(x => `| ${x.of} / ${x.to} | ${x.median} (${x.min}–${x.max}) | ${x.rounds.join(', ')} |`)
    ]),
    ...section(all, 'detection', 'Detection latency and requests', r => [
      `Run lengths (s): ${r.lengths.join(', ')}; all waited on at once (${r.wallSeconds} s).`,
      '',
      '| strategy | p50 latency | p90 latency | worst latency / run length | requests: median per run / total (transcript reads) |',
      '|---|---|---|---|---|',
      ...r.summary.map(
        s =>
          `| ${s.strategy} | ${n(s.p50LatencyMs)} ms | ${n(s.p90LatencyMs)} ms | ${(s.maxLatencyOfRunLength * 100).toFixed(1)} % | ${s.medianRequests} / ${s.totalRequests} (${s.totalTranscriptRequests ?? 0}) |`
      )
    ]),
    ...section(all, 'webhooks', 'Webhook deliveries', r => [
      `${n(r.runs)} runs, ${n(r.deliveries)} of ${n(r.expected)} deliveries (queued, in progress, the end) to a receiver ` +
        'that answers 200 at once; latency from the change to the receiver.',
      '',
      '| deliveries/s | p50 | p99 | max |',
      '|---|---|---|---|',
      `| ${n(r.deliveriesPerSecond)} | ${r.latencyMs.p50} ms | ${r.latencyMs.p99} ms | ${r.latencyMs.max} ms |`
    ]),
    ...section(all, 'sandbox', 'What the sandbox costs', r => [
      `${r.runs} rounds of \`@sim run true\`, one run of each kind per round.`,
      '',
      '| environment | command p50 / p90 | run p50 / p90 | command added over `off` (per round) | run added over `off` (per round) |',
      '|---|---|---|---|---|',
      ...Object.entries(r.summary).map(([kind, s]) => {
        const added = r.addedOverOff[kind];
        return `| ${kind} | ${s.command_ms.p50} / ${s.command_ms.p90} ms | ${s.run_ms.p50} / ${s.run_ms.p90} ms | ${added ? ms(added.commandMs) : '—'} | ${added ? ms(added.runMs) : '—'} |`;
      })
    ]),
    ...section(all, 'scale', 'The store at scale (one request at a time, uncached)', r => [
      `${n(r.runs)} runs inserted in ${r.fillSeconds} s.`,
      '',
      '| request | p50 | p99 |',
      '|---|---|---|',
      `| list, pages 1 to ${r.samples} (one walk, each page once) | ${r.pages1ToSamplesMs.p50} ms | ${r.pages1ToSamplesMs.p99} ms |`,
      `| list, first page, each a new query | ${r.firstPageDistinctQueriesMs.p50} ms | ${r.firstPageDistinctQueriesMs.p99} ms |`,
      `| list, pages 1,000 to ${n(999 + r.samples)} (same walk) | ${r.pages1000OnMs.p50} ms | ${r.pages1000OnMs.p99} ms |`,
      `| read one run by id | ${r.readMs.p50} ms | ${r.readMs.p99} ms |`,
      `| list filtered by a state no run has | ${r.filterWithNoMatchesMs.p50} ms | ${r.filterWithNoMatchesMs.p99} ms |`
    ]),
    ...section(all, 'overhead', 'Action overhead', r => [
      '| measure | median |',
      '|---|---|',
      `| Node start (\`node -e ''\`) | ${r.medianNodeStartMs} ms |`,
      `| spawn → first request | ${r.medianToFirstRequestMs} ms (p90 ${r.p90ToFirstRequestMs} ms) |`,
      `| terminal answer → exit | ${r.medianTerminalToExitMs} ms |`
    ]),
    ...section(all, 'bundles', 'Bundle sizes (from dist/)', r => [
      '| bundle | size | files |',
      '|---|---|---|',
      ...Object.entries(r.bundles).map(
        ([name, b]) =>
          `| ${name} | ${b.megabytes} MB | ${Object.entries(b.files)
            .map(([file, size]) => `\`${b.dir}/${file}\` ${(size / 1e6).toFixed(2)} MB`)
            .join(', ')} |`
      )
    ])
  );
  return `${out.join('\n')}\n`;
}
