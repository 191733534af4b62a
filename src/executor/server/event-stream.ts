// Server-sent event streams (text/event-stream): a run's transcript events and changes of state as
// they happen (GET /runs/{id}/events), and the changes of state of several runs of a team on one
// cursor (GET /events). A stream is woken by the ChangeHub's notifications (the store's own, and
// PostgreSQL's LISTEN between nodes) and reads the store only when woken, once per heartbeat as a
// fallback for a lost notification, and never in a loop of its own. Every message carries an `id:`
// (the event's seq, or the team's sequence), so a client that is cut resumes with Last-Event-ID and
// gets each event once. What a stream may hold for a slow reader is bounded: past
// limits.stream_buffer, or a heartbeat with nothing taken, the connection is cut between two
// messages and the client resumes from its last whole one. Streams are counted per key and per node;
// beyond either bound the answer is 429 too_many_streams with Retry-After.

import type { ServerResponse } from 'node:http';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { isTerminalState } from '../../api/index.js';
import type { StateEventRow, Stores, StoredRun, TranscriptEvent } from '../store/types.js';
import type { ChangeHub } from './changes.js';
import type { ServerSettings } from './context.js';
import { ProblemError } from './problem.js';
import { type SessionLinks, toRecord } from './records.js';

/** What a stream's connection is bounded by: its buffer for a slow reader and its heartbeat. */
type StreamLimits = Pick<ServerSettings['limits'], 'streamBufferBytes' | 'streamHeartbeatMs'>;

/** What a run's event stream reads: its transcript, the hub that wakes it, and the run's links. */
export interface RunStreamContext {
  stores: Pick<Stores, 'transcript'>;
  settings: { limits: StreamLimits };
  hub: ChangeHub;
  links: SessionLinks;
}

/** What the events cursor's stream reads: the runs' changes of state, and the hub that wakes it. */
export interface StateStreamContext {
  stores: Pick<Stores, 'runs'>;
  settings: { limits: StreamLimits };
  hub: ChangeHub;
}

/** Events one read of the store takes at most. */
const PAGE_EVENTS = 200;
/** The delay an EventSource waits before it reconnects (the `retry:` field), in ms. */
const RECONNECT_MS = 1000;
/** Seconds a client refused for the stream bounds is asked to wait. */
const RETRY_AFTER_SECONDS = 5;

/** The event types of the events cursor, by the state they announce (the production service's names). */
export const STATE_EVENT_TYPES: Readonly<Record<string, string>> = {
  INPROGRESS: 'run_in_progress',
  SUCCEEDED: 'run_succeeded',
  FAILED: 'run_failed',
  ERROR: 'run_errored',
  BLOCKED: 'run_blocked',
  CANCELLED: 'run_cancelled'
};

/** Whether the request asks for an event stream (Accept: text/event-stream). */
export function wantsEventStream(request: FastifyRequest): boolean {
  return /(^|,)\s*text\/event-stream\s*(;|,|$)/i.test(String(request.headers.accept ?? ''));
}

/** The open streams of this node, per key and in all. */
export class StreamSlots {
  private readonly perKey = new Map<string, number>();
  private total = 0;

  constructor(
    private readonly maxPerKey: number,
    private readonly maxTotal: number
  ) {}

  /** Takes a slot for `keyId`, or throws 429 too_many_streams; the function gives it back (once). */
  take(keyId: string): () => void {
    const mine = this.perKey.get(keyId) ?? 0;
    const retry = { 'retry-after': String(RETRY_AFTER_SECONDS) };
    if (mine >= this.maxPerKey)
      throw new ProblemError(
        'too_many_streams',
        `this key has ${mine} event streams open, its limit (limits.max_streams_per_key: ${this.maxPerKey}); close one or retry in ${RETRY_AFTER_SECONDS} s`,
        retry
      );
    if (this.total >= this.maxTotal)
      throw new ProblemError(
        'too_many_streams',
        `this executor node has ${this.total} event streams open, its limit (limits.max_streams: ${this.maxTotal}); retry in ${RETRY_AFTER_SECONDS} s`,
        retry
      );
    this.perKey.set(keyId, mine + 1);
    this.total++;
    let given = false;
    return () => {
      if (given) return;
      given = true;
      this.total--;
      const left = (this.perKey.get(keyId) ?? 1) - 1;
      if (left <= 0) this.perKey.delete(keyId);
      else this.perKey.set(keyId, left);
    };
  }

