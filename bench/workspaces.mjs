// Benchmark: what a run's workspace costs, by repository size. For each size the benchmark
// generates a git repository (--sizes, in files of --file-bytes each, one commit, written straight
// into a pack by `git fast-import`: no loose object and no work tree, so 200,000 files take seconds
// and only the pack's few MB of disk), starts the bundled executor once per workspace kind
// (`overlay`: copy-on-write views of a shared checkout; `checkout`: a full checkout per run,
// AGENT_EXECUTOR_WORKSPACES=checkout, as every run was before), both at once, and measures, one run
// at a time and alternating between the kinds (A, B, B, A, A, B, …: load and the page cache weigh
// on both alike), a confined simulated agent that prints the clock and changes 3 files:
//   create → INPROGRESS         the run's started_at minus its created_at
//   create → agent started      the clock the agent's first command printed, minus created_at
//   create → SUCCEEDED          the run's completed_at minus its created_at (its end: the diff,
//                               from the run's layer on copy-on-write workspaces)
//   disk per workspace          `du -s -B1` (allocated bytes) of what the run left: its layer (or
//                               its checkout) and its private git dir, after it ended
// "first" runs are each the first run of a new commit (an empty commit per sample), "later" runs
// use the same commit as the one before; then --rounds rounds of --at-once runs created together
// (as many workers). Each run of the one-at-a-time part starts after a `sync`, so no run pays for
// writing back the one before. Nothing is deleted until every size is measured (then all is, unless
// --keep-checkouts): on ext4 a file created soon after many were deleted nearby is slow to get an
// inode (the allocator skips recently freed ones; seen here: a 50k-file checkout took 1.5 s in a
// fresh directory and 12-27 s right after an earlier one was deleted), which weighed on whichever
// kind ran after a deletion. The disk this needs: a full checkout per run of that kind (211 MB at
// 50,000 files of 4 KiB). Needs root (overlayfs) and `npm run build`.
//
//   node bench/workspaces.mjs [--sizes 1000,50000] [--runs 20] [--firsts 3] [--file-bytes 4096]
//                             [--kinds overlay,checkout] [--at-once 4] [--rounds 5] [--keep-checkouts]

