// Shared pieces of the benchmarks: the bundled executor as a child process, keys, a counting
// proxy, percentiles and result files (with the machine's state, from method.mjs). Everything
// talks to 127.0.0.1 only.

import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { request as httpRequest, createServer } from 'node:http';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { machineState } from './method.mjs';

export const ROOT = resolve(import.meta.dirname, '..');
export const EXECUTOR = join(ROOT, 'dist/executor/index.js');
export const ACTION = join(ROOT, 'dist/index.js');

/** Folders the benchmark made: removed when its process exits (unmounting what a run left first). */
const made = [];
let keep = false;
/** Leaves the benchmark's folders in place at exit (for a look at them afterwards). */
export function keepTempDirs() {
  keep = true;
}
process.once('exit', () => {
  for (const dir of keep ? [] : made) {
    const mounts = readFileSync('/proc/self/mountinfo', 'utf8')
      .split('\n')
      .map(line => line.split(' ')[4])
      .filter(path => path && path.startsWith(`${dir}/`))
      .sort((a, b) => b.length - a.length);
    for (const path of mounts) spawnSync('umount', ['-l', path], { stdio: 'ignore' });
    spawnSync('rm', ['-rf', '--one-file-system', '--', dir], { stdio: 'ignore' });
  }
});

/** CPU time (user + system, ms) a process has used so far, from /proc (10 ms steps at 100 ticks a second). */
export function cpuMs(pid) {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  // Fields after the command name (which may hold spaces, inside parentheses): utime is the 14th, stime the 15th.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  const ticks = Number(fields[11]) + Number(fields[12]);
  return (ticks * 1000) / CLOCK_TICKS;
}
const CLOCK_TICKS = (() => {
  try {
    return Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;
  } catch {
    return 100;
  }
})();

export function tempDir(prefix = 'agent-run-bench-') {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  made.push(dir);
  return dir;
}

/** Starts the bundled executor (`args` are more serve options); resolves with {url, child, dataDir, stop()}. */
export function startExecutor({ dataDir = join(tempDir(), 'data'), config, env = {}, args: more = [] } = {}) {
  mkdirSync(dataDir, { recursive: true });
  const args = [EXECUTOR, 'serve', '--port', '0', '--data-dir', dataDir, ...more];
  if (config) {
    const file = join(dirname(dataDir), 'agent-executor.yaml');
    writeFileSync(file, config);
    args.push('--config', file);
  }
  const child = spawn(process.execPath, args, {
    cwd: ROOT,
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, ...env }
  });
  let stderr = '';
  child.stderr.on('data', chunk => (stderr = (stderr + chunk).slice(-20000)));
  return new Promise((resolveStart, reject) => {
    let out = '';
    child.stdout.on('data', chunk => {
      out += chunk;
      const match = /listening on (http:\/\/\S+)/.exec(out);
      if (match) {
        resolveStart({
          url: match[1],
          child,
          dataDir,
          stderr: () => stderr,
          stop: () =>
            new Promise(done => {
              if (child.exitCode !== null) return done();
              child.once('exit', done);
              child.kill('SIGTERM');
            })
        });
      }
    });
    child.once('exit', code => reject(new Error(`executor exited with ${code}: ${stderr}`)));
  });
}

export function createKey(dataDir, team = 'default', store = undefined) {
  const out = execFileSync(
    process.execPath,
    [
      EXECUTOR,
      ...['keys', 'create', '--kind', 'agent', '--name', 'bench', '--team', team, '--data-dir', dataDir],
      ...(store ? ['--store', store] : [])
    ],
    { cwd: ROOT }
  );
  return out.toString().trim().split('\n').at(-1);
}

/**
 * A proxy in front of `target` that counts requests and can strip headers (to play a server that
 * ignores Prefer: wait). `onRequest` sees each request's arrival time.
 */
export function countingProxy(target, { strip = [], onRequest } = {}) {
  const upstream = new URL(target);
  const stats = { requests: 0, first: undefined };
  const server = createServer((req, res) => {
    stats.requests++;
    stats.first ??= performance.timeOrigin + performance.now();
    onRequest?.(req);
    const headers = { ...req.headers };
    for (const name of strip) delete headers[name];
    const forward = httpRequest(
      { host: upstream.hostname, port: upstream.port, path: req.url, method: req.method, headers },
      answer => {
        res.writeHead(answer.statusCode, answer.headers);
        answer.pipe(res);
      }
    );
    forward.on('error', () => res.destroy());
    req.pipe(forward);
  });
  return new Promise(resolveProxy =>
    server.listen(0, '127.0.0.1', () =>
      resolveProxy({
        url: `http://127.0.0.1:${server.address().port}`,
        stats,
        close: () => new Promise(done => server.close(done))
      })
    )
  );
}

/** The variables and files the GitHub runner gives `node dist/index.js`, with these inputs. */
export function actionEnv(inputs) {
  // Removed at exit with the benchmark's other folders; the action's transcript and patch files go
  // there too (RUNNER_TEMP), not into the machine's temp dir.
  const dir = tempDir('bench-action-');
  const env = { PATH: process.env.PATH, HOME: dir, RUNNER_TEMP: dir };
  for (const [name, file] of [
    ['GITHUB_OUTPUT', 'out'],
    ['GITHUB_STATE', 'state'],
    ['GITHUB_STEP_SUMMARY', 'summary']
  ]) {
    env[name] = join(dir, file);
    writeFileSync(env[name], '');
  }
  for (const [name, value] of Object.entries(inputs)) env[`INPUT_${name.toUpperCase()}`] = value;
  return env;
}

export function percentile(values, p) {
  if (values.length === 0) return NaN;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))];
}

export function median(values) {
  return percentile(values, 50);
}

/** The machine's state when this benchmark's process started (before it measured anything). */
const BEFORE = machineState();

/**
 * Writes `bench/results/<name>.json` (or into $BENCH_OUT_DIR, where `npm run bench:all` collects
 * them): the figures with their command, and the machine's state before and after.
 */
export function saveResult(name, data) {
  const dir = process.env.BENCH_OUT_DIR || join(ROOT, 'bench/results');
  mkdirSync(dir, { recursive: true });
  const file = join(dir, `${name}.json`);
  const result = { name, ...data, machine: { before: BEFORE, after: machineState() } };
  writeFileSync(file, `${JSON.stringify(result, null, 2)}\n`);
  console.log(`wrote ${file}`);
  return result;
}

export const sleep = ms => new Promise(resolveSleep => setTimeout(resolveSleep, ms));

export async function api(url, key, path, init = {}) {
  const response = await fetch(url + path, {
    ...init,
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', ...(init.headers ?? {}) }
  });
  const text = await response.text();
  return { status: response.status, headers: response.headers, body: text ? JSON.parse(text) : undefined };
}
