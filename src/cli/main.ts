// `agent-run`: finds the command, runs it, and turns whatever it throws into a message on stderr
// and one of the documented exit codes. The key is refused as a flag before anything else.

import { didYouMean } from '../api/suggest.js';
import { actionCommand } from './commands/action.js';
import { type Command, type Context, helpText } from './commands/common.js';
import { followupCommand } from './commands/followup.js';
import { artifactsCommand, logsCommand } from './commands/logs.js';
import { openCommand } from './commands/open.js';
import { runCommand } from './commands/run.js';
import { cancelCommand, getCommand, listCommand, waitCommand } from './commands/runs.js';
import { environmentsCommand, modelsCommand, schedulesCommand } from './commands/schedules.js';
import { webhooksCommand } from './commands/webhooks.js';
import { EXIT, EXIT_CODES_HELP, exitCodeOf } from './exit.js';
import { refuseKeyFlag } from './settings.js';
import { type Streams, Terminal } from './terminal.js';

const COMMANDS: Command[] = [
  runCommand,
  getCommand,
  listCommand,
  waitCommand,
  cancelCommand,
  followupCommand,
  logsCommand,
  artifactsCommand,
  openCommand,
  schedulesCommand,
  webhooksCommand,
  environmentsCommand,
  modelsCommand,
  actionCommand
];

function overview(): string {
  const lines = COMMANDS.map(command => `  ${command.name.padEnd(12)} ${command.summary}`);
  return `Usage: agent-run COMMAND [options]

The command line of the Cloud Agent Run API: start agent runs, follow them, read what they made,
and run the GitHub Action locally.

Commands:
${lines.join('\n')}

Settings: --base-url URL or AGENT_RUN_BASE_URL; the key from AGENT_RUN_API_KEY or --api-key-file FILE.
Proxies: HTTPS_PROXY, HTTP_PROXY and NO_PROXY are honoured.
Run \`agent-run COMMAND --help\` for a command's options and an example.

Example:
  export AGENT_RUN_BASE_URL=http://127.0.0.1:8080 AGENT_RUN_API_KEY=...
  agent-run run --environment local "Fix the failing test"

${EXIT_CODES_HELP}
`;
}

export async function main(
  argv: string[],
  streams: Streams = { stdout: process.stdout, stderr: process.stderr, env: process.env }
): Promise<number> {
  const terminal = new Terminal(streams);
  const context: Context = { terminal, env: streams.env, readStdin };
  const [name, ...rest] = argv;
  if (name === undefined || name === '--help' || name === '-h' || name === 'help') {
    const command = COMMANDS.find(c => c.name === rest[0]);
    terminal.out(command ? helpText(command) : overview());
    return name === undefined ? EXIT.usage : EXIT.ok;
  }
  if (name === '--version') {
    terminal.out('agent-run 0.1.0');
    return EXIT.ok;
  }
  const command = COMMANDS.find(c => c.name === name);
  if (!command) {
    const names = COMMANDS.map(c => c.name);
    terminal.error(
      `unknown command ${JSON.stringify(name)}; expected one of ${names.join(', ')}${didYouMean(name, names)}`
    );
    return EXIT.usage;
  }
  if (rest.includes('--help') || rest.includes('-h')) {
    terminal.out(helpText(command));
    return EXIT.ok;
  }
  // Before the command runs, so every line it prints (errors included) is cleaned or not.
  terminal.raw = rest.includes('--raw');
  try {
    refuseKeyFlag(rest);
    return await command.run(rest, context);
  } catch (error) {
    terminal.stopSpinner();
    terminal.error(error instanceof Error ? error.message : String(error));
    return exitCodeOf(error);
  }
}

async function readStdin(): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}
