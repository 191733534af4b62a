// Executing one claimed run, start to end: its workspace, the environment's setup commands, the
// agent (looked up in the registry), the time limit and the disk quota watch, the diff of what it
// changed, and publishing it (workspace/publish.ts) when the environment says so. The claim loop and the lease belong to pool.ts; this module only turns a run into
// its outcome, which the pool writes.

import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { promisify } from 'node:util';
import type { FastifyBaseLogger } from 'fastify';
import { agentKindOf } from '../agents/index.js';
import type { AgentResult } from '../agents/types.js';
import type { EnvironmentConfig, ExecutorConfig } from '../config.js';
import type { RunStore, StoredRun } from '../store/types.js';
import { type RunSandbox, confineRun } from '../sandbox/index.js';
import type { Processes } from '../sandbox/spawn.js';
import { runUser } from '../sandbox/user.js';
import { publishChanges } from '../workspace/publish.js';
import { type Workspace, createWorkspace } from '../workspace/workspace.js';
import { type RunOutputs, collectOutputs, prepareOutputs } from './outputs.js';

/** Why a run's controller was aborted. */
export type StopReason = 'cancelled' | 'timeout' | 'shutdown' | 'lease_lost' | 'quota';

/**
 * Appends an event to the run's transcript (the pool retries it while the store is away); `flush`
 * writes what a bounded transcript still holds back (worker/transcript-budget.ts).
 */
export type Recorder = ((kind: string, data: Record<string, unknown>) => Promise<void>) & {
  flush?: () => Promise<void>;
};

const QUOTA_CHECK_MS = 2000;
const exec = promisify(execFile);

function describeBytes(bytes: number): string {
  return bytes >= 1024 ** 2 ? `${Math.round(bytes / 1024 ** 2)} MiB` : `${Math.round(bytes / 1024)} KiB`;
}

/** The outcome of a run its worker stopped. */
function stopped(
  reason: StopReason | undefined,
  environment: EnvironmentConfig,
  quotaBytes: number
): AgentResult {
  if (reason === 'timeout') {
    return {
      state: 'FAILED',
      error_code: 'timeout',
      status_message: `the run exceeded its time limit of ${Math.round(environment.timeoutMs / 1000)} s`
    };
  }
  if (reason === 'quota') {
    return {
      state: 'FAILED',
      error_code: 'workspace_quota_exceeded',
      status_message: `the workspace grew past its disk quota of ${describeBytes(quotaBytes)}`
    };
  }
  return {
    state: 'FAILED',
    error_code: 'executor_restarted',
    status_message: 'the executor shut down before the run finished'
  };
}

/**
 * What a run has written to disk: its workspace and its output folder (AGENT_RESULT_FILE's), both
 * on the data dir's disk and both under the one quota; one `du` for the two, as workspace.size()
 * counts (apparent sizes, links not followed).
 */
async function runBytes(workspace: Workspace, outputs: RunOutputs): Promise<number> {
  const dirs = [workspace.root, outputs.dir].filter(dir => existsSync(dir));
  const { stdout } = await exec('du', ['-s', '-c', '--apparent-size', '--block-size=1', ...dirs]);
  return Number(/^(\d+)\ttotal$/m.exec(stdout)?.[1] ?? 0);
}

/** Aborts `controller` with 'quota' once the run's files are over `quotaBytes`; returns the stopper. */
function watchQuota(
  measure: () => Promise<number>,
  quotaBytes: number,
  controller: AbortController,
  onError: (error: unknown) => void
): () => void {
  let measuring = false;
  const timer = setInterval(() => {
    if (measuring) return;
    measuring = true;
    measure()
      .then(bytes => {
        if (bytes > quotaBytes) controller.abort('quota' satisfies StopReason);
      })
      .catch(onError)
      .finally(() => (measuring = false));
  }, QUOTA_CHECK_MS);
  return () => clearInterval(timer);
}

