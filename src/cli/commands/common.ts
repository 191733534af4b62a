// What every command shares: parsing its argv (util.parseArgs, strict), its --help, and the client.

import { parseArgs, type ParseArgsConfig } from 'node:util';
import { didYouMean, parseDuration, type AgentRunClient } from '../../client/index.js';
import { RUN_MODE_WORDS, type RunMode, isRunMode } from '../../api/run.js';
import { usage } from '../exit.js';
import { CONNECTION_HELP, CONNECTION_OPTIONS, createClient, readConnection } from '../settings.js';
import type { Terminal } from '../terminal.js';

export interface Context {
  terminal: Terminal;
  env: NodeJS.ProcessEnv;
  /** Reads standard input whole (for `run -`). */
  readStdin: () => Promise<string>;
}

export interface Command {
  name: string;
  summary: string;
  help: string;
  run(argv: string[], context: Context): Promise<number>;
}

type Options = NonNullable<ParseArgsConfig['options']>;

const SHARED = {
  ...CONNECTION_OPTIONS,
  json: { type: 'boolean' },
  raw: { type: 'boolean' },
  help: { type: 'boolean', short: 'h' }
} as const;

/** `--json FIELDS` or `--json=FIELDS`: run record fields, comma-separated (`get`, `list`). */
const FIELDS = /^[a-z_]+(,[a-z_]+)*$/;

/**
 * Takes `--json FIELDS` (field selection, as `gh` has it) out of argv for commands whose
 * positionals cannot look like a field list; `--json` alone stays the whole record.
 */
export function jsonFields(argv: string[]): { argv: string[]; fields?: string[] } {
  const rest: string[] = [];
  let fields: string[] | undefined;
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    const inline = /^--json=(.*)$/.exec(arg);
    if (inline) {
      if (!FIELDS.test(inline[1]!))
        throw usage(`--json=${JSON.stringify(inline[1])}: expected field names such as run_id,state,title`);
      fields = inline[1]!.split(',');
      rest.push('--json');
    } else if (arg === '--json' && FIELDS.test(argv[i + 1] ?? '')) {
      fields = argv[++i]!.split(',');
      rest.push('--json');
    } else rest.push(arg);
  }
  return { argv: rest, fields };
}

/** A record reduced to the fields asked for (absent ones as null, so scripts see every key). */
export function pick(record: object, fields: string[] | undefined): object {
  if (!fields) return record;
  const values = record as Record<string, unknown>;
  return Object.fromEntries(fields.map(field => [field, values[field] ?? null]));
}

/** Parses a command's argv; a mistake becomes a usage error naming the option. */
export function parse<T extends Options>(argv: string[], options: T) {
  try {
    return parseArgs({
      args: argv,
      options: { ...SHARED, ...options },
      allowPositionals: true,
      strict: true
    });
  } catch (error) {
    const message = (error as Error).message.replace(/\. To specify.*$/s, '');
    const unknown = /^Unknown option '(--[^'=]+)'/.exec(message)?.[1];
    const names = Object.keys({ ...SHARED, ...options }).map(name => `--${name}`);
    const near = unknown ? didYouMean(unknown, names) : '';
    throw usage(`${message}${near ? `${near} See --help` : '; see --help'}`);
  }
}

export function helpText(command: Pick<Command, 'help'>): string {
  return `${command.help.trim()}\n\n${CONNECTION_HELP}\n  --json                 machine-readable output\n  --raw                  write the run's text as it came, control characters included (default: shown as \\x1b)\n  -h, --help             this help\n`;
}

export function clientFor(
  values: { 'base-url'?: string; 'api-key-file'?: string },
  context: Context
): AgentRunClient {
  return createClient(readConnection(values, context.env), context.terminal);
}

export function onePositional(positionals: string[], what: string): string {
  if (positionals.length !== 1 || positionals[0]!.trim() === '') {
    throw usage(
      `expected one ${what}, got ${positionals.length === 0 ? 'none' : positionals.map(p => JSON.stringify(p)).join(' ')}`
    );
  }
  return positionals[0]!.trim();
}

export function durationOption(name: string, value: string | undefined, fallback: string): number {
  const text = value ?? fallback;
  const ms = parseDuration(text);
  if (ms === undefined || ms <= 0) {
    throw usage(
      `--${name} ${JSON.stringify(text)}: expected a duration such as 90s, 45m or 1h30m, above zero`
    );
  }
  return ms;
}

export function onBlockedOption(value: string | undefined): 'fail' | 'wait' {
  const choice = (value ?? 'fail').trim().toLowerCase();
  if (choice !== 'fail' && choice !== 'wait') {
    throw usage(`--on-blocked ${JSON.stringify(value)}: expected fail or wait`);
  }
  return choice;
}

/** `--mode normal|plan|orchestrate`: undefined when not given (the service's default, normal). */
export function modeOption(value: string | undefined): RunMode | undefined {
  if (value === undefined) return undefined;
  const choice = value.trim().toLowerCase();
  if (!isRunMode(choice)) {
    throw usage(`--mode ${JSON.stringify(value)}: expected ${RUN_MODE_WORDS}`);
  }
  return choice;
}

/** Most `metadata` pairs a run carries (the service's limit). */
const MAX_METADATA = 20;

/** `--metadata k=v`, repeatable: the pairs, or undefined when none were given. */
export function metadataOption(values: string[] | undefined): Record<string, string> | undefined {
  if (!values || values.length === 0) return undefined;
  const pairs: Record<string, string> = {};
  for (const item of values) {
    const at = item.indexOf('=');
    if (at <= 0)
      throw usage(`--metadata ${JSON.stringify(item)}: expected KEY=VALUE, e.g. --metadata team=web`);
    pairs[item.slice(0, at)] = item.slice(at + 1);
  }
  if (Object.keys(pairs).length > MAX_METADATA) {
    throw usage(`--metadata: ${Object.keys(pairs).length} keys given; expected at most ${MAX_METADATA}`);
  }
  return pairs;
}
