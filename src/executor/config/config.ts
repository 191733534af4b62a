// The executor's configuration: agent-executor.yaml, checked at start-up with errors that name the
// key, the value and the expected form. Without a file, one environment `local` serves the current
// directory with the simulated agent. Every key is declared once, in schema.ts; this file reads the
// file and applies the command line's overrides.

import { existsSync, readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { parse as parseYaml } from 'yaml';
import { StoreSpecError, parseStoreSpec } from '../store/location.js';
import { ConfigReader } from '../values/config-reader.js';
import type { EnvironmentConfig } from './environment.js';
import { EXECUTOR_SCHEMA, type ExecutorConfig } from './schema.js';
import { readMapping } from './schema-kit.js';

export type { AgentConfig } from '../agents/index.js';
export { type EnvironmentConfig, type ImageConfig, isRemoteSource } from './environment.js';
export { DEFAULT_MIN_FREE_INODES, type ExecutorConfig, MIN_TRANSCRIPT_BYTES } from './schema.js';

export class ConfigError extends Error {}

export interface ConfigOverrides {
  config?: string;
  dataDir?: string;
  host?: string;
  port?: number;
  /** --store; wins over AGENT_EXECUTOR_STORE, which wins over the file's `store:`. */
  store?: string;
}

/** The parsed YAML of `file` (its folder is where relative paths start), or the ConfigError why not. */
function readConfigFile(file: string): unknown {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (error) {
    throw new ConfigError(`config ${file}: cannot read it (${(error as NodeJS.ErrnoException).code})`);
  }
  try {
    return parseYaml(text) ?? {};
  } catch (error) {
    throw new ConfigError(`config ${file}: not valid YAML (${(error as Error).message.split('\n')[0]})`);
  }
}

/** Loads the config file (explicit, or agent-executor.yaml when present) and applies CLI overrides. */
export function loadConfig(
  overrides: ConfigOverrides = {},
  cwd = process.cwd(),
  env: NodeJS.ProcessEnv = process.env
): ExecutorConfig {
  const explicit = overrides.config !== undefined;
  const file = resolve(cwd, overrides.config ?? 'agent-executor.yaml');
  const found = existsSync(file);
  if (!found && explicit) throw new ConfigError(`config ${file}: no such file`);
  const raw = found ? readConfigFile(file) : {};
  const config = parseConfig(raw, found ? dirname(file) : cwd, found ? file : 'defaults');
  if (found) config.configFile = file;
  if (overrides.host !== undefined) config.host = overrides.host;
  if (overrides.port !== undefined) config.port = overrides.port;
  if (overrides.dataDir !== undefined) {
    const inDataDir =
      config.store.kind === 'sqlite' && config.store.path === join(config.dataDir, 'executor.db');
    config.dataDir = resolve(cwd, overrides.dataDir);
    if (inDataDir) config.store = parseStoreSpec(undefined, config.dataDir, cwd);
  }
  overrideStore(config, overrides.store, env, cwd);
  return config;
}

/** --store, else AGENT_EXECUTOR_STORE, replaces the file's `store:`; a bad one is a ConfigError naming it. */
function overrideStore(
  config: ExecutorConfig,
  flag: string | undefined,
  env: NodeJS.ProcessEnv,
  cwd: string
): void {
  const [store, from] =
    flag !== undefined
      ? [flag, '--store']
      : env.AGENT_EXECUTOR_STORE
        ? [env.AGENT_EXECUTOR_STORE, 'AGENT_EXECUTOR_STORE']
        : [undefined, ''];
  if (store === undefined) return;
  try {
    config.store = parseStoreSpec(store, config.dataDir, cwd);
  } catch (error) {
    if (error instanceof StoreSpecError) throw new ConfigError(`${from} ${error.message}`);
    throw error;
  }
}

/** Reads `raw` (the parsed YAML) by the schema; relative paths are from `base`; every problem at once. */
export function parseConfig(raw: unknown, base: string, where = 'config'): ExecutorConfig {
  const problems: string[] = [];
  const config = readMapping(EXECUTOR_SCHEMA, raw, '', { r: new ConfigReader(problems), base });
  if (problems.length > 0) {
    throw new ConfigError(
      `${where}: ${problems.length === 1 ? problems[0] : `\n- ${problems.join('\n- ')}`}`
    );
  }
  return config as ExecutorConfig;
}

/**
 * Why `environment` cannot run an orchestrate turn, or undefined: the turn's credential must be
 * reachable only through the run's proxy, so it needs a sandbox whose network is not the host's
 * (with `network: host` the sandbox could reach the executor past the proxy; without a sandbox
 * there is no proxy at all).
 */
export function orchestrateProblem(environment: EnvironmentConfig): string | undefined {
  const why = !environment.sandbox.enabled
    ? 'has sandbox: off'
    : environment.sandbox.network === 'host'
      ? 'has sandbox.network: host'
      : undefined;
  if (!why) return undefined;
  return `mode "orchestrate": environment ${JSON.stringify(environment.id)} ${why}, and an orchestrate run's credential must be reachable only through its sandbox's proxy; use an environment with a sandbox whose network is none or a host:port list`;
}
