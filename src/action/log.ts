// The one way the action writes a log line. The runner reads every line of a step's output for
// workflow commands (`::set-output`, `::add-mask::`, `::error::`, the older `##[…]` form), and the
// lines the action shows carry text from the run and the service: the agent's words, command lines
// and output, file names, states, links, error details. A line that could be read as a command is
// printed between `::stop-commands::<token>` and `::<token>::`, with a fresh random token each time,
// so nothing inside can issue a command or end the pause early. Annotations and group titles go
// through the toolkit, whose escaping keeps their text on one command line.

import * as core from '@actions/core';
import { randomBytes } from 'node:crypto';

/** What the runner could take for a command, anywhere in the text (it splits lines on \r too). */
const COMMAND_LIKE = /::|##\[/;

/** Characters one log call shows; the outputs and the transcript file hold more. */
export const MAX_LOG_CHARS = 64 * 1024;

/** Prints text (one line or many) so that no part of it is read as a workflow command. */
export function info(message: string): void {
  const text =
    message.length > MAX_LOG_CHARS
      ? `${message.slice(0, MAX_LOG_CHARS)}… [${message.length - MAX_LOG_CHARS} more characters not shown]`
      : message;
  if (!COMMAND_LIKE.test(text)) return core.info(text);
  const token = randomBytes(16).toString('hex');
  core.info(`::stop-commands::${token}`);
  core.info(text);
  core.info(`::${token}::`);
}

/** A collapsible group; its title is escaped by the toolkit (one line, no command). */
export function group(title: string): void {
  core.startGroup(title.replace(/[\r\n]+/g, ' '));
}

export function endGroup(): void {
  core.endGroup();
}
