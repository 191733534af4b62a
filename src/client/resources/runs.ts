// `client.runs`: a run and what it is made of as it goes (its record, its live events, its
// transcript and conversation), and what may be done to it (create, cancel, follow up, wait).

import { randomUUID } from 'node:crypto';
import {
  type Conversation,
  type CreateRunRequest,
  type CreateRunResponse,
  type EndpointName,
  ID_SEGMENT_FORM,
  IDEMPOTENCY_KEY_FORM,
  type ListRunsQuery,
  type ListRunsResponse,
  type Transcript,
  describeValue,
  isIdSegment,
  isValidIdempotencyKey,
  showValue
} from '../../api/index.js';
import { type ClientCore, headerLookup, isMissingRoute, wasHeld } from '../core.js';
import { type AgentRunError, ConflictError, InvalidRequestError, NotFoundError } from '../errors.js';
import { type Run, ParseError, parseJson, parseRun } from '../parse.js';
import type { CallOptions, PollOptions, PollResult, RunPoller } from '../poll.js';
import {
  type TranscriptOptions,
  type TranscriptRead,
  parseConversation,
  parseTranscript
} from '../run-readers.js';
import { RunEventStream } from '../stream.js';
import type { HttpResponse } from '../transport.js';
import { type WaitOptions, type WaitResult, waitForRun } from '../wait.js';

export interface CreateOptions extends CallOptions {
  /** Reused on every retry of this call; generated when absent. */
  idempotencyKey?: string;
  /** Retries for this call (default: the client's); safe to raise, since the key makes them idempotent. */
  maxRetries?: number;
}

export interface CancelOptions extends CallOptions {
  /** Why the run is cancelled; the server puts it in the status message. */
  reason?: string;
  /** Retries after the first attempt, also of a 409 while the run is not yet cancellable (default 5). */
  maxRetries?: number;
}

/** A follow-up: the next user message of a run's conversation, and the mode of that turn. */
export interface FollowupRequest {
  message: string;
  /** `normal` (the default), `plan` or `orchestrate` (the turn may start and steer child runs). */
  mode?: 'normal' | 'plan' | 'orchestrate' | (string & {});
}

export interface FollowupResponse {
  run_id: string;
  /** The state the run is in once the follow-up was taken (QUEUED or INPROGRESS, never the old terminal one). */
  state: string;
}

export interface RunsPage {
  runs: Run[];
  page_info: ListRunsResponse['page_info'];
}

/** An event stream silent this long (the executor sends a comment every 15 s) is taken as cut. */
const STREAM_SILENCE_MS = 60_000;
/**
 * A 409 on cancel means "not yet" (a PENDING run) unless it says the run ended: up to ~40 s of
 * backoff (0.5, 1, 2, 4, then 8 s each); callers bound it with their own deadline (signal).
 */
const CANCEL_RETRIES = 8;

export class Runs {
  /** The live event streams of runs, shared by whoever follows each run (stream.ts). */
  private readonly streams = new Map<string, RunEventStream>();
  /** False once the server showed it has no event streams: runs are then followed by reads. */
  private streamsOffered: boolean | undefined;
  /** Where creates go; moves to the deprecated endpoint once a server shows it has no other. */
  private createEndpoint: 'createRun' | 'createRunLegacy' = 'createRun';

  constructor(private readonly core: ClientCore) {}

