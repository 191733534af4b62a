// A session id to resume reaches the agent CLI's command line (`--resume ID`, `resume ID`), and it
// comes from the CLI's own stream, which a run can influence: only ids of the form the CLIs write
// are resumed; one that could be read as an option, a path or several words starts a new session.
import { describe, expect, it } from '@jest/globals';
import { resumableSession } from '../../src/executor/agents/harness/input.js';

describe('the session id a follow-up resumes', () => {
  it.each(['3f2b6c1e-8a9d-4e7f-b0c1-2d3e4f5a6b7c', 'sess_01HZX9', 'thread.42:a'])('keeps %s', id => {
    expect(resumableSession(id)).toBe(id);
  });

  it.each([
    '--mcp-config=/etc/shadow',
    '-p',
    '../../etc/passwd',
    '/tmp/x',
    'two words',
    'id\nline',
    '',
    'x'.repeat(201)
  ])('refuses %j', id => {
    expect(resumableSession(id)).toBeUndefined();
  });

  it('has nothing to resume without an id', () => {
    expect(resumableSession(undefined)).toBeUndefined();
  });
});
