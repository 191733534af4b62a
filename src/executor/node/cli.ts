// agent-executor: serve, keys, environments.

import { parseArgs } from 'node:util';
import { didYouMean } from '../../api/index.js';
import { formatDuration } from '../../common/duration.js';
import { table } from '../../common/table.js';
import { agentKindOf } from '../agents/index.js';
import { COMMANDS, type Command, USAGE, VERSION, commandHelp, splitCommand } from './cli-usage.js';
import { ConfigError, type ExecutorConfig, loadConfig } from '../config/config.js';
import { type KeyKind, issueKey } from '../store/keys.js';
import { type Role, startExecutor } from './serve.js';
import { openStore } from '../store/open.js';
import type { AccountStore } from '../store/types.js';
import { describeStore } from '../store/location.js';

class UsageError extends Error {}

const COMMON = {
  config: { type: 'string' },
  'data-dir': { type: 'string' },
  store: { type: 'string' },
  help: { type: 'boolean', short: 'h' },
  version: { type: 'boolean', short: 'V' }
} as const;

export async function main(argv: string[]): Promise<number> {
  const { command, args } = splitCommand(argv);
  const wantsHelp = args.includes('--help') || args.includes('-h');
  try {
    if (args.includes('--version') || args.includes('-V')) {
      console.log(`agent-executor ${VERSION}`);
      return 0;
    }
    switch (command) {
      case 'serve':
        return wantsHelp ? help('serve') : await serve(args);
      case 'keys':
        return wantsHelp ? help('keys') : await keys(args);
      case 'environments':
        return wantsHelp ? help('environments') : environments(args);
      case 'help': {
        const [topic] = args.filter(arg => !arg.startsWith('-'));
        if (topic !== undefined && !COMMANDS.includes(topic))
          throw new UsageError(
            `help ${JSON.stringify(topic)}: expected serve, keys or environments${didYouMean(topic, COMMANDS)}`
          );
        return help(topic as Command | undefined);
      }
      case undefined:
        if (!wantsHelp) {
          // Flags alone are checked, so a typo is named rather than met with the usage.
          parse(args, {});
          console.error(USAGE);
          return 2;
        }
        return help();
      default:
        throw new UsageError(
          `unknown command ${JSON.stringify(command)}; expected serve, keys or environments${didYouMean(command, COMMANDS)}`
        );
    }
  } catch (error) {
    if (error instanceof UsageError || error instanceof ConfigError) {
      console.error(`agent-executor: ${error.message}`);
      if (error instanceof UsageError) console.error('Run `agent-executor --help` for usage.');
      return 2;
    }
    console.error(`agent-executor: ${(error as Error).message}`);
    return 1;
  }
}

function parse<T extends Record<string, { type: 'string' | 'boolean'; short?: string }>>(
  args: string[],
  options: T,
  positionals = 0
) {
  try {
    const parsed = parseArgs({
      args,
      options: { ...COMMON, ...options },
      allowPositionals: positionals > 0,
      strict: true
    });
    if (parsed.positionals.length > positionals)
      throw new UsageError(`unexpected argument ${JSON.stringify(parsed.positionals[positionals])}`);
    return parsed;
  } catch (error) {
    if (error instanceof UsageError) throw error;
    const message = (error as Error).message.replace(/\. To specify a positional.*$/s, '');
    const unknown = /^Unknown option '(--[^'=]+)'/.exec(message)?.[1];
    const names = Object.keys({ ...COMMON, ...options }).map(name => `--${name}`);
    throw new UsageError(`${message}${unknown ? didYouMean(unknown, names) : ''}`);
  }
}

function configFrom(values: Record<string, unknown>): ExecutorConfig {
  let port: number | undefined;
  if (values.port !== undefined) {
    port = Number(values.port);
    if (!/^\d+$/.test(String(values.port)) || port > 65535) {
      throw new UsageError(`--port ${JSON.stringify(values.port)}: expected a port number from 0 to 65535`);
    }
  }
  return loadConfig({
    config: values.config as string | undefined,
    dataDir: values['data-dir'] as string | undefined,
    host: values.host as string | undefined,
    port,
    store: values.store as string | undefined
  });
}

async function serve(args: string[]): Promise<number> {
  const { values } = parse(args, {
    host: { type: 'string' },
    port: { type: 'string' },
    role: { type: 'string' }
  });
  const role = (values.role ?? 'all') as Role;
  if (!['all', 'api', 'worker'].includes(role))
    throw new UsageError(`--role ${JSON.stringify(values.role)}: expected all, api or worker`);
  const config = configFrom(values);
  const executor = await startExecutor(config, { role, lockDataDir: true }).catch((error: unknown) => {
    if ((error as NodeJS.ErrnoException).code !== 'EADDRINUSE') throw error;
    throw new Error(
      `port ${config.port} of ${config.host} is already in use by another program (another executor?); ` +
        'stop that one, give another port with --port PORT (or server.port in agent-executor.yaml), ' +
        'or --port 0 for any free port (the address is printed on the "listening on" line)'
    );
  });
  executor.app.log.info({ store: describeStore(config.store), role }, 'store opened');
  const unspecified = /^(0\.0\.0\.0|::|\[::\])$/.test(config.host);
  if (unspecified && config.publicUrl === undefined) {
    console.error(
      `warning: listening on every address (${config.host}), so session links start with ${executor.url}, ` +
        'which no browser can open; set server.public_url in agent-executor.yaml to the address clients use, ' +
        'e.g. public_url: https://agents.example.com'
    );
  }
  return new Promise(resolve => {
    let signals = 0;
    const shutdown = (signal: NodeJS.Signals) => {
      if (++signals > 1) {
        executor.app.log.warn('second signal: exiting now');
        process.exit(1);
      }
      executor.app.log.info(
        { signal },
        `stopping: running runs get up to ${config.shutdownGraceMs / 1000} s`
      );
      executor
        .stop()
        .then(() => {
          executor.app.log.info({ signal }, 'stopped');
          resolve(0);
        })
        .catch(error => {
          console.error(`agent-executor: stopping failed: ${(error as Error).message}`);
          resolve(1);
        });
    };
    process.on('SIGTERM', shutdown);
    process.on('SIGINT', shutdown);
    // Only now: a supervisor that signals as soon as it reads this line must find the handlers in place.
    console.log(`listening on ${executor.url}`);
  });
}

