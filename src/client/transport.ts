// One HTTP exchange on @actions/http-client, which picks the agent (HTTPS_PROXY, NO_PROXY and
// keep-alive) the way every GitHub Action does. We add what it lacks: a total time limit, an
// AbortSignal, and a body reader that cannot hang when the connection dies half-way.

import * as http from 'node:http';
import * as https from 'node:https';
import { HttpClient } from '@actions/http-client';

export interface HttpRequest {
  method: 'GET' | 'POST' | 'PUT' | 'DELETE';
  url: string;
  headers: Record<string, string>;
  body?: string;
  timeoutMs: number;
  signal?: AbortSignal;
  /** Refuse answers larger than this (default 32 MiB); artifact downloads allow more. */
  maxBytes?: number;
}

export interface HttpResponse {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: string;
  /** The body as it came, for answers that are not text (artifact downloads). */
  bytes?: Buffer;
}

/** Why no answer arrived. */
export class TransportError extends Error {
  constructor(
    message: string,
    readonly reason: 'timeout' | 'aborted' | 'connection',
    options?: { cause?: unknown }
  ) {
    super(message, options);
  }
}

/** An answer whose body is read as it comes (an event stream). */
export interface StreamResponse {
  status: number;
  headers: http.IncomingHttpHeaders;
  /** The body's chunks as they arrive; ends when the server ends it, throws when the connection breaks. */
  chunks: AsyncIterable<Buffer>;
  /** Drops the connection (the iteration then ends). */
  close(): void;
}

export interface Transport {
  send(request: HttpRequest): Promise<HttpResponse>;
  /**
   * Sends the request and answers once the headers are in, the body left to read as it comes.
   * `timeoutMs` bounds the wait for the headers and then each silence between two chunks.
   * Optional: a transport without it has no streams (the client then reads as before).
   */
  stream?(request: HttpRequest): Promise<StreamResponse>;
  /** Closes idle keep-alive connections. */
  close(): void;
}

/** Answers larger than this are refused rather than buffered: no run record comes near it. */
const MAX_BODY_BYTES = 32 * 1024 * 1024;

/** What `requestRawWithCallback` is given: the URL, its module, and the options of the request. */
type RequestInfo = Parameters<HttpClient['requestRawWithCallback']>[0];

/** The request as the http module takes it, on the client's agent (and so its proxy and keep-alive). */
function requestInfo(client: HttpClient, request: HttpRequest, url: URL, signal: AbortSignal): RequestInfo {
  const secure = url.protocol === 'https:';
  return {
    parsedUrl: url,
    httpModule: secure ? https : http,
    options: {
      host: url.hostname.replace(/^\[(.*)\]$/, '$1'),
      port: url.port ? Number(url.port) : secure ? 443 : 80,
      path: url.pathname + url.search,
      method: request.method,
      headers: { ...request.headers },
      // The same agent (and so proxy) as every request; a stream holds its connection while it lasts.
      agent: client.getAgent(request.url),
      signal
    }
  };
}

export function createTransport(userAgent: string): Transport {
  const client = new HttpClient(userAgent, [], { keepAlive: true });
  return {
    close: () => client.dispose(),
    stream: request => openStream(client, request),
    send: request => sendRequest(client, request)
  };
}

/** Sends a request and answers at its headers, its body read as it comes (`Transport.stream`). */
function openStream(client: HttpClient, request: HttpRequest): Promise<StreamResponse> {
  const url = new URL(request.url);
  const dropped = new AbortController();
  const signal = request.signal ? AbortSignal.any([request.signal, dropped.signal]) : dropped.signal;
  if (signal.aborted) return Promise.reject(new TransportError('request aborted', 'aborted'));
  const info = requestInfo(client, request, url, signal);
  return new Promise<StreamResponse>((resolve, reject) => {
    const silence = setTimeout(() => dropped.abort(new Error('no answer')), request.timeoutMs);
    client.requestRawWithCallback(info, request.body ?? null, (error, response) => {
      if (error || !response) {
        clearTimeout(silence);
        return reject(
          request.signal?.aborted
            ? new TransportError('request aborted', 'aborted', { cause: error })
            : new TransportError(
                dropped.signal.aborted
                  ? `no answer within ${request.timeoutMs} ms`
                  : error instanceof Error
                    ? error.message
                    : String(error),
                dropped.signal.aborted ? 'timeout' : 'connection',
                { cause: error }
              )
        );
      }
      resolve(streamedBody(response.message, request.timeoutMs, silence));
    });
  });
}

