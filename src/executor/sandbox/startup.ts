// The start-up check of a node that runs work: every environment whose runs are sandboxed needs
// bubblewrap working here, or the executor refuses to start, naming the cause and the fix. An
// environment that says `sandbox: off` starts anyway, with a warning (and a warning event per run).

import type { ExecutorConfig } from '../config.js';
import { checkBubblewrap } from './bwrap.js';
import { limitsProblem } from './cgroup.js';

export class SandboxUnavailableError extends Error {}

/**
 * Throws SandboxUnavailableError when a sandboxed environment cannot be confined on this machine;
 * returns the warnings to log otherwise.
 */
export function checkSandboxes(config: ExecutorConfig): string[] {
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
