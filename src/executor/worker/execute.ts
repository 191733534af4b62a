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
import { beginTurn, firstTurn, followingTurn } from './turns.js';
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
  const { run, environment, config, controller, record, log, store } = options;
  const { ended, workspace, outputs, sandbox, measure, quota, usage, mode } = await runTurns(options);
  await record
    .flush?.()
    .catch(error => log.warn({ err: error, run_id: run.run_id }, 'could not write the tail'));
  // A run that wrote past the quota between two looks and ended is caught here (only a run that
  // started a process can have written: a simulated answer costs no measure).
  if (measure && sandbox?.started && !controller.signal.aborted) {
    // A count that fails stops the run: the quota never fails open.
    const why = await measure().then(
      written => overQuota(written, config.workspaces),
      (error: Error) => `could not be counted: ${error.message}`
    );
    if (why) {
      if (why !== 'bytes' && quota) quota.why = why;
      controller.abort('quota' satisfies StopReason);
    }
  }
  const happened: RunHappenings = {
    stop: controller.signal.aborted ? (controller.signal.reason as StopReason) : undefined,
    timeoutMs: environment.timeoutMs,
    quotaBytes: config.workspaces.quotaBytes,
    quotaWhy: quota?.why,
    ended,
    limit: sandbox?.exceeded()
  };
  await sandbox?.close();
  // The work tree read through the run's private git dir. When even that fails (the run left files
  // git refuses to record, say), nothing of the workspace is kept or published.
  let changed = true;
  if (workspace) {
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
      changed = changes.files.length > 0;
      if (changed) await record('diff', changes);
    } catch (error) {
      happened.unreadable = (error as Error).message;
      log.warn({ err: error, run_id: run.run_id }, 'could not read the workspace');
    }
  }
  const readable = workspace !== undefined && happened.unreadable === undefined;
  if (outputs) {
    happened.outputs = await collectOutputs({
      store,
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
  // A plan-mode turn's final answer is its plan: a PLAN artifact whose content GET /agent/artifacts returns.
  if (mode === 'plan' && decideOutcome(happened).outcome.state === 'SUCCEEDED')
    await keepPlan(store, run).catch(error =>
      log.warn({ err: error, run_id: run.run_id }, 'could not keep the plan')
    );
  // What the harness measured from the CLI's own stream outranks a file the agent could write.
  if (usage)
    await store
      .setRequestUsage(run.run_id, JSON.stringify(usage))
      .catch(error => log.warn({ err: error, run_id: run.run_id }, 'could not store the usage'));
  // A harness's HOME (its CLI session) stays with the workspace while the run can be continued;
  // the workspace sweep removes both (workspaces.continue_for).
  // After a success only: its changes as a branch and a pull request, unless the create request
  // said `config.publish: false` (it may turn publishing off, never choose where to).
  const base = workspace?.base;
  // A cancel (or a lost lease, a shutdown) that came while the changes and outputs were gathered
  // wins too: the run is no longer one to publish.
  if (controller.signal.aborted) happened.stop ??= controller.signal.reason as StopReason;
  if (
    environment.publish &&
    workspace &&
    readable &&
    base &&
    decideOutcome(happened).outcome.state === 'SUCCEEDED' &&
    mode !== 'plan' &&
    publishes(run)
  ) {
    happened.publish = await publish(options, environment.publish, workspace, base);
  }
  workspace?.release();
  return decideOutcome(happened).outcome;
}

/**
 * The run's turns: the first one of this claim, then, while the agent succeeds, each follow-up
 * that arrived during a turn as one more turn in the same workspace (turns.ts decides which). What
 * the last turn left is what the run reports (its answer, outputs; the changes since the start commit).
 */
async function runTurns(options: ExecuteOptions): Promise<Ran> {
  const { run, store, record, controller } = options;
  let turn = await firstTurn(store, run);
  for (;;) {
    await beginTurn(store, run, turn, () => record.flush?.());
    const ran = { ...(await runSteps(options, turn)), mode: turn.mode };
    if (ran.ended.state !== 'SUCCEEDED' || controller.signal.aborted) return ran;
    const next = await followingTurn(store, run, turn);
    if (!next) return ran;
    await ran.sandbox?.close();
    turn = next;
  }
}

/** Publishes the run's changes; answers the failure, if any. */
async function publish(
  { run, environment, store, record, sessionLink }: ExecuteOptions,
  config: NonNullable<EnvironmentConfig['publish']>,
  workspace: Workspace,
  base: string
): Promise<AgentOutcome | undefined> {
  const events = await store.listEvents(run.run_id);
  const answer = events.findLast(event => event.kind === 'result')?.text;
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
    result: typeof answer === 'string' ? answer : undefined,
    store,
    record
  });
}
