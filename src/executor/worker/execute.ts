// Executing one claimed run, start to end: its turns (steps.ts runs each up to its agent's end:
// workspace, sandbox, quota watch, setup, agent), then the diff of what it changed, its outputs and
// plan, and publishing it (publish/publish.ts) when the environment says so. The claim loop and
// the lease belong to pool.ts; this module only gathers what happened to the run, and
// runs/outcomes.ts decides its outcome, which the pool writes.

import { publishChanges } from '../publish/publish.js';
import type { Workspace } from '../workspace/workspace.js';
import type { EnvironmentConfig } from '../config/config.js';
import type { StoredRun } from '../store/types.js';
import {
  type AgentOutcome,
  type RunHappenings,
  type RunOutcome,
  type StopReason,
  decideOutcome
} from '../runs/outcomes.js';
import { collectOutputs } from './run-outputs.js';
import { keepPlan } from './plan-artifact.js';
import { firstTurn, followingTurn, recordTurn, recordsTurn } from './turns.js';
import { type ExecuteOptions, type Ran, overQuota, runSteps } from './steps.js';

export type { ExecuteOptions, Recorder } from './steps.js';
export type { StopReason };

/** Whether the run's create request left publishing on (`config.publish: false` turns it off). */
function publishes(run: StoredRun): boolean {
  try {
    return (JSON.parse(run.config) as { publish?: unknown }).publish !== false;
  } catch {
    return true;
  }
}

/**
 * Runs `run` in `environment` until its agent ends or `controller` is aborted (cancel, lease lost,
 * shutdown; the time limit and the quota abort it from here), keeps its changes and outputs,
 * publishes them after a success, and returns its outcome as outcomes.ts decides it.
 */
export async function executeRun(options: ExecuteOptions): Promise<RunOutcome> {
  const { run, environment, config, controller, record, log } = options;
  const ran = await runTurns(options);
  const { ended, workspace, outputs, sandbox, quota, mode } = ran;
  await record
    .flush?.()
    .catch(error => log.warn({ err: error, run_id: run.run_id }, 'could not write the tail'));
  await checkQuotaAtEnd(options, ran);
  const happened: RunHappenings = {
    stop: controller.signal.aborted ? (controller.signal.reason as StopReason) : undefined,
    timeoutMs: environment.timeoutMs,
    quotaBytes: config.workspaces.quotaBytes,
    quotaWhy: quota?.why,
    ended,
    limit: sandbox?.exceeded()
  };
  await sandbox?.close();
  const changed = workspace ? await recordChanges(options, workspace, happened) : true;
  const readable = workspace !== undefined && happened.unreadable === undefined;
  if (outputs) {
    happened.outputs = await collectOutputs({
      stores: options.stores,
      run,
      outputs,
      workspace: workspace && readable ? { changed, patch: max => workspace.patch(max) } : undefined,
      maxPatchBytes: config.workspaces.maxPatchBytes,
      record,
      secrets: options.secrets
    }).catch(error => {
      log.warn({ err: error, run_id: run.run_id }, 'could not collect the outputs');
      return undefined;
    });
  }
  await keepPlanAndUsage(options, ran, happened);
  // A harness's HOME (its CLI session) stays with the workspace while the run can be continued;
  // the workspace sweep removes both (workspaces.continue_for).
  // A cancel (or a lost lease, a shutdown) that came while the changes and outputs were gathered
  // wins too: the run is no longer one to publish.
  if (controller.signal.aborted) happened.stop ??= controller.signal.reason as StopReason;
  const base = workspace?.base;
  const publishTo = publishTarget(options, happened, mode);
  if (publishTo && workspace && readable && base)
    happened.publish = await publish(options, publishTo, workspace, base);
  workspace?.release();
  return decideOutcome(happened).outcome;
}

/**
 * A run that wrote past the quota between two looks and ended is caught here (only a run that
 * started a process can have written: a simulated answer costs no measure). A count that fails
 * stops the run: the quota never fails open.
 */
async function checkQuotaAtEnd({ config, controller }: ExecuteOptions, ran: Ran): Promise<void> {
  const { measure, sandbox, quota } = ran;
  if (!measure || !sandbox?.started || controller.signal.aborted) return;
  const why = await measure().then(
    written => overQuota(written, config.workspaces),
    (error: Error) => `could not be counted: ${error.message}`
  );
  if (why) {
    if (why !== 'bytes' && quota) quota.why = why;
    controller.abort('quota' satisfies StopReason);
  }
}

