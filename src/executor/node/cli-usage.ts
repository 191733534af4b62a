// agent-executor's usage texts (the whole one, and one per command) and how its arguments split
// into the command and the rest, so global options may come before the command or after it.

import { AGENT_KINDS } from '../agents/index.js';

/** The package version this bundle was built from (a test compares it with package.json). */
export const VERSION = '0.1.0';

const HELP = {
  serve: `  serve [--host HOST] [--port PORT] [--role all|api|worker]
      Serve the run API and run agents. Defaults: 127.0.0.1, port 8080, data dir .agent-executor,
      config agent-executor.yaml when present. --port 0 picks a free port. Prints
      "listening on http://HOST:PORT" when ready, and "stopped" after a graceful stop (SIGINT or
      SIGTERM; a second signal exits at once). --role api serves the API and runs nothing;
      --role worker runs work and serves only /healthz and /readyz. One data dir takes one --role all,
      or one api and one worker process (SQLite on this machine, or a postgres:// store shared by nodes).`,
  keys: `  keys create --kind personal|agent --name NAME [--team TEAM]
      Create an API key (team "default" unless given). The raw key is printed once, alone on the
      last line of stdout.
  keys list
      List keys (id, team, kind, name, first characters, created, status), under a header row.
      Never shows raw keys.
  keys revoke ID
      Revoke a key at once.`,
  environments: `  environments list
      List the configured environments (id, name, source, agent, timeout, concurrency), under a
      header row.`
} as const;

export type Command = keyof typeof HELP;

const GLOBAL_OPTIONS = `Global options (before or after the command):
  --config FILE    the configuration file (default agent-executor.yaml in the current directory)
  --data-dir DIR   where the store and workspaces live (default .agent-executor)
  --store STORE    a path or sqlite:PATH (SQLite; default DATA_DIR/executor.db) or
                   postgres://USER:PASSWORD@HOST:PORT/DB (shared by several nodes);
                   AGENT_EXECUTOR_STORE sets it too, and the config file's store: key
  -h, --help       this help; after a command, that command's help
  -V, --version    print the version`;

export const USAGE = `Usage: agent-executor [global options] <command> [options]

Commands:
${HELP.serve}
${HELP.keys}
${HELP.environments}

Agent kinds (an environment's agent.kind):
${[...AGENT_KINDS.values()].map(kind => `  ${kind.kind.padEnd(10)} ${kind.summary}`).join('\n')}

${GLOBAL_OPTIONS}`;

export function commandHelp(command: Command): string {
  return `Usage: agent-executor ${command} [options]\n\n${HELP[command]}\n\n${GLOBAL_OPTIONS}`;
}

/** Options every command takes; they may come before the command as well as after it. */
const GLOBAL_WITH_VALUE = new Set(['--config', '--data-dir', '--store']);
export const COMMANDS: readonly string[] = ['serve', 'keys', 'environments'];

/**
 * The command is the first argument that is neither a global option nor its value; the other
 * arguments keep their order, so `--data-dir X keys list` and `keys list --data-dir X` agree.
 */
export function splitCommand(argv: string[]): { command?: string; args: string[] } {
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    if (GLOBAL_WITH_VALUE.has(arg)) {
      i++;
      continue;
    }
    if (arg.startsWith('-')) continue;
    return { command: arg, args: [...argv.slice(0, i), ...argv.slice(i + 1)] };
  }
  return { args: argv };
}
