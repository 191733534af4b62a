// One entry of `environments:` declared as a schema (schema-kit.ts): what a run is made from (its
// source, setup and image), which agent runs it, and how it is confined and published. Each key's
// reader here checks what the generic forms do not: the id's form, variable names, the agent kind's
// own keys, a skopeo image reference.

import { resolve } from 'node:path';
import Type, { type Static } from 'typebox';
import { AGENT_KINDS, type AgentConfig } from '../agents/index.js';
import { DEFAULT_SANDBOX, SANDBOX_KEYS, type SandboxConfig, parseSandbox } from '../sandbox/config.js';
import { ConfigReader, show } from '../values/config-reader.js';
import { PUBLISH } from './publish-config.js';
import { type KeyInfo, type Read, custom, duration, flag, list } from './schema-kit.js';

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

/** What the reference says of the agent kinds' own keys (the kinds declare only their names). */
const AGENT_KEY_DOCS: Record<string, string> = {
  command:
    'the program and its arguments; {prompt} in an argument is replaced by the prompt (a harness: the CLI to run)',
  prompt: 'how the prompt reaches a command: stdin (default) or arg (replaces {prompt}, or is appended)',
  model: "the harness CLI's model",
  args: 'more arguments of the harness CLI',
  max_cost_usd: 'a harness run stops past this cost in US dollars (above 0)'
};

/** A git URL (`https://…`, `ssh://…`, `file://…`, `git@host:repo`) or a path. */
export function isRemoteSource(source: string): boolean {
  return /^[a-z][a-z0-9+.-]*:\/\//i.test(source) || /^[\w.-]+@[\w.-]+:/.test(source);
}

/** `id`: required, 1–64 letters, digits, '.', '_' or '-'. */
const readId: Read = (value, at, { r }) => {
  const id = r.string(value, at, '');
  if (!/^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/.test(id))
    r.problems.push(`${at} ${show(value)}: expected 1–64 letters, digits, '.', '_' or '-'`);
  return id;
};

/**
 * `agent`: its kind, then the kind's own keys. An unknown kind is its one problem: its other keys
 * belong to the kind meant, not to the default.
 */
const readAgent: Read = (value, at, { r }) => {
  const agent = r.object(value ?? { kind: 'simulated' }, at);
  const kindProblems = r.problems.length;
  const kind = AGENT_KINDS.get(r.oneOf(agent.kind, `${at}.kind`, [...AGENT_KINDS.keys()], 'simulated'))!;
  if (r.problems.length !== kindProblems) return kind.parse({ kind: kind.kind }, at, new ConfigReader([]));
  r.known(agent, at, ['kind', ...kind.keys]);
  return kind.parse(agent, at, r);
};

/** `env`: names of variables. */
const readEnv: Read = (value, at, { r }) => {
  const names = r.strings(value, at);
  for (const name of names)
    if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(name))
      r.problems.push(`${at} ${show(name)}: expected a variable name such as ANTHROPIC_API_KEY`);
  return names;
};

/** `image` (a skopeo reference; a relative oci:/docker-archive: path is from the config's folder) with `image_pull`. */
const readImage: Read = (value, at, { r, raw, done, base }) => {
  const pull = raw.image_pull;
  const mode = r.oneOf<'missing' | 'always'>(pull, `${at}_pull`, ['missing', 'always'], 'missing');
  if (value === undefined || value === null) {
    if (pull !== undefined && pull !== null)
      r.problems.push(
        `${at}_pull ${show(pull)}: only with an \`image\`; expected it removed or an image set`
      );
    return undefined;
  }
  const ref = imageRef(r, value, at, base);
  if (ref !== undefined && !(done.sandbox as SandboxConfig).enabled)
    r.problems.push(
      `${at} ${show(value)}: an image is the root of the run's sandbox; expected no \`sandbox: off\` with it`
    );
  return ref === undefined ? undefined : { ref, pull: mode };
};

/** The reference `value` names, a relative path resolved from `base`; undefined (with its problem) when none. */
function imageRef(r: ConfigReader, value: unknown, at: string, base: string): string | undefined {
  const text = typeof value === 'string' ? value.trim() : '';
  const hostStore = HOST_STORE_TRANSPORTS.find(prefix => text.startsWith(prefix));
  if (hostStore) {
    r.problems.push(
      `${at} ${show(value)}: images are copied by an unprivileged user that does not reach the host's ${hostStore === 'docker-daemon:' ? 'Docker daemon' : 'container storage'}; expected the image saved first (\`skopeo copy ${hostStore}NAME:TAG oci:/srv/images/NAME:TAG\`) and named as oci:/srv/images/NAME:TAG`
    );
    return undefined;
  }
  const transport = IMAGE_TRANSPORTS.find(prefix => text.startsWith(prefix));
  if (!transport || text.length === transport.length || text.length > 1024 || UNPRINTABLE.test(text)) {
    r.problems.push(`${at} ${show(value)}: ${IMAGE_FORMS}`);
    return undefined;
  }
  const rest = text.slice(transport.length);
  if (transport === 'docker://' || rest.startsWith('/')) return text;
  return transport + resolve(base, rest);
}