/**
 * Records the run's changes (a `diff` event), read as the work tree through the run's private git
 * dir; answers whether any file changed. When even that fails (the run left files git refuses to
 * record, say), `happened.unreadable` says why, and nothing of the workspace is kept or published.
 */
async function recordChanges(
  { run, record, log }: ExecuteOptions,
  workspace: Workspace,
  happened: RunHappenings
): Promise<boolean> {
  try {
    // How the changes were found (`walked`) is the executor's business, not the transcript's.
    const { nested, walked: _walked, ...changes } = await workspace.diff();
    if (nested.length > 0) {
      const shown = nested.slice(0, 20).map(path => `${path}/`);
      const more = nested.length > shown.length ? ` and ${nested.length - shown.length} more` : '';
      await record('notice', {
        text: `nested repositories left out of the changes: ${shown.join(', ')}${more}`
      });
    }
    const changed = changes.files.length > 0;
    if (changed) await record('diff', changes);
    return changed;
  } catch (error) {
    happened.unreadable = (error as Error).message;
    log.warn({ err: error, run_id: run.run_id }, 'could not read the workspace');
    return true;
  }
}

/**
 * A plan-mode turn's final answer is its plan: a PLAN artifact whose content GET /agent/artifacts
 * returns. What the harness measured from the CLI's own stream outranks a file the agent could write.
 */
async function keepPlanAndUsage(
  { run, stores, log }: ExecuteOptions,
  { mode, usage }: Ran,
  happened: RunHappenings
): Promise<void> {
  if (mode === 'plan' && decideOutcome(happened).outcome.state === 'SUCCEEDED')
    await keepPlan(stores, run).catch(error =>
      log.warn({ err: error, run_id: run.run_id }, 'could not keep the plan')
    );
  if (usage)
    await stores.artifacts
      .setRequestUsage(run.run_id, JSON.stringify(usage))
      .catch(error => log.warn({ err: error, run_id: run.run_id }, 'could not store the usage'));
}

/**
 * Where the run's changes are published after a success only (a branch and a pull request): the
 * environment's `publish:`, unless the create request said `config.publish: false` (it may turn
 * publishing off, never choose where to); a plan turn changed nothing to publish.
 */
function publishTarget(
  { run, environment }: ExecuteOptions,
  happened: RunHappenings,
  mode: Ran['mode']
): EnvironmentConfig['publish'] {
  if (
    environment.publish &&
    decideOutcome(happened).outcome.state === 'SUCCEEDED' &&
    mode !== 'plan' &&
    publishes(run)
  )
    return environment.publish;
  return undefined;
}

/**
 * The run's turns: the first one of this claim, then, while the agent succeeds, each follow-up
 * that arrived during a turn as one more turn in the same workspace (turns.ts decides which). What
 * the last turn left is what the run reports (its answer, outputs; the changes since the start commit).
 */
async function runTurns(options: ExecuteOptions): Promise<Ran> {
  const { run, stores, record, controller } = options;
  let turn = await firstTurn(stores, run);
  for (;;) {
    // A turn that takes follow-ups is recorded (a plain first turn is not), after what the
    // transcript still holds back.
    if (recordsTurn(turn)) {
      await record.flush?.();
      await recordTurn(stores.transcript, run, turn);
    }
    const ran = { ...(await runSteps(options, turn)), mode: turn.mode };
    if (ran.ended.state !== 'SUCCEEDED' || controller.signal.aborted) return ran;
    const next = await followingTurn(stores.transcript, run, turn);
    if (!next) return ran;
    await ran.sandbox?.close();
    turn = next;
  }
}

/** Publishes the run's changes; answers the failure, if any. */
async function publish(
  { run, environment, stores, record, sessionLink }: ExecuteOptions,
  config: NonNullable<EnvironmentConfig['publish']>,
  workspace: Workspace,
  base: string
): Promise<AgentOutcome | undefined> {
  return publishChanges({
    run,
    config,
    workspace,
    source: environment.source,
    // Remembered from the workspace's making, never read back from the agent's .git.
    base,
    sessionLink: sessionLink?.({
      ...run,
      state: 'SUCCEEDED',
      started_at: run.started_at ?? run.created_at
    }),
    // One read of the transcript: the agent's answer, and what an earlier turn published.
    events: await stores.transcript.listEvents(run.run_id),
    artifacts: stores.artifacts,
    record
  });
}
