// The `sandbox:` key of an environment, parsed on its own so config.ts only calls it: how a run's
// processes are confined (network, extra paths, memory and process limits), or `sandbox: off`.
// Its keys are declared once below as a TypeBox schema annotated as config/schema-kit.ts reads it
// (this room stands below config/, so the annotations are written out here rather than built).
// Also the start-up rule on its extra paths: none may show a run the executor's data dir.

import { existsSync, readlinkSync, realpathSync } from 'node:fs';
import { basename, dirname, isAbsolute, join, resolve, sep } from 'node:path';
import Type, { type Static } from 'typebox';
import { didYouMean } from '../../api/index.js';
import { userSpecProblem } from './user.js';

export interface NetworkTarget {
  host: string;
  port: number;
}

/** A key's annotations, the shape config/schema-kit.ts's KeyInfo gives them. */
function about(key: string, doc: string, form: string, fallback?: string, range?: string) {
  return {
    config: { key, doc, form, ...(fallback === undefined ? {} : { fallback }), ...(range ? { range } : {}) }
  };
}

/** The range of `processes`. */
const PROCESSES = [8, 1_000_000] as const;

/** The keys of a `sandbox:` mapping, by the property each sets. */
export const SANDBOX_KEYS = Type.Object({
  /** `none`: loopback of its own only; `host`: the host's network; a list: those host:port only. */
  network: Type.Unsafe<'none' | 'host' | NetworkTarget[]>(
    about(
      'network',
      "none: a loopback of its own only; host: the host's network; a list: only those host:port",
      'none, host or a list of host:port',
      'none'
    )
  ),
  read: Type.Array(
    Type.String(),
    about(
      'read',
      'extra paths visible read-only (where an agent CLI is installed, say)',
      'a list of absolute paths',
      '[]'
    )
  ),
  write: Type.Array(
    Type.String(),
    about(
      'write',
      "extra writable paths (a root executor's runs write there as sandbox.user: make them its)",
      'a list of absolute paths',
      '[]'
    )
  ),
  memoryBytes: Type.Integer(
    about(
      'memory',
      "memory of the run's processes (cgroup)",
      'a size (KB, MB, GB, KiB, MiB, GiB)',
      '4GiB',
      'at least 16MiB'
    )
  ),
  processes: Type.Integer({
    minimum: PROCESSES[0],
    maximum: PROCESSES[1],
    ...about('processes', 'processes at once (cgroup)', 'a whole number', '512', `${PROCESSES.join(' to ')}`)
  }),
  /** When true, a machine where no cgroup can be made refuses this environment at start-up. */
  requireLimits: Type.Boolean(
    about('require_limits', 'true: refuse to start where no cgroup can be made', 'true or false', 'false')
  ),
  /** The host user of the run's processes when the executor is root (sandbox/user.ts); unset: agent-run. */
  user: Type.Optional(
    Type.String(
      about(
        'user',
        'host user of the runs when the executor is root, never root (created with useradd --system when missing)',
        'a name or uid[:gid]',
        'agent-run'
      )
    )
  )
});

export type SandboxConfig = Static<typeof SANDBOX_KEYS> & {
  /** False only when the environment says `sandbox: off`. */
  enabled: boolean;
};

/** The YAML names of the keys, in order. */
const KEYS = Object.values(SANDBOX_KEYS.properties).map(
  property => (property as unknown as ReturnType<typeof about>).config.key
);

export const DEFAULT_SANDBOX: SandboxConfig = {
  enabled: true,
  network: 'none',
  read: [],
  write: [],
  memoryBytes: 4 * 1024 ** 3,
  processes: 512,
  requireLimits: false
};

const SIZE_UNITS: Record<string, number> = {
  b: 1,
  kb: 1e3,
  mb: 1e6,
  gb: 1e9,
  kib: 1024,
  mib: 1024 ** 2,
  gib: 1024 ** 3
};

/** Bytes of a size such as 512MiB or 4GiB; undefined when the text is not one. */
export function parseSize(value: unknown): number | undefined {
  const match = /^(\d+(?:\.\d+)?)\s*(B|KB|MB|GB|KiB|MiB|GiB)?$/i.exec(String(value).trim());
  if (!match) return undefined;
  const bytes = Math.round(Number(match[1]) * SIZE_UNITS[(match[2] ?? 'b').toLowerCase()]!);
  return bytes > 0 ? bytes : undefined;
}

function show(value: unknown): string {
  const text = JSON.stringify(value) ?? String(value);
  return text.length > 60 ? `${text.slice(0, 60)}…` : text;
}

