// What `agent-run` shows a person: a spinner and colour only on a terminal, never colour with
// NO_COLOR, plain lines otherwise (src/cli/terminal.ts).
import { describe, expect, it } from '@jest/globals';
import { PassThrough } from 'node:stream';
import { Terminal, table } from '../../src/cli/terminal.js';
import { runSourceChild, sourcePath } from '../support/source-child.js';
import { sleep } from '../support/wait.js';

function terminal(tty: boolean, env: NodeJS.ProcessEnv = {}) {
  const stderr = Object.assign(new PassThrough(), { isTTY: tty });
  let text = '';
  stderr.on('data', chunk => (text += chunk));
  return { term: new Terminal({ stdout: new PassThrough(), stderr, env }), text: () => text };
}

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
    term.note(term.renderItems([{ type: 'command', command: 'ls', exitCode: 0 }], true)[0]!);
    expect(text()).toBe('error: bad\n$ ls → exit 0\n');
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

  // Issue 28, finding 6: the agent's output must not drive the user's terminal.
  const hostile =
    'clip\u001b]52;c;aGVsbG8=\u0007 link\u001b]8;;https://evil.example\u001b\\x\u001b]8;;\u001b\\ ' +
    'title\u001b]0;pwned\u0007 up\u001b[2A erase\u001b[2K csi\u009b31m del\u007f cr\rback tab\tend';

  it('shows control characters in data instead of sending them, on stdout and stderr', () => {
    const { term, text } = terminal(true);
    const stdout = new PassThrough();
    let out = '';
    stdout.on('data', chunk => (out += chunk));
    const both = new Terminal({ stdout, stderr: Object.assign(new PassThrough(), { isTTY: true }), env: {} });
    both.out(hostile);
    term.note(hostile);
    term.warn(hostile);
    for (const written of [out, text()]) {
      // eslint-disable-next-line no-control-regex -- finding control characters is the point
      const withoutOurColour = written.replace(/\u001b\[(33|0)m/g, '');
      // eslint-disable-next-line no-control-regex -- finding control characters is the point
      expect(withoutOurColour).not.toMatch(/[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/);
      expect(written).toContain('clip\\x1b]52;c;aGVsbG8=\\x07 link\\x1b]8;;https://evil.example\\x1b\\x');
      expect(written).toContain('up\\x1b[2A erase\\x1b[2K csi\\x9b31m del\\x7f cr\\x0dback tab\tend');
    }
    // Our own colour still reaches the terminal, around the cleaned text.
    expect(text()).toContain(`${ESC}33mwarning: clip\\x1b]52`);
  });

  it('writes data as it came with --raw', () => {
    const stdout = new PassThrough();
    let out = '';
    stdout.on('data', chunk => (out += chunk));
    const term = new Terminal({ stdout, stderr: new PassThrough(), env: {} });
    term.raw = true;
    term.out(hostile);
    expect(out).toBe(`${hostile}\n`);
  });

  it('keeps --json valid and inert: C1 and DEL become \\u escapes', () => {
    const stdout = new PassThrough();
    let out = '';
    stdout.on('data', chunk => (out += chunk));
    const term = new Terminal({ stdout, stderr: new PassThrough(), env: {} });
    term.json({ text: hostile });
    // eslint-disable-next-line no-control-regex -- finding control characters is the point
    expect(out).not.toMatch(/[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/);
    expect(JSON.parse(out)).toEqual({ text: hostile });
  });
});

describe('an agent’s text with a long run of spaces', () => {
  // The agent writes the text `logs`, `wait` and `action` show; trimming its end with a pattern
  // (`/\s+$/`) takes quadratic time on spaces that do not end it: about 14 minutes of CPU for a
  // 1 MiB answer, during which the command shows nothing and cannot be stopped by its own timers.
  it('is shown at once (run in a child, which a hang would leave still running)', async () => {
    const script = `import { PassThrough } from 'node:stream';
import { Terminal } from ${JSON.stringify(sourcePath('src/cli/terminal.ts'))};
let text = '';
process.stdin.on('data', chunk => (text += chunk));
process.stdin.on('end', () => {
  const term = new Terminal({ stdout: new PassThrough(), stderr: new PassThrough(), env: {} });
  const lines = term.renderItems([
    { type: 'text', role: 'assistant', text },
    { type: 'output', text },
    { type: 'command', command: 'ls', output: text }
  ], false);
  process.stdout.write(JSON.stringify(lines.map(line => (typeof line === 'string' ? line : line.text).length)));
});`;
    const text = `a${' '.repeat(300_000)}x   \n`;
    // Generous: shown in milliseconds; the pattern needed minutes of CPU for this text.
    const shown = await runSourceChild(script, text, 60_000);
    expect(shown).toBe(JSON.stringify([300_009, 300_006, 4, 300_006]));
  });
});
