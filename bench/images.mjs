// Environments from container images: what a run over an image costs against the host's root, and
// what the first unpack of an image costs. One bundled executor (run as root, as CI runs it) serves
// one source in two environments: `host` (the host's root) and `image` (a small image built here
// offline with umoci: Debian's static busybox and a marker /etc/os-release; or, with --debootstrap DIR,
// a Debian root file system made beforehand with `debootstrap --variant=minbase bookworm DIR`).
// The image is copied and unpacked at start-up (the start-up log states the unpack's milliseconds);
// then runs alternate between the two environments, one at a time (`@sim run true`), after
// --warmup rounds not counted: the command's duration (spawn to exit, as the transcript records
// it) and the run's whole time (started_at to completed_at). Also the unpacked root's bytes and
// the layout's (what skopeo copied).
//
//   node bench/images.mjs [--runs 30] [--warmup 1] [--debootstrap DIR]

import { execFileSync, spawn } from 'node:child_process';
import { cpSync, mkdirSync, readFileSync, readdirSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { EXECUTOR, ROOT, api, createKey, median, percentile, saveResult, sleep, tempDir } from './lib.mjs';

const { values } = parseArgs({
  options: {
    runs: { type: 'string', default: '30' },
    warmup: { type: 'string', default: '1' },
    debootstrap: { type: 'string' }
  }
});
const runs = Number(values.runs);
const warmup = Number(values.warmup);
const work = tempDir('agent-run-bench-images-');
const layout = join(work, 'layout');
const umoci = (...args) => execFileSync('umoci', args, { encoding: 'utf8' });
umoci('init', '--layout', layout);
umoci('new', '--image', `${layout}:bench`);
let root = values.debootstrap;
if (!root) {
  root = join(work, 'root');
  for (const dir of ['bin', 'etc']) mkdirSync(join(root, dir), { recursive: true });
  cpSync('/bin/busybox', join(root, 'bin', 'busybox'));
  for (const name of ['sh', 'true', 'cat']) symlinkSync('busybox', join(root, 'bin', name));
  writeFileSync(join(root, 'etc', 'os-release'), 'ID=bench\n');
}
umoci('insert', '--image', `${layout}:bench`, root, '/');
umoci('config', '--image', `${layout}:bench`, '--config.env', 'PATH=/usr/local/bin:/usr/bin:/bin');
// The executor copies it as agent-run-image: readable by that user (umoci writes 0600).
execFileSync('chmod', ['-R', 'a+rX', layout]);

const source = tempDir('agent-run-bench-source-');
const dataDir = join(tempDir(), 'data');
mkdirSync(dataDir, { recursive: true });
const configFile = join(work, 'agent-executor.yaml');
writeFileSync(
  configFile,
  [
    'log_level: info',
    'log_format: json',
    'workers: 1',
    'limits: { rate_limit_per_minute: 0 }',
    'environments:',
    `  - { id: host, source: ${JSON.stringify(source)} }`,
    `  - { id: image, source: ${JSON.stringify(source)}, image: ${JSON.stringify(`oci:${layout}:bench`)} }`
  ].join('\n')
);
const started = Date.now();
const child = spawn(
  process.execPath,
  [EXECUTOR, 'serve', '--port', '0', '--data-dir', dataDir, '--config', configFile],
  {
    cwd: ROOT,
    stdio: ['ignore', 'pipe', 'pipe']
  }
);
let out = '';
let stderr = '';
let unpackMs = NaN;
// The start-up log (on stderr) states the image's unpack time; request lines follow it.
child.stderr.on('data', chunk => {
  stderr = (stderr + chunk).slice(-20000);
  unpackMs = Number.isNaN(unpackMs) ? Number(/unpacked in (\d+) ms/.exec(stderr)?.[1]) : unpackMs;
});
const url = await new Promise((resolveUrl, reject) => {
  child.stdout.on('data', chunk => {
    out += chunk;
    const match = /listening on (http:\/\/\S+?)["\s]/.exec(out);
    if (match) resolveUrl(match[1]);
  });
  child.once('exit', code => reject(new Error(`executor exited with ${code}: ${stderr}${out.slice(-4000)}`)));
});
const startupMs = Date.now() - started;
const key = createKey(dataDir);
const kinds = ['host', 'image'];
const samples = Object.fromEntries(kinds.map(kind => [kind, { command: [], run: [] }]));
const rounds = [];
try {
  for (let i = 0; i < (warmup + runs) * kinds.length; i++) {
    const kind = kinds[i % kinds.length];
    const round = Math.floor(i / kinds.length) + 1 - warmup;
    const created = await api(url, key, '/api/v1/agent/run', {
      method: 'POST',
      body: JSON.stringify({ prompt: '@sim run true', config: { environment_id: kind } })
    });
    const id = created.body.run_id;
    let run;
    for (;;) {
      run = (await api(url, key, `/api/v1/agent/runs/${id}`)).body;
      if (['SUCCEEDED', 'FAILED'].includes(run.state)) break;
      await sleep(20);
    }
    if (run.state !== 'SUCCEEDED') throw new Error(`run ${id} (${kind}) ${run.state}: ${run.status_message}`);
    if (round < 1) continue;
    const transcript = await api(url, key, `/api/v1/agent/runs/${id}/transcript`);
    const events = transcript.body?.events;
    if (!events)
      throw new Error(
        `transcript of ${id}: ${transcript.status} ${JSON.stringify(transcript.body)} (${url})`
      );
    const command = events.find(e => e.kind === 'command').duration_ms;
    const whole = Date.parse(run.completed_at) - Date.parse(run.started_at);
    samples[kind].command.push(command);
    samples[kind].run.push(whole);
    rounds.push({ round, target: kind, commandMs: command, runMs: whole });
  }
} finally {
  child.kill('SIGTERM');
  await new Promise(done => (child.exitCode !== null ? done() : child.once('exit', done)));
}

const rootsDir = join(dataDir, 'images', 'roots');
const [digest] = readdirSync(rootsDir);
const ready = JSON.parse(readFileSync(join(rootsDir, digest, 'ready'), 'utf8'));
const du = path =>
  Number(execFileSync('du', ['-s', '--block-size=1', path], { encoding: 'utf8' }).split('\t')[0]);
const summary = Object.fromEntries(
  kinds.map(kind => [
    kind,
    {
      command_ms: { p50: median(samples[kind].command), p95: percentile(samples[kind].command, 95) },
      run_ms: { p50: median(samples[kind].run), p95: percentile(samples[kind].run, 95) }
    }
  ])
);
const image = {
  what: values.debootstrap ? `debootstrap root ${values.debootstrap}` : 'busybox-static + /etc/os-release',
  unpack_ms: unpackMs,
  startup_ms: startupMs,
  unpacked_bytes: ready.bytes,
  layout_bytes: du(join(dataDir, 'images', 'layout'))
};
console.table(
  Object.fromEntries(
    kinds.map(kind => [
      kind,
      {
        'command p50 ms': summary[kind].command_ms.p50,
        'command p95 ms': summary[kind].command_ms.p95,
        'run p50 ms': summary[kind].run_ms.p50,
        'run p95 ms': summary[kind].run_ms.p95
      }
    ])
  )
);
console.log('image:', JSON.stringify(image));
rmSync(work, { recursive: true, force: true });
saveResult(values.debootstrap ? 'images-debootstrap' : 'images', {
  command: `node bench/images.mjs --runs ${runs} --warmup ${warmup}${values.debootstrap ? ' --debootstrap DIR' : ''}`,
  runs,
  summary,
  image,
  rounds
});
