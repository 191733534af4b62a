// The typed client: thin methods over one request function that owns retries and error mapping.

import { randomUUID } from 'node:crypto';
import {
  API_PREFIX,
  type CreateRunRequest,
  type CreateRunResponse,
  type ListRunsQuery,
  type ListRunsResponse,
  type ArtifactDetails,
  type Conversation,
  ID_SEGMENT_FORM,
  type Transcript,
  IDEMPOTENCY_KEY_FORM,
  describeValue,
  endpointPath,
  type EndpointName,
  isIdSegment,
  isValidIdempotencyKey,
  showValue
} from '../api/index.js';
import type {
  CreateScheduleRequest,
  EnvironmentRecord,
  ListModelsResponse,
  ScheduleRecord,
  UpdateScheduleRequest
} from '../api/schedules.js';
import type {
  CreateWebhookRequest,
  DeliveryRecord,
  WebhookRecord,
  WebhookWithSecret
} from '../api/webhooks.js';
import {
  type DownloadedArtifact,
  type TranscriptOptions,
  type TranscriptRead,
  downloadUrlOf,
  parseArtifactDetails,
  parseConversation,
  parseTranscript
} from './run-readers.js';
import {
  AbortError,
  AgentRunError,
  ConflictError,
  ConnectionError,
  InvalidRequestError,
  NotFoundError,
  TimeoutError,
  errorFromResponse
} from './errors.js';
import { type Run, ParseError, parseJson, parseRun } from './parse.js';
import type { CallOptions, PollOptions, PollResult } from './poll.js';
import { DEFAULT_RETRY, type RetryOptions, retryDelayMs, shouldRetry } from './retry.js';
import { type HttpResponse, type Transport, TransportError, createTransport } from './transport.js';
import { type WaitOptions, type WaitResult, waitForRun } from './wait.js';
import { RunEventStream } from './stream.js';
import { abortableSleep } from './sleep.js';

export interface ClientOptions {
  /** The service root (`https://host`) or the API root (`https://host/api/v1`). */
  baseUrl: string;
  /** Sent as `Authorization: Bearer <apiKey>`; never logged or put in an error message. */
  apiKey?: string;
  /**
   * Instead of a key: gives the bearer credential to send, asked before every request (an OIDC
   * token that expires, say: the function gives a fresh one when the one it holds is about to).
   */
  credential?: () => Promise<string>;
  /** Retries per call after the first attempt (default 2). */
  maxRetries?: number;
  /** Per-request time limit in ms (default 60 000). */
  timeoutMs?: number;
  userAgent?: string;
  /** Called before each retry, e.g. to log it. */
  onRetry?: (info: RetryInfo) => void;
  /** Where the user sets the key, named when the service rejects it (default `the api-key secret`). */
  keyName?: string;
  /** Test seams. */
  transport?: Transport;
  sleep?: (ms: number, signal?: AbortSignal) => Promise<void>;
  random?: () => number;
}

export interface RetryInfo {
  request: string;
  retry: number;
  delayMs: number;
  reason: string;
}

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

/** A page of the events cursor (GET /agent/events). */
export interface EventsPage {
  events: { sequence: number; run_id: string; type: string; state: string; timestamp: string }[];
  next_since: number;
}

export interface RunsPage {
  runs: Run[];
  page_info: ListRunsResponse['page_info'];
}

const DEFAULT_TIMEOUT_MS = 60_000;
/** An event stream silent this long (the executor sends a comment every 15 s) is taken as cut. */
const STREAM_SILENCE_MS = 60_000;
/** An artifact (the run's changes, say) may be far larger than any API answer. */
const MAX_DOWNLOAD_BYTES = 512 * 1024 * 1024;
/** The create endpoint, and the deprecated one older servers have instead. */
const CREATE_PATH = apiPath('createRun');
const LEGACY_CREATE_PATH = apiPath('createRunLegacy');
/**
 * A 409 on cancel means "not yet" (a PENDING run) unless it says the run ended: up to ~40 s of
 * backoff (0.5, 1, 2, 4, then 8 s each); callers bound it with their own deadline (signal).
 */
const CANCEL_RETRIES = 8;

