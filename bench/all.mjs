// `npm run bench:all`: the headline benchmarks one after the other (never two at once), in under
// ten minutes on a 2-core machine, into one results file with its markdown rendering:
//   bench/results/all-<date>.json   every benchmark's result (rows, rounds, command, machine state)
//                                   and the goals, each with what was measured and whether it is met
//   bench/results/all-<date>.md     the tables and goals as BENCHMARKS.md shows them, to paste
// Each benchmark records its own command, date, commit and `uptime` before and after.
// Run it on a quiet machine after `npm run build` (the benchmarks run the bundles in dist/).
//
//   node bench/all.mjs [--quick] [--only bundles,overhead,...]
// --quick runs every benchmark for a second or a few runs, to check the whole chain end to end; its
// figures mean nothing and it writes all-<date>-quick.* instead.

import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { EXECUTOR, ROOT } from './lib.mjs';
import { machineState } from './method.mjs';
import { goals, quietness, render } from './render.mjs';

const { values } = parseArgs({
  options: { quick: { type: 'boolean', default: false }, only: { type: 'string' } }
});

/** name → [script, full arguments, --quick arguments]: the headline set, cheapest first. */
const STEPS = {
  bundles: ['bundles.mjs', [], []],
  overhead: ['overhead.mjs', ['--repeat', '20'], ['--repeat', '3']],
  throughput: [
    'throughput.mjs',
    ['--seconds', '5', '--warmup', '1', '--rounds', '3', '--connections', '50'],
    ['--seconds', '1', '--warmup', '0', '--rounds', '1', '--connections', '50']
  ],
  durable: [
    'durable.mjs',
    ['--seconds', '5', '--warmup', '1', '--rounds', '3', '--workers', '4'],
    ['--seconds', '1', '--warmup', '0', '--rounds', '1', '--workers', '4']
  ],
  scale: ['scale.mjs', ['--runs', '1000000', '--samples', '200'], ['--runs', '21000', '--samples', '20']],
  sandbox: ['sandbox.mjs', ['--runs', '15', '--warmup', '1'], ['--runs', '2', '--warmup', '1']],
  workspaces: [
    'workspaces.mjs',
    [
      '--sizes',
      '500,50000',
      '--runs',
      '10',
      '--firsts',
      '1',
      '--kinds',
      'overlay',
      '--at-once',
      '2',
      '--rounds',
      '1'
    ],
    [
      '--sizes',
      '500,5000',
      '--runs',
      '2',
      '--firsts',
      '1',
      '--kinds',
      'overlay',
      '--at-once',
      '2',
      '--rounds',
      '1'
    ]
  ],
  webhooks: [
    'webhooks.mjs',
    ['--runs', '150', '--concurrency', '20'],
    ['--runs', '20', '--concurrency', '5']
  ],
  detection: [
    'detection.mjs',
    ['--runs', '8', '--min', '5', '--max', '180', '--seed', '1'],
    ['--runs', '2', '--min', '2', '--max', '5', '--seed', '1']
  ]
};
const names = values.only ? values.only.split(',') : Object.keys(STEPS);
for (const name of names)
  if (!(name in STEPS))
    throw new Error(`--only: ${JSON.stringify(name)} is not one of ${Object.keys(STEPS).join(', ')}`);
if (!existsSync(EXECUTOR)) throw new Error(`${EXECUTOR} is missing: run npm run build first`);

const outDir = mkdtempSync(join(tmpdir(), 'agent-run-bench-all-'));
const before = machineState();
const quiet = quietness(before, before);
if (quiet.length > 0) console.warn(`warning: ${quiet[0].replace(/\*\*/g, '')}`);
const started = Date.now();
const steps = [];
for (const name of names) {
  const [script, full, quick] = STEPS[name];
  const args = [join('bench', script), ...(values.quick ? quick : full)];
  console.log(`\n=== ${name}: node ${args.join(' ')}`);
  const stepStarted = Date.now();
  const code = await new Promise(resolve => {
    const child = spawn(process.execPath, args, {
      cwd: ROOT,
      stdio: 'inherit',
      env: { ...process.env, BENCH_OUT_DIR: outDir }
    });
    child.once('exit', resolve);
  });
  const file = join(outDir, `${name}.json`);
  steps.push({
    name,
    command: `node ${args.join(' ')}`,
    exitCode: code,
    wallSeconds: Math.round((Date.now() - stepStarted) / 1000),
    result: code === 0 && existsSync(file) ? JSON.parse(readFileSync(file, 'utf8')) : null
  });
  if (code !== 0) console.error(`${name} failed with exit code ${code}; continuing with the others`);
}

const all = {
  command: [
    'npm run bench:all',
    ...(values.quick || values.only ? ['--'] : []),
    ...(values.quick ? ['--quick'] : []),
    ...(values.only ? ['--only', values.only] : [])
  ].join(' '),
  quick: values.quick,
  wallSeconds: Math.round((Date.now() - started) / 1000),
  machine: { before, after: machineState() },
  steps
};
all.goals = goals(all).map(([goal, measured, met]) => ({ goal, measured, met }));
const day = before.date.slice(0, 10);
const base = join(ROOT, 'bench/results', `all-${day}${values.quick ? '-quick' : ''}`);
mkdirSync(join(ROOT, 'bench/results'), { recursive: true });
writeFileSync(`${base}.json`, `${JSON.stringify(all, null, 2)}\n`);
writeFileSync(`${base}.md`, render(all));
console.log(`\nwrote ${base}.json and ${base}.md (${all.wallSeconds} s in all)`);
// Each benchmark's own result file was read into the results above: the folder goes.
rmSync(outDir, { recursive: true, force: true });
if (steps.some(step => step.exitCode !== 0)) process.exitCode = 1;
