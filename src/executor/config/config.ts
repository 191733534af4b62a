// The executor's configuration: agent-executor.yaml, checked at start-up with errors that name the
// key, the value and the expected form. Without a file, one environment `local` serves the current
// directory with the simulated agent.

import { existsSync, readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { parse as parseYaml } from 'yaml';
import { didYouMean } from '../../api/index.js';
import { AGENT_KINDS, type AgentConfig } from '../agents/index.js';
import { ConfigReader, show } from '../values/config-reader.js';
import { type StoreSpec, StoreSpecError, parseStoreSpec } from '../store/location.js';
import { DEFAULT_SANDBOX, type SandboxConfig, parseSandbox } from '../sandbox/config.js';
import { type PublishConfig, parsePublish } from './publish-config.js';
import { type AuthConfig, parseAuth } from './auth-config.js';
import { type WebhooksConfig, parseWebhooks } from './webhooks-config.js';
import type { LogFormat } from '../telemetry/log-format.js';

export type { AgentConfig } from '../agents/index.js';

export interface EnvironmentConfig {
  id: string;
  name: string;
  /** Absolute path of a directory or git repository each run's workspace is made from. */
  source: string;
  /** Shell commands run in the workspace before the agent. */
  setup: string[];
  /**
   * Whether the result of `setup` for one commit is kept as a shared read-only layer, so later runs
   * of the commit skip the commands (workspace/setup-layers.ts); overlay workspaces only.
   */
  setupCache: boolean;
  agent: AgentConfig;
  /** Names of variables passed from the executor's own environment to the agent. */
  env: string[];
  /** Per-run time limit in ms. */
  timeoutMs: number;
  maxConcurrentRuns: number;
  /** How the run's processes are confined (sandbox/config.ts). */
  sandbox: SandboxConfig;
  /** Where a run's changes are pushed, and the pull request opened (config/publish-config.ts). */
  publish?: PublishConfig;
  /**
   * The other environments an orchestrate run of this one may start child runs in (its own is
   * always allowed), by id; each names an environment of the same file.
   */
  orchestrateEnvironments: string[];
  /** The container image whose file system runs see as `/` (images/cache.ts); unset: the host's. */
  image?: ImageConfig;
}

/** An environment's `image` and `image_pull`. */
export interface ImageConfig {
  /** A skopeo source: oci:PATH[:TAG], oci-archive:PATH[:TAG], docker-archive:PATH, docker://NAME[:TAG], … */
  ref: string;
  /** `missing`: copied once, then taken from the cache; `always`: copied again before each run. */
  pull: 'missing' | 'always';
}

// eslint-disable-next-line no-control-regex
const UNPRINTABLE = /[\u0000-\u001f\u007f-\u009f\s]/;

/** The skopeo transports an `image` may name. */
const IMAGE_TRANSPORTS = ['oci:', 'oci-archive:', 'docker-archive:', 'docker://'];
/** Transports of the host's own stores, which the copy's unprivileged user does not reach. */
const HOST_STORE_TRANSPORTS = ['containers-storage:', 'docker-daemon:'];
const IMAGE_FORMS =
  'expected a skopeo image reference such as oci:/srv/images/python:3.12, oci-archive:/srv/python.tar, docker-archive:/srv/python.tar or docker://debian:12';

export interface ExecutorConfig {
  host: string;
  port: number;
  /** Base of session links; defaults to the address the server listens on. */
  publicUrl?: string;
  /**
   * Who may open a session page: anyone holding its link (`link`), or only a dashboard sign-in
   * of the run's team that also holds the link (`sign-in`).
   */
  sessionPages: 'link' | 'sign-in';
  dataDir: string;
  /** The config file read, hidden from runs' sandboxes. */
  configFile?: string;
  /** Where keys, runs and transcripts live: SQLite in the data dir unless set. */
  store: StoreSpec;
  /** Runs executed at once across all environments. */
  workers: number;
  leaseMs: number;
  shutdownGraceMs: number;
  logLevel: 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'silent';
  /** Log lines as text on a terminal and JSON elsewhere (auto), or always one of them. */
  logFormat: LogFormat;
  workspaces: {
    /** How long a finished run's workspace is kept before it is removed. */
    retentionMs: number;
    /** How long after a run ends a follow-up may still continue it (its workspace and HOME are kept). */
    continueForMs: number;
    /** Disk a run may write (its own layer of a copy-on-write workspace); past it the run fails. */
    quotaBytes: number;
    /** Files and directories a run may make (layer, HOME and output folder together); past it the run fails. */
    maxFiles: number;
    /** Largest patch of a run's changes; a larger one fails the run rather than be cut. */
    maxPatchBytes: number;
    /** The node claims no run while the data dir's file system has less free space than this. */
    minFreeBytes: number;
    /** Nor while it has fewer free inodes than this (0: not checked). */
    minFreeInodes: number;
    /** How much unused shared checkouts (the lower layers of workspaces) may weigh together. */
    cacheBytes: number;
  };
  limits: {
    maxBodyBytes: number;
    maxPromptBytes: number;
    /** Requests per minute per key; 0 turns the limit off. */
    rateLimitPerMinute: number;
    maxQueuedRuns: number;
    /** QUEUED runs one team may have at once: by default a tenth of maxQueuedRuns, at least 100, at most all. */
    maxQueuedRunsPerTeam: number;
    /** INPROGRESS runs one team may have at once, across every node of the store; 0: no cap. */
    maxRunningRunsPerTeam: number;
    /** Schedules one team may have (paused ones count). */
    maxSchedulesPerTeam: number;
    retentionDays: number;
    /** Bytes of a run's stored transcript; past it the head and the tail are kept, the middle dropped. */
    transcriptBytes: number;
    /** Event streams (text/event-stream) one key may hold open at once, on this node. */
    maxStreamsPerKey: number;
    /** Event streams this node holds open at once, of every key. */
    maxStreams: number;
    /** Longest silence on an event stream: a comment line is sent after it. */
    streamHeartbeatMs: number;
    /** Bytes an event stream may have waiting for a slow reader; past it (or a heartbeat without progress) it is cut. */
    streamBufferBytes: number;
  };
  /** Signed deliveries of runs' changes to teams' endpoints (config/webhooks-config.ts). */
  webhooks: WebhooksConfig;
  environments: EnvironmentConfig[];
  /** Who may sign in without an API key (config/auth-config.ts). */
  auth: AuthConfig;
}

export class ConfigError extends Error {}

/**
 * `workspaces.min_free_inodes` unless set: as many inodes as ext4 gives the default `min_free`
 * (1 GiB at its default of one inode per 16 KiB), so on such a file system the two floors agree;
 * room for the checkout of a repository of tens of thousands of files.
 */
export const DEFAULT_MIN_FREE_INODES = 65_536;

export interface ConfigOverrides {
  config?: string;
  dataDir?: string;
  host?: string;
  port?: number;
  /** --store; wins over AGENT_EXECUTOR_STORE, which wins over the file's `store:`. */
  store?: string;
}

/** Loads the config file (explicit, or agent-executor.yaml when present) and applies CLI overrides. */
export function loadConfig(
  overrides: ConfigOverrides = {},
  cwd = process.cwd(),
  env: NodeJS.ProcessEnv = process.env
): ExecutorConfig {
  const explicit = overrides.config !== undefined;
  const file = resolve(cwd, overrides.config ?? 'agent-executor.yaml');
  let raw: unknown = {};
  let base = cwd;
  if (existsSync(file)) {
    let text: string;
    try {
      text = readFileSync(file, 'utf8');
    } catch (error) {
      throw new ConfigError(`config ${file}: cannot read it (${(error as NodeJS.ErrnoException).code})`);
    }
    try {
      raw = parseYaml(text) ?? {};
    } catch (error) {
      throw new ConfigError(`config ${file}: not valid YAML (${(error as Error).message.split('\n')[0]})`);
    }
    base = dirname(file);
  } else if (explicit) {
    throw new ConfigError(`config ${file}: no such file`);
  }
  const config = parseConfig(raw, base, explicit || existsSync(file) ? file : 'defaults');
  if (existsSync(file)) config.configFile = file;
  if (overrides.host !== undefined) config.host = overrides.host;
  if (overrides.port !== undefined) config.port = overrides.port;
  if (overrides.dataDir !== undefined) {
    const inDataDir =
      config.store.kind === 'sqlite' && config.store.path === join(config.dataDir, 'executor.db');
    config.dataDir = resolve(cwd, overrides.dataDir);
    if (inDataDir) config.store = parseStoreSpec(undefined, config.dataDir, cwd);
  }
  const [store, from] =
    overrides.store !== undefined
      ? [overrides.store, '--store']
      : env.AGENT_EXECUTOR_STORE
        ? [env.AGENT_EXECUTOR_STORE, 'AGENT_EXECUTOR_STORE']
        : [undefined, ''];
  if (store !== undefined) {
    try {
      config.store = parseStoreSpec(store, config.dataDir, cwd);
    } catch (error) {
      if (error instanceof StoreSpecError) throw new ConfigError(`${from} ${error.message}`);
      throw error;
    }
  }
  return config;
}

export function parseConfig(raw: unknown, base: string, where = 'config'): ExecutorConfig {
  const problems: string[] = [];
  const r = new ConfigReader(problems);
  const root = r.object(raw, '');
  r.known(root, '', [
    'server',
    'data_dir',
    'store',
    'workers',
    'lease',
    'shutdown_grace',
    'log_level',
    'log_format',
    'workspaces',
    'limits',
    'webhooks',
    'environments',
    'auth'
  ]);
  const server = r.object(root.server, 'server');
  const workspaces = r.object(root.workspaces, 'workspaces');
  r.known(workspaces, 'workspaces', [
    'retention',
    'continue_for',
    'quota',
    'max_files',
    'max_patch',
    'min_free',
    'min_free_inodes',
    'cache_size'
  ]);
  r.known(server, 'server', ['host', 'port', 'public_url', 'session_pages']);
  const limits = r.object(root.limits, 'limits');
  r.known(limits, 'limits', [
    'max_body_bytes',
    'max_prompt_bytes',
    'rate_limit_per_minute',
    'max_queued_runs',
    'max_queued_runs_per_team',
    'max_running_runs_per_team',
    'max_schedules_per_team',
    'retention_days',
    'transcript',
    'max_streams_per_key',
    'max_streams',
    'stream_heartbeat',
    'stream_buffer'
  ]);
  const workers = r.int(root.workers, 'workers', 4, 1, 256);
  const dataDir = resolve(base, r.string(root.data_dir, 'data_dir', '.agent-executor'));
  let store: StoreSpec = parseStoreSpec(undefined, dataDir, base);
  if (root.store !== undefined && root.store !== null) {
    try {
      if (typeof root.store !== 'string') throw new StoreSpecError(`${show(root.store)}: expected a string`);
      store = parseStoreSpec(root.store, dataDir, base);
    } catch (error) {
      if (!(error instanceof StoreSpecError)) throw error;
      problems.push(`store ${error.message}`);
    }
  }

  const maxQueuedRuns = r.int(limits.max_queued_runs, 'limits.max_queued_runs', 1000, 1, 1e9);
  const config: ExecutorConfig = {
    host: r.string(server.host, 'server.host', '127.0.0.1'),
    port: r.int(server.port, 'server.port', 8080, 0, 65535),
    publicUrl: r.url(server.public_url, 'server.public_url'),
    sessionPages: r.oneOf<'link' | 'sign-in'>(
      server.session_pages,
      'server.session_pages',
      ['link', 'sign-in'],
      'link'
    ),
    dataDir,
    store,
    workers,
    leaseMs: r.duration(root.lease, 'lease', 30_000),
    shutdownGraceMs: r.duration(root.shutdown_grace, 'shutdown_grace', 30_000),
    logLevel: r.oneOf<ExecutorConfig['logLevel']>(
      root.log_level,
      'log_level',
      ['fatal', 'error', 'warn', 'info', 'debug', 'silent'],
      'info'
    ),
    logFormat: r.oneOf<LogFormat>(root.log_format, 'log_format', ['auto', 'text', 'json'], 'auto'),
    workspaces: {
      retentionMs: r.duration(workspaces.retention, 'workspaces.retention', 3_600_000, true),
      continueForMs: r.duration(workspaces.continue_for, 'workspaces.continue_for', 86_400_000, true),
      quotaBytes: r.size(workspaces.quota, 'workspaces.quota', 2 * 1024 ** 3),
      maxFiles: r.int(workspaces.max_files, 'workspaces.max_files', 200_000, 100, 1e9),
      maxPatchBytes: r.size(workspaces.max_patch, 'workspaces.max_patch', 50 * 1024 ** 2),
      minFreeBytes: r.size(workspaces.min_free, 'workspaces.min_free', 1024 ** 3),
      minFreeInodes: r.int(
        workspaces.min_free_inodes,
        'workspaces.min_free_inodes',
        DEFAULT_MIN_FREE_INODES,
        0,
        1e9
      ),
      cacheBytes: r.size(workspaces.cache_size, 'workspaces.cache_size', 10 * 1024 ** 3)
    },
    limits: {
      maxBodyBytes: r.int(limits.max_body_bytes, 'limits.max_body_bytes', 1024 * 1024, 1024, 1 << 30),
      maxPromptBytes: r.int(limits.max_prompt_bytes, 'limits.max_prompt_bytes', 64 * 1024, 1, 1 << 30),
      rateLimitPerMinute: r.int(limits.rate_limit_per_minute, 'limits.rate_limit_per_minute', 600, 0, 1e9),
      maxQueuedRuns,
      maxQueuedRunsPerTeam: perTeamQueueLimit(r, limits.max_queued_runs_per_team, maxQueuedRuns),
      maxRunningRunsPerTeam: r.int(
        limits.max_running_runs_per_team,
        'limits.max_running_runs_per_team',
        0,
        0,
        1e9
      ),
      maxSchedulesPerTeam: r.int(limits.max_schedules_per_team, 'limits.max_schedules_per_team', 100, 1, 1e6),
      retentionDays: r.int(limits.retention_days, 'limits.retention_days', 30, 1, 36500),
      transcriptBytes: transcriptLimit(r, limits.transcript),
      maxStreamsPerKey: r.int(limits.max_streams_per_key, 'limits.max_streams_per_key', 20, 1, 1e6),
      maxStreams: r.int(limits.max_streams, 'limits.max_streams', 2000, 1, 1e7),
      streamHeartbeatMs: r.duration(limits.stream_heartbeat, 'limits.stream_heartbeat', 15_000),
      streamBufferBytes: r.size(limits.stream_buffer, 'limits.stream_buffer', 1024 ** 2)
    },
    webhooks: parseWebhooks(root.webhooks, r),
    environments: [],
    auth: parseAuth(r, root.auth)
  };

  if (root.environments === undefined) {
    config.environments.push(defaultEnvironment(base, workers));
  } else if (!Array.isArray(root.environments) || root.environments.length === 0) {
    problems.push(`environments: expected a non-empty list of environments, got ${show(root.environments)}`);
  } else {
    const seen = new Set<string>();
    root.environments.forEach((item, index) => {
      const env = parseEnvironment(r, item, `environments[${index}]`, base, workers);
      if (seen.has(env.id)) problems.push(`environments[${index}].id ${show(env.id)}: the id is used twice`);
      seen.add(env.id);
      config.environments.push(env);
    });
    checkOrchestrateEnvironments(config.environments, problems);
  }
  if (problems.length > 0) {
    throw new ConfigError(
      `${where}: ${problems.length === 1 ? problems[0] : `\n- ${problems.join('\n- ')}`}`
    );
  }
  return config;
}

/** The smallest `limits.transcript`: room for a head, a tail and the note between them. */
export const MIN_TRANSCRIPT_BYTES = 64 * 1024;

function transcriptLimit(r: ConfigReader, value: unknown): number {
  const bytes = r.size(value, 'limits.transcript', 16 * 1024 ** 2);
  if (bytes >= MIN_TRANSCRIPT_BYTES) return bytes;
  r.problems.push(`limits.transcript ${show(value)}: expected at least 64KiB, such as 16MiB`);
  return MIN_TRANSCRIPT_BYTES;
}

/**
 * `limits.max_queued_runs_per_team`: by default a tenth of the node's queue, at least 100 (so a
 * team of a small executor is not held to a handful) and never more than the node's limit; a
 * value above the node's limit could never be reached, so it is refused.
 */
function perTeamQueueLimit(r: ConfigReader, value: unknown, maxQueuedRuns: number): number {
  const key = 'limits.max_queued_runs_per_team';
  const fallback = Math.min(maxQueuedRuns, Math.max(100, Math.floor(maxQueuedRuns / 10)));
  const limit = r.int(value, key, fallback, 1, 1e9);
  if (limit <= maxQueuedRuns) return limit;
  r.problems.push(
    `${key} ${show(value)}: expected at most limits.max_queued_runs (${maxQueuedRuns}), the node's own queue`
  );
  return maxQueuedRuns;
}

function defaultEnvironment(base: string, workers: number): EnvironmentConfig {
  return {
    id: 'local',
    name: 'Local directory (simulated agent)',
    source: base,
    setup: [],
    setupCache: false,
    agent: { kind: 'simulated' },
    env: [],
    timeoutMs: 30 * 60_000,
    maxConcurrentRuns: workers,
    sandbox: { ...DEFAULT_SANDBOX },
    orchestrateEnvironments: []
  };
}

function parseEnvironment(
  r: ConfigReader,
  raw: unknown,
  at: string,
  base: string,
  workers: number
): EnvironmentConfig {
  const env = r.object(raw, at);
  r.known(env, at, [
    'id',
    'name',
    'source',
    'setup',
    'setup_cache',
    'agent',
    'env',
    'timeout',
    'max_concurrent_runs',
    'sandbox',
    'publish',
    'orchestrate_environments',
    'image',
    'image_pull'
  ]);
  const id = r.string(env.id, `${at}.id`, '');
  if (!/^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/.test(id)) {
    r.problems.push(`${at}.id ${show(env.id)}: expected 1–64 letters, digits, '.', '_' or '-'`);
  }
  const agent = r.object(env.agent ?? { kind: 'simulated' }, `${at}.agent`);
  const kindProblems = r.problems.length;
  const kind = AGENT_KINDS.get(
    r.oneOf(agent.kind, `${at}.agent.kind`, [...AGENT_KINDS.keys()], 'simulated')
  )!;
  // An unknown kind is its one problem: its other keys belong to the kind meant, not to the default.
  const kindKnown = r.problems.length === kindProblems;
  if (kindKnown) r.known(agent, `${at}.agent`, ['kind', ...kind.keys]);
  const parsedAgent: AgentConfig = kindKnown
    ? kind.parse(agent, `${at}.agent`, r)
    : kind.parse({ kind: kind.kind }, `${at}.agent`, new ConfigReader([]));
  const names = r.strings(env.env, `${at}.env`);
  for (const name of names) {
    if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(name)) {
      r.problems.push(`${at}.env ${show(name)}: expected a variable name such as ANTHROPIC_API_KEY`);
    }
  }
  const sandbox = parseSandbox(env.sandbox, `${at}.sandbox`, r.problems);
  const image = imageOf(r, env.image, env.image_pull, at, base);
  if (image && !sandbox.enabled)
    r.problems.push(
      `${at}.image ${show(env.image)}: an image is the root of the run's sandbox; expected no \`sandbox: off\` with it`
    );
  return {
    id,
    name: r.string(env.name, `${at}.name`, id),
    source: sourceOf(r.string(env.source, `${at}.source`, '.'), base),
    setup: r.strings(env.setup, `${at}.setup`),
    setupCache: setupCacheOf(r, env.setup_cache, `${at}.setup_cache`),
    agent: parsedAgent,
    env: names,
    timeoutMs: r.duration(env.timeout, `${at}.timeout`, 30 * 60_000),
    maxConcurrentRuns: r.int(env.max_concurrent_runs, `${at}.max_concurrent_runs`, workers, 1, 256),
    sandbox,
    publish: parsePublish(env.publish, `${at}.publish`, r),
    orchestrateEnvironments: r.strings(env.orchestrate_environments, `${at}.orchestrate_environments`),
    ...(image ? { image } : {})
  };
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

/**
 * Each environment's `orchestrate_environments` names other environments of the file, once each:
 * an unknown id (with the ids there are) or a repeated one is a problem naming the entry.
 */
function checkOrchestrateEnvironments(environments: EnvironmentConfig[], problems: string[]): void {
  const ids = environments.map(env => env.id);
  environments.forEach((env, index) => {
    const seen = new Set<string>();
    for (const id of env.orchestrateEnvironments) {
      const at = `environments[${index}].orchestrate_environments ${show(id)}`;
      if (!ids.includes(id))
        problems.push(
          `${at}: expected the id of another environment of this file (${ids.join(', ')})${didYouMean(id, ids)}`
        );
      else if (id === env.id)
        problems.push(`${at}: an environment's own id is always allowed; list only other environments`);
      else if (seen.has(id)) problems.push(`${at}: the id is listed twice`);
      seen.add(id);
    }
  });
}

/** `image` (a skopeo reference; a relative oci:/docker-archive: path is from the config's folder) and `image_pull`. */
function imageOf(
  r: ConfigReader,
  value: unknown,
  pull: unknown,
  at: string,
  base: string
): ImageConfig | undefined {
  const mode = r.oneOf<'missing' | 'always'>(pull, `${at}.image_pull`, ['missing', 'always'], 'missing');
  if (value === undefined || value === null) {
    if (pull !== undefined && pull !== null)
      r.problems.push(
        `${at}.image_pull ${show(pull)}: only with an \`image\`; expected it removed or an image set`
      );
    return undefined;
  }
  const text = typeof value === 'string' ? value.trim() : '';
  const hostStore = HOST_STORE_TRANSPORTS.find(prefix => text.startsWith(prefix));
  if (hostStore) {
    r.problems.push(
      `${at}.image ${show(value)}: images are copied by an unprivileged user that does not reach the host's ${hostStore === 'docker-daemon:' ? 'Docker daemon' : 'container storage'}; expected the image saved first (\`skopeo copy ${hostStore}NAME:TAG oci:/srv/images/NAME:TAG\`) and named as oci:/srv/images/NAME:TAG`
    );
    return undefined;
  }
  const transport = IMAGE_TRANSPORTS.find(prefix => text.startsWith(prefix));
  if (!transport || text.length === transport.length || text.length > 1024 || UNPRINTABLE.test(text)) {
    r.problems.push(`${at}.image ${show(value)}: ${IMAGE_FORMS}`);
    return undefined;
  }
  let ref = text;
  if (['oci:', 'oci-archive:', 'docker-archive:'].includes(transport)) {
    const rest = text.slice(transport.length);
    if (!rest.startsWith('/')) ref = transport + resolve(base, rest);
  }
  return { ref, pull: mode };
}

function setupCacheOf(r: ConfigReader, value: unknown, at: string): boolean {
  if (value === undefined || value === null) return false;
  if (typeof value === 'boolean') return value;
  r.problems.push(`${at} ${show(value)}: expected true or false`);
  return false;
}

/** A git URL (`https://…`, `ssh://…`, `file://…`, `git@host:repo`) or a path. */
export function isRemoteSource(source: string): boolean {
  return /^[a-z][a-z0-9+.-]*:\/\//i.test(source) || /^[\w.-]+@[\w.-]+:/.test(source);
}

function sourceOf(source: string, base: string): string {
  return isRemoteSource(source) ? source : resolve(base, source);
}
