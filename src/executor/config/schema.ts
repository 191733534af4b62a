// The executor's configuration, declared once: every key of agent-executor.yaml as an entry of this
// schema (schema-kit.ts), in the order the file's mappings list them. The parsed ExecutorConfig is
// its Static type; the known keys, the defaults, the ranges, the messages and the reference in
// docs/configuration.md (reference.ts) are all read from it. A new key is one entry here (or in the
// mapping's own file: environment.ts, publish-config.ts, webhooks-config.ts, auth-config.ts,
// sandbox/config.ts).

import { resolve } from 'node:path';
import type { Static } from 'typebox';
import { didYouMean } from '../../api/index.js';
import { type StoreSpec, StoreSpecError, parseStoreSpec } from '../store/location.js';
import type { LogFormat } from '../telemetry/log-format.js';
import { show } from '../values/config-reader.js';
import { AUTH } from './auth-config.js';
import { ENVIRONMENT, type EnvironmentConfig, defaultEnvironment } from './environment.js';
import {
  type Read,
  choice,
  custom,
  duration,
  int,
  link,
  readMapping,
  section,
  size,
  text
} from './schema-kit.js';
import { WEBHOOKS } from './webhooks-config.js';

/**
 * `workspaces.min_free_inodes` unless set: as many inodes as ext4 gives the default `min_free`
 * (1 GiB at its default of one inode per 16 KiB), so on such a file system the two floors agree;
 * room for the checkout of a repository of tens of thousands of files.
 */
export const DEFAULT_MIN_FREE_INODES = 65_536;

/** The smallest `limits.transcript`: room for a head, a tail and the note between them. */
export const MIN_TRANSCRIPT_BYTES = 64 * 1024;

/** `store`: a location string, SQLite in the data dir unless set. */
const readStore: Read = (value, _at, { r, base, done }) => {
  const dataDir = done.dataDir as string;
  if (value === undefined || value === null) return parseStoreSpec(undefined, dataDir, base);
  try {
    if (typeof value !== 'string') throw new StoreSpecError(`${show(value)}: expected a string`);
    return parseStoreSpec(value, dataDir, base);
  } catch (error) {
    if (!(error instanceof StoreSpecError)) throw error;
    r.problems.push(`store ${error.message}`);
    return parseStoreSpec(undefined, dataDir, base);
  }
};

/** `limits.transcript`: a size of at least MIN_TRANSCRIPT_BYTES. */
const readTranscript: Read = (value, at, { r }) => {
  const bytes = r.size(value, at, 16 * 1024 ** 2);
  if (bytes >= MIN_TRANSCRIPT_BYTES) return bytes;
  r.problems.push(`${at} ${show(value)}: expected at least 64KiB, such as 16MiB`);
  return MIN_TRANSCRIPT_BYTES;
};

/**
 * `limits.max_queued_runs_per_team`: by default a tenth of the node's queue, at least 100 (so a
 * team of a small executor is not held to a handful) and never more than the node's limit; a
 * value above the node's limit could never be reached, so it is refused.
 */
const readPerTeamQueue: Read = (value, at, { r, done }) => {
  const maxQueuedRuns = done.maxQueuedRuns as number;
  const fallback = Math.min(maxQueuedRuns, Math.max(100, Math.floor(maxQueuedRuns / 10)));
  const limit = r.int(value, at, fallback, 1, 1e9);
  if (limit <= maxQueuedRuns) return limit;
  r.problems.push(
    `${at} ${show(value)}: expected at most limits.max_queued_runs (${maxQueuedRuns}), the node's own queue`
  );
  return maxQueuedRuns;
};