  /**
   * Starts a run. Answers at once with its id; the agent starts asynchronously. Creates go to
   * `POST /agent/runs`; a server without that route (405, or a 404 that is not about the request)
   * gets the deprecated `POST /agent/run` instead, from then on.
   */
  async create(body: CreateRunRequest, options: CreateOptions = {}): Promise<CreateRunResponse> {
    const idempotencyKey = options.idempotencyKey ?? randomUUID();
    if (!isValidIdempotencyKey(idempotencyKey)) {
      throw new TypeError(`idempotencyKey ${showValue(idempotencyKey)}: expected ${IDEMPOTENCY_KEY_FORM}`);
    }
    const send = (name: EndpointName) =>
      this.core.call(name, {
        json: body,
        headers: { 'idempotency-key': idempotencyKey },
        signal: options.signal,
        maxRetries: options.maxRetries
      });
    let name = this.createEndpoint;
    let response: HttpResponse;
    try {
      response = await send(name);
    } catch (error) {
      if (name === 'createRunLegacy' || !isMissingRoute(error)) throw error;
      this.createEndpoint = name = 'createRunLegacy';
      response = await send(name);
    }
    const what = this.core.label(name, this.core.path(name));
    const record = parseJson(response.body, what) as Partial<CreateRunResponse> | null;
    const runId = record?.run_id ?? record?.task_id;
    if (!isIdSegment(runId)) {
      throw new ParseError(
        `${what}: expected a run_id of ${ID_SEGMENT_FORM} in the answer, got ${describeValue(runId)}`
      );
    }
    return { ...(record as CreateRunResponse), run_id: runId };
  }

  /** Reads a run's current record. */
  async get(runId: string, options: CallOptions = {}): Promise<Run> {
    const response = await this.core.call('getRun', { params: { run_id: runId }, signal: options.signal });
    return parseRun(parseJson(response.body, `GET /agent/runs/${runId}`), `GET /agent/runs/${runId}`);
  }

  /**
   * Reads a run conditionally: with the last ETag and `Prefer: wait`, a server that supports them
   * answers when the run changes (or 304 after the wait); one that doesn't answers at once.
   */
  async poll(runId: string, options: PollOptions = {}): Promise<PollResult> {
    const headers: Record<string, string> = {};
    if (options.etag) headers['if-none-match'] = options.etag;
    const wait = Math.max(0, Math.floor(options.waitSeconds ?? 0));
    if (wait > 0) headers.prefer = `wait=${wait}`;
    const response = await this.core.call('getRun', {
      params: { run_id: runId },
      headers,
      signal: options.signal,
      timeoutMs: Math.max(this.core.timeoutMs, (wait + 10) * 1000)
    });
    const header = headerLookup(response);
    const retryAfter = header('retry-after');
    const result: PollResult = {
      etag: header('etag') ?? options.etag,
      held: wasHeld(response),
      retryAfterMs: retryAfter === undefined ? undefined : this.core.retryAfterMs(header)
    };
    if (response.status === 304) return result;
    result.run = parseRun(parseJson(response.body, `GET /agent/runs/${runId}`), `GET /agent/runs/${runId}`);
    return result;
  }

  /** Lists one page of runs, newest first. */
  async list(query: ListRunsQuery = {}, options: CallOptions = {}): Promise<RunsPage> {
    const params = new URLSearchParams();
    for (const [name, value] of Object.entries(query)) {
      if (value === undefined || value === null) continue;
      if (name === 'metadata') {
        for (const [key, item] of Object.entries(value as Record<string, string>))
          params.append(`metadata[${key}]`, item);
        continue;
      }
      for (const item of Array.isArray(value) ? value : [value]) params.append(name, String(item));
    }
    const response = await this.core.call('listRuns', { query: params, signal: options.signal });
    const value = parseJson(response.body, 'GET /agent/runs') as Partial<ListRunsResponse> | null;
    if (!value || !Array.isArray(value.runs)) {
      throw new ParseError(`GET /agent/runs: expected {runs: [...]}, got ${describeValue(value)}`);
    }
    const pageInfo = value.page_info ?? { has_next_page: false, next_cursor: null };
    return { runs: value.runs.map(run => parseRun(run, 'GET /agent/runs')), page_info: pageInfo };
  }

  /** Every run matching the query, page after page. */
  async *iterate(query: ListRunsQuery = {}, options: CallOptions = {}): AsyncGenerator<Run> {
    let cursor = query.cursor;
    for (;;) {
      const page = await this.list({ ...query, cursor }, options);
      yield* page.runs;
      const next = page.page_info.next_cursor;
      if (!page.page_info.has_next_page || !next || next === cursor) return;
      cursor = next;
    }
  }

