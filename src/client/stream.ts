// A run followed on one request: the executor's event stream (GET /agent/runs/{id}/events with
// Accept: text/event-stream) brings every transcript event and change of state as it happens, and
// `done` with the run's final record once it ended. One stream per run is shared by whoever follows
// it in this client (the live log and the wait): they subscribe, and it closes when the last one
// lets go. A stream cut half-way is opened again after its last event (Last-Event-ID), so nothing
// is lost or shown twice. A server without streams (404, 405, 406, an answer that is not an event
// stream) or a stream that keeps failing ends with `unavailable` or `failed`: the subscribers then
// go back to held reads and polling, from where the stream left them.

import type { AnyEvent } from '../api/index.js';
import { type Run, parseRun } from './parse.js';
import { abortableSleep } from './sleep.js';
import type { StreamResponse } from './transport.js';

export interface StreamEnd {
  /** done: the run ended and every event came; unavailable: no stream here; failed: it broke too often; stopped: let go. */
  outcome: 'done' | 'unavailable' | 'failed' | 'stopped';
  /** The run's final record (done), or the newest record the stream carried. */
  run?: Run;
  /** The seq of the last event received (0 when none). */
  lastSeq: number;
  /** Requests this stream made (the first and each reconnect). */
  requests: number;
  /** The status of the first answer when it was not a stream (unavailable). */
  status?: number;
}

export interface StreamListener {
  /** Each transcript event, in order, once. */
  event?: (event: AnyEvent) => void;
  /** A record of the run as a change of state brought it (and the final one). */
  run?: (run: Run) => void;
}

/** What opens one connection of a stream: the client's request with Accept: text/event-stream. */
export type StreamOpener = (runId: string, after: number, signal: AbortSignal) => Promise<StreamResponse>;

/** Reconnects in a row, without an event between them, before the stream is given up. */
const MAX_FAILURES = 5;

interface Message {
  id?: string;
  event: string;
  data: string;
}

/** Splits a text/event-stream body into messages (the WHATWG rules: fields, comments, blank lines). */
export async function* sseMessages(chunks: AsyncIterable<Buffer>): AsyncGenerator<Message> {
  const decoder = new TextDecoder();
  let buffer = '';
  let message: { id?: string; event?: string; data: string[] } = { data: [] };
  for await (const chunk of chunks) {
    buffer += decoder.decode(chunk, { stream: true });
    for (let end = buffer.search(/\r\n|\r|\n/); end >= 0; end = buffer.search(/\r\n|\r|\n/)) {
      const line = buffer.slice(0, end);
      // A lone \r at the end of the buffer may be the first half of \r\n: wait for more.
      if (buffer[end] === '\r' && end === buffer.length - 1) break;
      buffer = buffer.slice(end + (buffer.startsWith('\r\n', end) ? 2 : 1));
      if (line === '') {
        if (message.data.length > 0)
          yield { id: message.id, event: message.event || 'message', data: message.data.join('\n') };
        message = { id: message.id, data: [] };
        continue;
      }
      if (line.startsWith(':')) continue;
      const colon = line.indexOf(':');
      const field = colon < 0 ? line : line.slice(0, colon);
      const value = colon < 0 ? '' : line.slice(colon + 1).replace(/^ /, '');
      if (field === 'data') message.data.push(value);
      else if (field === 'event') message.event = value;
      else if (field === 'id' && !value.includes('\0')) message.id = value;
    }
    // One line is never allowed to grow without bound.
    if (buffer.length > 16 * 1024 * 1024) throw new Error('an event stream line passed 16 MiB');
  }
}

export class RunEventStream {
  private readonly listeners = new Set<StreamListener>();
  private readonly stopper = new AbortController();
  private lastSeq: number;
  private lastRun: Run | undefined;
  private requests = 0;
  private refusedWith: number | undefined;
  /** Resolves when the stream is over, whatever the reason. */
  readonly ended: Promise<StreamEnd>;

  constructor(
    private readonly runId: string,
    private readonly open: StreamOpener,
    options: {
      after?: number;
      signal?: AbortSignal;
      sleep?: (ms: number, signal?: AbortSignal) => Promise<void>;
    } = {}
  ) {
    this.lastSeq = options.after ?? 0;
    options.signal?.addEventListener('abort', () => this.stopper.abort(), { once: true });
    if (options.signal?.aborted) this.stopper.abort();
    const sleep = options.sleep ?? abortableSleep;
    this.ended = this.run(sleep).then(outcome => ({
      outcome,
      run: this.lastRun,
      lastSeq: this.lastSeq,
      requests: this.requests,
      status: this.refusedWith
    }));
  }

  /** Adds a listener; the function removes it, and the last removal closes the stream. */
  subscribe(listener: StreamListener): () => void {
    this.listeners.add(listener);
    if (this.lastRun && listener.run) {
      const run = this.lastRun;
      queueMicrotask(() => listener.run?.(run));
    }
    return () => {
      this.listeners.delete(listener);
      if (this.listeners.size === 0) this.stopper.abort();
    };
  }

  private async run(
    sleep: (ms: number, signal?: AbortSignal) => Promise<void>
  ): Promise<StreamEnd['outcome']> {
    // Subscribers of this tick (the live log and the wait start together) all see the first event.
    await new Promise(resolve => setImmediate(resolve));
    let failures = 0;
    let opened = false;
    while (!this.stopper.signal.aborted) {
      let response: StreamResponse | undefined;
      try {
        this.requests++;
        response = await this.open(this.runId, this.lastSeq, this.stopper.signal);
        const type = String(response.headers['content-type'] ?? '');
        if (response.status !== 200 || !/^text\/event-stream\b/i.test(type)) {
          response.close();
          // The first answer says whether this server streams; later ones are failures to ride out.
          if (!opened) {
            this.refusedWith = response.status;
            return 'unavailable';
          }
          throw new Error(`the stream answered ${response.status}`);
        }
        opened = true;
        for await (const message of sseMessages(response.chunks)) {
          if (message.event === 'done') {
            const done = JSON.parse(message.data) as { run?: unknown };
            if (done.run !== undefined) this.tellRun(parseRun(done.run, `the stream of run ${this.runId}`));
            response.close();
            return 'done';
          }
          const event = JSON.parse(message.data) as AnyEvent & { run?: unknown };
          const seq = Number(message.id ?? event.seq);
          if (!Number.isSafeInteger(seq) || seq <= this.lastSeq) continue;
          this.lastSeq = seq;
          failures = 0;
          const { run, ...shown } = event;
          for (const listener of [...this.listeners]) listener.event?.(shown as AnyEvent);
          if (run !== undefined) this.tellRun(parseRun(run, `the stream of run ${this.runId}`));
        }
      } catch {
        response?.close();
        if (this.stopper.signal.aborted) break;
        if (!opened) return 'unavailable';
      }
      // Cut (or ended without `done`): open it again after the last event, a little later each time.
      if (++failures > MAX_FAILURES) return 'failed';
      await sleep(Math.min(250 * 2 ** (failures - 1), 5000), this.stopper.signal).catch(() => undefined);
    }
    return 'stopped';
  }

  private tellRun(run: Run): void {
    this.lastRun = run;
    for (const listener of [...this.listeners]) listener.run?.(run);
  }
}
