// `npm test`: the independent checks side by side — typecheck, lint, the check that dist/ equals a
// fresh build, and every jest suite (SQLite and PostgreSQL projects in one parallel pool). Jest's
// output streams as it comes; the others are kept and each one's verdict is printed when it ends.
// Exits 1 when any failed, showing each failure's own output in full, the first failure first.
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

// Not `npm run --silent`: it would reach the tests as npm_config_loglevel=silent, and silence the
// npm commands they run and read.
const CHECKS = [
  { name: 'typecheck', args: ['run', 'typecheck'] },
  { name: 'lint', args: ['run', 'lint'] },
  { name: 'check-dist', args: ['run', 'check-dist'] },
  { name: 'jest', args: ['run', 'jest', '--', ...process.argv.slice(2)], live: true }
];

const npm = process.env.npm_execpath;
// Jest's cost (its slowest files and total: scripts/slowest-reporter.mjs) is printed last.
const costDir = mkdtempSync(join(tmpdir(), 'agent-run-test-cost-'));
const costFile = join(costDir, 'cost.txt');
const started = Date.now();
const seconds = since => ((Date.now() - since) / 1000).toFixed(1);

process.env.AGENT_RUN_TEST_COST_FILE = costFile;

function run(check) {
  return new Promise(resolve => {
    const begun = Date.now();
    // npm's own CLI on the Node running this script (npm test runs scripts on the project's Node 24).
    const child = npm
      ? spawn(process.execPath, [npm, ...check.args], { stdio: ['ignore', 'pipe', 'pipe'] })
      : spawn('npm', check.args, { stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    const take = stream => chunk => {
      if (check.live) stream.write(chunk);
      else output += chunk;
    };
    child.stdout.on('data', take(process.stdout));
    child.stderr.on('data', take(process.stderr));
    child.on('error', error => {
      output += `${check.name} did not start: ${error.message}\n`;
    });
    child.on('close', (code, signal) => {
      const passed = code === 0;
      const verdict = passed ? 'passed' : `FAILED (${signal ?? `exit code ${code}`})`;
      process.stderr.write(`[npm test] ${check.name}: ${verdict} in ${seconds(begun)} s\n`);
      resolve({ ...check, passed, output, ended: Date.now(), took: seconds(begun) });
    });
  });
}

const results = await Promise.all(CHECKS.map(run));
let cost = '';
try {
  cost = readFileSync(costFile, 'utf8');
} catch {
  // jest ended before its reporter wrote it
}
rmSync(costDir, { recursive: true, force: true });
process.stderr.write(cost);
const failed = results.filter(result => !result.passed).sort((a, b) => a.ended - b.ended);
process.stderr.write(
  `\n[npm test] ${results.map(result => `${result.name} ${result.passed ? 'passed' : 'FAILED'} (${result.took} s)`).join(', ')}; ` +
    `${seconds(started)} s in all\n`
);
if (failed.length > 0) {
  // Jest's output is above already; the others', in the order they failed.
  for (const result of failed.filter(each => !each.live))
    process.stderr.write(`\n[npm test] ${result.name}'s output:\n${result.output}\n`);
  process.stderr.write(`[npm test] failed: ${failed.map(result => result.name).join(', ')}\n`);
  process.exit(1);
}
