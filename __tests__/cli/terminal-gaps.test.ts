// Issue 28: `agent-run logs`, `wait` and `action` show a run's bytes to a person. C0/C1 controls
// (OSC 52 clipboard, OSC 8 links, CSI cursor moves) are shown as visible escapes, and agent lines
// inside a `::stop-commands::TOKEN` pause are shown as plain text, never acted on as workflow commands.

import { describe, expect, it } from '@jest/globals';
import { PassThrough } from 'node:stream';
import { WorkflowLog } from '../../src/cli/commands/workflow-files.js';
import { Terminal } from '../../src/cli/terminal.js';

const OSC52 = '\u001b]52;c;ZWNobyBwd25lZA==\u0007';
const OSC8 = '\u001b]8;;https://evil.example/\u001b\\click\u001b]8;;\u001b\\';
const ERASE = 'ok\u001b[1A\u001b[2K\rall tests passed';
const C1_CSI = '\u009b2J';

function terminal() {
  const stderr = Object.assign(new PassThrough(), { isTTY: true });
  let text = '';
  stderr.on('data', chunk => (text += chunk));
  return {
    term: new Terminal({ stdout: new PassThrough(), stderr, env: { NO_COLOR: '1' } }),
    text: () => text
  };
}

/** A C0 or C1 control other than tab and newline (the spinner's own `\r` + erase is left out below). */
const hostile = {
  test: (text: string) =>
    [...text].some(ch => {
      const code = ch.codePointAt(0)!;
      return (code < 32 && code !== 9 && code !== 10) || (code >= 127 && code <= 159);
    })
};

describe('what a run prints never reaches the terminal as control sequences', () => {
  it('logs: agent text, command lines and output, file names and state messages', () => {
    const { term } = terminal();
    const lines = term.renderItems(
      [
        { type: 'text', role: 'assistant', text: `hello ${OSC52}` },
        { type: 'command', command: `ls ${OSC8}`, exitCode: 0, output: ERASE },
        { type: 'output', text: C1_CSI },
        { type: 'file', path: `a${OSC52}`, change: 'added' },
        { type: 'state', state: 'FAILED', message: ERASE }
      ],
      false
    );
    const { term: shown, text } = terminal();
    for (const line of lines) shown.note(line);
    expect(lines.length).toBeGreaterThan(0);
    expect(hostile.test(text())).toBe(false);
  });

  it('action: the action log rendered by `agent-run action`', () => {
    const { term, text } = terminal();
    const log = new WorkflowLog(term, []);
    log.write(`│ ${OSC52}\n    ${ERASE}\n`);
    expect(hostile.test(text().split('\r\u001b[2K').join(''))).toBe(false);
  });

  it('action: an agent line between stop-commands markers is not run as ::add-mask:: or ::error::', () => {
    const { term, text } = terminal();
    const log = new WorkflowLog(term, []);
    // What src/action/log.ts prints for command output holding workflow commands.
    log.write(
      '::stop-commands::0123456789abcdef\n::add-mask::passed\n::error::forged\n::0123456789abcdef::\n'
    );
    log.write('all tests passed\n');
    expect(text()).toContain('all tests passed');
    expect(text()).not.toContain('Error: forged');
    expect(text()).toContain('::error::forged');
  });

  it('action: after the pause ends, workflow commands are acted on again', () => {
    const { term, text } = terminal();
    const log = new WorkflowLog(term, []);
    log.write('::stop-commands::tok1\n::warning::inside\n::tok1::\n::error::real\n');
    expect(text()).toContain('::warning::inside');
    expect(text()).toContain('Error: real');
  });
});