import { execFileSync, spawn } from 'node:child_process';
import { once } from 'node:events';
import { readdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import {
  api,
  createKey,
  keepTempDirs,
  median,
  percentile,
  saveResult,
  sleep,
  startExecutor,
  tempDir
} from './lib.mjs';

const { values } = parseArgs({
  options: {
    sizes: { type: 'string', default: '1000,50000' },
    runs: { type: 'string', default: '20' },
    firsts: { type: 'string', default: '3' },
    'file-bytes': { type: 'string', default: '4096' },
    kinds: { type: 'string', default: 'overlay,checkout' },
    'at-once': { type: 'string', default: '4' },
    rounds: { type: 'string', default: '5' },
    'keep-checkouts': { type: 'boolean', default: false }
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

/**
 * A repository of `files` files of `fileBytes` each, 1000 per directory, in one commit on `main`,
 * streamed to `git fast-import` (the files are never written out: the executor reads the commit).
 */
async function repository(files) {
  const dir = tempDir(`agent-run-bench-repo-${files}-`);
  git(dir, 'init', '--quiet', '--initial-branch', 'main');
  const importer = spawn('git', ['-C', dir, 'fast-import', '--quiet'], {
    stdio: ['pipe', 'inherit', 'inherit']
  });
  const ended = once(importer, 'close');
  const write = async text => {
    if (!importer.stdin.write(text)) await once(importer.stdin, 'drain');
  };
  const text = 'x'.repeat(fileBytes - 16);
  const message = 'generated\n';
  await write(
    `commit refs/heads/main\ncommitter b <b@b> 1700000000 +0000\ndata ${message.length}\n${message}`
  );
  const inline = (path, content) =>
    `M 100644 inline ${path}\ndata ${Buffer.byteLength(content)}\n${content}\n`;
  for (let i = 0; i < files; i++) {
    const path = `d${String(Math.floor(i / 1000)).padStart(4, '0')}/f${String(i).padStart(7, '0')}.txt`;
    await write(inline(path, `${i} ${text}\n`));
  }
  await write(inline('README.md', 'bench\n'));
  importer.stdin.end();
  const [code] = await ended;
  if (code !== 0) throw new Error(`git fast-import exited with ${code}`);
  return dir;
}

/** An empty commit on top of the source's HEAD (the work tree is empty: never `git commit`). */
function emptyCommit(dir, message) {
  const commit = git(dir, 'commit-tree', 'HEAD^{tree}', '-p', 'HEAD', '-m', message).toString().trim();
  git(dir, 'update-ref', 'HEAD', commit);
}

const PROMPT = [
  '@sim run date +%s%3N',
  '@sim run echo a > added.txt && echo b >> README.md && echo c > d0000/f0000000.txt'
].join('\n');

const du = path => Number(execFileSync('du', ['-s', '-B1', path], { encoding: 'utf8' }).split('\t')[0]);

/** Starts an executor of one workspace kind on `source`; answers what a run needs of it. */
async function start(kind, source) {
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
  return { kind, dataDir, executor, key: createKey(dataDir), rows: [], together: [] };
}

/** Creates a run on one executor, waits for its end and answers its row. */
async function one(side, first) {
  const { kind, dataDir, executor, key } = side;
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
  const row = {
    first,
    toInProgressMs: Date.parse(run.started_at) - Date.parse(run.created_at),
    toAgentMs: clock - Date.parse(run.created_at),
    runMs: Date.parse(run.completed_at) - Date.parse(run.created_at),
    workspaceBytes: du(layer),
    gitDirBytes: du(join(dataDir, 'gitdirs', `${id}.git`))
  };
  return row;
}

/** Every kind on one source, interleaved: sample i runs the kinds in order, i + 1 in reverse. */
async function measure(source) {
  const sides = [];
  try {
    for (const kind of kinds) sides.push(await start(kind, source));
    for (let i = 0; i < firsts + runs; i++) {
      const first = i < firsts;
      if (first) emptyCommit(source, `first ${i}`);
      for (const side of i % 2 === 0 ? sides : [...sides].reverse()) {
        execFileSync('sync');
        side.rows.push(await one(side, first));
      }
    }
    // --at-once runs created together (as many workers), --rounds times per kind, kinds alternating.
    for (let round = 0; round < rounds; round++)
      for (const side of round % 2 === 0 ? sides : [...sides].reverse())
        side.together.push(...(await Promise.all(Array.from({ length: atOnce }, () => one(side, false)))));
    for (const side of sides)
      side.sharedCheckoutBytes =
        side.kind === 'overlay'
          ? readdirSync(join(side.dataDir, 'checkouts')).map(n => du(join(side.dataDir, 'checkouts', n)))
          : [];
    return sides;
  } finally {
    for (const side of sides) {
      await side.executor.stop();
      leftovers.push(join(side.dataDir, '..'));
    }
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
/** What the benchmark made, deleted once every size is measured (see the head of this file). */
const leftovers = [];
for (const files of sizes) {
  const source = await repository(files);
  try {
    for (const { kind, rows, together, sharedCheckoutBytes } of await measure(source)) {
      const later = rows.filter(r => !r.first);
      const first = rows.filter(r => r.first);
      const summary = {
        files,
        kind,
        first: { toInProgressMs: stat(first, 'toInProgressMs'), toAgentMs: stat(first, 'toAgentMs') },
        later: {
          toInProgressMs: stat(later, 'toInProgressMs'),
          toAgentMs: stat(later, 'toAgentMs'),
          runMs: stat(later, 'runMs')
        },
        workspaceBytes: median(later.map(r => r.workspaceBytes)),
        gitDirBytes: median(later.map(r => r.gitDirBytes)),
        atOnce: { runs: atOnce, toAgentMs: stat(together, 'toAgentMs'), runMs: stat(together, 'runMs') },
        sharedCheckoutBytes,
        rows,
        together
      };
      results.push(summary);
      console.log(
        `${files} files, ${kind}: first → agent p50 ${summary.first.toAgentMs.p50} / p95 ${summary.first.toAgentMs.p95} ms; later → INPROGRESS p50 ${summary.later.toInProgressMs.p50} / p95 ${summary.later.toInProgressMs.p95} ms, → agent p50 ${summary.later.toAgentMs.p50} / p95 ${summary.later.toAgentMs.p95} ms, → SUCCEEDED p50 ${summary.later.runMs.p50} / p95 ${summary.later.runMs.p95} ms; workspace ${summary.workspaceBytes} B, private git dir ${summary.gitDirBytes} B; ${atOnce} at once → agent p50 ${summary.atOnce.toAgentMs.p50} / p95 ${summary.atOnce.toAgentMs.p95} ms`
      );
    }
  } finally {
    leftovers.push(source);
  }
}
if (!values['keep-checkouts']) for (const dir of leftovers) rmSync(dir, { recursive: true, force: true });
else {
  keepTempDirs();
  console.log(`kept: ${leftovers.join(' ')}`);
}
saveResult('workspaces', {
  command: `node bench/workspaces.mjs --sizes ${sizes.join(',')} --runs ${runs} --firsts ${firsts} --file-bytes ${fileBytes} --kinds ${kinds.join(',')} --at-once ${atOnce} --rounds ${rounds}${values['keep-checkouts'] ? ' --keep-checkouts' : ''}`,
  results
});