  get open(): number {
    return this.total;
  }
}

/**
 * Where a stream resumes: the Last-Event-ID header (an EventSource's reconnect) before the query's
 * cursor (`after` or `since`). A header that is not a whole number is refused, naming it.
 */
export function resumePoint(request: FastifyRequest, fromQuery: number): number {
  const header = request.headers['last-event-id'];
  if (header === undefined || header === '') return fromQuery;
  const value = Array.isArray(header) ? header[0]! : header;
  if (!/^\d{1,15}$/.test(value.trim()))
    throw new ProblemError(
      'invalid_request',
      `Last-Event-ID ${JSON.stringify(value.slice(0, 40))}: expected the id of an event this stream sent, a whole number such as 12`
    );
  return Number(value.trim());
}

/** One message of the stream: JSON on one line, so no field can break the framing. */
function message(id: number | undefined, event: string, data: unknown): string {
  const name = event.replace(/[^\w.-]/g, '_');
  return `${id === undefined ? '' : `id: ${id}\n`}event: ${name}\ndata: ${JSON.stringify(data)}\n\n`;
}

/**
 * The open connection: writes whole messages, waits between reads for a wake (or the heartbeat),
 * and cuts a reader too slow for its buffer.
 */
class Stream {
  private woken = false;
  /** The last write was not taken whole: 'drain' tells when it is. */
  private full = false;
  private wakeUp: (() => void) | undefined;
  readonly closed = new AbortController();

  constructor(
    private readonly raw: ServerResponse,
    private readonly bufferBytes: number,
    private readonly heartbeatMs: number
  ) {
    raw.once('close', () => {
      this.closed.abort();
      this.wake();
    });
  }

  wake = (): void => {
    this.woken = true;
    this.wakeUp?.();
  };

  get open(): boolean {
    return !this.closed.signal.aborted;
  }

  /** Writes one message; false (and the connection cut) when the reader is too slow for its buffer. */
  send(text: string): boolean {
    if (!this.open) return false;
    // What waits unsent is checked before a message is added: a message larger than the buffer
    // still goes to a reader that keeps up.
    if (this.raw.writableLength > this.bufferBytes) {
      this.cut();
      return false;
    }
    this.full = !this.raw.write(text) || this.full;
    return true;
  }

  private cut(): void {
    this.raw.destroy();
    this.closed.abort();
  }

  /**
   * Waits until what was written is taken (at once when the last write was): a reader that takes
   * nothing for a heartbeat is cut.
   */
  async drained(): Promise<boolean> {
    if (!this.open) return false;
    if (!this.full) return true;
    const taken = await new Promise<boolean>(resolve => {
      const done = (value: boolean) => {
        clearTimeout(timer);
        this.raw.off('drain', onDrain);
        this.raw.off('close', onClose);
        resolve(value);
      };
      const onDrain = () => done(true);
      const onClose = () => done(false);
      const timer = setTimeout(() => done(false), this.heartbeatMs);
      this.raw.once('drain', onDrain);
      this.raw.once('close', onClose);
    });
    if (!taken) this.cut();
    else this.full = false;
    return taken && this.open;
  }

  /** Until a wake (at once if one came since the last call), the heartbeat or the end; true on a wake. */
  async idle(): Promise<boolean> {
    if (this.woken || !this.open) {
      this.woken = false;
      return true;
    }
    const woken = await new Promise<boolean>(resolve => {
      const timer = setTimeout(() => {
        this.wakeUp = undefined;
        resolve(false);
      }, this.heartbeatMs);
      this.wakeUp = () => {
        clearTimeout(timer);
        this.wakeUp = undefined;
        resolve(true);
      };
    });
    this.woken = false;
    if (!woken) this.send(': keep-alive\n\n');
    return woken;
  }

  end(): void {
    if (this.open) this.raw.end();
  }
}

/** Starts the answer: 200, text/event-stream, no caching or proxy buffering. */
function open(limits: StreamLimits, request: FastifyRequest, reply: FastifyReply): Stream {
  reply.hijack();
  const raw = reply.raw;
  raw.writeHead(200, {
    'content-type': 'text/event-stream; charset=utf-8',
    'cache-control': 'no-cache, no-transform',
    'x-accel-buffering': 'no',
    'x-request-id': String(request.id)
  });
  raw.socket?.setNoDelay(true);
  const stream = new Stream(raw, limits.streamBufferBytes, limits.streamHeartbeatMs);
  stream.send(`retry: ${RECONNECT_MS}\n\n`);
  return stream;
}