  /**
   * Asks the server to cancel a run, with an optional reason for its status message. Answers with
   * the run id. A 409 that does not say the run already ended (the service answers so while a run
   * is PENDING) is retried with backoff; one that does is thrown at once as a ConflictError.
   */
  async cancel(runId: string, options: CancelOptions = {}): Promise<string> {
    const response = await this.core.call('cancelRun', {
      params: { run_id: runId },
      body: options.reason === undefined ? '' : JSON.stringify({ reason: options.reason }),
      signal: options.signal,
      maxRetries: options.maxRetries ?? CANCEL_RETRIES,
      retryConflicts: true,
      isFinal: error => error instanceof ConflictError && saysFinished(error)
    });
    const value = response.body.trim() === '' ? runId : parseJson(response.body, 'cancel');
    return typeof value === 'string' ? value : runId;
  }

  /**
   * Sends the next user message of a run's conversation (`POST /agent/runs/{id}/followups`). The
   * same run goes on: queued, the message joins its prompt; running, it goes on after the current
   * turn; ended, it is queued again. Read the run (or wait for it) afterwards as for any run. A
   * server without the endpoint (404 route_not_found, or 405) gives a NotFoundError with error code
   * `route_not_found` whose message names the missing endpoint.
   */
  async followUp(
    runId: string,
    followup: FollowupRequest,
    options: CallOptions = {}
  ): Promise<FollowupResponse> {
    if (typeof followup?.message !== 'string' || followup.message.trim() === '') {
      throw new InvalidRequestError(
        `follow-up message ${showValue(followup?.message)}: expected a non-empty string`,
        { request: 'follow-up' }
      );
    }
    const label = this.core.label('submitFollowup', this.core.path('submitFollowup', { run_id: runId }));
    const body: Record<string, string> = { message: followup.message };
    if (followup.mode !== undefined) body.mode = followup.mode;
    let response: HttpResponse;
    try {
      // A follow-up is not idempotent (a replay adds a turn): only answers that say it was not
      // taken (429, 503) are retried.
      response = await this.core.call('submitFollowup', {
        params: { run_id: runId },
        json: body,
        signal: options.signal,
        isFinal: error => error.status !== 429 && error.status !== 503
      });
    } catch (error) {
      if (isMissingRoute(error)) {
        const cause = error as AgentRunError;
        throw new NotFoundError(
          `${label}: this server has no follow-up endpoint (POST /api/v1/agent/runs/{run_id}/followups answered ${cause.status}); it cannot continue a run`,
          { request: label, status: cause.status, errorCode: 'route_not_found', cause }
        );
      }
      throw error;
    }
    const value = parseJson(response.body, label) as Partial<FollowupResponse> | null;
    const state = typeof value?.state === 'string' ? value.state : 'QUEUED';
    return { run_id: typeof value?.run_id === 'string' ? value.run_id : runId.trim(), state };
  }

  /**
   * The run's live event stream, shared by every caller that follows the run at once (subscribe to
   * it; the last to let go closes it). Undefined when this server has shown it has no streams, or
   * the client's transport cannot stream: follow the run by reads then.
   */
  stream(runId: string, options: CallOptions = {}): RunEventStream | undefined {
    const { transport } = this.core;
    if (this.streamsOffered === false || !transport.stream) return undefined;
    const path = this.core.path('getRunEvents', { run_id: runId });
    const existing = this.streams.get(runId);
    if (existing) return existing;
    const stream = new RunEventStream(
      runId,
      async (_id, after, signal) =>
        transport.stream!({
          method: 'GET',
          url: `${this.core.apiRoot}${path}${after > 0 ? `?after=${after}` : ''}`,
          // Asked at every (re)connection, as a request does: an OIDC token may have been renewed.
          headers: { accept: 'text/event-stream', authorization: `Bearer ${await this.core.bearer()}` },
          timeoutMs: Math.max(this.core.timeoutMs, STREAM_SILENCE_MS),
          signal
        }),
      { signal: options.signal, sleep: this.core.sleep }
    );
    this.streams.set(runId, stream);
    void stream.ended.then(end => {
      if (this.streams.get(runId) === stream) this.streams.delete(runId);
      if (end.outcome === 'done') this.streamsOffered = true;
      // Only an answer that says there is no such endpoint (or no such kind of answer) counts.
      const status = end.status ?? 0;
      if (end.outcome === 'unavailable' && ([404, 405, 406, 501].includes(status) || status === 200))
        this.streamsOffered ??= false;
    });
    return stream;
  }

