// Start-up checks of the environments a worker will run: configuration that parses but cannot
// work (a source directory that is not there, a misspelt URL scheme, an agent program not on the
// PATH runs get, a listed variable that is not set) fails every run of its environment later, one
// by one, with a worse message. Nodes that run work refuse to start on it instead.

import { existsSync, statSync } from 'node:fs';
import { agentKindOf } from '../agents/index.js';
import { show } from '../config-reader.js';
import { type EnvironmentConfig, type ExecutorConfig, isRemoteSource } from '../config.js';
import { redactUrls } from '../workspace/workspace.js';

/** Schemes git can fetch a source from; anything else is a typo, not a transport. */
const SOURCE_SCHEMES = ['https', 'http', 'ssh', 'git', 'file'];
const SOURCE_FORMS =
  'expected a directory, an https://, http://, ssh://, git:// or file:// URL, or user@host:path';

/** The configuration a worker cannot run, one refusal per line (the executor exits 1 on it). */
export class StartupCheckError extends Error {}

/** Why the source cannot make a workspace, or undefined. An unreachable remote is not checked here. */
function sourceProblem(source: string): string | undefined {
  if (isRemoteSource(source)) {
    const scheme = /^([a-z][a-z0-9+.-]*):\/\//i.exec(source)?.[1];
    if (scheme === undefined || SOURCE_SCHEMES.includes(scheme.toLowerCase())) return undefined;
    return `source ${show(redactUrls(source))}: ${scheme}:// is not a scheme git fetches from; ${SOURCE_FORMS}`;
  }
  if (!existsSync(source)) return `source ${show(source)}: no such directory; ${SOURCE_FORMS}`;
  if (!statSync(source).isDirectory()) return `source ${show(source)}: not a directory; ${SOURCE_FORMS}`;
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
  if (kind?.check && !source) {
    const remoteSource = isRemoteSource(environment.source);
    for (const problem of kind.check({ ...environment, remoteSource }, 'agent', processEnv))
      problems.push(`${at} ${problem}`);
  }
  return problems;
}

/** Throws a StartupCheckError naming every environment of `config` that no run could succeed in. */
export function checkRunnable(config: ExecutorConfig, processEnv: NodeJS.ProcessEnv = process.env): void {
  const problems = config.environments.flatMap(env => environmentProblems(env, processEnv));
  if (problems.length === 0) return;
  throw new StartupCheckError(
    `refusing to start:${problems.length === 1 ? ` ${problems[0]}` : `\n- ${problems.join('\n- ')}`}`
  );
}
