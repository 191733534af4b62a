// npm run demo: starts the bundled executor on a free port, creates a key, runs the bundled action
// against it exactly as the GitHub runner would, prints the action's outputs and the run's full
// transcript, and stops (or, with --keep, keeps serving so the session link opens, until Ctrl-C).
// The files the action writes (patch-file, transcript-file) go to a RUNNER_TEMP of the demo's own,
// removed at the end; with --keep they stay, and the demo says where.
//
//   npm run demo                      the sample prompt (succeeds)
//   npm run demo -- "@sim fail nope"  your own prompt (this one fails the job)
//   npm run demo -- --keep            keep the executor running afterwards; Ctrl-C stops it

import { execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { transcriptLines } from './transcript-text.mjs';

const root = resolve(import.meta.dirname, '..');
const work = mkdtempSync(join(tmpdir(), 'agent-run-demo-'));
const dataDir = join(work, 'data');
const runnerTemp = mkdtempSync(join(tmpdir(), 'agent-run-demo-files-'));
const executorEntry = join(root, 'dist/executor/index.js');
const args = process.argv.slice(2);
const keep = args.includes('--keep');
const prompt =
  args.find(arg => arg !== '--keep') ??
  [
    'Add a NOTES.md that says the demo ran.',
    '@sim say Looking at the repository…',
    '@sim run git log --oneline -1',
    '@sim write NOTES.md The demo ran.\\n',
    '@sim sleep 1',
    '@sim say Done: NOTES.md written.'
  ].join('\n');

const tty = process.stdout.isTTY;
const dim = text => (tty ? `\x1b[2m${text}\x1b[0m` : text);

function log(line) {
  console.log(`${dim('[demo]')} ${line}`);
}

function startExecutor() {
  const child = spawn(process.execPath, [executorEntry, 'serve', '--port', '0', '--data-dir', dataDir], {
    cwd: root,
    stdio: ['ignore', 'pipe', 'pipe']
  });
  let stderr = '';
  child.stderr.on('data', chunk => (stderr += chunk));
  return new Promise((resolveUrl, reject) => {
    let stdout = '';
    child.stdout.on('data', chunk => {
      stdout += chunk;
      const match = /listening on (http:\/\/\S+)/.exec(stdout);
      if (match) resolveUrl({ child, url: match[1] });
    });
    child.on('exit', code => reject(new Error(`the executor exited with ${code}:\n${stderr}`)));
  });
}

function parseCommandFile(text) {
  const values = {};
  const lines = text.split('\n');
  for (let i = 0; i < lines.length; i++) {
    const match = /^([^<]+)<<(.+)$/.exec(lines[i]);
    if (!match) continue;
    const value = [];
    for (i++; i < lines.length && lines[i] !== match[2]; i++) value.push(lines[i]);
    values[match[1]] = value.join('\n');
  }
  return values;
}

/**
 * A line of the action's log as `agent-run action` shows it: workflow commands rendered the way the
 * runner shows them (a group's title, an annotation's kind and text), the runner's own ones hidden.
 */
function workflowLine(line) {
  const command = /^::([\w-]+)(?: [^:]*)?::(.*)$/.exec(line);
  if (!command) return line === '' ? undefined : line;
  const text = command[2].replace(/%0D/g, '\r').replace(/%0A/g, '\n').replace(/%25/g, '%');
  switch (command[1]) {
    case 'group':
      return `▸ ${text}`;
    case 'error':
      return `Error: ${text}`;
    case 'warning':
      return `Warning: ${text}`;
    case 'notice':
      return `Notice: ${text}`;
    case 'endgroup':
    case 'add-mask':
    case 'debug':
    case 'save-state':
    case 'set-output':
    case 'stop-commands':
      return undefined;
    default:
      return text;
  }
}

async function runAction(url, key) {
  const files = { GITHUB_OUTPUT: 'output', GITHUB_STATE: 'state', GITHUB_STEP_SUMMARY: 'summary.md' };
  const env = {
    PATH: process.env.PATH,
    HOME: process.env.HOME ?? work,
    GITHUB_ACTIONS: 'true',
    GITHUB_WORKSPACE: root,
    RUNNER_TEMP: runnerTemp
  };
  for (const [name, file] of Object.entries(files)) {
    env[name] = join(work, file);
    writeFileSync(env[name], '');
  }
  Object.assign(env, {
    INPUT_PROMPT: prompt,
    'INPUT_ENVIRONMENT-ID': 'local',
    'INPUT_API-KEY': key,
    'INPUT_BASE-URL': url,
    INPUT_TITLE: 'agent-run demo',
    INPUT_TIMEOUT: '5m'
  });
  const child = spawn(process.execPath, [join(root, 'dist/index.js')], {
    env,
    cwd: root,
    stdio: ['ignore', 'pipe', 'pipe']
  });
  // The runner hides masked values and renders workflow commands: shown here as `agent-run action`
  // shows them, line by line.
  let pending = '';
  const show = chunk => {
    const lines = (pending + String(chunk)).split('\n');
    pending = lines.pop();
    for (const line of lines) {
      const shown = workflowLine(line.replaceAll(key, '***'));
      if (shown !== undefined) console.log(`  | ${shown.replace(/\n/g, '\n  | ')}`);
    }
  };
  child.stdout.on('data', show);
  child.stderr.on('data', show);
  const code = await new Promise(resolveCode => child.on('close', resolveCode));
  if (pending !== '') show('\n');
  return { code, outputs: parseCommandFile(readFileSync(env.GITHUB_OUTPUT, 'utf8')) };
}

let executor;
try {
  log('starting the executor (dist/executor/index.js) on a free port…');
  executor = await startExecutor();
  log(`executor ready at ${executor.url}`);
  const created = execFileSync(
    process.execPath,
    [executorEntry, 'keys', 'create', '--kind', 'personal', '--name', 'demo', '--data-dir', dataDir],
    { cwd: root }
  );
  const key = created.toString().trim().split('\n').at(-1);
  log('created a personal API key for team "default"');
  log('running the action (dist/index.js) as the GitHub runner would:');
  const { code, outputs } = await runAction(executor.url, key);
  log(`action exited with code ${code}; its outputs:`);
  for (const name of [
    'run-id',
    'state',
    'conclusion',
    'session-link',
    'status-message',
    'error-code',
    'duration-seconds',
    'result',
    'patch-file',
    'transcript-file'
  ]) {
    const value = (outputs[name] ?? '').split('\n');
    console.log(
      `  ${name.padEnd(17)} ${value[0]}${value.length > 1 ? ` (… ${value.length - 1} more lines)` : ''}`
    );
  }
  if (outputs['run-id']) {
    const response = await fetch(`${executor.url}/api/v1/agent/runs/${outputs['run-id']}/transcript`, {
      headers: { authorization: `Bearer ${key}` }
    });
    const { events } = await response.json();
    log(`the run's transcript (also on the session page while the executor runs):`);
    for (const line of transcriptLines(events)) console.log(line);
  }
  process.exitCode = code ?? 1;
  if (keep && outputs['session-link']) {
    log(`the executor keeps serving: open ${outputs['session-link']}`);
    log('press Ctrl-C to stop it');
    await new Promise(resolveStop => {
      process.once('SIGINT', resolveStop);
      process.once('SIGTERM', resolveStop);
      executor.child.once('exit', resolveStop);
    });
  } else if (!keep) {
    log('the session link works only while the executor runs: `npm run demo -- --keep` keeps it serving');
  }
} catch (error) {
  console.error(`demo failed: ${error.message}`);
  process.exitCode = 1;
} finally {
  if (executor) {
    executor.child.removeAllListeners('exit');
    if (executor.child.exitCode === null && executor.child.signalCode === null) {
      const exited = new Promise(resolveExit => executor.child.on('exit', resolveExit));
      executor.child.kill('SIGTERM');
      await exited;
    }
    log('executor stopped');
  }
  rmSync(work, { recursive: true, force: true });
  if (keep) log(`the action's files (patch-file, transcript-file) are kept in ${runnerTemp}`);
  else rmSync(runnerTemp, { recursive: true, force: true });
}
