// A run's stored transcript is bounded by `limits.transcript`, whatever its agent prints. Output
// events fill the first half of the budget (the head); past it, output is held in a ring that
// keeps only the newest events that fit the second half (the tail), and what falls out of the ring
// is counted, never stored. The ring is written, after one `truncated` event that says how many
// bytes, events and lines were dropped, as soon as any other event comes (a command agent's exit)
// or the run's agent ends, so the transcript still reads in order: head, note, tail, the rest.
// A harness's stream (messages, tool calls and results, file edits, session ids) comes as often
// as its CLI likes: those events are written while the transcript holds less than the whole
// budget, and past it dropped, with one notice. Other kinds (state, diff, result, artifacts) are
// few and bounded on their own: never dropped.
// The run is not failed for any of this. One output event is cut into pieces of at most
// MAX_EVENT_TEXT_BYTES, so no single event (and no single read of one) is large.

import type { Recorder } from './execute.js';

/** The largest `text` of one output event, in UTF-8 bytes. */
export const MAX_EVENT_TEXT_BYTES = 64 * 1024;
/** Room kept for the notes about the cut and for an event's own fields (seq, at, kind). */
const NOTE_BYTES = 1024;
const EVENT_OVERHEAD = 64;
/** The kinds an agent's own stream makes as often as it likes (a harness CLI's), besides output. */
const STREAM_KINDS = new Set(['message', 'action', 'action_result', 'file', 'agent_session']);

export type BoundedRecorder = Recorder & {
  /** Writes the held tail (after its `truncated` note) now; the next output starts a new ring. */
  flush(): Promise<void>;
};

/**
 * An output event held for the tail. Its text is kept as UTF-8 bytes outside the JS heap: the ring
 * turns over as fast as the agent prints, and strings that live that long would pile up in the old
 * generation until a full collection, where buffers are freed as the heap's external memory.
 */
interface Held {
  data: Record<string, unknown>;
  text: Buffer;
  bytes: number;
}

/** Pieces of at most `max` UTF-8 bytes, never splitting a character. */
export function splitText(text: string, max = MAX_EVENT_TEXT_BYTES): string[] {
  if (Buffer.byteLength(text, 'utf8') <= max) return [text];
  const bytes = Buffer.from(text, 'utf8');
  const pieces: string[] = [];
  let start = 0;
  while (start < bytes.length) {
    let end = Math.min(start + max, bytes.length);
    // Back up to the start of a character (continuation bytes are 10xxxxxx).
    while (end < bytes.length && end > start && (bytes[end]! & 0xc0) === 0x80) end--;
    pieces.push(bytes.subarray(start, end).toString('utf8'));
    start = end;
  }
  return pieces;
}

function sizeOf(kind: string, data: Record<string, unknown>): number {
  return Buffer.byteLength(JSON.stringify(data), 'utf8') + kind.length + EVENT_OVERHEAD;
}

function lineCount(text: Buffer): number {
  let lines = 0;
  for (let at = text.indexOf(10); at !== -1; at = text.indexOf(10, at + 1)) lines++;
  return lines;
}

/** Wraps the run's event writer so that what it stores stays within `limitBytes` (plus small notes). */
export function boundTranscript(write: Recorder, limitBytes: number): BoundedRecorder {
  const budget = new TranscriptBudget(write, limitBytes);
  const record = async (kind: string, data: Record<string, unknown>): Promise<void> => {
    if (kind !== 'output' || typeof data.text !== 'string') return budget.recordOne(kind, data);
    for (const text of splitText(data.text)) await budget.recordOne(kind, { ...data, text });
  };
  return Object.assign(record, { flush: () => budget.flush() });
}

/**
 * What a run's transcript has used of its limit: the head written as it comes, then the output
 * kept in a ring of the last part (what falls out of it counted as dropped), written by `flush`.
 */
class TranscriptBudget {
  private readonly headBytes: number;
  private readonly tailBytes: number;
  private used = 0;
  private tailWritten = 0;
  private cutting = false;
  private full = false;
  private ring: Held[] = [];
  private ringBytes = 0;
  private readonly dropped = { bytes: 0, events: 0, lines: 0 };

  constructor(
    private readonly write: Recorder,
    private readonly limitBytes: number
  ) {
    this.headBytes = Math.floor(limitBytes / 2);
    this.tailBytes = limitBytes - this.headBytes - NOTE_BYTES;
  }

  /** Keeps an output event in the ring, dropping the oldest ones past what the tail may hold. */
  private hold({ text, ...data }: Record<string, unknown>, bytes: number): void {
    this.ring.push({ data, text: Buffer.from(typeof text === 'string' ? text : '', 'utf8'), bytes });
    this.ringBytes += bytes;
    while (this.ringBytes > Math.max(0, this.tailBytes - this.tailWritten) && this.ring.length > 0) {
      const old = this.ring.shift()!;
      this.ringBytes -= old.bytes;
      this.dropped.bytes += old.text.length;
      this.dropped.events++;
      this.dropped.lines += lineCount(old.text);
    }
  }

  /** Writes what the ring holds, after a note of what was dropped before it. */
  async flush(): Promise<void> {
    const held = this.ring;
    const note = { ...this.dropped };
    this.ring = [];
    this.ringBytes = 0;
    Object.assign(this.dropped, { bytes: 0, events: 0, lines: 0 });
    if (note.events > 0) {
      await this.write('truncated', {
        dropped_bytes: note.bytes,
        dropped_events: note.events,
        dropped_lines: note.lines,
        limit_bytes: this.limitBytes,
        text:
          `… ${note.bytes} bytes of output (${note.events} events, ${note.lines} lines) were dropped here: ` +
          `the transcript keeps the first and the last part of a run's output within limits.transcript`
      });
    }
    for (const event of held) {
      this.tailWritten += event.bytes;
      await this.write('output', { ...event.data, text: event.text.toString('utf8') });
      // A store that answers at once (SQLite) would otherwise write the whole tail without
      // letting a request in: give the event loop a turn between events.
      await new Promise(resolve => setImmediate(resolve));
    }
  }

  /** One event: written, held in the ring (output past the head), or left out (past the limit). */
  async recordOne(kind: string, data: Record<string, unknown>): Promise<void> {
    const bytes = sizeOf(kind, data);
    if (kind === 'output' && (this.cutting || this.used + bytes > this.headBytes)) {
      if (!this.cutting) {
        this.cutting = true;
        await this.write('notice', {
          text:
            `The transcript reached half of limits.transcript (${this.limitBytes} bytes): ` +
            'from here only the last part of the output is kept, written when the agent ends.'
        });
      }
      this.hold(data, bytes);
      return;
    }
    if (STREAM_KINDS.has(kind) && this.used + bytes > this.limitBytes) {
      if (!this.full) {
        this.full = true;
        await this.write('notice', {
          text:
            `The transcript reached limits.transcript (${this.limitBytes} bytes): ` +
            "the agent's further messages, tool calls and results are not kept."
        });
      }
      return;
    }
    if (kind !== 'output' && (this.ring.length > 0 || this.dropped.events > 0)) await this.flush();
    this.used += bytes;
    await this.write(kind, data);
  }
}
