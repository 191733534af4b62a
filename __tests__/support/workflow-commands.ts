// What the GitHub runner does with a step's output, for tests that check which workflow commands
// a step really issues: the output is cut into lines at \n, \r\n and lone \r; a line whose text,
// leading whitespace removed, starts with `::` is a command (`::name props::message`), and so is a
// line holding the older `##[name props]message` form; `::stop-commands::TOKEN` turns all of this
// off until a line that is exactly `::TOKEN::`.

export interface WorkflowCommand {
  name: string;
  properties: string;
  message: string;
  line: string;
}

export function parseWorkflowCommands(output: string): WorkflowCommand[] {
  const commands: WorkflowCommand[] = [];
  let stopToken: string | undefined;
  for (const raw of output.split(/\r\n|\r|\n/)) {
    const line = raw.trim();
    if (stopToken !== undefined) {
      if (line === `::${stopToken}::`) stopToken = undefined;
      continue;
    }
    const current = /^::([A-Za-z-]+)(?:\s+([^]*?))?::([^]*)$/.exec(line);
    const legacy = /##\[([A-Za-z-]+)(?:\s+([^\]]*))?\]([^]*)$/.exec(line);
    const found = current ?? legacy;
    if (!found) continue;
    const command = { name: found[1]!, properties: found[2] ?? '', message: found[3] ?? '', line };
    commands.push(command);
    if (command.name === 'stop-commands' && command.message !== '') stopToken = command.message;
  }
  return commands;
}

/** Lines (inside a stop-commands pause or not) that a log viewer may still draw as `##[…]` layout. */
export function layoutLines(output: string): string[] {
  return output.split(/\r\n|\r|\n/).filter(line => line.trimStart().startsWith('##['));
}
