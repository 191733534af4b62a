// What `agent-run` shows a person: a spinner and colour only on a terminal, never colour with
// NO_COLOR, plain lines otherwise (src/cli/terminal.ts).
import { describe, expect, it } from '@jest/globals';
import { PassThrough } from 'node:stream';
import { Terminal, table } from '../../src/cli/terminal.js';

function terminal(tty: boolean, env: NodeJS.ProcessEnv = {}) {
  const stderr = Object.assign(new PassThrough(), { isTTY: tty });
  let text = '';
  stderr.on('data', chunk => (text += chunk));
  return { term: new Terminal({ stdout: new PassThrough(), stderr, env }), text: () => text };
}

const sleep = (ms: number) => new Promise(resolve => setTimeout(resolve, ms));
const ESC = '\u001b[';

describe('Terminal', () => {
  it('writes plain lines without a terminal: no spinner, no colour', async () => {
    const { term, text } = terminal(false);
    term.showState('r1', 'INPROGRESS', Date.now());
    term.warn('careful');
    await sleep(300);
    term.stopSpinner();
    expect(text()).toBe('run r1: INPROGRESS (0s)\nwarning: careful\n');
  });

  it('animates a spinner and colours warnings on a terminal', async () => {
    const { term, text } = terminal(true);
    term.showState('r1', 'INPROGRESS', Date.now());
    await sleep(300);
    term.warn('careful');
    term.stopSpinner();
    expect(text()).toMatch(/⠙ run r1: INPROGRESS/);
    expect(text()).toContain('\r');
    expect(text()).toContain(`${ESC}33mwarning: careful${ESC}0m`);
  });

  it('never colours with NO_COLOR, even on a terminal', () => {
    const { term, text } = terminal(true, { NO_COLOR: '1' });
    term.error('bad');
    expect(text()).toBe('error: bad\n');
    expect(term.renderItems([{ type: 'command', command: 'ls', exitCode: 0 }], true)).toEqual([
      '$ ls → exit 0'
    ]);
  });

  it('cuts long command output while live, not in logs', () => {
    const { term } = terminal(false);
    const output = Array.from({ length: 30 }, (_, i) => `line ${i}`).join('\n');
    const item = { type: 'command' as const, command: 'seq', exitCode: 0, output };
    expect(term.renderItems([item], true)).toHaveLength(1 + 20 + 1);
    expect(term.renderItems([item], false)).toHaveLength(1 + 30);
  });

  it('pads table columns', () => {
    expect(table(['A', 'BB'], [['xyz', '1']])).toBe('A    BB\nxyz  1');
  });
});
