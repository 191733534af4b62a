// Live progress of a run as it happens, at the cost the server allows. A server that holds
// transcript reads (`after=SEQ` + `Prefer: wait=N`) is long-polled: one request per new event.
// Otherwise the follower reads (the transcript, or the conversation where there is no transcript)
// only when told the run changed state and once at the end, so an idle run costs nothing extra.
// A transcript that comes in pages (`has_more`) is read page after page until its end.

import type { Transcript } from '../api/index.js';
import type { AgentRunClient } from './client.js';
import {
  type ProgressItem,
  SeenItems,
  isUnsupported,
  itemsFromConversation,
  itemsFromTranscript
} from './run-readers.js';
import { AbortError } from './errors.js';
import { abortableSleep } from './sleep.js';

export interface FollowOptions {
  /** Receives new items, in order, each once. */
  onItems: (items: ProgressItem[]) => void;
  /** Seconds a held read may wait (default 30). */
  holdSeconds?: number;
  /** Called once when no source of progress is available, or a read fails. */
  onNotice?: (message: string) => void;
  /** Ends every read, held or not, when it aborts: the caller's deadline for the whole follow. */
  signal?: AbortSignal;
  /** Shows only what comes after this point (RunFollower.position): a new turn without the earlier ones. */
  from?: FollowPosition;
}

/** A point in a run's progress: its last transcript event, and how many conversation items it had. */
export interface FollowPosition {
  seq: number;
  conversationItems: number;
}

type Mode = 'unknown' | 'stream' | 'held' | 'transcript' | 'conversation' | 'none';
/** Pages one read goes through at most; a transcript the executor bounds needs far fewer. */
const MAX_PAGES = 1000;

export class RunFollower {
  private mode: Mode = 'unknown';
  private lastSeq = 0;
  private shownConversationItems = 0;
  private readonly stopper = new AbortController();
  private loop: Promise<void> = Promise.resolve();
  private reading: Promise<void> = Promise.resolve();
  private terminalSeen = false;
  /** The stream brought every event up to the run's end: nothing is left to read. */
  private streamed = false;
  private reported = false;
  private readonly seen = new SeenItems();

  constructor(
    private readonly client: AgentRunClient,
    private readonly runId: string,
    private readonly options: FollowOptions
  ) {
    this.lastSeq = options.from?.seq ?? 0;
    this.shownConversationItems = options.from?.conversationItems ?? 0;
  }

  /**
   * Where the run's progress is now (taken before a follow-up is sent, a follower from here shows
   * only the new turn): the seq of its last transcript event, read page after page, or the count
   * of its conversation's items where there is no transcript; zero where there is neither.
   */
  static async position(
    client: AgentRunClient,
    runId: string,
    options: { signal?: AbortSignal } = {}
  ): Promise<FollowPosition> {
    const at: FollowPosition = { seq: 0, conversationItems: 0 };
    try {
      let read = await client.runs.transcript(runId, { limit: 1000, signal: options.signal });
      for (let pages = 1; read; pages++) {
        const { events, has_more: more, next_after: next } = read.transcript;
        at.seq = Math.max(at.seq, next ?? 0, ...events.map(event => event.seq));
        if (!more || events.length === 0 || pages >= MAX_PAGES) return at;
        read = await client.runs.transcript(runId, { after: at.seq, limit: 1000, signal: options.signal });
      }
    } catch (error) {
      if (!isUnsupported(error)) throw error;
    }
    try {
      at.conversationItems = itemsFromConversation(
        await client.runs.conversation(runId, { signal: options.signal })
      ).length;
    } catch (error) {
      if (!isUnsupported(error)) throw error;
    }
    return at;
  }

  /**
   * Follows the run's event stream when the server offers one (every event on one request);
   * otherwise, or once the stream fails, makes the first read and, when the server holds reads,
   * keeps long-polling in the background from the last event shown.
   */
  start(): void {
    const stream = this.client.runs.stream(this.runId, { signal: this.options.signal });
    if (!stream) {
      this.loop = this.readLoop();
      return;
    }
    this.mode = 'stream';
    const release = stream.subscribe({ event: event => this.take({ events: [event] } as Transcript) });
    this.stopper.signal.addEventListener('abort', release, { once: true });
    this.loop = stream.ended.then(end => {
      release();
      if (end.outcome === 'done') {
        this.streamed = true;
        return;
      }
      if (this.stopper.signal.aborted) {
        this.mode = 'unknown';
        return;
      }
      // No stream here, or it broke: held reads (or reads on each change) from the last event shown.
      this.mode = 'unknown';
      return this.readLoop();
    });
  }

