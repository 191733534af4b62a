// The demo prints each transcript event in full (bounded): messages, commands with exit code and
// output, the diff; not just the first line of each.
import { describe, expect, it } from '@jest/globals';
// @ts-expect-error: a plain ESM script without type declarations
import { transcriptLines } from '../../scripts/transcript-text.mjs';

const at = '2026-01-01T10:00:00.000Z';
const lines = (events: object[], max?: number) =>
  (transcriptLines as (e: object[], m?: number) => string[])(events, max);

describe('demo transcript', () => {
  it('prints messages, commands with exit code and output, and the diff in full', () => {
    const out = lines([
      { seq: 1, at, kind: 'message', text: 'Simulated agent received the instruction:\nAdd NOTES.md' },
      { seq: 2, at, kind: 'command', command: 'git log -1', exit_code: 0, output: 'abc first\n' },
      {
        seq: 3,
        at,
        kind: 'diff',
        files: [{ path: 'NOTES.md', change: 'added' }],
        diff: '+++ b/NOTES.md\n+ran\n'
      },
      { seq: 4, at, kind: 'state', state: 'FAILED', status_message: 'the tests are red' }
    ]);
    expect(out).toEqual([
      '  10:00:00.000  message',
      '      Simulated agent received the instruction:',
      '      Add NOTES.md',
      '  10:00:00.000  command  $ git log -1 → exit 0',
      '      abc first',
      '  10:00:00.000  diff     files changed: NOTES.md (added)',
      '      +++ b/NOTES.md',
      '      +ran',
      '  10:00:00.000  state    FAILED: the tests are red'
    ]);
  });

  it('cuts a long event at 40 lines and says how many more there were', () => {
    const text = Array.from({ length: 45 }, (_, i) => `line ${i + 1}`).join('\n');
    const out = lines([{ seq: 1, at, kind: 'output', stream: 'stdout', text }]);
    expect(out).toHaveLength(1 + 40 + 1);
    expect(out[40]).toBe('      line 40');
    expect(out[41]).toBe('      … 5 more lines');
  });

  it('prints each fact once: no final answer repeating the last message, no file named twice', () => {
    const out = lines([
      { seq: 1, at, kind: 'message', text: 'Done: NOTES.md written.' },
      { seq: 2, at, kind: 'file', path: 'NOTES.md', change: 'added' },
      { seq: 3, at, kind: 'diff', files: [{ path: 'NOTES.md', change: 'added' }], diff: '+ran\n' },
      { seq: 4, at, kind: 'result', text: 'Done: NOTES.md written.' }
    ]);
    expect(out).toEqual([
      '  10:00:00.000  message',
      '      Done: NOTES.md written.',
      '  10:00:00.000  file     NOTES.md added',
      '  10:00:00.000  diff     changes',
      '      +ran'
    ]);
  });
});
