// The turns of a run's conversation, read back from its transcript (src/executor/worker/turns.ts):
// what each turn is given, which follow-ups it takes, and when there is nothing left to do.
import { describe, expect, it } from '@jest/globals';
import { nextTurn, turnsBefore } from '../../src/executor/worker/turns.js';

const run = { prompt: 'fix the bug', extra: '{}' };
let seq = 0;
const event = (kind: string, fields: Record<string, unknown> = {}) => ({
  seq: ++seq,
  at: '',
  kind,
  ...fields
});

describe('nextTurn', () => {
  it('gives a first turn the prompt, with the follow-ups sent while it was queued', () => {
    const queued = event('followup', { message: 'and the tests', mode: 'normal' });
    const turn = nextTurn(run, [event('state', { state: 'QUEUED' }), queued])!;
    expect(turn).toMatchObject({ number: 1, prompt: 'fix the bug\n\nand the tests', continuing: false });
    expect(turn.followups).toEqual([queued.seq]);
  });

  it('gives a later turn only the follow-ups no turn took, with the session to resume and the conversation', () => {
    const events = [
      event('agent_session', { harness: 'claude-code', session_id: 's-1' }),
      event('result', { text: 'fixed it' })
    ];
    const later = event('followup', { message: 'now the docs', mode: 'plan' });
    const turn = nextTurn(run, [...events, later], 1)!;
    expect(turn).toMatchObject({
      number: 2,
      prompt: 'now the docs',
      mode: 'plan',
      continuing: true,
      resumeSession: 's-1',
      followups: [later.seq]
    });
    expect(turn.conversation).toBe(
      '## user\n\nfix the bug\n\n## assistant\n\nfixed it\n\n## user\n\nnow the docs\n'
    );
    const taken = event('turn', { turn: 2, mode: 'plan', followups: [later.seq] });
    expect(nextTurn(run, [...events, later, taken], 1)).toBeUndefined();
  });

  it('counts a run claimed before as having had its first turn', () => {
    const claimed = event('state', { state: 'INPROGRESS' });
    expect(turnsBefore([claimed])).toBe(0);
    expect(turnsBefore([claimed, event('state', { state: 'SUCCEEDED' }), { ...claimed, seq: ++seq }])).toBe(
      1
    );
  });

  it('takes the mode asked on create for a first turn', () => {
    expect(nextTurn({ prompt: 'p', extra: '{"mode":"plan"}' }, [])).toMatchObject({
      mode: 'plan',
      number: 1
    });
  });
});
