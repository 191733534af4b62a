// Server-Sent Events for the dashboard's live parts, fed by the store's change notifications (the
// same ones that wake held reads: this process's writes at once, other nodes' by notification).
// The list stream sends a row, rendered here, for each change of a run the viewer's filters show,
// and the counts per state; the run stream sends the transcript entries after the last one the
// page has, and the run's facts when its state changes.

import type { FastifyReply, FastifyRequest } from 'fastify';
import type { RunChangeFeed, RunRequestStore, Stores } from '../../store/types.js';
import { isTerminalState } from './html.js';
import { type Filters, countsHtml, matches, runRow } from './list-page.js';
import { eventHtml, factsHtml } from '../run-view.js';

/** How often the run stream looks at the transcript when no notification came. */
const REREAD_MS = 2000;
/** Events per store read of the run stream, and reads one refresh makes at most before the next. */
const PAGE_EVENTS = 200;
const MAX_PAGES_PER_REFRESH = 50;

/** The viewer's session is still valid (not signed out, expired, or its key revoked). */
export type SessionCheck = () => Promise<boolean>;

/**
 * Opens the stream and returns a function that sends one event; the connection ends on `close`,
 * and (with a `signed-out` event first) when the session ends: checked before every update and
 * with every keep-alive ping.
 */
function open(
  request: FastifyRequest,
  reply: FastifyReply,
  headers: Record<string, string>,
  session: SessionCheck
) {
  reply.hijack();
  reply.raw.writeHead(200, {
    ...headers,
    'content-type': 'text/event-stream; charset=utf-8',
    'cache-control': 'no-store',
    'x-request-id': String(request.id)
  });
  reply.raw.write('retry: 2000\n\n');
  const cleanups: (() => void)[] = [];
  let closed = false;
  const close = () => {
    if (closed) return;
    closed = true;
    cleanups.forEach(c => c());
  };
  request.raw.on('close', close);
  const send = (event: string, data: unknown) => {
    if (!reply.raw.writableEnded) reply.raw.write(`event: ${event}\ndata: ${JSON.stringify(data)}\n\n`);
  };
  const end = () => {
    close();
    reply.raw.end();
  };
  /** False (and the stream ended) once the session is gone. */
  const stillSignedIn = async () => {
    if (closed) return false;
    if (await session()) return true;
    send('signed-out', {});
    end();
    return false;
  };
  const ping = setInterval(() => {
    void stillSignedIn()
      .then(ok => ok && reply.raw.write(': ping\n\n'))
      .catch(() => undefined);
  }, 15_000);
  cleanups.push(() => clearInterval(ping));
  return { send, onClose: (cleanup: () => void) => cleanups.push(cleanup), end, stillSignedIn };
}

/** A queue of one: work triggered while it runs is done once more afterwards, never in parallel. */
function serial(work: () => Promise<void>, fail: (error: unknown) => void): () => void {
  let running = false;
  let again = false;
  const go = (): void => {
    if (running) {
      again = true;
      return;
    }
    running = true;
    work()
      .catch(fail)
      .finally(() => {
        running = false;
        if (again) {
          again = false;
          go();
        }
      });
  };
  return go;
}

/** What the list stream reads: a run, the counts per state, and every run's changes. */
type ListStreamRuns = Pick<RunRequestStore, 'getRun' | 'countRunsByState'> & RunChangeFeed;

export function listStream(
  runs: ListStreamRuns,
  team: string,
  filters: Filters,
  request: FastifyRequest,
  reply: FastifyReply,
  headers: Record<string, string>,
  session: SessionCheck
): void {
  const stream = open(request, reply, headers, session);
  const pending = new Set<string>();
  const flush = serial(
    async () => {
      if (!(await stream.stillSignedIn())) return;
      const ids = [...pending];
      pending.clear();
      for (const id of ids) {
        const run = await runs.getRun(team, id);
        if (run && matches(filters, run)) stream.send('run', { id: run.run_id, html: runRow(run) });
      }
      stream.send('counts', { html: countsHtml(await runs.countRunsByState(team)) });
    },
    error => request.log.warn({ err: error }, 'dashboard list stream')
  );
  stream.onClose(
    runs.onChange(change => {
      pending.add(change.run_id);
      flush();
    })
  );
}

export function runStream(
  stores: Pick<Stores, 'runs' | 'transcript'>,
  team: string,
  runId: string,
  after: number,
  request: FastifyRequest,
  reply: FastifyReply,
  headers: Record<string, string>,
  session: SessionCheck
): void {
  const stream = open(request, reply, headers, session);
  let last = after;
  let state = '';
  const refresh = serial(
    async () => {
      if (!(await stream.stillSignedIn())) return;
      const run = await stores.runs.getRun(team, runId);
      if (!run) {
        stream.end();
        return;
      }
      // Page by page, so a long transcript streams instead of being built at once.
      for (let pages = 0; pages < MAX_PAGES_PER_REFRESH; pages++) {
        const events = await stores.transcript.listEvents(runId, { after: last, limit: PAGE_EVENTS });
        if (events.length === 0) break;
        last = events.at(-1)!.seq;
        stream.send('events', { html: events.map(eventHtml).join('\n'), last });
        if (events.length < PAGE_EVENTS) break;
      }
      if (run.state !== state) {
        state = run.state;
        stream.send('run', { state, html: factsHtml(run), done: isTerminalState(run.state) });
      }
    },
    error => request.log.warn({ err: error }, 'dashboard run stream')
  );
  stream.onClose(stores.transcript.onEvent(id => id === runId && refresh()));
  stream.onClose(stores.runs.onChange(change => change.run_id === runId && refresh()));
  // Another process's appends to a shared SQLite file are not announced (only its run changes
  // are): like a held transcript read, look again now and then.
  const reread = setInterval(refresh, REREAD_MS);
  stream.onClose(() => clearInterval(reread));
  refresh();
}
