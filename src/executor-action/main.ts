// The `executor` helper action: starts the bundled executor in the background on the runner,
// waits until it is ready, creates a key, and outputs base-url and api-key (masked). Its post step
// stops the executor. No install step: the bundle runs on the runner's own Node 24.

import * as core from '@actions/core';
import { execFileSync, spawn } from 'node:child_process';
import { closeSync, existsSync, mkdirSync, openSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { locateInWorkspace, readWorkspaceFile, workspaceOf } from '../common/workspace-file.js';
import { ensureBubblewrap } from './bubblewrap.js';
import { oidcRuleFor } from './oidc-rule.js';

const EXECUTOR = resolve(dirname(fileURLToPath(import.meta.url)), '..', 'executor', 'index.js');

export async function run(): Promise<void> {
  if (core.getState('isPost') === 'true') return stop();
  core.saveState('isPost', 'true');
  try {
    await start();
  } catch (error) {
    core.setFailed((error as Error).message);
  }
}

async function start(): Promise<void> {
  const dataDir = resolve(
    core.getInput('data-dir') || join(process.env.RUNNER_TEMP ?? process.cwd(), 'agent-executor')
  );
  const config = core.getInput('config');
  const port = core.getInput('port') || '0';
  const kind = core.getInput('key-kind') || 'agent';
  const team = core.getInput('team') || 'default';
  const readyTimeoutMs = Number(core.getInput('ready-timeout-seconds') || '30') * 1000;
  // The store reaches the executor by its environment, never its command line (which other users of
  // the machine can read), and its password is masked in case anything prints it.
  const store = core.getInput('store');
  if (store) {
    core.setSecret(store);
    try {
      const password = decodeURIComponent(new URL(store).password);
      if (password) core.setSecret(password);
    } catch {
      // not a URL: a path, nothing to hide
    }
  }
  const env = store ? { ...process.env, AGENT_EXECUTOR_STORE: store } : process.env;
  if (!/^\d+$/.test(port))
    throw new Error(`port ${JSON.stringify(port)}: expected a port number, or 0 for a free one`);
  if (kind !== 'agent' && kind !== 'personal')
    throw new Error(`key-kind ${JSON.stringify(kind)}: expected agent or personal`);
  // The config names a file of the checkout, which may be a stranger's: the same rule as the main
  // action's prompt-file (inside the workspace, no symbolic link on the way, not under .git/).
  const configPath = config ? checkedConfig(config) : undefined;
  const printRule = (core.getInput('print-oidc-rule') || 'false').toLowerCase();
  if (printRule !== 'true' && printRule !== 'false')
    throw new Error(
      `print-oidc-rule ${JSON.stringify(core.getInput('print-oidc-rule'))}: expected true or false`
    );
  if (!(readyTimeoutMs > 0))
    throw new Error(
      `ready-timeout-seconds ${JSON.stringify(core.getInput('ready-timeout-seconds'))}: expected a number of seconds`
    );

  ensureBubblewrap();
  // The executor's own modes (it keeps its data dir 0700): made so here, it has nothing to tighten.
  mkdirSync(dataDir, { recursive: true, mode: 0o700 });
  const log = join(dataDir, 'executor.log');
  // Only what this start writes counts: an earlier executor may have logged to the same file.
  const offset = existsSync(log) ? statSync(log).size : 0;
  const out = openSync(log, 'a', 0o600);
  const common = ['--data-dir', dataDir, ...(configPath ? ['--config', configPath] : [])];
  const child = spawn(process.execPath, [EXECUTOR, 'serve', '--port', port, ...common], {
    detached: true,
    env,
    stdio: ['ignore', out, out]
  });
  closeSync(out);
  child.unref();
  core.saveState('pid', String(child.pid));
  core.saveState('log', log);

  const url = await waitForListening(log, offset, child.pid!, readyTimeoutMs);
  await waitForReady(url, readyTimeoutMs);
  const created = execFileSync(
    process.execPath,
    [EXECUTOR, 'keys', 'create', '--kind', kind, '--name', 'github-actions', '--team', team, ...common],
    { env }
  );
  const key = created.toString().trim().split('\n').at(-1)!;
  core.setSecret(key);
  core.setOutput('base-url', url);
  core.setOutput('api-key', key);
  core.setOutput('log-file', log);
  core.info(`Executor ready at ${url} (pid ${child.pid}, data dir ${dataDir}, log ${log}).`);
  if (printRule === 'true') {
    const rule = oidcRuleFor(process.env, core.getInput('oidc-audience') || new URL(url).origin, team, kind);
    core.setOutput('oidc-rule', rule);
    core.info(`The auth.oidc rule that admits this repository's workflows on this ref:\n${rule.trimEnd()}`);
  }
}

async function waitForListening(
  log: string,
  offset: number,
  pid: number,
  timeoutMs: number
): Promise<string> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    const text = readFileSync(log).subarray(offset).toString('utf8');
    const match = /listening on (http:\/\/\S+)/.exec(text);
    if (match) return match[1]!;
    try {
      process.kill(pid, 0);
    } catch {
      throw new Error(
        `the executor exited before it was ready:\n${text.trim().split('\n').slice(-15).join('\n')}`
      );
    }
    await new Promise(resolveWait => setTimeout(resolveWait, 100));
  }
  throw new Error(`the executor did not start within ${timeoutMs / 1000} s; see ${log}`);
}

async function waitForReady(url: string, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    const response = await fetch(`${url}/readyz`).catch(() => undefined);
    if (response?.ok) return;
    await new Promise(resolveWait => setTimeout(resolveWait, 100));
  }
  throw new Error(`the executor at ${url} was not ready within ${timeoutMs / 1000} s`);
}

async function stop(): Promise<void> {
  const pid = Number(core.getState('pid'));
  if (!pid) return;
  try {
    process.kill(pid, 'SIGTERM');
  } catch {
    core.info(`The executor (pid ${pid}) had already stopped.`);
    return;
  }
  for (let i = 0; i < 100; i++) {
    try {
      process.kill(pid, 0);
    } catch {
      core.info(`Stopped the executor (pid ${pid}); its log is ${core.getState('log')}.`);
      return;
    }
    await new Promise(resolveWait => setTimeout(resolveWait, 100));
  }
  process.kill(pid, 'SIGKILL');
  core.warning(`The executor (pid ${pid}) did not stop within 10 s of SIGTERM and was killed.`);
}

/** The config file's absolute path, once it is read under the workspace-file rule; else an error naming it. */
function checkedConfig(raw: string): string {
  const workspace = workspaceOf(process.env);
  try {
    const { path } = locateInWorkspace(raw, workspace);
    readWorkspaceFile(path, workspace);
    return path;
  } catch (error) {
    throw new Error(`config ${JSON.stringify(raw)}: ${(error as Error).message}`);
  }
}