/** `environments`: a non-empty list of environments of distinct ids; absent: `local` alone. */
const readEnvironments: Read = (value, at, ctx) => {
  const { r, base, root } = ctx;
  if (value === undefined) return [defaultEnvironment(base, root.workers as number)];
  if (!Array.isArray(value) || value.length === 0) {
    r.problems.push(`${at}: expected a non-empty list of environments, got ${show(value)}`);
    return [];
  }
  const seen = new Set<string>();
  const environments = value.map((item: unknown, index: number) => {
    const env = readMapping(ENVIRONMENT, item, `${at}[${index}]`, ctx) as EnvironmentConfig;
    if (seen.has(env.id)) r.problems.push(`${at}[${index}].id ${show(env.id)}: the id is used twice`);
    seen.add(env.id);
    return env;
  });
  checkOrchestrateEnvironments(environments, r.problems);
  return environments;
};

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

const SERVER = section(
  'server',
  'where the HTTP server listens and how its links look',
  {
    host: text('host', 'the address to listen on', '127.0.0.1'),
    port: int('port', 'the port to listen on; 0 picks a free one', 8080, 0, 65535),
    publicUrl: link('public_url', 'the base of session links; unset: the address it listens on'),
    sessionPages: choice(
      'session_pages',
      "who may open a session page: link (anyone holding it: a bearer capability for the transcript and the run's downloads) or sign-in (the link and a dashboard sign-in of the run's team)",
      ['link', 'sign-in'],
      'link'
    )
  },
  { flat: true }
);

const WORKSPACES = section(
  'workspaces',
  "runs' workspaces: how long they are kept and how much they may hold",
  {
    retentionMs: duration(
      'retention',
      "a finished run's workspace is removed this long after the run (0s: at once)",
      3_600_000,
      true
    ),
    continueForMs: duration(
      'continue_for',
      'how long after it ended a run can still be continued by a follow-up (its workspace and HOME are kept); after it, 409',
      86_400_000,
      true
    ),
    quotaBytes: size(
      'quota',
      'disk one run may write (its own layer of the workspace, its output folder, a harness HOME); past it: workspace_quota_exceeded',
      2 * 1024 ** 3
    ),
    maxFiles: int(
      'max_files',
      'files, directories and links one run may make (the same trees as quota); past it: workspace_quota_exceeded',
      200_000,
      100,
      1e9
    ),
    maxPatchBytes: size(
      'max_patch',
      'the largest changes.patch; a larger one fails the run (patch_too_large), never cut',
      50 * 1024 ** 2
    ),
    minFreeBytes: size(
      'min_free',
      "below this free space on the data dir's file system, unused shared checkouts and setup layers are removed; still below it, the node claims no run and /readyz answers 503",
      1024 ** 3
    ),
    minFreeInodes: int(
      'min_free_inodes',
      'below this many free inodes there the node claims no run either and /readyz answers 503 (0: not checked; btrfs is not)',
      DEFAULT_MIN_FREE_INODES,
      0,
      1e9
    ),
    cacheBytes: size(
      'cache_size',
      'how much unused shared checkouts and setup layers may weigh together (unpacked images counted apart), least recently used removed first; a larger image is refused',
      10 * 1024 ** 3
    )
  }
);

