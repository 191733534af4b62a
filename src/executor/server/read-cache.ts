// Answers to reads kept between writes, so a client polling an unchanged run or list page costs one
// cheap look at the store's change stamp instead of a key lookup, a query and a serialisation. The
// stamp (Stores.changeStamp) moves on every write committed anywhere, by this process or another
// one sharing the store; everything here is dropped as soon as it moved, so a cached answer never
// shows anything an uncached read would not (a revoked key, a cancelled run). A store that cannot
// give a stamp (PostgreSQL) gets no caching: every request reads, as before.
//
// Entries are read only after the stamp was: an entry is never older than the stamp it is kept
// under, and a write committed while it was being read moves the stamp, so the next request drops it.
//
// One look at the stamp serves the requests of one turn of the event loop (afterRefresh): they
// wait in a queue for the loop's check phase, where the queue is taken first and the stamp read
// after, once for all of them. Every request answered was queued, so read from its socket, before
// the stamp was read: a write acknowledged to anyone before a request was sent is seen by that
// request, as when each request read the stamp itself, for one system call a turn instead of one a
// request. A request queued while a turn is answered waits for the next turn's look.

import type { FastifyReply } from 'fastify';
import type { Stores } from '../store/stores.js';
import type { Principal } from './auth.js';

/** Held per stamp at most; a busy poller's run or page is among the newest. */
const MAX_ENTRIES = 1_000;
/** Answers are kept up to this many bytes in all (a list page of long prompts can be large)… */
const MAX_TOTAL_BYTES = 32 * 1024 * 1024;
/** …and an answer larger than this is never kept. */
const MAX_BODY_BYTES = 1024 * 1024;

export interface CachedBody {
  /** The serialised answer (JSON, by the route's response schema). */
  body: ReturnType<FastifyReply['serialize']>;
  /** Its ETag, when the endpoint sends one. */
  etag?: string;
}

export class ReadCache {
  private stamp: string | undefined;
  private readonly principals = new Map<string, Principal>();
  private readonly bodies = new Map<string, CachedBody>();
  private bodyBytes = 0;
  /** Requests read this turn, waiting for the stamp. */
  private waiting: Array<{ then: () => void; failed: (error: unknown) => void }> = [];
  /** Whether the store gives a stamp at all (PostgreSQL does not: nothing to wait for). */
  private stamped: boolean | undefined;

  constructor(
    private readonly store: Pick<Stores, 'changeStamp'>,
    /** Told of a fault while answering the waiting requests: a stamp not read, a continuation that threw. */
    private readonly report: (error: unknown) => void = error => {
      throw error;
    }
  ) {}

  /**
   * Runs `then` once the stamp was looked at after this request was read: in this turn's check
   * phase, with the other requests this turn read. Should `then` throw, `failed` answers the request.
   */
  afterRefresh(then: () => void, failed: (error: unknown) => void): void {
    if (this.stamped === undefined) {
      this.refresh();
      this.stamped = this.stamp !== undefined;
    }
    if (!this.stamped) {
      then();
      return;
    }
    this.waiting.push({ then, failed });
    if (this.waiting.length === 1) setImmediate(this.flush);
  }

  private readonly flush = (): void => {
    // The queue is taken before the stamp is read: a request queued after this (parsed from bytes
    // already read, as a pipelined one can be) waits for the next turn's look.
    const waiting = this.waiting;
    this.waiting = [];
    try {
      this.refresh();
    } catch (error) {
      // No stamp this turn: answer the turn uncached, rather than not at all.
      this.forget(undefined);
      this.report(error);
    }
    // One request's failure must not leave the others of its turn unanswered.
    for (const { then, failed } of waiting)
      try {
        then();
      } catch (error) {
        this.report(error);
        failed(error);
      }
  };

  /** Looks at the store's stamp: drops everything when it moved. */
  refresh(): void {
    const stamp = this.store.changeStamp?.();
    if (stamp !== this.stamp || stamp === undefined) this.forget(stamp);
  }

  /** Drops everything kept, and keeps what follows under `stamp` (undefined: nothing is kept). */
  private forget(stamp: string | undefined): void {
    this.stamp = stamp;
    if (this.principals.size > 0) this.principals.clear();
    if (this.bodies.size > 0) this.bodies.clear();
    this.bodyBytes = 0;
  }

  /** The principal remembered for this Authorization header while the stamp has not moved, if any. */
  knownPrincipal(header: string | undefined): Principal | undefined {
    if (header === undefined || this.stamp === undefined) return undefined;
    return this.principals.get(header);
  }

  /** The principal of this Authorization header, remembered only once the store accepted it. */
  async principal(header: string | undefined, load: () => Promise<Principal>): Promise<Principal> {
    const known = this.knownPrincipal(header);
    if (known) return known;
    const stamp = this.stamp;
    const principal = await load();
    if (header !== undefined && stamp !== undefined && stamp === this.stamp)
      remember(this.principals, header, principal);
    return principal;
  }

  /** The answer kept under `key` (which must name the caller's team), or the one `load` builds now. */
  async body(key: string, load: () => Promise<CachedBody>): Promise<CachedBody> {
    if (this.stamp === undefined) return load();
    const known = this.bodies.get(key);
    if (known) return known;
    const stamp = this.stamp;
    const built = await load();
    const bytes = sizeOf(built.body);
    if (stamp === this.stamp && bytes <= MAX_BODY_BYTES && !this.bodies.has(key)) {
      while (
        this.bodies.size > 0 &&
        (this.bodyBytes + bytes > MAX_TOTAL_BYTES || this.bodies.size >= MAX_ENTRIES)
      ) {
        const [oldest, entry] = this.bodies.entries().next().value!;
        this.bodies.delete(oldest);
        this.bodyBytes -= sizeOf(entry.body);
      }
      this.bodies.set(key, built);
      this.bodyBytes += bytes;
    }
    return built;
  }
}

/** Bytes of an answer, about (a string's length in UTF-16 units is close enough for a bound). */
function sizeOf(body: CachedBody['body']): number {
  return typeof body === 'string' ? body.length : body.byteLength;
}

function remember<T>(map: Map<string, T>, key: string, value: T): void {
  if (map.size >= MAX_ENTRIES) map.delete(map.keys().next().value!);
  map.set(key, value);
}
