// `agent-run logs` reads the conversation where the service has one and the transcript otherwise:
// both must show the same details (issue 25 item 9: the conversation path printed bare
// `event state_change`, `event file_change` and `artifact`).
import { describe, expect, it } from '@jest/globals';
import type { Conversation, TranscriptEntry } from '../../src/api/index.js';
import { itemsFromConversation, itemsFromTranscript } from '../../src/client/index.js';

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
