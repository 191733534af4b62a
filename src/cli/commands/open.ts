// `agent-run open`: the run's session page (its live transcript) in the browser, or its address
// printed when there is no browser to open (not a terminal, --print, or no opener on PATH).

import { spawn } from 'node:child_process';
import { EXIT, CliError } from '../exit.js';
import { type Command, clientFor, onePositional, parse } from './common.js';

export const openCommand: Command = {
  name: 'open',
  summary: "open a run's session page in the browser",
  help: `Usage: agent-run open ID [--print]

Opens the run's session page (its transcript, live while it runs) in the default browser and
prints its address on stdout. With --print, or when stdout is not a terminal, only prints it.

Example:
  agent-run open 3f2a9c1e-0000-4000-8000-000000000000 --print`,
  async run(argv, context) {
    const { values, positionals } = parse(argv, { print: { type: 'boolean' } });
    const runId = onePositional(positionals, 'run ID');
    const client = clientFor(values, context);
    try {
      const run = await client.runs.get(runId);
      const link = run.session_link;
      if (!link) {
        throw new CliError(
          `run ${runId} has no session page yet (it is ${run.state}); it gets one when it starts`,
          EXIT.failed
        );
      }
      if (values.json) context.terminal.json({ run_id: runId, session_link: link }, 2);
      else context.terminal.out(link);
      if (!values.print && process.stdout.isTTY === true) launch(link);
      return EXIT.ok;
    } finally {
      client.close();
    }
  }
};

/** Hands the address to the system's opener, without waiting for it; a missing opener is not an error. */
function launch(url: string): void {
  const [command, args] =
    process.platform === 'darwin'
      ? ['open', [url]]
      : process.platform === 'win32'
        ? ['cmd', ['/c', 'start', '""', url]]
        : ['xdg-open', [url]];
  const child = spawn(command, args, { stdio: 'ignore', detached: true });
  child.on('error', () => undefined);
  child.unref();
}