/**
 * An answer's body as it comes, destroyed after `timeoutMs` of silence between two chunks;
 * `waiting` is the timer of the wait for the headers, which it takes over.
 */
function streamedBody(
  message: http.IncomingMessage,
  timeoutMs: number,
  waiting: ReturnType<typeof setTimeout>
): StreamResponse {
  let silence = waiting;
  const quiet = () => {
    clearTimeout(silence);
    silence = setTimeout(() => message.destroy(new Error('the stream went silent')), timeoutMs);
  };
  quiet();
  message.on('close', () => clearTimeout(silence));
  // Each chunk read restarts the silence timer. (A 'data' listener would set the message
  // flowing: what the server sent before the reader began iterating would be lost to it.)
  async function* chunks(): AsyncGenerator<Buffer> {
    for await (const chunk of message as AsyncIterable<Buffer>) {
      quiet();
      yield chunk;
    }
  }
  return {
    status: message.statusCode ?? 0,
    headers: message.headers,
    chunks: chunks(),
    close: () => {
      clearTimeout(silence);
      message.destroy();
    }
  };
}

/** One whole exchange within the request's time limit (`Transport.send`). */
function sendRequest(client: HttpClient, request: HttpRequest): Promise<HttpResponse> {
  const url = new URL(request.url);
  const timeout = AbortSignal.timeout(request.timeoutMs);
  const signal = request.signal ? AbortSignal.any([request.signal, timeout]) : timeout;
  const classify = (error: unknown): TransportError => {
    if (request.signal?.aborted) return new TransportError('request aborted', 'aborted', { cause: error });
    if (timeout.aborted) {
      return new TransportError(`no answer within ${request.timeoutMs} ms`, 'timeout', { cause: error });
    }
    const message = error instanceof Error ? error.message : String(error);
    return new TransportError(message, 'connection', { cause: error });
  };
  if (signal.aborted) return Promise.reject(classify(signal.reason));
  const info = requestInfo(client, request, url, signal);
  return new Promise<HttpResponse>((resolve, reject) => {
    client.requestRawWithCallback(info, request.body ?? null, (error, response) => {
      if (error || !response) return reject(classify(error));
      readBody(response.message, request.maxBytes ?? MAX_BODY_BYTES, classify).then(resolve, reject);
    });
  });
}

/** Reads a whole body, refusing one over `limit` bytes or cut short; failures go through `classify`. */
function readBody(
  message: http.IncomingMessage,
  limit: number,
  classify: (error: unknown) => TransportError
): Promise<HttpResponse> {
  return new Promise<HttpResponse>((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    let done = false;
    const fail = (cause: unknown) => {
      if (done) return;
      done = true;
      message.destroy();
      reject(classify(cause));
    };
    message.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > limit) fail(new Error(`answer larger than ${limit} bytes`));
      else chunks.push(chunk);
    });
    message.on('error', fail);
    message.on('aborted', () => fail(new Error('connection closed before the answer was complete')));
    message.on('close', () => {
      if (!message.complete) fail(new Error('connection closed before the answer was complete'));
    });
    message.on('end', () => {
      if (done) return;
      done = true;
      const bytes = Buffer.concat(chunks);
      resolve({
        status: message.statusCode ?? 0,
        headers: message.headers,
        body: bytes.toString('utf8'),
        bytes
      });
    });
  });
}
