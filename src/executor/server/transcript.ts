// The transcript read with `after=<seq>` and `Prefer: wait=N`: a follower asks for the events newer
// than the last one it has, and the answer is held until there is one (or the run ended, the time
// is up, the client left, the server stops). Appends wake held reads through the ChangeHub; the
// hold also re-reads every few seconds, so a notification lost between nodes costs a delay, never
// an event.

import type { FastifyReply, FastifyRequest } from 'fastify';
import { isTerminalState } from '../../api/index.js';
import type { StoredRun, TranscriptEvent } from '../store/types.js';
import type { ServerContext } from './context.js';
import { ProblemError } from './problem.js';

const MAX_WAIT_SECONDS = 60;
const REREAD_MS = 2000;

export interface TranscriptPage {
  run_id: string;
  state: string;
  events: TranscriptEvent[];
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
  context: ServerContext,
  request: FastifyRequest,
  reply: FastifyReply,
  find: () => Promise<StoredRun>
): Promise<TranscriptPage> {
  const after = parseAfter(request.query);
  let run = await find();
  const newer = async () => (await context.store.listEvents(run.run_id)).filter(event => event.seq > after);
  let events = await newer();
  const wait = preferWait(String(request.headers.prefer ?? ''));
  if (wait !== undefined) reply.header('preference-applied', `wait=${wait}`);
  if (wait && events.length === 0 && !isTerminalState(run.state)) {
    const closed = new AbortController();
    request.raw.once('close', () => closed.abort());
    const deadline = Date.now() + wait * 1000;
    while (!closed.signal.aborted && !context.draining && Date.now() < deadline) {
      const ms = Math.min(REREAD_MS, deadline - Date.now());
      await context.hub.waitEvent(run.run_id, after, ms, closed.signal);
      run = await find();
      events = await newer();
      if (events.length > 0 || isTerminalState(run.state)) break;
    }
  }
  return { run_id: run.run_id, state: run.state, events };
}
