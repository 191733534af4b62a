// The transport every resource of the client shares (openai-node's shape: one core, a resource per
// kind of thing): the API root and the credential, one request function that owns retries and error
// mapping, and requests named by their endpoint in the table (src/api/endpoints.ts), which gives each
// its method and path. A resource method names its endpoint and passes ids; it never writes a path.

import {
  API_PREFIX,
  ID_SEGMENT_FORM,
  ENDPOINTS,
  describeValue,
  endpointPath,
  type EndpointName,
  isIdSegment,
  pathParameters,
  showValue
} from '../api/index.js';
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
import { ParseError, parseJson } from './parse.js';
import type { CallOptions } from './poll.js';
import { DEFAULT_RETRY, type RetryOptions, retryDelayMs, shouldRetry } from './retry.js';
import { type HttpResponse, type Transport, TransportError, createTransport } from './transport.js';
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

export type Method = 'GET' | 'POST' | 'PUT' | 'DELETE';

export interface RequestOptions extends CallOptions {
  body?: string;
  headers?: Record<string, string>;
  timeoutMs?: number;
  maxRetries?: number;
  /** An error answer that must not be retried whatever its status. */
  isFinal?: (error: AgentRunError) => boolean;
  /** Retry a 409 even when its problem says `retryable: false` (isFinal still applies). */
  retryConflicts?: boolean;
}

/** One request to an endpoint of the table. */
export interface EndpointCall extends Omit<RequestOptions, 'body'> {
  /** The path's parameters by name (`run_id`, …): ids, each checked to be one plain segment. */
  params?: Readonly<Record<string, string>>;
  /** The query string, without its `?`; left out when empty. */
  query?: URLSearchParams;
  /** Sent as JSON; undefined sends no body. */
  json?: unknown;
  /** Sent as it is (a cancel sends an empty body rather than none). */
  body?: string;
}

const DEFAULT_TIMEOUT_MS = 60_000;

export class ClientCore {
  readonly apiRoot: string;
  readonly timeoutMs: number;
  readonly transport: Transport;
  readonly sleep: (ms: number, signal?: AbortSignal) => Promise<void>;
  private readonly apiKey: string;
  private readonly credential?: () => Promise<string>;
  private readonly retry: RetryOptions;
  private readonly random: () => number;
  private readonly onRetry?: (info: RetryInfo) => void;
  private readonly keyName: string;

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
   * The endpoint's path below the API root (`/agent/runs/…`), from the endpoint table, with its
   * parameters filled in. Each is an id that goes into the URL's path: `..` would climb to another
   * endpoint (`/agent/runs/..` + `/cancel` is `POST /agent/cancel`), so only plain segments are
   * sent, and a bad one is refused naming it (`run id "a/b": expected …`).
   */
  path(name: EndpointName, params: Readonly<Record<string, string>> = {}): string {
    const filled: Record<string, string> = {};
    for (const param of pathParameters(ENDPOINTS[name].path)) filled[param] = this.id(param, params[param]);
    const path = endpointPath(name, filled);
    return path.startsWith(API_PREFIX) ? path.slice(API_PREFIX.length) : path;
  }

  /** An id for the parameter `param` (`run_id`), trimmed, or an error naming it (`run id "a/b": expected …`). */
  id(param: string, value: unknown): string {
    const what = param.replace(/_/g, ' ');
    if (typeof value !== 'string' || !isIdSegment(value.trim()))
      throw new InvalidRequestError(`${what} ${showValue(value)}: expected ${ID_SEGMENT_FORM}`, {
        request: what
      });
    return value.trim();
  }

  /** How errors and messages name a request: `GET /api/v1/agent/runs/r-1`. */
  label(name: EndpointName, path: string): string {
    return `${ENDPOINTS[name].method} ${API_PREFIX}${path.split('?')[0]}`;
  }

  /** One request to the named endpoint: its method and path from the table. */
  call(name: EndpointName, call: EndpointCall = {}): Promise<HttpResponse> {
    const { params, query, json, ...options } = call;
    const search = query !== undefined && query.size > 0 ? `?${query.toString()}` : '';
    return this.request(ENDPOINTS[name].method, this.path(name, params) + search, {
      ...options,
      body: json === undefined ? call.body : JSON.stringify(json)
    });
  }

  /** One request to the named endpoint whose answer is a JSON object. */
  async object<T = Record<string, unknown>>(name: EndpointName, call: EndpointCall = {}): Promise<T> {
    const label = this.label(name, this.path(name, call.params));
    const value = parseJson((await this.call(name, call)).body, label);
    if (value === null || typeof value !== 'object' || Array.isArray(value))
      throw new ParseError(`${label}: expected a JSON object, got ${describeValue(value)}`);
    return value as T;
  }

  /** The key, or the credential function's current token (one line, never empty). */
  async bearer(): Promise<string> {
    if (this.credential === undefined) return this.apiKey;
    const value = (await this.credential()).trim();
    if (value === '' || /[\r\n\s]/.test(value))
      throw new TypeError('credential: expected a non-empty token on one line');
    return value;
  }

  /** One request below the API root, retried as the answer allows. */
  async request(method: Method, path: string, options: RequestOptions): Promise<HttpResponse> {
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

  /** The delay a `Retry-After` header asks for, in ms, as the retry schedule reads it. */
  retryAfterMs(header: (name: string) => string | undefined): number {
    return retryDelayMs(1, header, this.retry, () => 0);
  }
}

/** A 405, or a 404 about the route rather than the request (never `environment_not_found`). */
export function isMissingRoute(error: unknown): boolean {
  if (!(error instanceof AgentRunError)) return false;
  if (error.status === 405) return true;
  return (
    error instanceof NotFoundError && (error.errorCode === undefined || error.errorCode === 'route_not_found')
  );
}

/** Whether an answer says the server held it (`Preference-Applied: wait=…`). */
export function wasHeld(response: HttpResponse): boolean {
  return /(^|[\s,;])wait\b/i.test(headerLookup(response)('preference-applied') ?? '');
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

export function transportFailure(
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

export function headerLookup(response: {
  headers: HttpResponse['headers'];
}): (name: string) => string | undefined {
  return name => {
    const value = response.headers[name];
    return Array.isArray(value) ? value[0] : value;
  };
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