async function keys(args: string[]): Promise<number> {
  const parsed = parse(
    args,
    { kind: { type: 'string' }, name: { type: 'string' }, team: { type: 'string' } },
    2
  );
  const { values } = parsed;
  const [action, ...positionals] = parsed.positionals;
  if (positionals.length > (action === 'revoke' ? 1 : 0))
    throw new UsageError(`unexpected argument ${JSON.stringify(positionals.at(-1))}`);
  const config = configFrom(values);
  const store = await openStore(config.store);
  try {
    switch (action) {
      case 'create':
        return await createKey(store.accounts, values);
      case 'list':
        return await listKeys(store.accounts);
      case 'revoke':
        return await revokeKey(store.accounts, positionals[0]);
      default:
        throw new UsageError(
          `unknown keys command ${JSON.stringify(action ?? '')}; expected create, list or revoke${didYouMean(action ?? '', ['create', 'list', 'revoke'])}`
        );
    }
  } finally {
    await store.close();
  }
}

/** `keys create`: a new key of the team, printed once. */
async function createKey(
  accounts: Pick<AccountStore, 'createKey'>,
  values: { kind?: string; name?: string; team?: string }
): Promise<number> {
  // A person's key unless said otherwise: the usual first key, for the command line and the dashboard.
  const kind = (values.kind ?? 'personal') as KeyKind;
  if (kind !== 'personal' && kind !== 'agent') {
    throw new UsageError(
      `--kind ${JSON.stringify(values.kind)}: expected personal or agent${didYouMean(String(values.kind), ['personal', 'agent'])}`
    );
  }
  const name = (values.name ?? '').trim();
  if (name === '') throw new UsageError('--name: expected a name for the key, e.g. --name ci');
  const team = (values.team ?? 'default').trim();
  if (!/^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/.test(team)) {
    throw new UsageError(`--team ${JSON.stringify(team)}: expected 1–64 letters, digits, '.', '_' or '-'`);
  }
  const { raw, id } = await issueKey(accounts, { team, kind, name });
  console.log(`Created ${kind} key ${id} (${name}) for team ${team}. Copy it now: it is not shown again.`);
  console.log(raw);
  return 0;
}

/** `keys list`: every key, one a line, in columns like every other table of both command lines. */
async function listKeys(accounts: Pick<AccountStore, 'listKeys'>): Promise<number> {
  const listed = await accounts.listKeys();
  if (listed.length === 0) {
    console.log('No keys. Create one with: agent-executor keys create --kind personal --name NAME');
    return 0;
  }
  const rows = listed.map(key => {
    const status = key.revoked_at ? `revoked ${key.revoked_at}` : 'active';
    return [key.id, key.team, key.kind, key.name, key.hint, key.created_at, status];
  });
  console.log(table(['ID', 'TEAM', 'KIND', 'NAME', 'HINT', 'CREATED', 'STATUS'], rows));
  return 0;
}

/** `keys revoke ID`: the key refused from now on. */
async function revokeKey(accounts: Pick<AccountStore, 'revokeKey'>, id: string | undefined): Promise<number> {
  if (!id) throw new UsageError('keys revoke: expected the key id, e.g. keys revoke key_abc123');
  if (!(await accounts.revokeKey(id, new Date().toISOString()))) {
    throw new UsageError(`keys revoke: no active key with id ${JSON.stringify(id)} (see keys list)`);
  }
  console.log(`Revoked key ${id}.`);
  return 0;
}

function environments(args: string[]): number {
  const { values, positionals } = parse(args, {}, 1);
  const [action] = positionals;
  if (action !== 'list')
    throw new UsageError(
      `unknown environments command ${JSON.stringify(action ?? '')}; expected list${didYouMean(action ?? '', ['list'])}`
    );
  const config = configFrom(values);
  const rows = config.environments.map(env => [
    env.id,
    env.name,
    env.source,
    agentKindOf(env.agent.kind)?.describe(env.agent) ?? env.agent.kind,
    formatDuration(env.timeoutMs),
    String(env.maxConcurrentRuns)
  ]);
  console.log(table(['ID', 'NAME', 'SOURCE', 'AGENT', 'TIMEOUT', 'CONCURRENCY'], rows));
  return 0;
}

function help(command?: Command): number {
  console.log(command === undefined ? USAGE : commandHelp(command));
  return 0;
}