/** Reads `<at>` (an environment's `sandbox:`), pushing each problem with the key, value and expected form. */
export function parseSandbox(raw: unknown, at: string, problems: string[]): SandboxConfig {
  if (raw === undefined || raw === null) return { ...DEFAULT_SANDBOX };
  // YAML 1.2 reads `off` as a string; `false` is accepted as the same thing.
  if (raw === 'off' || raw === false) return { ...DEFAULT_SANDBOX, enabled: false };
  if (typeof raw !== 'object' || Array.isArray(raw)) {
    problems.push(
      `${at} ${show(raw)}: expected off or a mapping (network, read, write, memory, processes, user)`
    );
    return { ...DEFAULT_SANDBOX };
  }
  const object = raw as Record<string, unknown>;
  for (const key of Object.keys(object))
    if (!KEYS.includes(key))
      problems.push(`${at}.${key}: unknown key; expected one of ${KEYS.join(', ')}${didYouMean(key, KEYS)}`);
  const config: SandboxConfig = { ...DEFAULT_SANDBOX };
  config.network = parseNetwork(object.network, `${at}.network`, problems);
  config.read = paths(object.read, `${at}.read`, problems);
  config.write = paths(object.write, `${at}.write`, problems);
  if (object.memory !== undefined && object.memory !== null) {
    const bytes = parseSize(object.memory);
    if (bytes === undefined || bytes < 16 * 1024 ** 2)
      problems.push(`${at}.memory ${show(object.memory)}: expected a size of at least 16MiB, e.g. 4GiB`);
    else config.memoryBytes = bytes;
  }
  if (object.processes !== undefined && object.processes !== null) {
    const n = object.processes;
    const [min, max] = PROCESSES;
    if (typeof n !== 'number' || !Number.isInteger(n) || n < min || n > max)
      problems.push(`${at}.processes ${show(n)}: expected a whole number from ${min} to ${max}`);
    else config.processes = n;
  }
  if (object.require_limits !== undefined && object.require_limits !== null) {
    if (typeof object.require_limits !== 'boolean')
      problems.push(`${at}.require_limits ${show(object.require_limits)}: expected true or false`);
    else config.requireLimits = object.require_limits;
  }
  if (object.user !== undefined && object.user !== null) {
    const problem = userSpecProblem(object.user);
    if (problem) problems.push(`${at}.user ${show(object.user)}: ${problem}`);
    else config.user = String(object.user);
  }
  return config;
}

function parseNetwork(value: unknown, at: string, problems: string[]): SandboxConfig['network'] {
  if (value === undefined || value === null || value === 'none') return 'none';
  if (value === 'host') return 'host';
  const expected = 'expected none, host or a list of host:port such as [api.anthropic.com:443]';
  if (!Array.isArray(value)) {
    problems.push(`${at} ${show(value)}: ${expected}`);
    return 'none';
  }
  const targets: NetworkTarget[] = [];
  for (const item of value) {
    const match = /^(\[[0-9a-f:.]+\]|[A-Za-z0-9.-]+):(\d{1,5})$/.exec(String(item).trim());
    const port = Number(match?.[2]);
    if (!match || port < 1 || port > 65535) {
      problems.push(`${at} ${show(item)}: ${expected}`);
      continue;
    }
    targets.push({ host: match[1]!.replace(/^\[|\]$/g, '').toLowerCase(), port });
  }
  return targets;
}

function paths(value: unknown, at: string, problems: string[]): string[] {
  if (value === undefined || value === null) return [];
  if (!Array.isArray(value) || !value.every(item => typeof item === 'string' && isAbsolute(item))) {
    problems.push(`${at} ${show(value)}: expected a list of absolute paths such as [/opt/tools]`);
    return [];
  }
  return value as string[];
}

/**
 * `path` with every symbolic link resolved, also in a part that does not exist yet (a dangling link
 * is followed to where it leads); beyond 40 links, the path as it is.
 */
export function realPath(path: string, links = 0): string {
  let existing = resolve(path);
  const rest: string[] = [];
  while (!existsSync(existing) && dirname(existing) !== existing) {
    let target: string | undefined;
    try {
      target = readlinkSync(existing);
    } catch {
      // not a link: a part yet to be made
    }
    if (target !== undefined && links < 40)
      return realPath(join(resolve(dirname(existing), target), ...rest), links + 1);
    rest.unshift(basename(existing));
    existing = dirname(existing);
  }
  try {
    return join(realpathSync(existing), ...rest);
  } catch {
    return resolve(path);
  }
}

function within(path: string, dir: string): boolean {
  return path === dir || path.startsWith(dir.endsWith(sep) ? dir : dir + sep);
}

/**
 * Every `sandbox.read` or `sandbox.write` path that would show a run the data dir (its database
 * holds every team's prompts and the link secrets): one that contains the data dir or lies inside
 * it, compared as real paths. A writable path is bound after the data dir is hidden, so it would
 * uncover the data dir; a read-only path inside it is bound again over the hiding. A writable path
 * that contains the config file, or any path that is the config file, is refused the same way.
 */
export function sandboxPathProblems(
  environments: readonly { id: string; sandbox: SandboxConfig }[],
  dataDir: string,
  configFile?: string
): string[] {
  const data = realPath(dataDir);
  const config = configFile === undefined ? undefined : realPath(configFile);
  const problems: string[] = [];
  for (const env of environments) {
    if (!env.sandbox.enabled) continue;
    for (const key of ['read', 'write'] as const) {
      for (const path of env.sandbox[key]) {
        const real = realPath(path);
        const at = `environment ${JSON.stringify(env.id)}: sandbox.${key} ${JSON.stringify(path)}${real === resolve(path) ? '' : ` (${real})`}`;
        const rule =
          'a run must never see the data dir; expected a path that neither contains the data dir nor lies inside it';
        if (within(data, real))
          problems.push(
            `${at}: contains the data dir ${data}, whose database holds every prompt and the link secrets; ${rule}`
          );
        else if (within(real, data)) problems.push(`${at}: lies inside the data dir ${data}; ${rule}`);
        else if (config !== undefined && (real === config || (key === 'write' && within(config, real))))
          problems.push(
            `${at}: ${real === config ? 'is' : 'contains'} the config file ${config}, which runs must not see; expected a path that ${key === 'write' ? 'does not contain it' : 'is not it'}`
          );
      }
    }
  }
  return problems;
}