/** The rows the reference shows for the agent kinds' own keys. */
function agentKeys(): KeyInfo[] {
  const kinds = [...AGENT_KINDS.values()];
  const keys = [...new Set(kinds.flatMap(kind => kind.keys))];
  return keys.map(key => ({
    key,
    doc: `${AGENT_KEY_DOCS[key] ?? 'read by the kind'} (kinds: ${kinds
      .filter(kind => kind.keys.includes(key))
      .map(kind => kind.kind)
      .join(', ')})`,
    form: 'as the kind reads it'
  }));
}

/** One entry of `environments:`. */
export const ENVIRONMENT = Type.Object({
  id: custom<string>(
    'id',
    'the environment_id clients send (required)',
    "1–64 letters, digits, '.', '_' or '-'",
    readId
  ),
  name: custom<string>(
    'name',
    'the name clients are shown',
    'a string',
    (value, at, { r, done }) => r.string(value, at, done.id as string),
    { fallback: 'the id' }
  ),
  /** Absolute path of a directory or git repository each run's workspace is made from. */
  source: custom<string>(
    'source',
    'what each workspace is made from: a directory, a git repository or a git URL (https, http, ssh, git, file, git@host:repo), relative to the file',
    'a path or a git URL',
    (value, at, { r, base }) => {
      const source = r.string(value, at, '.');
      return isRemoteSource(source) ? source : resolve(base, source);
    },
    { fallback: '.' }
  ),
  setup: list('setup', 'shell commands run in the workspace before the agent, recorded in the transcript'),
  /** Whether the result of `setup` for one commit is kept as a shared read-only layer (workspace/setup-layers.ts). */
  setupCache: flag(
    'setup_cache',
    "true: keep the setup's result per commit and skip it in later runs (overlay workspaces)"
  ),
  agent: custom<AgentConfig>(
    'agent',
    'the agent that runs: {kind: simulated}, a command, or a harness',
    'a mapping with kind and its keys',
    readAgent,
    {
      fallback: '{kind: simulated}',
      more: [
        {
          key: 'kind',
          doc: 'the kind of agent: the simulated one, any command, or a harness CLI run natively (see Agent harnesses)',
          form: `one of ${[...AGENT_KINDS.keys()].join(', ')}`,
          fallback: 'simulated'
        },
        ...agentKeys()
      ]
    }
  ),
  /** Names of variables passed from the executor's own environment to the agent. */
  env: custom<string[]>(
    'env',
    "variables passed from the executor's own environment, by name (never from requests)",
    'a list of variable names',
    readEnv,
    {
      fallback: '[]'
    }
  ),
  timeoutMs: duration('timeout', 'per run; past it the run is FAILED with error_code timeout', 30 * 60_000),
  maxConcurrentRuns: custom<number>(
    'max_concurrent_runs',
    'runs of this environment at once',
    'a whole number',
    (value, at, { r, root }) => r.int(value, at, root.workers as number, 1, 256),
    { fallback: 'workers', range: '1 to 256' }
  ),
  sandbox: custom<SandboxConfig>(
    'sandbox',
    'how runs are confined (see The sandbox); off runs this environment unconfined',
    'off or a mapping',
    (value, at, { r }) => parseSandbox(value, at, r.problems),
    { fallback: 'on, network none', inner: SANDBOX_KEYS }
  ),
  /** Where a run's changes are pushed, and the pull request opened (config/publish-config.ts). */
  publish: Type.Optional(PUBLISH),
  orchestrateEnvironments: list(
    'orchestrate_environments',
    'other environments of this file an orchestrate run of this one may start child runs in (its own is always allowed)'
  ),
  /** The container image whose file system runs see as `/` (images/cache.ts); unset: the host's. */
  image: Type.Optional(
    custom<ImageConfig>(
      'image',
      "runs see this container image's file system as / (containers-storage: and docker-daemon: refused); unset: the host's",
      'oci:PATH[:TAG], oci-archive:PATH[:TAG], docker-archive:PATH or docker://NAME[:TAG]',
      readImage,
      {
        also: [
          {
            key: 'image_pull',
            doc: 'missing: copied once, then taken from the cache; always: copied again before each run',
            form: 'one of missing, always',
            fallback: 'missing'
          }
        ]
      }
    )
  )
});

export type EnvironmentConfig = Static<typeof ENVIRONMENT>;

/** The environment of a file without `environments:`: the config's folder with the simulated agent. */
export function defaultEnvironment(base: string, workers: number): EnvironmentConfig {
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
