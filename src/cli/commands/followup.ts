// `agent-run followup`: the next user message to a run that exists (queued, running or ended). The
// same run goes on, in the same workspace; with --wait the command follows the new turn as `wait`
// does and prints its answer.

import { EXIT, EXIT_CODES_HELP, usage } from '../exit.js';
import { type Command, clientFor, durationOption, modeOption, onBlockedOption, parse } from './common.js';
import { RunFollower } from '../../client/index.js';
import { watchRun } from './watch.js';
import { counted } from '../../common/plural.js';

export const followupCommand: Command = {
  name: 'followup',
  summary: 'send a run its next message (the same run goes on)',
  help: `Usage: agent-run followup ID MESSAGE [--mode normal|plan] [--wait [--timeout 60m] [--on-blocked fail|wait]]

Sends MESSAGE ("-" reads standard input) to the run as its next user message: the same run goes on
(a run that ended is queued again, in the same workspace). Prints the run's id and new state, or
with --wait follows the new turn to its end (its progress only, not the earlier turns') and prints
the agent's answer, as \`wait\` does.

Options:
  --mode normal|plan     plan: the agent answers with a plan and changes nothing (default: normal)
  --wait                 wait for the turn to end; the exit code says how it ended
  --timeout DURATION     how long to wait (default 60m)
  --on-blocked fail|wait a BLOCKED run ends the command with code 4 (fail, default) or is waited for

Example (plan, then approve):
  agent-run run --mode plan --no-wait "Add rate limiting to the API"
  agent-run wait ID
  agent-run followup ID "approved: carry out the plan" --wait

${EXIT_CODES_HELP}`,
  async run(argv, context) {
    const { values, positionals } = parse(argv, {
      mode: { type: 'string' },
      wait: { type: 'boolean' },
      timeout: { type: 'string' },
      'on-blocked': { type: 'string' }
    });
    if (positionals.length !== 2) {
      throw usage(
        `expected ID and MESSAGE, got ${counted(positionals.length, 'argument')}; quote a message with spaces`
      );
    }
    const [runId, given] = positionals as [string, string];
    const message = given === '-' ? await context.readStdin() : given;
    if (message.trim() === '')
      throw usage('the message is empty: pass MESSAGE, or "-" to read standard input');
    const mode = modeOption(values.mode);
    const timeoutMs = durationOption('timeout', values.timeout, '60m');
    const onBlocked = onBlockedOption(values['on-blocked']);
    const client = clientFor(values, context);
    try {
      // Where the run's progress is before the message: --wait shows the new turn only.
      const from = values.wait ? await RunFollower.position(client, runId) : undefined;
      const answer = await client.runs.followUp(runId, { message, ...(mode ? { mode } : {}) });
      context.terminal.note(`Sent a follow-up to run ${answer.run_id}${mode ? ` (mode ${mode})` : ''}.`);
      if (!values.wait) {
        if (values.json) context.terminal.json(answer, 2);
        else context.terminal.out(`${answer.run_id} ${answer.state ?? ''}`.trim());
        return EXIT.ok;
      }
      return await watchRun(client, context.terminal, answer.run_id, {
        timeoutMs,
        onBlocked,
        json: values.json === true,
        onInterrupt: 'leave',
        from
      });
    } finally {
      client.close();
    }
  }
};