/** The environment's setup commands, in order; the first that exits non-zero fails the run. */
async function setup(
  environment: EnvironmentConfig,
  processes: Processes,
  env: Record<string, string>,
  signal: AbortSignal,
  record: Recorder
): Promise<AgentResult> {
  for (const command of environment.setup) {
    if (signal.aborted) break;
    const result = await processes.shell(command, { env });
    await record('setup', {
      command,
      exit_code: result.exitCode,
      output: result.output,
      duration_ms: result.durationMs
    });
    if (result.exitCode !== 0) {
      return {
        state: 'FAILED',
        error_code: 'setup_failed',
        status_message: `setup command \`${command}\` exited with code ${result.exitCode}`
      };
    }
  }
  return { state: 'SUCCEEDED' };
}

/** Whether the run's create request left publishing on (`config.publish: false` turns it off). */
function publishes(run: StoredRun): boolean {
  try {
    return (JSON.parse(run.config) as { publish?: unknown }).publish !== false;
  } catch {
    return true;
  }
}

/** The variables the environment passes from the executor's own environment, by name. */
function passedVariables(environment: EnvironmentConfig): Record<string, string> {
  return Object.fromEntries(
    environment.env.filter(name => process.env[name] !== undefined).map(name => [name, process.env[name]!])
  );
}

/**
 * Runs `run` in `environment` until its agent ends or `controller` is aborted (cancel, lease lost,
 * shutdown; the time limit and the quota abort it from here), and returns its outcome.
 */
