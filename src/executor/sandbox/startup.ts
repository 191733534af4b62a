// The start-up check of a node that runs work: every environment whose runs are sandboxed needs
// bubblewrap working here, or the executor refuses to start, naming the cause and the fix. An
// environment that says `sandbox: off` starts anyway, with a warning (and a warning event per run).
// A root executor also settles here who its runs are on the host (sandbox/user.ts): a bad
// `sandbox.user` refuses the start, naming it.

import type { ExecutorConfig } from '../config.js';
import { checkBubblewrap } from './bwrap.js';
import { limitsProblem } from './cgroup.js';
import { RunUserError, runUser } from './user.js';

export class SandboxUnavailableError extends Error {}

/**
 * Throws SandboxUnavailableError when a sandboxed environment cannot be confined on this machine;
 * returns the warnings to log otherwise, and adds to `notes` the lines the start-up log states
 * (which host user each environment's runs are).
 */
export function checkSandboxes(config: ExecutorConfig, notes: string[] = []): string[] {
  const warnings: string[] = [];
  const confined = config.environments.filter(env => env.sandbox.enabled);
  const off = config.environments.filter(env => !env.sandbox.enabled).map(env => env.id);
  if (off.length > 0)
    warnings.push(
      `environment ${off.join(', ')} has \`sandbox: off\`: its agents run unconfined, as the executor's user`
    );
  if (confined.length === 0) return warnings;
  const ids = confined.map(env => env.id).join(', ');
  const check = checkBubblewrap();
  if (!check.ok) {
    throw new SandboxUnavailableError(
      `cannot confine the runs of environment ${ids}: ${check.problem}. ` +
        'To run them unconfined anyway (not recommended), set `sandbox: off` on the environment.'
    );
  }
  const users = new Map<string, string[]>();
  for (const env of confined) {
    let user;
    try {
      user = runUser(env.sandbox.user);
    } catch (error) {
      if (!(error instanceof RunUserError)) throw error;
      throw new SandboxUnavailableError(`environment ${env.id}: ${error.message}`);
    }
    if (!user) {
      if (env.sandbox.user !== undefined)
        warnings.push(
          `environment ${env.id} sets sandbox.user ${JSON.stringify(env.sandbox.user)}, but the executor is not root and cannot switch users: its runs are the executor's own user (uid ${process.getuid?.()})`
        );
      continue;
    }
    const asUser = checkBubblewrap(user);
    if (!asUser.ok)
      throw new SandboxUnavailableError(
        `cannot confine the runs of environment ${env.id}: ${asUser.problem}`
      );
    users.set(user.label, [...(users.get(user.label) ?? []), env.id]);
  }
  for (const [label, envs] of users)
    notes.push(`the runs of environment ${envs.join(', ')} run as host user ${label}, not root`);
  const limits = limitsProblem();
  if (!limits) return warnings;
  const strict = confined.filter(env => env.sandbox.requireLimits).map(env => env.id);
  if (strict.length > 0)
    throw new SandboxUnavailableError(
      `environment ${strict.join(', ')} sets sandbox.require_limits but ${limits}; run the executor where it may create cgroups (as root, or with a delegated cgroup v2 subtree)`
    );
  warnings.push(`environment ${ids}: ${limits}`);
  return warnings;
}

/** Warnings every run of this environment records in its transcript. */
export function runWarnings(sandbox: { enabled: boolean }): string[] {
  if (!sandbox.enabled)
    return [
      "this environment has `sandbox: off`: the run's processes run unconfined, as the executor's own user"
    ];
  const limits = limitsProblem();
  return limits ? [limits] : [];
}
