// Where the executor spends its time under load: runs it with --cpu-prof behind autocannon and prints
// the functions with the most self time (TOTAL=1: also with the most total time; SECONDS=n: n s of load). `node bench/profile.mjs read|list|create`. A create is
// profiled as bench/durable.mjs measures it: `serve --role api` (nothing runs the runs), no queue limit.
import { spawn } from 'node:child_process';
import { readdirSync, readFileSync, mkdirSync, writeFileSync } from 'node:fs';
import autocannon from 'autocannon';
import { createKey, api, sleep, tempDir, EXECUTOR } from './lib.mjs';
const kind = process.argv[2] ?? 'read';
const dir = tempDir();
const profDir = dir + '/prof';
mkdirSync(profDir);
const source = tempDir();
writeFileSync(
  dir + '/c.yaml',
  `log_level: warn\nlimits:\n  rate_limit_per_minute: 0\n  max_queued_runs: 10000000\nenvironments:\n  - id: bench\n    source: ${source}\n`
);
const child = spawn(
  process.execPath,
  [
    '--cpu-prof',
    '--cpu-prof-dir',
    profDir,
    EXECUTOR,
    'serve',
    '--port',
    '0',
    '--data-dir',
    dir + '/data',
    '--config',
    dir + '/c.yaml',
    ...(kind === 'create' ? ['--role', 'api'] : [])
  ],
  { stdio: ['ignore', 'pipe', 'inherit'] }
);
const url = await new Promise(r =>
  child.stdout.on('data', d => {
    const m = /listening on (\S+)/.exec(String(d));
    if (m) r(m[1]);
  })
);
const key = createKey(dir + '/data');
const { body } = await api(url, key, '/api/v1/agent/run', {
  method: 'POST',
  body: JSON.stringify({ prompt: '@sim say hi', config: { environment_id: 'bench' } })
});
// A list page of 20, as bench/throughput.mjs reads it.
if (kind === 'list')
  for (let i = 0; i < 19; i++)
    await api(url, key, '/api/v1/agent/run', {
      method: 'POST',
      body: JSON.stringify({ prompt: '@sim say hi', config: { environment_id: 'bench' } })
    });
await sleep(1000);
const target =
  kind === 'list'
    ? `${url}/api/v1/agent/runs?limit=20`
    : kind === 'create'
      ? `${url}/api/v1/agent/run`
      : `${url}/api/v1/agent/runs/${body.run_id}`;
const post =
  kind === 'create'
    ? { method: 'POST', body: JSON.stringify({ prompt: '@sim say hi', config: { environment_id: 'bench' } }) }
    : {};
const res = await autocannon({
  url: target,
  ...post,
  headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
  connections: 50,
  duration: Number(process.env.SECONDS ?? 4)
});
console.log('req/s', res.requests.average);
child.kill('SIGTERM');
await new Promise(r => child.on('exit', r));
const file = readdirSync(profDir)[0];
const prof = JSON.parse(readFileSync(profDir + '/' + file, 'utf8'));
const byId = new Map(prof.nodes.map(n => [n.id, n]));
const parent = new Map();
for (const n of prof.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
const name = n =>
  `${n.callFrame.functionName || '(anon)'} ${n.callFrame.url.split('/').slice(-1)[0]}:${n.callFrame.lineNumber}`;
const dt = prof.timeDeltas;
const counts = new Map();
prof.samples.forEach((id, i) => counts.set(id, (counts.get(id) ?? 0) + (dt[i] ?? 0)));
// Self time: the function on top of the stack. Total time: on the stack at all (once per sample).
const self = new Map();
const total = new Map();
let busy = 0;
for (const [id, t] of counts) {
  const n = byId.get(id);
  self.set(name(n), (self.get(name(n)) ?? 0) + t);
  if (!['(idle)', '(program)', '(garbage collector)'].includes(n.callFrame.functionName)) busy += t;
  const seen = new Set();
  for (let at = id; at !== undefined; at = parent.get(at)) seen.add(name(byId.get(at)));
  for (const k of seen) total.set(k, (total.get(k) ?? 0) + t);
}
const all = [...self.values()].reduce((a, b) => a + b, 0);
const top = (map, of) =>
  [...map.entries()]
    .sort((a, b) => b[1] - a[1])
    .slice(0, Number(process.env.TOP ?? 25))
    .map(([k, v]) => `${((v / of) * 100).toFixed(1)}% ${k}`)
    .join('\n');
console.log(`self time, % of the profile (${(all / 1e6).toFixed(2)} s):\n${top(self, all)}`);
if (process.env.TOTAL)
  console.log(`\ntotal time, % of the busy time (${(busy / 1e6).toFixed(2)} s):\n${top(total, busy)}`);
