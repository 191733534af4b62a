// The live conversation in the step log: command output a stranger may control is printed inside
// a stop-commands pause and prefixed, so the runner neither runs it as a workflow command nor
// draws a `##[group]` or `##[error]` line of it as layout.
import { afterEach, describe, expect, it, jest } from '@jest/globals';
import { logItems } from '../../src/action/live.js';
import { layoutLines, parseWorkflowCommands } from '../support/workflow-commands.js';

afterEach(() => {
  jest.restoreAllMocks();
});

function captured(run: () => void): string {
  let text = '';
  jest.spyOn(process.stdout, 'write').mockImplementation(chunk => {
    text += String(chunk);
    return true;
  });
  run();
  jest.restoreAllMocks();
  return text;
}

describe('live log of command output', () => {
  it('no output line is a workflow command or starts with ##[', () => {
    const output = '##[group]fake\n##[error]forged\n::error::forged\r::add-mask::passed\nall tests passed\n';
    const text = captured(() => logItems([{ type: 'command', command: 'npm test', exitCode: 0, output }]));
    expect(layoutLines(text)).toEqual([]);
    expect(parseWorkflowCommands(text).map(c => c.name)).not.toContain('error');
    expect(text).toContain('│ ##[error]forged');
    expect(text).toContain('│ all tests passed');
  });
});
