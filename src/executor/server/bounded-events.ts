// What one response that shows a whole run (the session page, the dashboard's run page, the
// conversation) holds of its transcript: never all of it at once. The events are read from the
// store page by page; the answer keeps the first events up to half of a byte budget (the head),
// every event that says how the run ended (state, exit, result, diff, artifacts, publishing, the
// note of a cut), and the newest of the rest up to the other half (the tail). What is left out is
// replaced by one `omitted` event: "… N more events, see the transcript", at the place of the
// first one left out. Memory stays within the budget plus one page, however long the transcript.

import type { EventKind } from '../../api/events.js';
import type { TranscriptStore, TranscriptEvent } from '../store/types.js';

/** Bytes of events one response shows at most (besides the kinds always kept). */
export const SHOWN_EVENT_BYTES = 1024 * 1024;
const PAGE_EVENTS = 200;
/** Kinds that say how a run went: few per run, each bounded, always shown. */
const KEPT_KINDS: ReadonlySet<string> = new Set<EventKind>([
  'state',
  'exit',
  'result',
  'diff',
  'artifact',
  'publish',
  'truncated',
  'warning'
]);

interface Sized {
  event: TranscriptEvent;
  bytes: number;
}

/** About the bytes of an event: its text, or its JSON when it has none. */
export function sizeOf(event: TranscriptEvent): number {
  return typeof event.text === 'string' && event.kind === 'output'
    ? event.text.length + 100
    : JSON.stringify(event).length;
}

/** The omitted-events marker, placed at `seq` (the first event left out). */
function omittedEvent(runId: string, seq: number, at: string, count: number, bytes: number): TranscriptEvent {
  return {
    seq,
    at,
    kind: 'omitted',
    omitted_events: count,
    omitted_bytes: bytes,
    text: `… ${count} more events (${bytes} bytes) are not shown here, see the transcript (GET /api/v1/agent/runs/${runId}/transcript?after=${seq - 1})`
  };
}

/** The run's events to show: head, kept kinds, tail and one marker for what was left out. */
export async function boundedEvents(
  store: TranscriptStore,
  runId: string,
  budgetBytes = SHOWN_EVENT_BYTES
): Promise<TranscriptEvent[]> {
  const half = Math.floor(budgetBytes / 2);
  const head: TranscriptEvent[] = [];
  let headBytes = 0;
  let headFull = false;
  const kept: TranscriptEvent[] = [];
  let tail: Sized[] = [];
  let tailBytes = 0;
  let tailStart = 0;
  let omitted: { seq: number; at: string; count: number; bytes: number } | undefined;

  const omit = ({ event, bytes }: Sized) => {
    omitted ??= { seq: event.seq, at: event.at, count: 0, bytes: 0 };
    if (event.seq < omitted.seq) Object.assign(omitted, { seq: event.seq, at: event.at });
    omitted.count++;
    omitted.bytes += bytes;
  };

  for (let after = 0; ;) {
    const page = await store.listEvents(runId, { after, limit: PAGE_EVENTS });
    for (const event of page) {
      const bytes = sizeOf(event);
      if (!headFull && (head.length === 0 || headBytes + bytes <= half)) {
        head.push(event);
        headBytes += bytes;
        continue;
      }
      headFull = true;
      if (KEPT_KINDS.has(event.kind)) {
        kept.push(event);
        continue;
      }
      tail.push({ event, bytes });
      tailBytes += bytes;
      while (tailBytes > half && tailStart < tail.length) {
        const old = tail[tailStart++]!;
        tailBytes -= old.bytes;
        omit(old);
      }
      if (tailStart > 1024 && tailStart * 2 > tail.length) {
        tail = tail.slice(tailStart);
        tailStart = 0;
      }
    }
    if (page.length < PAGE_EVENTS) break;
    after = page.at(-1)!.seq;
    // The store may answer at once (SQLite): let other requests (/healthz, reads) in between pages.
    await new Promise(resolve => setImmediate(resolve));
  }
  const rest = [...kept, ...tail.slice(tailStart).map(sized => sized.event)].sort((a, b) => a.seq - b.seq);
  if (!omitted) return [...head, ...rest];
  const marker = omittedEvent(runId, omitted.seq, omitted.at, omitted.count, omitted.bytes);
  const before = rest.filter(event => event.seq < omitted!.seq);
  const after = rest.filter(event => event.seq >= omitted!.seq);
  return [...head, ...before, marker, ...after];
}
