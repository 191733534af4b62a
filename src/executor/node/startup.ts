// Every start-up check of a node, in one place; serve.ts runs them before it opens the store.
// Configuration that parses but cannot work (a source directory that is not there, a misspelt URL
// scheme, an agent program not on the PATH runs get, a listed variable that is not set) would fail
// every run of its environment later, one by one, with a worse message; an environment whose runs
// are sandboxed needs bubblewrap working here. Nodes that run work refuse to start on either,
// naming the cause and the fix. An environment that says `sandbox: off` starts anyway, with a
// warning (and a warning event per run). A root executor also settles here who its runs are on the
// host (sandbox/user.ts): a bad `sandbox.user` refuses the start, naming it. A `sandbox.read` or
// `sandbox.write` path that would show runs the data dir refuses every role's start, as a
// configuration error (sandbox/config.ts), before anything is made in the data dir.

import { existsSync, statSync } from 'node:fs';
import { agentKindOf } from '../agents/index.js';
import { show, showPath } from '../values/config-reader.js';
import {
  ConfigError,
  type EnvironmentConfig,
  type ExecutorConfig,
  isRemoteSource
} from '../config/config.js';
import { checkHarnessClis } from './harness-startup.js';
import { checkBubblewrap } from '../sandbox/bwrap.js';
import { limitsProblem } from '../sandbox/cgroup.js';
import { sandboxPathProblems } from '../sandbox/config.js';
import { RunUserError, runUser } from '../sandbox/user.js';
import type { Role } from '../server/app.js';
import { layerMode, redactUrls } from '../workspace/workspace.js';

/** What of the configuration the start-up checks read: the environments and where the executor's files are. */
export type StartupSettings = Pick<ExecutorConfig, 'environments' | 'dataDir' | 'configFile'>;

/** Schemes git can fetch a source from; anything else is a typo, not a transport. */
const SOURCE_SCHEMES = ['https', 'http', 'ssh', 'git', 'file'];
const SOURCE_FORMS =
  'expected a directory, an https://, http://, ssh://, git:// or file:// URL, or user@host:path';

/** The configuration a worker cannot run, one refusal per line (the executor exits 1 on it). */
export class StartupCheckError extends Error {}

/** A sandboxed environment that cannot be confined on this machine. */
export class SandboxUnavailableError extends StartupCheckError {}

/** Why the source cannot make a workspace, or undefined. An unreachable remote is not checked here. */
function sourceProblem(source: string): string | undefined {
  if (isRemoteSource(source)) {
    const scheme = /^([a-z][a-z0-9+.-]*):\/\//i.exec(source)?.[1];
    if (scheme === undefined || SOURCE_SCHEMES.includes(scheme.toLowerCase())) return undefined;
    return `source ${showPath(redactUrls(source))}: ${scheme}:// is not a scheme git fetches from; ${SOURCE_FORMS}`;
  }
  if (!existsSync(source)) return `source ${showPath(source)}: no such directory; ${SOURCE_FORMS}`;
  if (!statSync(source).isDirectory()) return `source ${showPath(source)}: not a directory; ${SOURCE_FORMS}`;
  return undefined;
}

/** Every problem of one environment, each starting with the environment's id. */
export function environmentProblems(
  environment: EnvironmentConfig,
  processEnv: NodeJS.ProcessEnv = process.env
): string[] {
  const at = `environment ${show(environment.id)}:`;
  const problems: string[] = [];
  const source = sourceProblem(environment.source);
  if (source) problems.push(`${at} ${source}`);
  for (const name of environment.env) {
    if (processEnv[name] === undefined)
      problems.push(
        `${at} env ${show(name)}: not set in the executor's environment; expected it exported before ` +
          'agent-executor starts, or removed from env'
      );
  }
  const kind = agentKindOf(environment.agent.kind);
  // A source that is not there also hides the program a relative command path names.
  // An image's command is looked for in the image (image-startup.ts), not on this machine.
  if (kind?.check && !source && !environment.image) {
    const remoteSource = isRemoteSource(environment.source);
    for (const problem of kind.check({ ...environment, remoteSource }, 'agent', processEnv))
      problems.push(`${at} ${problem}`);
  }
  return problems;
}

/** Throws a StartupCheckError naming every environment of `config` that no run could succeed in. */
export function checkRunnable(
  config: Pick<ExecutorConfig, 'environments'>,
  processEnv: NodeJS.ProcessEnv = process.env
): void {
  const problems = config.environments.flatMap(env => environmentProblems(env, processEnv));
  if (problems.length === 0) return;
  throw new StartupCheckError(
    `refusing to start:${problems.length === 1 ? ` ${problems[0]}` : `\n- ${problems.join('\n- ')}`}`
  );
}

/**
 * Throws SandboxUnavailableError when a sandboxed environment cannot be confined on this machine;
 * returns the warnings to log otherwise, and adds to `notes` the lines the start-up log states
 * (which host user each environment's runs are).
 */
export function checkSandboxes(config: StartupSettings, notes: string[] = []): string[] {
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

/**
 * Throws a ConfigError naming each `sandbox.read` or `sandbox.write` path that would show runs the
 * data dir (or the config file). serve.ts calls it first, before the data dir is made.
 */
export function checkSandboxPaths(config: StartupSettings): void {
  const paths = sandboxPathProblems(config.environments, config.dataDir, config.configFile);
  if (paths.length === 0) return;
  const where = `config${config.configFile ? ` ${config.configFile}` : ''}`;
  throw new ConfigError(
    `${where}: refusing to start:${paths.length === 1 ? ` ${paths[0]}` : `\n- ${paths.join('\n- ')}`}`
  );
}

export interface StartupChecks {
  /** Checks each environment's source, variables and agent program (the CLI's `serve` does). */
  environments?: boolean;
  processEnv?: NodeJS.ProcessEnv;
}

/**
 * Every check a node of `role` makes before it opens its store: an `api` node runs nothing and
 * checks nothing. Throws a StartupCheckError on a refusal; answers the lines to log otherwise.
 */
export function checkStartup(
  config: StartupSettings,
  role: Role,
  checks: StartupChecks = {}
): { warnings: string[]; notes: string[] } {
  const notes: string[] = [];
  if (role === 'api') return { warnings: [], notes };
  if (checks.environments ?? true) checkRunnable(config, checks.processEnv);
  const warnings = checkSandboxes(config, notes);
  // Each harness's CLI (claude, …): found, runnable in the sandbox, its version stated.
  const clis = checkHarnessClis(config.environments.filter(env => !env.image));
  if (clis.problems.length > 0) throw new StartupCheckError(`refusing to start: ${clis.problems.join('; ')}`);
  notes.push(...clis.notes);
  const layers = layerMode(config.dataDir);
  notes.push(
    layers.kind === 'overlay'
      ? 'workspaces are copy-on-write views (overlayfs) of one shared checkout per commit'
      : `workspaces are full checkouts: ${layers.reason}`
  );
  // A kept setup layer is an overlay layer made in the sandbox: anything else runs the setup each time.
  for (const env of config.environments.filter(env => env.setupCache)) {
    const why =
      layers.kind !== 'overlay'
        ? 'workspaces are full checkouts here'
        : !env.sandbox.enabled
          ? 'it has `sandbox: off` (only a sandboxed setup is kept)'
          : env.setup.length === 0
            ? 'it has no setup commands'
            : undefined;
    if (why)
      warnings.push(`environment ${env.id}: setup_cache is ignored, ${why}: its setup runs in every run`);
  }
  return { warnings, notes };
}
