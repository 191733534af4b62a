// How `agent-run action` reads what the action wrote: command files, the log's workflow commands
// (masks honoured), and the job summary as terminal text.
import { describe, expect, it } from '@jest/globals';
import { PassThrough } from 'node:stream';
import { WorkflowLog, parseCommandFile, renderSummary } from '../../src/cli/commands/workflow-files.js';
import { Terminal } from '../../src/cli/terminal.js';

function capture() {
  const stderr = new PassThrough();
  let text = '';
  stderr.on('data', chunk => (text += chunk));
  const terminal = new Terminal({ stdout: new PassThrough(), stderr, env: {} });
  return { terminal, text: () => text };
}

describe('agent-run action output', () => {
  it('parses heredoc and simple lines of GITHUB_OUTPUT', () => {
    expect(parseCommandFile('a<<EOF_1\nline 1\nline 2\nEOF_1\nb=plain\n')).toEqual({
      a: 'line 1\nline 2',
      b: 'plain'
    });
  });

  it('hides masked values from then on, and renders annotations', () => {
    const { terminal, text } = capture();
    const log = new WorkflowLog(terminal, ['from-settings']);
    log.write('::add-mask::sec%25ret\nthe key sec%ret and ');
    log.write('from-settings\n::error::Run x ended FAILED%0ASession: y\n::debug::hidden\npartial');
    log.flush();
    expect(text()).toBe('the key *** and ***\nError: Run x ended FAILED\nSession: y\npartial\n');
    expect(log.mask('sec%ret')).toBe('***');
  });

  it('does not repeat a session link already shown in the failure annotation (issue 25 item 17)', () => {
    const { terminal, text } = capture();
    const log = new WorkflowLog(terminal, []);
    log.write('Session: http://s/1\n::error::Run x ended FAILED: red%0ASession: http://s/1\n');
    log.write('::error::Run z ended FAILED%0ASession: http://s/2\n');
    expect(text()).toBe(
      'Session: http://s/1\nError: Run x ended FAILED: red\nError: Run z ended FAILED\nSession: http://s/2\n'
    );
  });

  it('turns the summary HTML into plain lines', () => {
    const html =
      '<h3>Agent run</h3>\n<table><tr><th>Field</th><th>Value</th></tr><tr><td>Session</td><td><a href="http://s/1">http://s/1</a></td></tr>' +
      '<tr><td>PR</td><td><a href="http://p/2">#2</a> &amp; more</td></tr></table>';
    expect(renderSummary(html)).toBe(
      '### Agent run\n\nField\tValue\nSession\thttp://s/1\nPR\t#2 (http://p/2) & more'
    );
  });
});
