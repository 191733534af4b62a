// The test suite's own cost (issue 48): `npm ci && npm test` in a fresh clone of HEAD, as CI runs
// it, timed as a whole and per check, with jest's test count and slowest files, `times` runs one
// after another. With --load N, N busy processes run beside it the whole time (a loaded machine: the
// suite must pass there too, only slower). Goal: a quiet 2-core machine runs it in 8 minutes.
//
//   node bench/tests.mjs [--times 3] [--load 1]
//
// The clone is made under a mode-700 folder (as CI's and a cautious user's would be) and removed
// afterwards with everything it made.

import { execFileSync, spawn } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ROOT, saveResult } from './lib.mjs';

const option = (name, fallback) => {
  const at = process.argv.indexOf(`--${name}`);
  if (at === -1) return fallback;
  const value = process.argv[at + 1];
  if (!/^\d+$/.test(value ?? ''))
    throw new Error(`--${name} ${JSON.stringify(value)}: expected a whole number such as ${fallback}`);
  return Number(value);
};
const TIMES = option('times', 1);
const LOAD = option('load', 0);

const uptime = () => execFileSync('uptime', { encoding: 'utf8' }).trim();

/** Runs `command` in `cwd` as CI does (CI=true); resolves with its exit code and output. */
function run(command, cwd) {
  return new Promise(resolve => {
    const child = spawn('/bin/sh', ['-c', command], {
      cwd,
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...process.env, CI: 'true' }
    });
    let output = '';
    child.stdout.on('data', chunk => (output += chunk));
    child.stderr.on('data', chunk => (output += chunk));
    child.on('close', code => resolve({ code, output }));
  });
}

const busy = Array.from({ length: LOAD }, () =>
  spawn(process.execPath, ['-e', 'for (;;) {}'], { stdio: 'ignore' })
);
const runs = [];
try {
  for (let i = 0; i < TIMES; i++) {
    const home = mkdtempSync(join(tmpdir(), 'agent-run-bench-tests-'));
    try {
      const commit = execFileSync('git', ['-C', ROOT, 'rev-parse', 'HEAD'], { encoding: 'utf8' }).trim();
      execFileSync('git', ['clone', '-q', ROOT, join(home, 'repo')]);
      const cwd = join(home, 'repo');
      const ci = await run('npm ci --no-audit --no-fund', cwd);
      if (ci.code !== 0) throw new Error(`npm ci exited with ${ci.code}:\n${ci.output.slice(-3000)}`);
      const before = uptime();
      const started = Date.now();
      const test = await run('npm test', cwd);
      const seconds = (Date.now() - started) / 1000;
      const checks = Object.fromEntries(
        [...test.output.matchAll(/^\[npm test\] ([\w-]+): (passed|FAILED[^\n]*) in ([\d.]+) s$/gm)].map(m => [
          m[1],
          { verdict: m[2], seconds: Number(m[3]) }
        ])
      );
      const total = /^jest: (\d+) tests in (\d+) files, ([\d.]+) s wall time/m.exec(test.output);
      const slowest = test.output
        .slice(test.output.indexOf('The 15 slowest test files:'))
        .split('\n')
        .slice(1, 16);
      const failed = [...new Set(test.output.match(/^FAIL .*$/gm) ?? [])];
      // What each failed test said (jest's "●" blocks, 40 lines each), so a loaded run's failure can be read.
      const lines = test.output.split('\n');
      const failures = lines
        .flatMap((line, at) => (/^\s+● /.test(line) ? [lines.slice(at, at + 40).join('\n')] : []))
        .slice(0, 10);
      const result = {
        commit,
        load: LOAD,
        exitCode: test.code,
        seconds,
        checks,
        jest: total ? { tests: Number(total[1]), files: Number(total[2]), seconds: Number(total[3]) } : null,
        slowest: slowest.map(line => line.trim()),
        failed,
        failures,
        uptime: { before, after: uptime() }
      };
      runs.push(result);
      console.log(
        `run ${i + 1}/${TIMES}: exit ${test.code}, ${seconds.toFixed(0)} s, ${total?.[1] ?? '?'} tests` +
          `${failed.length ? `, failed: ${failed.join('; ')}` : ''} (${result.uptime.after})`
      );
    } finally {
      execFileSync('rm', ['-rf', '--one-file-system', home]);
    }
  }
} finally {
  for (const child of busy) child.kill('SIGKILL');
}
saveResult(LOAD > 0 ? 'tests-loaded' : 'tests', {
  command: `node bench/tests.mjs --times ${TIMES} --load ${LOAD}`,
  goal: 'npm test within 480 s on a quiet 2-core machine, every file within 60 s',
  runs
});
