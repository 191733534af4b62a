// How a run ends, decided in one place. Every way a run can end is a named constructor below (its
// state, error code and status message), and one precedence function, `decideOutcome`, reads what
// happened during the run (a record the worker fills in as it goes) and answers which outcome wins,
// with the rule that chose it. The worker, the agent kinds and the workspace code build outcomes
// only through these constructors; the error codes themselves are the contract's (src/api).
//
// The precedence, first rule that applies wins:
//   cancel        a client cancelled: the store already ended the run CANCELLED
//   lease_lost    the worker lost its lease: the run is no longer this worker's to end
//   limit         a sandbox limit (memory, processes) was hit: the cause of whatever followed
//   timeout, quota, shutdown   the worker stopped the run (its time limit, its disk quota, the
//                 executor stopping), whatever the agent answered after being stopped
//   failed        the run's own steps failed (setup, the agent, a failure to start them)
//   tampered, patch, publish   what comes after a successful agent, in the order it is tried;
//                 each only ever turns a success into a failure, never the other way
//   succeeded     nothing above applied

import type { ErrorCode } from '../../api/index.js';

/** How a worker ends a run it holds (the shape the store's finish takes). */
export interface RunOutcome {
  state: 'SUCCEEDED' | 'FAILED' | 'CANCELLED';
  status_message?: string;
  error_code?: ErrorCode;
}

/** What an agent kind, the setup or a step after the agent answers: success or a failure. */
export type AgentOutcome = Omit<RunOutcome, 'state'> & { state: 'SUCCEEDED' | 'FAILED' };

/** Why a run's controller was aborted. */
export type StopReason = 'cancelled' | 'timeout' | 'shutdown' | 'lease_lost' | 'quota';

function failed(error_code: ErrorCode, status_message: string): AgentOutcome {
  return { state: 'FAILED', error_code, status_message };
}

function describeBytes(bytes: number): string {
  return bytes >= 1024 ** 2 ? `${Math.round(bytes / 1024 ** 2)} MiB` : `${Math.round(bytes / 1024)} KiB`;
}

/** The run's steps all succeeded. */
export function succeeded(): AgentOutcome {
  return { state: 'SUCCEEDED' };
}

// The agent and its steps.

/** The agent reported a failure, or a kind's own rule failed the run; `message` says which. */
export function agentFailed(message: string): AgentOutcome {
  return failed('agent_failed', message);
}

/** An agent process ended other than with exit code 0 (`exitCode` null: killed by `signal`). */
export function agentExited(exitCode: number | null, signal: string | null, stderrTail = ''): AgentOutcome {
  const how = exitCode === null ? `was stopped by ${signal}` : `exited with code ${exitCode}`;
  return agentFailed(`agent ${how}${stderrTail ? `; last lines of stderr:\n${stderrTail}` : ''}`);
}

/** An agent's program could not be started at all. */
export function agentCouldNotStart(program: string, why: string): AgentOutcome {
  return agentFailed(`agent command ${JSON.stringify(program)} could not start: ${why}`);
}

/** The worker could not start the agent (no such kind here, no sandbox, no workspace). */
export function agentCouldNotRun(why: string): AgentOutcome {
  return agentFailed(`the agent could not run: ${why}`);
}

/** An agent noticed the run was stopped and gave up (the stop's own outcome wins over this). */
export function agentStopped(): AgentOutcome {
  return failed('cancelled', 'stopped');
}

/** A command the agent ran ended other than with exit code 0 (`exitCode` null: killed by `signal`). */
export function commandFailed(command: string, exitCode: number | null, signal: string | null): AgentOutcome {
  const how = exitCode === null ? `was killed by ${signal}` : `exited with code ${exitCode}`;
  return failed('command_failed', `command \`${command}\` ${how}`);
}

/** One of the environment's setup commands exited non-zero. */
export function setupFailed(
  command: string,
  exitCode: number | null,
  mode: 'normal' | 'plan' | 'orchestrate' = 'normal'
): AgentOutcome {
  // A plan run's setup is not read-only (only its agent's turn is): the message says which it was.
  const plan =
    mode === 'plan'
      ? ' in a plan-mode run (setup runs with the workspace writable; only the agent is read-only)'
      : '';
  return failed('setup_failed', `setup command \`${command}\` exited with code ${exitCode}${plan}`);
}

/** The run's environment was removed from the configuration while the run waited. */
export function environmentGone(environmentId: string): AgentOutcome {
  return failed('environment_not_found', `environment ${environmentId} is no longer configured`);
}

// Stops: the worker ends the run early.

/**
 * A client cancelled the run, with its reason if it gave one. The store's cancel writes it; the
 * worker, which learns of it afterwards (and without the reason), has its own finish refused.
 */
export function cancelledByClient(reason?: string): RunOutcome {
  const status_message = reason === undefined ? 'cancelled by a client' : `cancelled by a client: ${reason}`;
  return { state: 'CANCELLED', error_code: 'cancelled', status_message };
}

/** A run of the tree below `ancestorRunId` when that run was cancelled (the cancel cascades). */
export function cancelledWithAncestor(ancestorRunId: string): RunOutcome {
  return {
    state: 'CANCELLED',
    error_code: 'cancelled',
    status_message: `cancelled because its ancestor run ${ancestorRunId} was cancelled`
  };
}

/** The run outlived its environment's time limit. */
export function timedOut(timeoutMs: number): AgentOutcome {
  return failed('timeout', `the run exceeded its time limit of ${Math.round(timeoutMs / 1000)} s`);
}

