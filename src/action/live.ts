// The run's conversation in the step log while the action waits (`log-conversation`): agent text
// as lines, each command as a collapsible group titled with its exit code. The client's follower
// decides how to read (long-poll where the server holds transcript reads, otherwise only on state
// changes and at the end), so an idle run costs no more requests than the wait itself.

import { type AgentRunClient, type ProgressItem, RunFollower } from '../client/index.js';
import * as log from './log.js';

/** Output lines shown per command in the log; the transcript file has more. */
const COMMAND_OUTPUT_CHARS = 8000;

export function logItems(items: ProgressItem[]): void {
  for (const item of items) {
    switch (item.type) {
      case 'text':
        if (item.role === 'user') break;
        for (const line of item.text.split('\n')) log.info(`│ ${line}`);
        break;
      case 'command': {
        const exit =
          item.exitCode === undefined || item.exitCode === null ? '' : ` (exit code ${item.exitCode})`;
        log.group(`$ ${item.command.split('\n')[0]}${exit}`);
        const output = (item.output ?? '').replace(/\n$/, '');
        if (output !== '') {
          // Each line prefixed like agent text, so no data line starts with `::` or `##[` that
          // the runner's log viewer might draw as a group or an error.
          const shown =
            output.length > COMMAND_OUTPUT_CHARS ? `…${output.slice(-COMMAND_OUTPUT_CHARS)}` : output;
          log.info(
            shown
              .split(/\r\n|\r|\n/)
              .map(line => `│ ${line}`)
              .join('\n')
          );
        }
        log.endGroup();
        break;
      }
      case 'output':
        for (const line of item.text.replace(/\n$/, '').split('\n')) log.info(`│ ${line}`);
        break;
      case 'file':
        log.info(`  ${item.change}: ${item.path}`);
        break;
      case 'state':
        // The wait already logs every state change.
        break;
      case 'event':
        log.info(`  ${item.text}`);
        break;
      default:
        // Every item type has its case (a new one does not compile until it is logged here); a
        // transcript kind this code does not know arrives as an `event` item.
        item satisfies never;
    }
  }
}

/** Starts following the run; `finish` reads what is left once the wait is over. */
export function followConversation(
  client: AgentRunClient,
  runId: string,
  signal?: AbortSignal
): { onStateChange: () => void; finish: () => Promise<void> } {
  const follower = new RunFollower(client, runId, {
    onItems: logItems,
    signal,
    // The outputs' own notice says what this service lacks; here a log line is enough.
    onNotice: message => log.info(`No live conversation: ${message}.`)
  });
  follower.start();
  return {
    onStateChange: () => void follower.onStateChange(),
    finish: () =>
      follower.finish().catch(error => log.info(`No live conversation: ${(error as Error).message}.`))
  };
}