export class AgentRunClient {
  readonly apiRoot: string;
  private readonly apiKey: string;
  private readonly credential?: () => Promise<string>;
  private readonly retry: RetryOptions;
  private readonly timeoutMs: number;
  private readonly transport: Transport;
  private readonly sleep: (ms: number, signal?: AbortSignal) => Promise<void>;
  private readonly random: () => number;
  private readonly onRetry?: (info: RetryInfo) => void;
  private readonly keyName: string;
  /** The live event streams of runs, shared by whoever follows each run (stream.ts). */
  private readonly streams = new Map<string, RunEventStream>();
  /** False once the server showed it has no event streams: runs are then followed by reads. */
  private streamsOffered: boolean | undefined;
  /** Where creates go; moves to the legacy path once a server shows it has no other. */
  private createPath = CREATE_PATH;

  constructor(options: ClientOptions) {
    this.apiRoot = normalizeBaseUrl(options.baseUrl);
    this.credential = options.credential;
    if (this.credential === undefined) {
      if (typeof options.apiKey !== 'string' || options.apiKey.trim() === '') {
        throw new TypeError('apiKey: expected a non-empty API key');
      }
      if (/[\r\n]/.test(options.apiKey)) throw new TypeError('apiKey: the key must be one line');
    }
    this.apiKey = (options.apiKey ?? '').trim();
    this.retry = { ...DEFAULT_RETRY, maxRetries: options.maxRetries ?? DEFAULT_RETRY.maxRetries };
    this.timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
    this.transport = options.transport ?? createTransport(options.userAgent ?? 'agent-run-client');
    this.sleep = options.sleep ?? abortableSleep;
    this.random = options.random ?? Math.random;
    this.onRetry = options.onRetry;
    this.keyName = options.keyName ?? 'the api-key secret';
  }

