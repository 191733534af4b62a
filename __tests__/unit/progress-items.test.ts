// `agent-run logs` reads the conversation where the service has one and the transcript otherwise:
// both must show the same details (issue 25 item 9: the conversation path printed bare
// `event state_change`, `event file_change` and `artifact`).
import { describe, expect, it } from '@jest/globals';
import type { Conversation, TranscriptEntry } from '../../src/api/index.js';
import { SeenItems, itemsFromConversation, itemsFromTranscript } from '../../src/client/index.js';

const events: TranscriptEntry[] = [
  { seq: 1, kind: 'state', state: 'INPROGRESS' },
  { seq: 2, kind: 'file', path: 'NOTES.md', change: 'added' },
  { seq: 3, kind: 'diff', files: [{ path: 'a.txt', change: 'modified' }] },
  { seq: 4, kind: 'artifact', artifact_uid: 'art-1', filename: 'changes.patch' },
  { seq: 5, kind: 'exit', exit_code: 0 },
  { seq: 6, kind: 'state', state: 'FAILED', status_message: 'lint failed' }
];

describe('progress items', () => {
  it('gives the same detailed items from the conversation as from the transcript', () => {
    const conversation = {
      conversation_id: 'r1',
      steps: [
        {
          id: 'r1',
          steps: [],
          messages: events.map(({ seq: _seq, kind, ...data }) => ({
            role: 'system',
            content: [{ ...data, type: 'event', event_type: eventType(kind) }]
          }))
        }
      ]
    } as unknown as Conversation;
    const fromConversation = itemsFromConversation(conversation);
    expect(fromConversation).toEqual(itemsFromTranscript(events));
    expect(fromConversation).toEqual([
      { type: 'state', state: 'INPROGRESS', message: undefined },
      { type: 'file', path: 'NOTES.md', change: 'added' },
      { type: 'file', path: 'a.txt', change: 'modified' },
      { type: 'event', text: 'artifact changes.patch (art-1)' },
      { type: 'event', text: 'agent exited with code 0' },
      { type: 'state', state: 'FAILED', message: 'lint failed' }
    ]);
  });

  it('shows each fact once, across the batches a live follower reads (issue 25 item 17)', () => {
    const seen = new SeenItems();
    const first = itemsFromTranscript(
      [
        { seq: 1, kind: 'message', text: 'Done: NOTES.md written.' },
        { seq: 2, kind: 'file', path: 'NOTES.md', change: 'added' }
      ],
      seen
    );
    const second = itemsFromTranscript(
      [
        { seq: 3, kind: 'result', text: 'Done: NOTES.md written.\n' },
        {
          seq: 4,
          kind: 'diff',
          files: [
            { path: 'NOTES.md', change: 'added' },
            { path: 'b.txt', change: 'added' }
          ]
        }
      ],
      seen
    );
    expect([...first, ...second]).toEqual([
      { type: 'text', role: 'assistant', text: 'Done: NOTES.md written.' },
      { type: 'file', path: 'NOTES.md', change: 'added' },
      { type: 'file', path: 'b.txt', change: 'added' }
    ]);
    // A final answer no message said is shown.
    expect(itemsFromTranscript([{ seq: 5, kind: 'result', text: 'New' }], seen)).toEqual([
      { type: 'text', role: 'assistant', text: 'New', final: true }
    ]);
  });

  it("shows the conversation's answer once when a message already said it, and each file once", () => {
    const text = (t: string) => ({ role: 'assistant', content: [{ type: 'text', text: t }] });
    const event = (data: object) => ({ role: 'system', content: [{ type: 'event', ...data }] });
    const conversation = {
      conversation_id: 'r1',
      steps: [
        {
          id: 'r1',
          steps: [],
          messages: [
            event({ event_type: 'file_change', path: 'A.md', change: 'added' }),
            text('done'),
            text('Simulated agent received the instruction'),
            event({ event_type: 'changes', files: [{ path: 'A.md', change: 'added' }] }),
            text('done')
          ]
        }
      ]
    } as unknown as Conversation;
    expect(itemsFromConversation(conversation)).toEqual([
      { type: 'file', path: 'A.md', change: 'added' },
      { type: 'text', role: 'assistant', text: 'done' },
      { type: 'text', role: 'assistant', text: 'Simulated agent received the instruction' }
    ]);
  });
});

function eventType(kind: string): string {
  return (
    {
      state: 'state_change',
      file: 'file_change',
      diff: 'changes',
      artifact: 'artifact_published',
      exit: 'agent_exit'
    }[kind] ?? kind
  );
}