  /** Waits until the run reaches a terminal state, the deadline passes, or the signal fires. */
  wait(runId: string, options: WaitOptions = {}): Promise<WaitResult> {
    const poller: RunPoller = {
      pollRun: (id, pollOptions) => this.poll(id, pollOptions),
      runEvents: (id, streamOptions) => this.stream(id, streamOptions)
    };
    return waitForRun(poller, runId, options);
  }

  /** The run's conversation in the service's normalized shape; see isUnsupported() for services without it. */
  async conversation(runId: string, options: CallOptions = {}): Promise<Conversation> {
    const label = `GET /agent/runs/${runId}/conversation`;
    const response = await this.core.call('getConversation', {
      params: { run_id: runId },
      signal: options.signal
    });
    return parseConversation(parseJson(response.body, label), label);
  }

  /**
   * The executor's transcript events after `after`; with `waitSeconds`, a server that supports it
   * holds the answer until a newer event exists. One page: `transcript.has_more` says more follow
   * (read again with `after: transcript.next_after`). Undefined when the answer is not such a list.
   */
  async transcript(runId: string, options: TranscriptOptions = {}): Promise<TranscriptRead | undefined> {
    const wait = Math.max(0, Math.floor(options.waitSeconds ?? 0));
    const query = new URLSearchParams();
    if (options.after !== undefined) query.set('after', String(options.after));
    if (options.limit !== undefined) query.set('limit', String(options.limit));
    const response = await this.core.call('getTranscript', {
      params: { run_id: runId },
      query,
      headers: wait > 0 ? { prefer: `wait=${wait}` } : {},
      signal: options.signal,
      timeoutMs: Math.max(this.core.timeoutMs, (wait + 10) * 1000)
    });
    const transcript = parseTranscript(response.body);
    if (!transcript) return undefined;
    return { transcript, held: wasHeld(response) };
  }

  /**
   * The whole transcript, read page after page until the server says no more follow (at most
   * `maxPages` pages, default 1000: `has_more` stays true on the answer when that cut it short).
   */
  async wholeTranscript(
    runId: string,
    options: CallOptions & { maxPages?: number } = {}
  ): Promise<Transcript | undefined> {
    const first = await this.transcript(runId, { signal: options.signal });
    if (!first) return undefined;
    const whole = first.transcript;
    for (let pages = 1; whole.has_more && pages < (options.maxPages ?? 1000); pages++) {
      const after = whole.next_after ?? whole.events.at(-1)?.seq ?? 0;
      const next = (await this.transcript(runId, { after, signal: options.signal }))?.transcript;
      if (!next || next.events.length === 0) break;
      whole.events.push(...next.events);
      Object.assign(whole, { state: next.state, has_more: next.has_more, next_after: next.next_after });
    }
    return whole;
  }
}

/** Whether a 409 on cancel says the run has already ended (our executor's code, or the words). */
function saysFinished(error: ConflictError): boolean {
  if (error.errorCode === 'run_already_finished') return true;
  return /\b(already (ended|finished|terminal|completed)|is (SUCCEEDED|FAILED|ERROR|CANCELLED))\b/i.test(
    error.detail ?? ''
  );
}
