// The precedence of a run's outcomes (src/executor/runs/outcomes.ts) as a table: each pair of
// competing things that happened to a run, the outcome that wins, and why it wins. The messages
// are the ones users see in status_message, so they are checked whole.
import { describe, expect, it } from '@jest/globals';
import { ERROR_CODES } from '../../src/api/index.js';
import {
  RESTARTED_MESSAGE,
  type OutcomeRule,
  type RunHappenings,
  type RunOutcome,
  abandoned,
  agentExited,
  agentFailed,
  agentStopped,
  cancelledByClient,
  commandFailed,
  decideOutcome,
  patchTooLarge,
  publishFailed,
  setupFailed,
  sourceOverQuota,
  succeeded
} from '../../src/executor/runs/outcomes.js';

const base: RunHappenings = { timeoutMs: 90_000, quotaBytes: 5 * 1024 ** 2, ended: succeeded() };
const LIMIT = 'the run went past its memory limit of 64 MiB (sandbox.memory)';
const patchFailure = patchTooLarge(2000, 1000);
const publishFailure = publishFailed('push', 'remote refused', text => text);

const cases: [string, Partial<RunHappenings>, OutcomeRule, RunOutcome][] = [
  ['nothing went wrong: the run succeeds', {}, 'succeeded', { state: 'SUCCEEDED' }],
  [
    'cancel beats a timeout that fired after it (a signal keeps its first reason)',
    { stop: 'cancelled', ended: agentStopped() },
    'cancel',
    { state: 'CANCELLED', error_code: 'cancelled', status_message: 'cancelled by a client' }
  ],
  [
    'cancel beats an agent that exited 0 after being told to stop: a cancelled run never succeeds',
    { stop: 'cancelled', ended: succeeded() },
    'cancel',
    { state: 'CANCELLED', error_code: 'cancelled', status_message: 'cancelled by a client' }
  ],
  [
    'cancel beats a sandbox limit hit while the agent was being stopped',
    { stop: 'cancelled', limit: LIMIT },
    'cancel',
    { state: 'CANCELLED', error_code: 'cancelled', status_message: 'cancelled by a client' }
  ],
  [
    'a lost lease beats the agent success: the run is no longer this worker’s to end',
    { stop: 'lease_lost', ended: succeeded() },
    'lease_lost',
    {
      state: 'FAILED',
      error_code: 'executor_restarted',
      status_message: 'the worker running this run stopped renewing its lease; it was not re-run'
    }
  ],
  [
    'a sandbox limit beats the timeout: the limit is the cause, the time limit only noticed it',
    { stop: 'timeout', limit: LIMIT },
    'limit',
    { state: 'FAILED', error_code: 'resource_limit_exceeded', status_message: LIMIT }
  ],
  [
    'a sandbox limit beats the agent failure it caused (a killed process exits non-zero)',
    { limit: LIMIT, ended: agentExited(null, 'SIGKILL') },
    'limit',
    { state: 'FAILED', error_code: 'resource_limit_exceeded', status_message: LIMIT }
  ],
  [
    'a sandbox limit beats a shutdown',
    { stop: 'shutdown', limit: LIMIT },
    'limit',
    { state: 'FAILED', error_code: 'resource_limit_exceeded', status_message: LIMIT }
  ],
  [
    'the timeout beats the answer of an agent stopped by it',
    { stop: 'timeout', ended: agentStopped() },
    'timeout',
    { state: 'FAILED', error_code: 'timeout', status_message: 'the run exceeded its time limit of 90 s' }
  ],
  [
    'the timeout beats an agent that exited 0 once stopped',
    { stop: 'timeout', ended: succeeded() },
    'timeout',
    { state: 'FAILED', error_code: 'timeout', status_message: 'the run exceeded its time limit of 90 s' }
  ],
  [
    'the quota beats the failure of the agent it stopped',
    { stop: 'quota', ended: agentExited(143, null) },
    'quota',
    {
      state: 'FAILED',
      error_code: 'workspace_quota_exceeded',
      status_message: 'the workspace grew past its disk quota of 5 MiB'
    }
  ],
  [
    'a shutdown beats a setup command killed by it',
    { stop: 'shutdown', ended: setupFailed('npm ci', null) },
    'shutdown',
    {
      state: 'FAILED',
      error_code: 'executor_restarted',
      status_message: 'the executor shut down before the run finished'
    }
  ],
  [
    'the agent failure beats a patch over the limit: the first failure is the one to fix',
    { ended: agentFailed('told to fail'), outputs: patchFailure },
    'failed',
    { state: 'FAILED', error_code: 'agent_failed', status_message: 'told to fail' }
  ],
  [
    'a publish failure never turns a failed agent into success, nor hides its failure',
    { ended: commandFailed('npm test', 1, null), publish: publishFailure },
    'failed',
    { state: 'FAILED', error_code: 'command_failed', status_message: 'command `npm test` exited with code 1' }
  ],
  [
    'a source over the quota (the run never started) is the run’s own failure',
    { ended: sourceOverQuota(1024 * 512) },
    'failed',
    {
      state: 'FAILED',
      error_code: 'workspace_quota_exceeded',
      status_message: 'the source is larger than the workspace disk quota of 512 KiB; the copy stopped there'
    }
  ],
  [
    'an unreadable workspace fails a successful agent',
    { unreadable: 'git refused a path' },
    'tampered',
    {
      state: 'FAILED',
      error_code: 'workspace_tampered',
      status_message:
        "the run's workspace could not be read safely, so no patch was kept and nothing was published: git refused a path"
    }
  ],
  [
    'an unreadable workspace does not replace the agent’s own failure',
    { ended: agentFailed('gave up'), unreadable: 'git refused a path' },
    'failed',
    { state: 'FAILED', error_code: 'agent_failed', status_message: 'gave up' }
  ],
  ['a patch over the limit fails a successful agent', { outputs: patchFailure }, 'outputs', patchFailure],
  [
    'a patch over the limit beats the publish failure (publishing comes after keeping the patch)',
    { outputs: patchFailure, publish: publishFailure },
    'outputs',
    patchFailure
  ],
  ['a publish failure fails a successful agent', { publish: publishFailure }, 'publish', publishFailure],
  [
    'a workspace read back safely and published is a success: undefined steps change nothing',
    { outputs: undefined, publish: undefined },
    'succeeded',
    { state: 'SUCCEEDED' }
  ]
];