  private readLoop(): Promise<void> {
    return this.readOnce(this.options.holdSeconds ?? 30)
      .then(() => {
        if (this.mode === 'held') return this.longPoll();
      })
      .catch(error => this.report(error));
  }

  /** The run changed state: read new content, unless a stream or a long-poll already delivers it. */
  onStateChange(): Promise<void> {
    if (this.mode === 'stream' || this.mode === 'held' || this.mode === 'none' || this.mode === 'unknown')
      return this.reading;
    this.reading = this.reading.then(() => this.readOnce(0)).catch(error => this.report(error));
    return this.reading;
  }

  /** A failed read costs only progress lines: say so once, and let waiting go on. */
  private report(error: unknown): void {
    if (this.reported) return;
    this.reported = true;
    this.options.onNotice?.(`could not read the run's progress: ${(error as Error).message}`);
  }

  /** The run ended: stops a held read, then reads what is left once. */
  async finish(): Promise<void> {
    this.stopper.abort(new Error('follower stopped'));
    await this.loop;
    await this.reading;
    if (this.streamed) return;
    if (this.mode === 'stream') this.mode = 'unknown';
    if (this.mode !== 'none') await this.readOnce(0);
  }

  private async longPoll(): Promise<void> {
    const hold = this.options.holdSeconds ?? 30;
    let failures = 0;
    while (!this.stopper.signal.aborted && !this.terminalSeen) {
      try {
        await this.readOnce(hold);
        failures = 0;
      } catch {
        if (this.stopper.signal.aborted) return;
        await abortableSleep(Math.min(1000 * 2 ** failures++, 15_000), this.stopper.signal).catch(
          () => undefined
        );
      }
    }
  }

  /** Shows a transcript page's new events; true when the page had none new (nothing to page on). */
  private take(transcript: Transcript): boolean {
    const fresh = transcript.events.filter(event => event.seq > this.lastSeq);
    for (const event of fresh) this.lastSeq = Math.max(this.lastSeq, event.seq);
    if (transcript.state && ['SUCCEEDED', 'FAILED', 'ERROR', 'CANCELLED'].includes(transcript.state)) {
      this.terminalSeen = true;
    }
    const items = itemsFromTranscript(fresh, this.seen);
    if (items.length > 0) this.options.onItems(items);
    return fresh.length === 0;
  }

  private async readOnce(waitSeconds: number): Promise<void> {
    if (this.mode === 'none') return;
    const until = this.options.signal;
    const held = until ? AbortSignal.any([this.stopper.signal, until]) : this.stopper.signal;
    const signal = waitSeconds > 0 ? held : until;
    if (this.mode !== 'conversation') {
      try {
        let read = await this.client.runs.transcript(this.runId, {
          after: this.lastSeq,
          waitSeconds,
          signal
        });
        if (read) {
          if (this.mode === 'unknown') this.mode = read.held ? 'held' : 'transcript';
          // A paging server says when more follow: read on (without holding) up to MAX_PAGES pages.
          for (let pages = 1; read; pages++) {
            const ended = this.take(read.transcript);
            if (!read.transcript.has_more || ended || pages >= MAX_PAGES || signal?.aborted) break;
            read = await this.client.runs.transcript(this.runId, { after: this.lastSeq, signal });
          }
          return;
        }
        if (this.mode !== 'unknown') return;
        this.mode = 'conversation';
      } catch (error) {
        if (error instanceof AbortError) return;
        if (this.mode !== 'unknown' || !isUnsupported(error)) throw error;
        this.mode = 'conversation';
      }
    }
    try {
      const items = itemsFromConversation(await this.client.runs.conversation(this.runId, { signal: until }));
      if (items.length > this.shownConversationItems) {
        this.options.onItems(items.slice(this.shownConversationItems));
        this.shownConversationItems = items.length;
      }
    } catch (error) {
      if (!isUnsupported(error)) throw error;
      this.mode = 'none';
      this.options.onNotice?.(
        'this service offers neither a transcript nor a conversation; no live progress'
      );
    }
  }
}
