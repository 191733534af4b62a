// The transcript budget on its own: what a run's event writer receives when an agent prints more
// than limits.transcript — the head, one `truncated` note, the newest output, other kinds in order
// and never dropped — and output cut into events of at most 64 KiB without splitting a character.
import { describe, expect, it } from '@jest/globals';
import {
  MAX_EVENT_TEXT_BYTES,
  boundTranscript,
  splitText
} from '../../src/executor/worker/transcript-budget.js';

type Written = { kind: string; data: Record<string, unknown> };

function writer() {
  const written: Written[] = [];
  const record = boundTranscript(async (kind, data) => void written.push({ kind, data }), 64 * 1024);
  return { written, record };
}

describe('boundTranscript', () => {
  it('keeps the head and the newest output, notes what was dropped, and never drops other kinds', async () => {
    const { written, record } = writer();
    for (let i = 0; i < 1000; i++)
      await record('output', { stream: 'stdout', text: `line ${i} ${'x'.repeat(90)}\n` });
    await record('exit', { exit_code: 0 });
    await record('result', { text: 'the answer' });
    const kinds = written.map(event => event.kind);
    const stored = written.reduce((sum, event) => sum + JSON.stringify(event.data).length, 0);
    expect(stored).toBeLessThanOrEqual(64 * 1024 + 2048);
    expect(String(written[0]!.data.text)).toMatch(/^line 0 /);
    expect(kinds.filter(kind => kind === 'notice')).toHaveLength(1);
    expect(kinds.filter(kind => kind === 'truncated')).toHaveLength(1);
    const outputs = written.filter(event => event.kind === 'output');
    expect(String(outputs.at(-1)!.data.text)).toMatch(/^line 999 /);
    expect(kinds.slice(-2)).toEqual(['exit', 'result']);
    // Head, then the note, then the tail: the tail's first line follows the note, the head's last precedes it.
    const cut = kinds.indexOf('truncated');
    const lineOf = (event: Written | undefined) => Number(/^line (\d+)/.exec(String(event?.data.text))?.[1]);
    const keptBefore = lineOf(written[cut - 1]?.kind === 'notice' ? written[cut - 2] : written[cut - 1]);
    const keptAfter = lineOf(written[cut + 1]);
    const note = written[cut]!.data;
    expect(note.dropped_events).toBe(keptAfter - keptBefore - 1);
    expect(note.dropped_lines).toBe(note.dropped_events);
    expect(note.limit_bytes).toBe(64 * 1024);
  });

  it('writes what it holds when the agent ends (flush), and stores small runs untouched', async () => {
    const { written, record } = writer();
    await record('output', { stream: 'stderr', text: 'small' });
    await record.flush();
    expect(written).toEqual([{ kind: 'output', data: { stream: 'stderr', text: 'small' } }]);
    for (let i = 0; i < 100; i++) await record('output', { stream: 'stdout', text: 'y'.repeat(1000) });
    const before = written.length;
    await record.flush();
    expect(written.length).toBeGreaterThan(before);
    expect(written.map(event => event.kind)).toContain('truncated');
  });
});

describe('splitText', () => {
  it('cuts into pieces of at most the limit without splitting a character', () => {
    const text = 'ü✓'.repeat(40_000);
    const pieces = splitText(text);
    expect(pieces.join('')).toBe(text);
    for (const piece of pieces) expect(Buffer.byteLength(piece)).toBeLessThanOrEqual(MAX_EVENT_TEXT_BYTES);
    expect(pieces.length).toBeGreaterThan(1);
    expect(splitText('short')).toEqual(['short']);
  });
});