const LIMITS = section('limits', 'bounds of requests, queues, transcripts and event streams', {
  maxBodyBytes: int('max_body_bytes', 'larger request bodies get 413', 1024 * 1024, 1024, 1 << 30),
  maxPromptBytes: int('max_prompt_bytes', 'longer prompts get 422 prompt_too_large', 64 * 1024, 1, 1 << 30),
  rateLimitPerMinute: int(
    'rate_limit_per_minute',
    'requests per key per minute (0: no limit); over it: 429 with Retry-After',
    600,
    0,
    1e9
  ),
  maxQueuedRuns: int(
    'max_queued_runs',
    'QUEUED runs at most; over it: 429 resource_unavailable',
    1000,
    1,
    1e9
  ),
  maxQueuedRunsPerTeam: custom<number>(
    'max_queued_runs_per_team',
    'QUEUED runs of one team at most; over it: 429 resource_unavailable naming this key',
    'a whole number',
    readPerTeamQueue,
    {
      fallback: 'a tenth of max_queued_runs, at least 100, at most max_queued_runs',
      range: '1 to max_queued_runs'
    }
  ),
  maxRunningRunsPerTeam: int(
    'max_running_runs_per_team',
    'INPROGRESS runs of one team at once, across every node of the store (0: no cap); a team at it waits, other teams go',
    0,
    0,
    1e9
  ),
  maxSchedulesPerTeam: int(
    'max_schedules_per_team',
    'schedules of one team (paused ones count); one more: 409 schedule_limit_reached',
    100,
    1,
    1e6
  ),
  retentionDays: int(
    'retention_days',
    'finished runs (their transcripts and idempotency keys too) are pruned after this many days',
    30,
    1,
    36500
  ),
  transcriptBytes: custom<number>(
    'transcript',
    "bytes of one run's stored transcript; past half of it only the last half of the output is kept: head, a truncated event, tail",
    'a size (KiB, MiB, GiB, TiB)',
    readTranscript,
    { fallback: '16MiB', range: 'at least 64KiB' }
  ),
  maxStreamsPerKey: int(
    'max_streams_per_key',
    'event streams one key may hold open on this node; one more: 429 too_many_streams',
    20,
    1,
    1e6
  ),
  maxStreams: int(
    'max_streams',
    'event streams this node holds open, of every key; one more: 429 too_many_streams',
    2000,
    1,
    1e7
  ),
  streamHeartbeatMs: duration(
    'stream_heartbeat',
    'a stream silent this long gets a comment line; a reader that takes nothing sent for this long is cut',
    15_000
  ),
  streamBufferBytes: size(
    'stream_buffer',
    'bytes a stream may have waiting for a slow reader; past it the reader is cut between two messages',
    1024 ** 2
  )
});

/** The top level of agent-executor.yaml. */
export const EXECUTOR_SCHEMA = section('', 'agent-executor.yaml', {
  server: SERVER,
  dataDir: custom<string>(
    'data_dir',
    'the database and workspaces, relative to the file',
    'a path',
    (value, at, { r, base }) => resolve(base, r.string(value, at, '.agent-executor')),
    { fallback: '.agent-executor' }
  ),
  /** Where keys, runs and transcripts live: SQLite in the data dir unless set. */
  store: custom<StoreSpec>(
    'store',
    'where keys, runs and transcripts live (a URL with a password is better kept in AGENT_EXECUTOR_STORE)',
    'sqlite:PATH or postgres://USER:PASSWORD@HOST:PORT/DATABASE',
    readStore,
    { fallback: 'sqlite:DATA_DIR/executor.db' }
  ),
  workers: int('workers', 'runs executed at once, across all environments', 4, 1, 256),
  leaseMs: duration('lease', "a running run's lease, renewed every third of it", 30_000),
  shutdownGraceMs: duration('shutdown_grace', 'how long running runs may finish after SIGTERM', 30_000),
  logLevel: choice(
    'log_level',
    'the least severe log lines written (to stderr)',
    ['fatal', 'error', 'warn', 'info', 'debug', 'silent'],
    'info'
  ),
  logFormat: choice<LogFormat>(
    'log_format',
    'auto: text on a terminal, JSON lines otherwise',
    ['auto', 'text', 'json'],
    'auto'
  ),
  workspaces: WORKSPACES,
  limits: LIMITS,
  webhooks: WEBHOOKS,
  environments: custom<EnvironmentConfig[]>(
    'environments',
    'the environments runs are made in; unset: local, the current directory with the simulated agent',
    'a non-empty list of environments',
    readEnvironments,
    { fallback: 'local', inner: ENVIRONMENT, list: true }
  ),
  auth: AUTH
});

/** The parsed configuration: the schema's keys, those of `server:` at the top (flat). */
export type ExecutorConfig = Omit<Static<typeof EXECUTOR_SCHEMA>, 'server'> &
  Static<typeof SERVER> & {
    /** The config file read, hidden from runs' sandboxes. */
    configFile?: string;
  };
