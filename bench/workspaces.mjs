// Benchmark: what a run's workspace costs, by repository size. For each size the benchmark
// generates a git repository (--sizes, in files of --file-bytes each, one commit), starts the
// bundled executor once per workspace kind (`overlay`: copy-on-write views of a shared checkout;
// `checkout`: a full checkout per run, AGENT_EXECUTOR_WORKSPACES=checkout, as every run was before)
// and measures, one run at a time, a confined simulated agent that prints the clock and changes 3
// files:
//   create → INPROGRESS         the run's started_at minus its created_at
//   create → agent started      the clock the agent's first command printed, minus created_at
//   disk per workspace          `du -s -B1` (allocated bytes) of what the run left: its layer (or
//                               its checkout) and its private git dir, after it ended
// "first" runs are each the first run of a new commit (an empty commit per sample), "later" runs
// use the same commit as the one before; then --rounds rounds of --at-once runs created together
// (as many workers). Needs root (overlayfs) and `npm run build`.
//
//   node bench/workspaces.mjs [--sizes 1000,50000] [--runs 20] [--firsts 3] [--file-bytes 4096]
//                             [--kinds overlay,checkout] [--at-once 4] [--rounds 5]

import { execFileSync } from 'node:child_process';
import { mkdirSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { api, createKey, median, percentile, saveResult, sleep, startExecutor, tempDir } from './lib.mjs';

const { values } = parseArgs({
  options: {
    sizes: { type: 'string', default: '1000,50000' },
    runs: { type: 'string', default: '20' },
    firsts: { type: 'string', default: '3' },
    'file-bytes': { type: 'string', default: '4096' },
    kinds: { type: 'string', default: 'overlay,checkout' },
    'at-once': { type: 'string', default: '4' },
    rounds: { type: 'string', default: '5' }
  }
});
const sizes = values.sizes.split(',').map(Number);
const runs = Number(values.runs);
const firsts = Number(values.firsts);
const fileBytes = Number(values['file-bytes']);
const kinds = values.kinds.split(',');
const atOnce = Number(values['at-once']);
const rounds = Number(values.rounds);

const git = (dir, ...args) =>
  execFileSync('git', ['-C', dir, '-c', 'user.name=b', '-c', 'user.email=b@b', ...args], {
    maxBuffer: 1 << 30
  });

/** A repository of `files` files of `fileBytes` each, 1000 per directory, in one commit. */
function repository(files) {
  const dir = tempDir(`agent-run-bench-repo-${files}-`);
  const text = 'x'.repeat(fileBytes - 16);
  for (let i = 0; i < files; i++) {
    const sub = join(dir, `d${String(Math.floor(i / 1000)).padStart(4, '0')}`);
    if (i % 1000 === 0) mkdirSync(sub);
    writeFileSync(join(sub, `f${String(i).padStart(7, '0')}.txt`), `${i} ${text}\n`);
  }
  writeFileSync(join(dir, 'README.md'), 'bench\n');
  git(dir, 'init', '--quiet');
  git(dir, 'add', '--all');
  git(dir, 'commit', '--quiet', '-m', 'generated');
  return dir;
}

const PROMPT = [
  '@sim run date +%s%3N',
  '@sim run echo a > added.txt && echo b >> README.md && echo c > d0000/f0000000.txt'
].join('\n');

const du = path => Number(execFileSync('du', ['-s', '-B1', path], { encoding: 'utf8' }).split('\t')[0]);

async function measure(kind, files, source) {
  const dataDir = join(tempDir(), 'data');
  const config = [
    'log_level: warn',
    `workers: ${Math.max(1, atOnce)}`,
    'workspaces: { retention: 1h, quota: 1GiB }',
    'limits: { rate_limit_per_minute: 0 }',
    'environments:',
    `  - { id: bench, source: ${JSON.stringify(source)}, agent: { kind: simulated } }`
  ].join('\n');
  const env = kind === 'checkout' ? { AGENT_EXECUTOR_WORKSPACES: 'checkout' } : {};
  const executor = await startExecutor({ dataDir, config, env });
  const key = createKey(dataDir);
  const rows = [];
  try {
    /** Creates a run, waits for its end and answers its row. */
    const one = async first => {
      const created = await api(executor.url, key, '/api/v1/agent/run', {
        method: 'POST',
        body: JSON.stringify({ prompt: PROMPT, config: { environment_id: 'bench' } })
      });
      const id = created.body.run_id;
      let run;
      for (;;) {
        run = (await api(executor.url, key, `/api/v1/agent/runs/${id}`)).body;
        if (['SUCCEEDED', 'FAILED', 'CANCELLED'].includes(run.state)) break;
        await sleep(25);
      }
      if (run.state !== 'SUCCEEDED') throw new Error(`run ${id} ${run.state}: ${run.status_message}`);
      const events = (await api(executor.url, key, `/api/v1/agent/runs/${id}/transcript`)).body.events;
      const clock = Number(events.find(e => e.kind === 'command').output.trim());
      const layer = kind === 'overlay' ? join(dataDir, 'layers', id) : join(dataDir, 'workspaces', id);
      return {
        first,
        toInProgressMs: Date.parse(run.started_at) - Date.parse(run.created_at),
        toAgentMs: clock - Date.parse(run.created_at),
        runMs: Date.parse(run.completed_at) - Date.parse(run.created_at),
        workspaceBytes: du(layer),
        gitDirBytes: du(join(dataDir, 'gitdirs', `${id}.git`))
      };
    };
    for (let i = 0; i < firsts + runs; i++) {
      const first = i < firsts;
      if (first) git(source, 'commit', '--quiet', '--allow-empty', '-m', `first ${i}`);
      rows.push(await one(first));
    }
    // --at-once runs created together (4 workers), --rounds times, on the commit of the runs above.
    const together = [];
    for (let round = 0; round < rounds; round++)
      together.push(...(await Promise.all(Array.from({ length: atOnce }, () => one(false)))));
    const shared =
      kind === 'overlay'
        ? readdirSync(join(dataDir, 'checkouts')).map(n => du(join(dataDir, 'checkouts', n)))
        : [];
    return { rows, together, sharedCheckoutBytes: shared };
  } finally {
    await executor.stop();
    rmSync(join(dataDir, '..'), { recursive: true, force: true });
  }
}

const stat = (rows, field) => ({
  p50: median(rows.map(r => r[field])),
  p95: percentile(
    rows.map(r => r[field]),
    95
  )
});
const results = [];
for (const files of sizes) {
  const source = repository(files);
  for (const kind of kinds) {
    const { rows, together, sharedCheckoutBytes } = await measure(kind, files, source);
    const later = rows.filter(r => !r.first);
    const first = rows.filter(r => r.first);
    const summary = {
      files,
      kind,
      first: { toInProgressMs: stat(first, 'toInProgressMs'), toAgentMs: stat(first, 'toAgentMs') },
      later: { toInProgressMs: stat(later, 'toInProgressMs'), toAgentMs: stat(later, 'toAgentMs') },
      workspaceBytes: median(later.map(r => r.workspaceBytes)),
      gitDirBytes: median(later.map(r => r.gitDirBytes)),
      atOnce: { runs: atOnce, toAgentMs: stat(together, 'toAgentMs'), runMs: stat(together, 'runMs') },
      sharedCheckoutBytes,
      rows,
      together
    };
    results.push(summary);
    console.log(
      `${files} files, ${kind}: first → agent p50 ${summary.first.toAgentMs.p50} ms; later → INPROGRESS p50 ${summary.later.toInProgressMs.p50} / p95 ${summary.later.toInProgressMs.p95} ms, → agent p50 ${summary.later.toAgentMs.p50} / p95 ${summary.later.toAgentMs.p95} ms; workspace ${summary.workspaceBytes} B, private git dir ${summary.gitDirBytes} B; ${atOnce} at once → agent p50 ${summary.atOnce.toAgentMs.p50} / p95 ${summary.atOnce.toAgentMs.p95} ms`
    );
  }
  rmSync(source, { recursive: true, force: true });
}
saveResult('workspaces', {
  command: `node bench/workspaces.mjs --sizes ${sizes.join(',')} --runs ${runs} --firsts ${firsts} --file-bytes ${fileBytes} --kinds ${kinds.join(',')} --at-once ${atOnce} --rounds ${rounds}`,
  results
});