  /**
   * Starts a run. Answers at once with its id; the agent starts asynchronously. Creates go to
   * `POST /agent/runs`; a server without that route (405, or a 404 that is not about the request)
   * gets the deprecated `POST /agent/run` instead, from then on.
   */
  async createRun(body: CreateRunRequest, options: CreateOptions = {}): Promise<CreateRunResponse> {
    const idempotencyKey = options.idempotencyKey ?? randomUUID();
    if (!isValidIdempotencyKey(idempotencyKey)) {
      throw new TypeError(`idempotencyKey ${showValue(idempotencyKey)}: expected ${IDEMPOTENCY_KEY_FORM}`);
    }
    const send = (path: string) =>
      this.request('POST', path, {
        body: JSON.stringify(body),
        headers: { 'idempotency-key': idempotencyKey },
        signal: options.signal,
        maxRetries: options.maxRetries
      });
    let path = this.createPath;
    let response: HttpResponse;
    try {
      response = await send(path);
    } catch (error) {
      if (path === LEGACY_CREATE_PATH || !isMissingRoute(error)) throw error;
      this.createPath = path = LEGACY_CREATE_PATH;
      response = await send(path);
    }
    const what = `POST ${API_PREFIX}${path}`;
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
  async getRun(runId: string, options: CallOptions = {}): Promise<Run> {
    const response = await this.request('GET', runPath('getRun', runId), { signal: options.signal });
    return parseRun(parseJson(response.body, `GET /agent/runs/${runId}`), `GET /agent/runs/${runId}`);
  }

  /**
   * Reads a run conditionally: with the last ETag and `Prefer: wait`, a server that supports them
   * answers when the run changes (or 304 after the wait); one that doesn't answers at once.
   */
  async pollRun(runId: string, options: PollOptions = {}): Promise<PollResult> {
    const headers: Record<string, string> = {};
    if (options.etag) headers['if-none-match'] = options.etag;
    const wait = Math.max(0, Math.floor(options.waitSeconds ?? 0));
    if (wait > 0) headers.prefer = `wait=${wait}`;
    const response = await this.request('GET', runPath('getRun', runId), {
      headers,
      signal: options.signal,
      timeoutMs: Math.max(this.timeoutMs, (wait + 10) * 1000)
    });
    const header = headerLookup(response);
    const applied = header('preference-applied') ?? '';
    const etag = header('etag') ?? options.etag;
    const retryAfter = header('retry-after');
    const result: PollResult = {
      etag,
      held: /(^|[\s,;])wait\b/i.test(applied),
      retryAfterMs: retryAfter === undefined ? undefined : retryDelayMs(1, header, this.retry, () => 0)
    };
    if (response.status === 304) return result;
    result.run = parseRun(parseJson(response.body, `GET /agent/runs/${runId}`), `GET /agent/runs/${runId}`);
    return result;
  }

  /** Lists one page of runs, newest first. */
  async listRuns(query: ListRunsQuery = {}, options: CallOptions = {}): Promise<RunsPage> {
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
    const search = params.size > 0 ? `?${params.toString()}` : '';
    const response = await this.request('GET', `${apiPath('listRuns')}${search}`, { signal: options.signal });
    const value = parseJson(response.body, 'GET /agent/runs') as Partial<ListRunsResponse> | null;
    if (!value || !Array.isArray(value.runs)) {
      throw new ParseError(`GET /agent/runs: expected {runs: [...]}, got ${describeValue(value)}`);
    }
    const pageInfo = value.page_info ?? { has_next_page: false, next_cursor: null };
    return { runs: value.runs.map(run => parseRun(run, 'GET /agent/runs')), page_info: pageInfo };
  }

  /** Every run matching the query, page after page. */
  async *iterateRuns(query: ListRunsQuery = {}, options: CallOptions = {}): AsyncGenerator<Run> {
    let cursor = query.cursor;
    for (;;) {
      const page = await this.listRuns({ ...query, cursor }, options);
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
  async cancelRun(runId: string, options: CancelOptions = {}): Promise<string> {
    const response = await this.request('POST', runPath('cancelRun', runId), {
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
  async submitFollowup(
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
    const path = runPath('submitFollowup', runId);
    const label = `POST ${API_PREFIX}${path}`;
    const body: Record<string, string> = { message: followup.message };
    if (followup.mode !== undefined) body.mode = followup.mode;
    let response: HttpResponse;
    try {
      // A follow-up is not idempotent (a replay adds a turn): only answers that say it was not
      // taken (429, 503) are retried.
      response = await this.request('POST', path, {
        body: JSON.stringify(body),
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
  runEvents(runId: string, options: CallOptions = {}): RunEventStream | undefined {
    if (this.streamsOffered === false || !this.transport.stream) return undefined;
    const path = runPath('getRunEvents', runId);
    const existing = this.streams.get(runId);
    if (existing) return existing;
    const stream = new RunEventStream(
      runId,
      (_id, after, signal) =>
        this.transport.stream!({
          method: 'GET',
          url: `${this.apiRoot}${path}${after > 0 ? `?after=${after}` : ''}`,
          headers: { accept: 'text/event-stream', authorization: `Bearer ${this.apiKey}` },
          timeoutMs: Math.max(this.timeoutMs, STREAM_SILENCE_MS),
          signal
        }),
      { signal: options.signal, sleep: this.sleep }
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

  /**
   * One page of the events cursor: the changes of state of these runs (of the key's team) after
   * `since`, in the order they happened, and the `next_since` to read on from.
   */
  async listEvents(
    runIds: readonly string[],
    options: CallOptions & { since?: number; limit?: number } = {}
  ): Promise<EventsPage> {
    for (const id of runIds) runPath('getRun', id);
    const params = new URLSearchParams({ run_ids: runIds.map(id => id.trim()).join(',') });
    if (options.since !== undefined) params.set('since', String(options.since));
    if (options.limit !== undefined) params.set('limit', String(options.limit));
    const page = await this.json('GET', `${apiPath('listEvents')}?${params}`, undefined, options);
    const label = `GET ${API_PREFIX}${apiPath('listEvents')}`;
    if (!Array.isArray(page.events) || typeof page.next_since !== 'number')
      throw new ParseError(`${label}: expected {events: [...], next_since}, got ${describeValue(page)}`);
    return page as unknown as EventsPage;
  }

  /** Waits until the run reaches a terminal state, the deadline passes, or the signal fires. */
  waitForRun(runId: string, options: WaitOptions = {}): Promise<WaitResult> {
    return waitForRun(this, runId, options);
  }

  /** The run's conversation in the service's normalized shape; see isUnsupported() for services without it. */
  async getConversation(runId: string, options: CallOptions = {}): Promise<Conversation> {
    const label = `GET /agent/runs/${runId}/conversation`;
    const response = await this.request('GET', runPath('getConversation', runId), {
      signal: options.signal
    });
    return parseConversation(parseJson(response.body, label), label);
  }

  /**
   * The executor's transcript events after `after`; with `waitSeconds`, a server that supports it
   * holds the answer until a newer event exists. One page: `transcript.has_more` says more follow
   * (read again with `after: transcript.next_after`). Undefined when the answer is not such a list.
   */
  async getTranscript(runId: string, options: TranscriptOptions = {}): Promise<TranscriptRead | undefined> {
    const wait = Math.max(0, Math.floor(options.waitSeconds ?? 0));
    const params = new URLSearchParams();
    if (options.after !== undefined) params.set('after', String(options.after));
    if (options.limit !== undefined) params.set('limit', String(options.limit));
    const query = params.size > 0 ? `?${params}` : '';
    const response = await this.request('GET', `${runPath('getTranscript', runId)}${query}`, {
      headers: wait > 0 ? { prefer: `wait=${wait}` } : {},
      signal: options.signal,
      timeoutMs: Math.max(this.timeoutMs, (wait + 10) * 1000)
    });
    const transcript = parseTranscript(response.body);
    if (!transcript) return undefined;
    const held = /(^|[\s,;])wait\b/i.test(headerLookup(response)('preference-applied') ?? '');
    return { transcript, held };
  }

  /**
   * The whole transcript, read page after page until the server says no more follow (at most
   * `maxPages` pages, default 1000: `has_more` stays true on the answer when that cut it short).
   */
  async getWholeTranscript(
    runId: string,
    options: CallOptions & { maxPages?: number } = {}
  ): Promise<Transcript | undefined> {
    const first = await this.getTranscript(runId, { signal: options.signal });
    if (!first) return undefined;
    const whole = first.transcript;
    for (let pages = 1; whole.has_more && pages < (options.maxPages ?? 1000); pages++) {
      const after = whole.next_after ?? whole.events.at(-1)?.seq ?? 0;
      const next = (await this.getTranscript(runId, { after, signal: options.signal }))?.transcript;
      if (!next || next.events.length === 0) break;
      whole.events.push(...next.events);
      Object.assign(whole, { state: next.state, has_more: next.has_more, next_after: next.next_after });
    }
    return whole;
  }

  /** An artifact's details (for files, a time-limited download URL). */
  async getArtifact(artifactUid: string, options: CallOptions = {}): Promise<ArtifactDetails> {
    const label = `GET /agent/artifacts/${artifactUid}`;
    const response = await this.request('GET', artifactPath(artifactUid), { signal: options.signal });
    return parseArtifactDetails(parseJson(response.body, label), label);
  }

  /**
   * An artifact's bytes: reads its details, then follows the download URL (and its redirects).
   * The key goes only to the service's own origin, never to a storage host elsewhere.
   */
  async downloadArtifact(artifactUid: string, options: CallOptions = {}): Promise<DownloadedArtifact> {
    const details = await this.getArtifact(artifactUid, options);
    const link = downloadUrlOf(details);
    if (!link) {
      throw new ParseError(`GET /agent/artifacts/${artifactUid}: the details carry no download URL`);
    }
    const origin = new URL(this.apiRoot).origin;
    let url = new URL(link, this.apiRoot + '/');
    for (let hop = 0; ; hop++) {
      // A download (or a redirect) to file:, data: or any other scheme is refused, not fetched.
      if (url.protocol !== 'http:' && url.protocol !== 'https:') {
        throw new ParseError(
          `GET /agent/artifacts/${artifactUid}: the download URL's scheme ${showValue(url.protocol)} is refused; expected http(s)`
        );
      }
      const label = `GET ${url.origin === origin ? url.pathname : `${url.origin}${url.pathname}`}`;
      const headers: Record<string, string> = { accept: '*/*' };
      if (url.origin === origin) headers.authorization = `Bearer ${await this.bearer()}`;
      let response: HttpResponse;
      try {
        response = await this.transport.send({
          method: 'GET',
          url: url.href,
          headers,
          timeoutMs: Math.max(this.timeoutMs, 300_000),
          signal: options.signal,
          maxBytes: MAX_DOWNLOAD_BYTES
        });
      } catch (error) {
        if (error instanceof TransportError) throw transportFailure(label, error, this.timeoutMs);
        throw error;
      }
      const location = headerLookup(response)('location');
      if (response.status >= 300 && response.status < 400 && location && hop < 5) {
        url = new URL(location, url);
        continue;
      }
      if (response.status >= 300) {
        throw errorFromResponse(
          label,
          response.status,
          response.body,
          headerLookup(response)('x-request-id')
        );
      }
      const type = headerLookup(response)('content-type');
      return { details, bytes: response.bytes ?? Buffer.from(response.body), contentType: type };
    }
  }

  close(): void {
    this.transport.close();
  }

  // scheduled agents and the catalogue (the executor's and the service's /agent/schedules,
  // /agent/environments, /agent/models)

  async listSchedules(options: CallOptions = {}): Promise<ScheduleRecord[]> {
    const body = await this.json('GET', apiPath('listSchedules'), undefined, options);
    return (body as { schedules?: ScheduleRecord[] }).schedules ?? [];
  }

  async getSchedule(scheduleId: string, options: CallOptions = {}): Promise<ScheduleRecord> {
    return (await this.json(
      'GET',
      schedulePath('getSchedule', scheduleId),
      undefined,
      options
    )) as ScheduleRecord;
  }

  /** Not retried: a create whose answer was lost may have made the schedule (list to find it). */
  async createSchedule(body: CreateScheduleRequest, options: CallOptions = {}): Promise<ScheduleRecord> {
    return (await this.json('POST', apiPath('createSchedule'), body, {
      ...options,
      maxRetries: 0
    })) as ScheduleRecord;
  }

  /** Replaces the settings: name, cron_schedule, prompt and enabled are required. */
  async updateSchedule(
    scheduleId: string,
    body: UpdateScheduleRequest,
    options: CallOptions = {}
  ): Promise<ScheduleRecord> {
    return (await this.json(
      'PUT',
      schedulePath('updateSchedule', scheduleId),
      body,
      options
    )) as ScheduleRecord;
  }

  async deleteSchedule(scheduleId: string, options: CallOptions = {}): Promise<void> {
    await this.json('DELETE', schedulePath('deleteSchedule', scheduleId), undefined, options);
  }

  async pauseSchedule(scheduleId: string, options: CallOptions = {}): Promise<ScheduleRecord> {
    return (await this.json(
      'POST',
      schedulePath('pauseSchedule', scheduleId),
      undefined,
      options
    )) as ScheduleRecord;
  }

  async resumeSchedule(scheduleId: string, options: CallOptions = {}): Promise<ScheduleRecord> {
    return (await this.json(
      'POST',
      schedulePath('resumeSchedule', scheduleId),
      undefined,
      options
    )) as ScheduleRecord;
  }

  // webhook endpoints (the executor's /agent/webhooks): signed events of the team's runs

  async listWebhooks(options: CallOptions = {}): Promise<WebhookRecord[]> {
    const body = await this.json('GET', apiPath('listWebhooks'), undefined, options);
    return (body as { webhooks?: WebhookRecord[] }).webhooks ?? [];
  }

  async getWebhook(webhookId: string, options: CallOptions = {}): Promise<WebhookRecord> {
    return (await this.json(
      'GET',
      webhookPath('getWebhook', webhookId),
      undefined,
      options
    )) as WebhookRecord;
  }

  /** The answer holds the signing secret, shown only here and on rotation. Not retried (list to find one a lost answer made). */
  async createWebhook(body: CreateWebhookRequest, options: CallOptions = {}): Promise<WebhookWithSecret> {
    return (await this.json('POST', apiPath('createWebhook'), body, {
      ...options,
      maxRetries: 0
    })) as WebhookWithSecret;
  }

  async deleteWebhook(webhookId: string, options: CallOptions = {}): Promise<void> {
    await this.json('DELETE', webhookPath('deleteWebhook', webhookId), undefined, options);
  }

  /** A new secret; the old one still signs during the executor's rotation grace period. Not retried. */
  async rotateWebhookSecret(webhookId: string, options: CallOptions = {}): Promise<WebhookWithSecret> {
    return (await this.json('POST', webhookPath('rotateWebhookSecret', webhookId), undefined, {
      ...options,
      maxRetries: 0
    })) as WebhookWithSecret;
  }

  /** The endpoint's deliveries, newest first. */
  async listWebhookDeliveries(webhookId: string, options: CallOptions = {}): Promise<DeliveryRecord[]> {
    const body = await this.json('GET', webhookPath('listWebhookDeliveries', webhookId), undefined, options);
    return (body as { deliveries?: DeliveryRecord[] }).deliveries ?? [];
  }

  async retryWebhookDelivery(
    webhookId: string,
    deliveryId: string,
    options: CallOptions = {}
  ): Promise<DeliveryRecord> {
    if (typeof deliveryId !== 'string' || !isIdSegment(deliveryId.trim()))
      throw new InvalidRequestError(`delivery id ${showValue(deliveryId)}: expected ${ID_SEGMENT_FORM}`, {
        request: 'delivery id'
      });
    const path = apiPath('retryWebhookDelivery', {
      webhook_id: webhookSegment(webhookId),
      delivery_id: deliveryId.trim()
    });
    return (await this.json('POST', path, undefined, options)) as DeliveryRecord;
  }

  async listEnvironments(options: CallOptions = {}): Promise<EnvironmentRecord[]> {
    const body = await this.json('GET', apiPath('listEnvironments'), undefined, options);
    return (body as { environments?: EnvironmentRecord[] }).environments ?? [];
  }

  async listModels(options: CallOptions = {}): Promise<ListModelsResponse> {
    return (await this.json('GET', apiPath('listModels'), undefined, options)) as ListModelsResponse;
  }

  /** One request whose answer is a JSON object. */
  private async json(
    method: 'GET' | 'POST' | 'PUT' | 'DELETE',
    path: string,
    body: unknown,
    options: CallOptions & { maxRetries?: number }
  ): Promise<Record<string, unknown>> {
    const label = `${method} ${API_PREFIX}${path}`;
    const response = await this.request(method, path, {
      body: body === undefined ? undefined : JSON.stringify(body),
      signal: options.signal,
      maxRetries: options.maxRetries
    });
    const value = parseJson(response.body, label);
    if (value === null || typeof value !== 'object' || Array.isArray(value))
      throw new ParseError(`${label}: expected a JSON object, got ${describeValue(value)}`);
    return value as Record<string, unknown>;
  }

  /** The key, or the credential function's current token (one line, never empty). */
  private async bearer(): Promise<string> {
    if (this.credential === undefined) return this.apiKey;
    const value = (await this.credential()).trim();
    if (value === '' || /[\r\n\s]/.test(value))
      throw new TypeError('credential: expected a non-empty token on one line');
    return value;
  }

  private async request(
    method: 'GET' | 'POST' | 'PUT' | 'DELETE',
    path: string,
    options: {
      body?: string;
      headers?: Record<string, string>;
      signal?: AbortSignal;
      timeoutMs?: number;
      maxRetries?: number;
      /** An error answer that must not be retried whatever its status. */
      isFinal?: (error: AgentRunError) => boolean;
      /** Retry a 409 even when its problem says `retryable: false` (isFinal still applies). */
      retryConflicts?: boolean;
    }
  ): Promise<HttpResponse> {
    const label = `${method} ${API_PREFIX}${path.split('?')[0]}`;
    const maxRetries = options.maxRetries ?? this.retry.maxRetries;
    const headers: Record<string, string> = {
      accept: 'application/json',
      authorization: '',
      ...options.headers
    };
    if (options.body !== undefined) headers['content-type'] = 'application/json';
    for (let attempt = 0; ; attempt++) {
      // Asked on every attempt: a token may have been renewed while the last one waited.
      headers.authorization = `Bearer ${await this.bearer()}`;
      let failure: AgentRunError;
      let header: (name: string) => string | undefined = () => undefined;
      try {
        const response = await this.transport.send({
          method,
          url: this.apiRoot + path,
          headers,
          body: options.body,
          timeoutMs: options.timeoutMs ?? this.timeoutMs,
          signal: options.signal
        });
        if (response.status < 400) return response;
        header = headerLookup(response);
        failure = errorFromResponse(label, response.status, response.body, header('x-request-id'), {
          keyName: this.keyName,
          token: this.credential !== undefined,
          apiRoot: this.apiRoot
        });
        // A problem body that says `retryable: false` is believed, unless x-should-retry says otherwise.
        // Not for a cancel's 409 that does not say the run ended: the service documents "409 while
        // PENDING, retry after a moment", whatever the flag says; isFinal decides those.
        const conflictRetried = options.retryConflicts === true && failure instanceof ConflictError;
        const refused =
          failure.problem?.retryable === false && header('x-should-retry') === undefined && !conflictRetried;
        if (attempt >= maxRetries || refused || options.isFinal?.(failure)) throw failure;
        if (!shouldRetry(response.status, header)) throw failure;
      } catch (error) {
        if (error instanceof AgentRunError && !(error instanceof ConnectionError)) throw error;
        if (!(error instanceof TransportError)) throw error;
        failure = transportFailure(label, error, options.timeoutMs ?? this.timeoutMs, this.apiRoot);
        if (failure instanceof AbortError || attempt >= maxRetries) throw failure;
        // Plain http at an https URL never starts working; a refused local port is a server not
        // running: one retry (a restart may be under way), not a quarter of a minute of backoff.
        if (failure.errorCode === 'tls_mismatch') throw failure;
        if (failure.errorCode === 'connection_refused' && isLoopback(this.apiRoot) && attempt >= 1)
          throw failure;
      }
      const delayMs = retryDelayMs(attempt + 1, header, this.retry, this.random);
      this.onRetry?.({ request: label, retry: attempt + 1, delayMs, reason: failure.message });
      try {
        await this.sleep(delayMs, options.signal);
      } catch (error) {
        throw new AbortError(`${label}: aborted`, { request: label, cause: error });
      }
    }
  }
}

/** A 405, or a 404 about the route rather than the request (never `environment_not_found`). */
function isMissingRoute(error: unknown): boolean {
  if (!(error instanceof AgentRunError)) return false;
  if (error.status === 405) return true;
  return (
    error instanceof NotFoundError && (error.errorCode === undefined || error.errorCode === 'route_not_found')
  );
}

/** Whether a 409 on cancel says the run has already ended (our executor's code, or the words). */
function saysFinished(error: ConflictError): boolean {
  if (error.errorCode === 'run_already_finished') return true;
  return /\b(already (ended|finished|terminal|completed)|is (SUCCEEDED|FAILED|ERROR|CANCELLED))\b/i.test(
    error.detail ?? ''
  );
}

/** The system's code of a failed connection (`ECONNREFUSED`, `ERR_SSL_WRONG_VERSION_NUMBER`, …), if any. */
function causeCode(error: unknown): string | undefined {
  for (let e: unknown = error, depth = 0; e instanceof Error && depth < 5; e = e.cause, depth++) {
    const code = (e as NodeJS.ErrnoException).code;
    if (typeof code === 'string') return code;
  }
  return undefined;
}

function isLoopback(apiRoot: string): boolean {
  const host = new URL(apiRoot).hostname.replace(/^\[(.*)\]$/, '$1');
  return host === 'localhost' || host === '::1' || /^127\./.test(host);
}

function transportFailure(
  label: string,
  error: TransportError,
  timeoutMs: number,
  apiRoot?: string
): AgentRunError {
  if (error.reason === 'aborted')
    return new AbortError(`${label}: aborted`, { request: label, cause: error });
  if (error.reason === 'timeout') {
    return new TimeoutError(`${label}: no answer within ${timeoutMs / 1000} s`, {
      request: label,
      cause: error
    });
  }
  const code = causeCode(error.cause);
  const root = new URL(apiRoot ?? 'http://unknown');
  if (
    apiRoot !== undefined &&
    root.protocol === 'https:' &&
    (code === 'ERR_SSL_WRONG_VERSION_NUMBER' ||
      code === 'ERR_SSL_PACKET_LENGTH_TOO_LONG' ||
      /wrong version number|packet length too long|http request/i.test(error.message))
  ) {
    const plain = `http://${root.host}`;
    return new ConnectionError(
      `${label}: the server does not speak TLS at ${root.host} — use ${plain} as the base URL`,
      { request: label, errorCode: 'tls_mismatch', cause: error }
    );
  }
  if ((code === 'ECONNREFUSED' || /\bECONNREFUSED\b/.test(error.message)) && apiRoot !== undefined) {
    return new ConnectionError(
      `${label}: connection refused at ${root.host}: nothing listens there; is the server running, and is the base URL right?`,
      { request: label, errorCode: 'connection_refused', cause: error }
    );
  }
  return new ConnectionError(
    `${label}: connection failed (${error.message}); check base-url and the network`,
    {
      request: label,
      cause: error
    }
  );
}

function headerLookup(response: HttpResponse): (name: string) => string | undefined {
  return name => {
    const value = response.headers[name];
    return Array.isArray(value) ? value[0] : value;
  };
}

/** An endpoint's path below the API root (`/agent/runs/…`), from the endpoint table. */
function apiPath(name: EndpointName, params?: Record<string, string>): string {
  const path = endpointPath(name, params);
  return path.startsWith(API_PREFIX) ? path.slice(API_PREFIX.length) : path;
}

// An id goes into a URL path: `..` would climb to another endpoint (`/agent/runs/..` + `/cancel`
// is `POST /agent/cancel`), so only plain segments are sent.
function artifactPath(uid: string): string {
  if (typeof uid !== 'string' || !isIdSegment(uid.trim())) {
    throw new InvalidRequestError(`artifact uid ${showValue(uid)}: expected ${ID_SEGMENT_FORM}`, {
      request: 'artifact uid'
    });
  }
  return apiPath('getArtifact', { artifact_uid: uid.trim() });
}

function webhookSegment(webhookId: string): string {
  if (typeof webhookId !== 'string' || !isIdSegment(webhookId.trim())) {
    throw new InvalidRequestError(`webhook id ${showValue(webhookId)}: expected ${ID_SEGMENT_FORM}`, {
      request: 'webhook id'
    });
  }
  return webhookId.trim();
}

function webhookPath(name: EndpointName, webhookId: string): string {
  return apiPath(name, { webhook_id: webhookSegment(webhookId) });
}

function schedulePath(name: EndpointName, scheduleId: string): string {
  if (typeof scheduleId !== 'string' || !isIdSegment(scheduleId.trim())) {
    throw new InvalidRequestError(`schedule id ${showValue(scheduleId)}: expected ${ID_SEGMENT_FORM}`, {
      request: 'schedule id'
    });
  }
  return apiPath(name, { schedule_id: scheduleId.trim() });
}

function runPath(
  name: 'getRun' | 'cancelRun' | 'submitFollowup' | 'getTranscript' | 'getConversation' | 'getRunEvents',
  runId: string
): string {
  if (typeof runId !== 'string' || !isIdSegment(runId.trim())) {
    throw new InvalidRequestError(`run id ${showValue(runId)}: expected ${ID_SEGMENT_FORM}`, {
      request: 'run id'
    });
  }
  return apiPath(name, { run_id: runId.trim() });
}

/**
 * The API root for a base URL: `https://host` and `https://host/api/v1` both give
 * `https://host/api/v1`. Credentials and query strings are refused so they never reach a log.
 */
export function normalizeBaseUrl(value: string): string {
  const expected = 'expected an http(s) URL such as https://agents.example.com';
  let url: URL;
  try {
    url = new URL(value.trim());
  } catch {
    throw new TypeError(`base-url ${showValue(value, 100)}: ${expected}`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw new TypeError(`base-url ${showValue(url.protocol)} scheme: ${expected}`);
  }
  if (url.username || url.password) {
    throw new TypeError('base-url: must not contain credentials; pass the key as api-key');
  }
  if (url.search || url.hash) {
    throw new TypeError(
      `base-url ${showValue(url.origin + url.pathname, 100)}: must not have a query or fragment`
    );
  }
  const path = url.pathname.replace(/\/+$/, '');
  const root = path.endsWith(API_PREFIX) ? path : path + API_PREFIX;
  return url.origin + root;
}