/** Logs a failure of a stream already answering (its status is sent: the connection is cut). */
function failed(request: FastifyRequest, stream: Stream, error: unknown): void {
  if (stream.open) request.log.warn({ err: error }, 'event stream failed; the client resumes');
  request.raw.destroy();
}

/**
 * GET /runs/{id}/events as a stream: every event after `after`, then each new one as it is
 * appended; `done` once the run is terminal and every event is sent. A `state` event that is the
 * newest of its read carries the run's record as `run` when the record is in that state.
 */
export async function streamRunEvents(
  context: RunStreamContext,
  request: FastifyRequest,
  reply: FastifyReply,
  find: () => Promise<StoredRun>,
  after: number,
  release: () => void
): Promise<void> {
  const { transcript } = context.stores;
  const stream = open(context.settings.limits, request, reply);
  let run = await find().catch(() => undefined);
  const stop = context.hub.watch(run ? [run.run_id] : [], stream.wake);
  try {
    if (!run) return;
    let cursor = after;
    for (let idle = false; stream.open;) {
      const events = await transcript.listEvents(run.run_id, { after: cursor, limit: PAGE_EVENTS });
      const lastState = events.findLast(event => event.kind === 'state');
      if (lastState || idle) run = await find();
      for (const event of events) {
        const shown: TranscriptEvent =
          event === lastState && event.state === run.state
            ? { ...event, run: toRecord(run, context.links) }
            : event;
        if (!stream.send(message(event.seq, event.kind, shown)) || !(await stream.drained())) return;
        cursor = event.seq;
      }
      if (!(await stream.drained())) return;
      if (events.length === PAGE_EVENTS) continue;
      if (isTerminalState(run.state)) {
        // Events written with the end (and any after it) are read once more before `done`.
        const rest = await transcript.listEvents(run.run_id, { after: cursor, limit: PAGE_EVENTS });
        if (rest.length > 0) continue;
        stream.send(
          message(undefined, 'done', {
            run_id: run.run_id,
            state: run.state,
            last_seq: cursor,
            run: toRecord(run, context.links)
          })
        );
        return;
      }
      idle = !(await stream.idle());
    }
  } catch (error) {
    failed(request, stream, error);
  } finally {
    stop();
    release();
    stream.end();
  }
}

/** One entry of the events cursor, in the production service's shape (and its field names too). */
export function cursorEvent(row: StateEventRow): Record<string, unknown> {
  const type = STATE_EVENT_TYPES[row.state] ?? `run_${row.state.toLowerCase()}`;
  return {
    sequence: row.sequence,
    run_id: row.run_id,
    type,
    state: row.state,
    timestamp: row.at,
    event_type: type,
    occurred_at: row.at
  };
}

/**
 * GET /events as a stream: the changes of state of these runs after `since`, then each new one;
 * `done` once every run is terminal and its changes are sent.
 */
export async function streamStateEvents(
  context: StateStreamContext,
  request: FastifyRequest,
  reply: FastifyReply,
  team: string,
  runIds: readonly string[],
  since: number,
  release: () => void
): Promise<void> {
  const stream = open(context.settings.limits, request, reply);
  const stop = context.hub.watch(runIds, stream.wake);
  try {
    let cursor = since;
    while (stream.open) {
      const rows = await context.stores.runs.listStateEvents(team, runIds, cursor, PAGE_EVENTS);
      for (const row of rows) {
        const event = cursorEvent(row);
        if (!stream.send(message(row.sequence, String(event.type), event)) || !(await stream.drained()))
          return;
        cursor = row.sequence;
      }
      if (!(await stream.drained())) return;
      if (rows.length === PAGE_EVENTS) continue;
      const states = await context.stores.runs.runStates(team, runIds);
      if ([...states.values()].every(state => isTerminalState(state))) {
        const rest = await context.stores.runs.listStateEvents(team, runIds, cursor, 1);
        if (rest.length > 0) continue;
        stream.send(message(undefined, 'done', { next_since: cursor, states: Object.fromEntries(states) }));
        return;
      }
      await stream.idle();
    }
  } catch (error) {
    failed(request, stream, error);
  } finally {
    stop();
    release();
    stream.end();
  }
}
