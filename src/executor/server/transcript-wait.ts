// The transcript read with `after=<seq>` and `Prefer: wait=N`: a follower asks for the events newer
// than the last one it has, and the answer is held until there is one (or the run ended, the time
// is up, the client left, the server stops). Appends wake held reads through the ChangeHub; the
// hold also re-reads every few seconds, so a notification lost between nodes costs a delay, never
// an event. A read answers one page: at most `limit` events (default 100, at most 1000) and
// about 512 KiB of them, with `has_more` and `next_after` to go on from.

import type { FastifyReply, FastifyRequest } from 'fastify';
import { MAX_WAIT_SECONDS, isTerminalState } from '../../api/index.js';
import type { StoredRun, TranscriptEvent } from '../store/types.js';
import { sizeOf } from './bounded-events.js';
import type { ServerContext } from './context.js';
import { ProblemError } from './problem.js';

const REREAD_MS = 2000;
export const DEFAULT_TRANSCRIPT_LIMIT = 100;
export const MAX_TRANSCRIPT_LIMIT = 1000;
/** A page stops once its events pass this many bytes (it always holds at least one event). */
export const MAX_PAGE_BYTES = 512 * 1024;

export interface TranscriptPage {
  run_id: string;
  state: string;
  events: TranscriptEvent[];
  /** More events follow this page now: read again with `after=next_after`. */
  has_more: boolean;
  /** The seq of the last event of this page (`after` itself when the page is empty). */
  next_after: number;
}

/** `limit` from the query string: 1 to 1000, 100 when absent. */
export function parseLimit(query: unknown): number {
  const value = (query as Record<string, unknown> | undefined)?.limit;
  if (value === undefined || value === '') return DEFAULT_TRANSCRIPT_LIMIT;
  const number = typeof value === 'string' && /^\d{1,4}$/.test(value) ? Number(value) : NaN;
  if (number >= 1 && number <= MAX_TRANSCRIPT_LIMIT) return number;
  throw new ProblemError(
    'invalid_request',
    `limit ${JSON.stringify(value)}: expected a whole number of events from 1 to ${MAX_TRANSCRIPT_LIMIT}`
  );
}

/** Up to `limit` events after `after`, cut at about MAX_PAGE_BYTES, and whether more follow. */
async function readPage(
  context: Pick<ServerContext, 'stores'>,
  runId: string,
  after: number,
  limit: number
): Promise<{ events: TranscriptEvent[]; more: boolean }> {
  const events = await context.stores.transcript.listEvents(runId, { after, limit: limit + 1 });
  let more = events.length > limit;
  if (more) events.length = limit;
  let bytes = 0;
  for (let index = 0; index < events.length; index++) {
    bytes += sizeOf(events[index]!);
    if (index > 0 && bytes > MAX_PAGE_BYTES) {
      events.length = index;
      more = true;
      break;
    }
  }
  return { events, more };
}

/** `after` from the query string: a whole number, or absent (every event). */
export function parseAfter(query: unknown): number {
  const value = (query as Record<string, unknown> | undefined)?.after;
  if (value === undefined || value === '') return 0;
  if (typeof value !== 'string' || !/^\d{1,15}$/.test(value))
    throw new ProblemError(
      'invalid_request',
      `after ${JSON.stringify(value)}: expected the seq of an event, a whole number such as 12`
    );
  return Number(value);
}

/** `Prefer: wait=N` (RFC 7240), capped at 60 s; undefined when absent. */
function preferWait(header: string): number | undefined {
  const match = /(?:^|[,;\s])wait\s*=\s*"?(\d+)"?/i.exec(header);
  return match ? Math.min(MAX_WAIT_SECONDS, Number(match[1])) : undefined;
}

export async function readTranscript(
  context: Pick<ServerContext, 'stores' | 'hub' | 'draining'>,
  request: FastifyRequest,
  reply: FastifyReply,
  find: () => Promise<StoredRun>
): Promise<TranscriptPage> {
  const after = parseAfter(request.query);
  const limit = parseLimit(request.query);
  let run = await find();
  let page = await readPage(context, run.run_id, after, limit);
  const wait = preferWait(String(request.headers.prefer ?? ''));
  if (wait !== undefined) reply.header('preference-applied', `wait=${wait}`);
  if (wait && page.events.length === 0 && !isTerminalState(run.state)) {
    const closed = new AbortController();
    request.raw.once('close', () => closed.abort());
    const deadline = Date.now() + wait * 1000;
    while (!closed.signal.aborted && !context.draining && Date.now() < deadline) {
      const ms = Math.min(REREAD_MS, deadline - Date.now());
      await context.hub.waitEvent(run.run_id, after, ms, closed.signal);
      run = await find();
      page = await readPage(context, run.run_id, after, limit);
      if (page.events.length > 0 || isTerminalState(run.state)) break;
    }
  }
  const { events, more } = page;
  return {
    run_id: run.run_id,
    state: run.state,
    events,
    has_more: more,
    next_after: events.at(-1)?.seq ?? after
  };
}