/**
 * The run's workspace and output folder grew past the disk quota while it ran; `why` says so when
 * it was not their bytes (the count of their files, a part the quota could not read).
 */
export function quotaExceeded(quotaBytes: number, why?: string): AgentOutcome {
  return failed(
    'workspace_quota_exceeded',
    why ? `the workspace ${why}` : `the workspace grew past its disk quota of ${describeBytes(quotaBytes)}`
  );
}

/** The source was larger than the disk quota, so its copy into the workspace stopped. */
export function sourceOverQuota(quotaBytes: number): AgentOutcome {
  return failed(
    'workspace_quota_exceeded',
    `the source is larger than the workspace disk quota of ${describeBytes(quotaBytes)}; the copy stopped there`
  );
}

/** The executor shut down (past its grace period) while the run was in progress. */
export function executorShutDown(): AgentOutcome {
  return failed('executor_restarted', 'the executor shut down before the run finished');
}

/** Status message of a run found in progress when its executor started again. */
export const RESTARTED_MESSAGE = 'the executor restarted while this run was in progress; it was not re-run';
/** Status message of a run whose worker stopped renewing its lease. */
export const LEASE_EXPIRED_MESSAGE =
  'the worker running this run stopped renewing its lease; it was not re-run';

/** A run left in progress by a worker that stopped (`message`: one of the two above). */
export function abandoned(message: string): AgentOutcome {
  return failed('executor_restarted', message);
}

/** The worker lost the run's lease: it was failed as abandoned (the worker's finish is refused). */
export function leaseLost(): AgentOutcome {
  return abandoned(LEASE_EXPIRED_MESSAGE);
}

/** The run's processes went past a sandbox limit; `limit` is the sandbox's message naming it. */
export function resourceLimit(limit: string): AgentOutcome {
  return failed('resource_limit_exceeded', limit);
}

// After the agent.

/** The workspace could not be read safely after the run. */
export function workspaceTampered(why: string): AgentOutcome {
  return failed(
    'workspace_tampered',
    `the run's workspace could not be read safely, so no patch was kept and nothing was published: ${why}`
  );
}

/** The run's changes make a patch over the limit. */
export function patchTooLarge(bytes: number, maxBytes: number): AgentOutcome {
  return failed(
    'patch_too_large',
    `the run's changes make a patch of ${bytes} bytes, over the limit of ${maxBytes} bytes (workspaces.max_patch); the changes were not kept`
  );
}

/** Publishing failed at `step`; `redact` hides secrets and URL credentials in the whole message. */
export function publishFailed(step: string, why: string, redact: (text: string) => string): AgentOutcome {
  return failed(
    'publish_failed',
    redact(
      `publishing the changes failed at the ${step}: ${why}; the changes are kept as the changes.patch artifact`
    )
  );
}

/** Everything that happened to a run that can decide its outcome; the worker fills it in as it goes. */
export interface RunHappenings {
  /** Why the worker aborted the run, if it did (an AbortSignal keeps the first reason only). */
  stop?: StopReason;
  /** The environment's time limit and the disk quota, for the messages of those stops. */
  timeoutMs: number;
  quotaBytes: number;
  /** Why the quota stopped the run when it was not its bytes (too many files, an unreadable part). */
  quotaWhy?: string;
  /** What the run's own steps answered: the setup's failure, else the agent's answer. */
  ended: AgentOutcome;
  /** The sandbox limit the run's processes went past (the sandbox's message). */
  limit?: string;
  /** Why the workspace could not be read after the run. */
  unreadable?: string;
  /** Keeping the run's outputs failed (the patch too large). */
  outputs?: AgentOutcome;
  /** Publishing the changes failed. */
  publish?: AgentOutcome;
}

/** The precedence's rules, in order; the first that answers wins. */
export type OutcomeRule =
  | 'cancel'
  | 'lease_lost'
  | 'limit'
  | 'timeout'
  | 'quota'
  | 'shutdown'
  | 'failed'
  | 'tampered'
  | 'outputs'
  | 'publish'
  | 'succeeded';

const RULES: readonly [OutcomeRule, (run: RunHappenings) => RunOutcome | undefined][] = [
  ['cancel', run => (run.stop === 'cancelled' ? cancelledByClient() : undefined)],
  ['lease_lost', run => (run.stop === 'lease_lost' ? leaseLost() : undefined)],
  ['limit', run => (run.limit ? resourceLimit(run.limit) : undefined)],
  ['timeout', run => (run.stop === 'timeout' ? timedOut(run.timeoutMs) : undefined)],
  ['quota', run => (run.stop === 'quota' ? quotaExceeded(run.quotaBytes, run.quotaWhy) : undefined)],
  // Any other reason a controller was aborted with is the executor stopping.
  ['shutdown', run => (run.stop !== undefined ? executorShutDown() : undefined)],
  ['failed', run => (run.ended.state !== 'SUCCEEDED' ? run.ended : undefined)],
  ['tampered', run => (run.unreadable !== undefined ? workspaceTampered(run.unreadable) : undefined)],
  ['outputs', run => (run.outputs?.state === 'FAILED' ? run.outputs : undefined)],
  ['publish', run => (run.publish?.state === 'FAILED' ? run.publish : undefined)]
];

/** Which outcome ends the run, and the rule that chose it (see the precedence at the top). */
export function decideOutcome(run: RunHappenings): { outcome: RunOutcome; rule: OutcomeRule } {
  for (const [rule, answer] of RULES) {
    const outcome = answer(run);
    if (outcome) return { outcome, rule };
  }
  return { outcome: run.ended, rule: 'succeeded' };
}