export async function executeRun(
  run: StoredRun,
  environment: EnvironmentConfig,
  config: ExecutorConfig,
  controller: AbortController,
  record: Recorder,
  log: FastifyBaseLogger,
  store: RunStore,
  sessionLink?: (run: StoredRun) => string | undefined
): Promise<AgentResult> {
  const timeout = setTimeout(() => controller.abort('timeout' satisfies StopReason), environment.timeoutMs);
  let stopWatch: (() => void) | undefined;
  let measure: (() => Promise<number>) | undefined;
  let result: AgentResult;
  let workspace: Workspace | undefined;
  let outputs: RunOutputs | undefined;
  let base: string | undefined;
  let sandbox: RunSandbox | undefined;
  try {
    workspace = await createWorkspace(environment, config.dataDir, run.run_id, config.workspaces.quotaBytes);
    outputs = prepareOutputs(config.dataDir, run.run_id);
    // Remembered from the workspace's making, never read back from the agent's .git.
    base = workspace.base;
    // A root executor's runs are an unprivileged host user, who owns what the run may write (given
    // before its first process).
    const user = environment.sandbox.enabled ? runUser(environment.sandbox.user) : undefined;
    const confined = await confineRun(
      {
        runId: run.run_id,
        sandbox: environment.sandbox,
        dataDir: config.dataDir,
        configFile: config.configFile,
        workspace: workspace.root,
        read: workspace.borrowed,
        write: [outputs.dir],
        user,
        own: [workspace.root, outputs.dir]
      },
      { signal: controller.signal, cwd: workspace.path }
    );
    sandbox = confined.sandbox;
    for (const message of confined.warnings) await record('warning', { message });
    const [measured, written] = [workspace, outputs];
    measure = () => runBytes(measured, written);
    stopWatch = watchQuota(measure, config.workspaces.quotaBytes, controller, error =>
      log.warn({ err: error, run_id: run.run_id }, 'could not measure a workspace')
    );
    const env = passedVariables(environment);
    result = await setup(environment, confined.processes, env, controller.signal, record);
    if (result.state === 'SUCCEEDED' && !controller.signal.aborted) {
      const agent = agentKindOf(environment.agent.kind);
      if (!agent) throw new Error(`agent kind ${environment.agent.kind} is not available in this executor`);
      result = await agent.run({
        runId: run.run_id,
        prompt: run.prompt,
        workspace: workspace.path,
        agent: environment.agent,
        env: { ...env, ...outputs.env },
        signal: controller.signal,
        record,
        processes: confined.processes
      });
    }
  } catch (error) {
    log.error({ err: error, run_id: run.run_id }, 'agent failed to run');
    // A sandbox that could not be made says why in its own outcome (a limit, a missing tool).
    result = (error as { outcome?: AgentResult }).outcome ?? {
      state: 'FAILED',
      error_code: 'agent_failed',
      status_message: `the agent could not run: ${(error as Error).message}`
    };
  } finally {
    clearTimeout(timeout);
    stopWatch?.();
  }
  await record
    .flush?.()
    .catch(error => log.warn({ err: error, run_id: run.run_id }, 'could not write the tail'));
  // A run that wrote past the quota between two looks and ended is caught here (only a run that
  // started a process can have written: a simulated answer costs no measure).
  if (measure && sandbox?.started && !controller.signal.aborted) {
    const bytes = await measure().catch(() => 0);
    if (bytes > config.workspaces.quotaBytes) controller.abort('quota' satisfies StopReason);
  }
  const reason = controller.signal.reason as StopReason | undefined;
  if (controller.signal.aborted && reason !== 'cancelled' && reason !== 'lease_lost') {
    result = stopped(reason, environment, config.workspaces.quotaBytes);
  }
  const limit = sandbox?.exceeded();
  if (limit) result = { state: 'FAILED', error_code: 'resource_limit_exceeded', status_message: limit };
  await sandbox?.close();
  // The work tree read through the run's private git dir. When even that fails (the run left files
  // git refuses to record, say), nothing of the workspace is kept or published.
  let readable = workspace !== undefined;
  let changed = true;
  if (workspace) {
    try {
      const { nested, ...changes } = await workspace.diff();
      if (nested.length > 0) {
        const shown = nested.slice(0, 20).map(path => `${path}/`);
        const more = nested.length > shown.length ? ` and ${nested.length - shown.length} more` : '';
        await record('notice', {
          text: `nested repositories left out of the changes: ${shown.join(', ')}${more}`
        });
      }
      changed = changes.files.length > 0;
      if (changed) await record('diff', changes);
    } catch (error) {
      readable = false;
      log.warn({ err: error, run_id: run.run_id }, 'could not read the workspace');
      if (result.state === 'SUCCEEDED')
        result = {
          state: 'FAILED',
          error_code: 'workspace_tampered',
          status_message: `the run's workspace could not be read safely, so no patch was kept and nothing was published: ${(error as Error).message}`
        };
    }
  }
  if (outputs) {
    const ws = workspace;
    const failure = await collectOutputs({
      store,
      run,
      outputs,
      workspace: ws && readable ? { changed, patch: () => ws.patch() } : undefined,
      maxPatchBytes: config.workspaces.maxPatchBytes,
      record
    }).catch(error => log.warn({ err: error, run_id: run.run_id }, 'could not collect the outputs'));
    if (failure && result.state === 'SUCCEEDED') result = failure;
  }
  // After the agent succeeded: its changes as a branch and a pull request, unless the create
  // request said `config.publish: false` (it may turn publishing off, never choose where to).
  if (
    environment.publish &&
    workspace &&
    readable &&
    base &&
    result.state === 'SUCCEEDED' &&
    publishes(run)
  ) {
    const events = await store.listEvents(run.run_id);
    const answer = events.findLast(event => event.kind === 'result')?.text;
    const failure = await publishChanges({
      run,
      config: environment.publish,
      workspace,
      source: environment.source,
      base,
      sessionLink: sessionLink?.({
        ...run,
        state: 'SUCCEEDED',
        started_at: run.started_at ?? run.created_at
      }),
      result: typeof answer === 'string' ? answer : undefined,
      store,
      record
    });
    if (failure) result = failure;
  }
  workspace?.release();
  return result;
}