describe('the precedence of a run’s outcomes', () => {
  it.each(cases)('%s', (_why, happened, rule, outcome) => {
    const decided = decideOutcome({ ...base, ...happened });
    expect(decided.rule).toBe(rule);
    expect(decided.outcome).toEqual(outcome);
  });

  it('answers only error codes of the contract, and a message on every failure', () => {
    for (const [, happened] of cases) {
      const { outcome } = decideOutcome({ ...base, ...happened });
      if (outcome.state === 'SUCCEEDED') continue;
      expect(Object.keys(ERROR_CODES)).toContain(outcome.error_code);
      expect(outcome.status_message).toEqual(expect.stringMatching(/\S/));
    }
  });

  it('words a client’s cancel and an abandoned run as the store writes them', () => {
    expect(cancelledByClient('changed my mind')).toEqual({
      state: 'CANCELLED',
      error_code: 'cancelled',
      status_message: 'cancelled by a client: changed my mind'
    });
    expect(abandoned(RESTARTED_MESSAGE)).toEqual({
      state: 'FAILED',
      error_code: 'executor_restarted',
      status_message: 'the executor restarted while this run was in progress; it was not re-run'
    });
  });

  it('keeps publishing’s redaction over the whole message', () => {
    const secret = 'ghp_secret';
    const failure = publishFailed('push', `denied for ${secret}`, text => text.replaceAll(secret, '***'));
    expect(failure.status_message).toBe(
      'publishing the changes failed at the push: denied for ***; the changes are kept as the changes.patch artifact'
    );
  });
});
