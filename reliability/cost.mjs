// Request cost: while a client of team A sends, at its key's rate limit, the most expensive
// requests the API accepts, how long do /healthz and team B's reads take? Team A first fills the
// store with runs of the largest accepted size (prompt at limits.max_prompt_bytes, 64 KiB of kept
// fields with 20 metadata pairs, a 64 KiB config holding 20 MCP servers); then its one key sends, open loop at `rate_limit_per_minute`, a cycle of
// full list pages filtered by 5 metadata pairs, searches through every prompt, config filters,
// 5-pair lists that match nothing, max-size creates and reads. A probe times /healthz, B's run read
// and B's list one after another, first on the idle executor ("quiet"), then under the attack.
// Loopback only; bounded in count and time; the executor and its temp folders are gone at the end.
//
//   npm run build && node reliability/cost.mjs [--runs 300] [--seconds 30]
//   node reliability/cost.mjs --source      (the TypeScript source, for a branch whose dist/ is not rebuilt)

import { execFileSync, spawn } from 'node:child_process';
import { rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { ROOT, EXECUTOR, percentile, saveResult, sleep, tempDir } from '../bench/lib.mjs';

const { values } = parseArgs({
  options: {
    runs: { type: 'string', default: '300' },
    seconds: { type: 'string', default: '30' },
    'quiet-seconds': { type: 'string', default: '5' },
    source: { type: 'boolean', default: false },
    name: { type: 'string', default: 'cost' }
  }
});
const seedRuns = Math.min(5000, Number(values.runs));
const attackMs = Math.min(600, Number(values.seconds)) * 1000;
const quietMs = Math.min(60, Number(values['quiet-seconds'])) * 1000;
const PER_MINUTE = 600; // the executor's default limits.rate_limit_per_minute
const PROMPT_BYTES = 64 * 1024; // its default limits.max_prompt_bytes
const CONFIG_BYTES = 64 * 1024; // the most a run's config may take (MAX_CONFIG_BYTES)
const EXTRA_BYTES = 64 * 1024; // the most a create's kept fields may take (MAX_EXTRA_FIELDS_BYTES)
const uptime = () => execFileSync('uptime').toString().trim();

// The executor: the bundled one, or the source with its types stripped (as the tests' children run it).
const HOOKS = `import { registerHooks } from 'node:module'; import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
registerHooks({ resolve(s, c, next) {
  if (s.startsWith('.') && s.endsWith('.js') && c.parentURL?.endsWith('.ts')) {
    const t = new URL(s.slice(0, -3) + '.ts', c.parentURL);
    if (existsSync(fileURLToPath(t))) return next(t.href, c);
  }
  return next(s, c);
} });`;
const entry = values.source
  ? [
      '--no-warnings',
      '--experimental-transform-types',
      '--import',
      `data:text/javascript,${encodeURIComponent(HOOKS)}`,
      join(ROOT, 'src/executor/index.ts')
    ]
  : [EXECUTOR];

const home = tempDir('cost-');
const dataDir = join(home, 'data');
const source = join(home, 'source');
execFileSync('mkdir', ['-p', source, dataDir]);
writeFileSync(join(source, 'README'), 'cost\n');
const configFile = join(home, 'agent-executor.yaml');
writeFileSync(
  configFile,
  `workers: 1\nlog_level: warn\nworkspaces:\n  retention: 0s\nlimits:\n  rate_limit_per_minute: ${PER_MINUTE}\n` +
    `environments:\n  - id: cost\n    source: ${source}\n`
);

let child;
const stopAll = () => {
  if (child && child.exitCode === null) child.kill('SIGKILL');
  rmSync(home, { recursive: true, force: true });
};
// Whatever happens, the run ends by itself: a hard stop well after the planned end.
const deadline = setTimeout(
  () => {
    console.error('cost: did not finish in time; stopped');
    stopAll();
    process.exit(2);
  },
  attackMs + quietMs + 15 * 60_000
);
deadline.unref();
for (const signal of ['SIGINT', 'SIGTERM'])
  process.once(signal, () => {
    stopAll();
    process.exit(130);
  });

function createKey(team) {
  const args = ['keys', 'create', '--kind', 'personal', '--name', 'cost', '--team', team];
  const out = execFileSync(process.execPath, [...entry, ...args, '--data-dir', dataDir], { cwd: ROOT });
  return out.toString().trim().split('\n').at(-1);
}

async function start() {
  child = spawn(
    process.execPath,
    [...entry, 'serve', '--port', '0', '--data-dir', dataDir, '--config', configFile],
    {
      cwd: ROOT,
      stdio: ['ignore', 'pipe', 'pipe']
    }
  );
  let stderr = '';
  child.stderr.on('data', chunk => (stderr = (stderr + chunk).slice(-5000)));
  return new Promise((resolve, reject) => {
    let out = '';
    child.stdout.on('data', chunk => {
      out += chunk;
      const match = /listening on (http:\/\/\S+)/.exec(out);
      if (match) resolve(match[1]);
    });
    child.once('exit', code => reject(new Error(`executor exited with ${code}: ${stderr}`)));
  });
}

try {
  const keysA = Array.from({ length: 8 }, () => createKey('team-a'));
  const keyB = createKey('team-b');
  const url = await start();
  const call = async (key, path, init = {}) => {
    const started = performance.now();
    const response = await fetch(url + path, {
      ...init,
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' }
    });
    const text = await response.text();
    return { status: response.status, ms: performance.now() - started, text };
  };

  // The largest body the API accepts: a prompt at limits.max_prompt_bytes, 64 KiB of kept fields
  // (20 metadata pairs among them), a 64 KiB config (20 MCP servers with their env values in it).
  const metadata = Object.fromEntries(Array.from({ length: 20 }, (_, i) => [`k${i}`, `value-${i}`]));
  const env = Object.fromEntries(
    Array.from({ length: 64 }, (_, i) => [`SECRET_${i}`, `s${i}-`.padEnd(24, 'x')])
  );
  const mcp = Object.fromEntries(
    Array.from({ length: 20 }, (_, i) => [`server${i}`, { command: 'mcp', env: { ...env } }])
  );
  while (Buffer.byteLength(JSON.stringify(mcp)) > 48 * 1024) {
    for (const server of Object.values(mcp)) delete server.env[Object.keys(server.env).at(-1)];
  }
  const config = filler => ({ environment_id: 'cost', name: 'big', mcp_servers: mcp, filler });
  const filler = 'f'.repeat(CONFIG_BYTES - Buffer.byteLength(JSON.stringify(config(''))));
  const notes = 'n'.repeat(EXTRA_BYTES - Buffer.byteLength(JSON.stringify({ metadata, notes: '' })));
  const biggest = JSON.stringify({
    prompt: `@sim result cost ${'p'.repeat(PROMPT_BYTES - 40)}`,
    config: config(filler),
    metadata,
    notes
  });

  // Seed: team A's runs through the API, several keys at once (each has its own rate limit).
  let seeded = 0;
  const seedStatuses = {};
  await Promise.all(
    keysA.map(async (key, k) => {
      for (let i = k; i < seedRuns; i += keysA.length) {
        const answer = await call(key, '/api/v1/agent/runs', { method: 'POST', body: biggest });
        seedStatuses[answer.status] = (seedStatuses[answer.status] ?? 0) + 1;
        if (answer.status === 200) seeded++;
        else if (answer.status === 429) await sleep(1000);
        else throw new Error(`seeding: ${answer.status} ${answer.text.slice(0, 300)}`);
      }
    })
  );
  const runB = JSON.parse(
    (
      await call(keyB, '/api/v1/agent/runs', {
        method: 'POST',
        body: JSON.stringify({ prompt: '@sim result b', config: { environment_id: 'cost' } })
      })
    ).text
  ).run_id;
  const anyA = JSON.parse((await call(keysA[0], '/api/v1/agent/runs?limit=1')).text).runs[0].run_id;

  // The probe: /healthz, B's run, B's list, one after another, 10 ms apart.
  async function probe(untilMs) {
    const times = { healthz: [], readB: [], listB: [] };
    const bad = [];
    const end = performance.now() + untilMs;
    while (performance.now() < end) {
      for (const [name, answer] of [
        ['healthz', await call(keyB, '/healthz')],
        ['readB', await call(keyB, `/api/v1/agent/runs/${runB}`)],
        ['listB', await call(keyB, '/api/v1/agent/runs?limit=20')]
      ]) {
        times[name].push(answer.ms);
        if (answer.status !== 200) bad.push(`${name} ${answer.status}`);
      }
      await sleep(10);
    }
    const stats = list => ({
      count: list.length,
      p50: +percentile(list, 50).toFixed(1),
      p99: +percentile(list, 99).toFixed(1),
      max: +Math.max(...list).toFixed(1)
    });
    return { healthz: stats(times.healthz), readB: stats(times.readB), listB: stats(times.listB), bad };
  }

  // The attack: team A's one key, one request every 60,000 / PER_MINUTE ms whether or not the last
  // was answered (at most 200 in flight), cycling through the costliest requests it may send.
  const five = Object.entries(metadata)
    .slice(0, 5)
    .map(([k, v]) => `metadata[${k}]=${v}`)
    .join('&');
  const attacks = [
    ['list 100, 5 metadata pairs', () => call(keysA[0], `/api/v1/agent/runs?limit=100&${five}`)],
    ['search every prompt', () => call(keysA[0], '/api/v1/agent/runs?limit=100&q=not-in-any-prompt')],
    ['create, largest body', () => call(keysA[0], '/api/v1/agent/runs', { method: 'POST', body: biggest })],
    [
      'config filter, no match',
      () => call(keysA[0], '/api/v1/agent/runs?limit=100&name=nothing&model_id=none')
    ],
    [
      '5 metadata pairs, no match',
      () => call(keysA[0], `/api/v1/agent/runs?limit=100&${five.replace('value-4', 'none')}`)
    ],
    ['read, largest run', () => call(keysA[0], `/api/v1/agent/runs/${anyA}`)],
    ['6 metadata pairs (refused)', () => call(keysA[0], `/api/v1/agent/runs?${five}&metadata[k5]=value-5`)]
  ];
  const byKind = Object.fromEntries(attacks.map(([name]) => [name, { statuses: {}, ms: [] }]));

  // Each request alone, five times one after another: what one costs with nothing else waiting.
  const alone = {};
  for (const [name, send] of attacks) {
    const ms = [];
    for (let i = 0; i < 5; i++) ms.push((await send()).ms);
    alone[name] = { p50: +percentile(ms, 50).toFixed(1), max: +Math.max(...ms).toFixed(1) };
  }
  await sleep(2000);

  const loadBefore = uptime();
  const quiet = await probe(quietMs);
  let inFlight = 0;
  let sent = 0;
  let stop = false;
  const sender = (async () => {
    const gap = 60_000 / PER_MINUTE;
    const begun = performance.now();
    while (!stop) {
      if (inFlight < 200) {
        const [name, send] = attacks[sent % attacks.length];
        sent++;
        inFlight++;
        send()
          .then(answer => {
            byKind[name].statuses[answer.status] = (byKind[name].statuses[answer.status] ?? 0) + 1;
            byKind[name].ms.push(answer.ms);
          })
          .catch(
            error =>
              (byKind[name].statuses[error.code ?? 'error'] =
                (byKind[name].statuses[error.code ?? 'error'] ?? 0) + 1)
          )
          .finally(() => inFlight--);
      }
      await sleep(Math.max(0, begun + sent * gap - performance.now()));
    }
  })();
  const loadDuring = [];
  const loadSampler = setInterval(() => loadDuring.push(uptime()), 10_000);
  const attacked = await probe(attackMs);
  stop = true;
  clearInterval(loadSampler);
  await sender;
  // Answers still owed after the attack are waited for a minute at most (and counted).
  const drainUntil = performance.now() + 60_000;
  while (inFlight > 0 && performance.now() < drainUntil) await sleep(50);
  const unanswered = inFlight;
  const loadAfter = uptime();

  const attack = Object.fromEntries(
    Object.entries(byKind).map(([name, { statuses, ms }]) => [
      name,
      { statuses, p50: +percentile(ms, 50).toFixed(1), p99: +percentile(ms, 99).toFixed(1) }
    ])
  );
  const result = {
    command: `node reliability/cost.mjs --runs ${seedRuns} --seconds ${attackMs / 1000}${values.source ? ' --source' : ''}`,
    executor: values.source ? 'src (types stripped)' : 'dist/executor/index.js',
    seeded: { runs: seeded, statuses: seedStatuses, bodyBytes: Buffer.byteLength(biggest) },
    attackRequestsSent: sent,
    unansweredAfterAMinute: unanswered,
    alone,
    quiet,
    attacked,
    attack,
    uptime: { before: loadBefore, during: loadDuring, after: loadAfter }
  };
  console.log(JSON.stringify(result, null, 2));
  saveResult(`reliability-${values.name}`, result);
  const met = attacked.healthz.p99 < 100 && attacked.readB.p99 < 100 && attacked.listB.p99 < 100;
  process.exitCode = met && attacked.bad.length === 0 ? 0 : 1;
} finally {
  stopAll();
  clearTimeout(deadline);
}
