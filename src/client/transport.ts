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

export function createTransport(userAgent: string): Transport {
  const client = new HttpClient(userAgent, [], { keepAlive: true });

  return {
    close: () => client.dispose(),
    stream(request) {
      const url = new URL(request.url);
      const secure = url.protocol === 'https:';
      const dropped = new AbortController();
      const signal = request.signal ? AbortSignal.any([request.signal, dropped.signal]) : dropped.signal;
      if (signal.aborted) return Promise.reject(new TransportError('request aborted', 'aborted'));
      const info = {
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
      return new Promise<StreamResponse>((resolve, reject) => {
        let silence = setTimeout(() => dropped.abort(new Error('no answer')), request.timeoutMs);
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
          const message = response.message;
          const quiet = () => {
            clearTimeout(silence);
            silence = setTimeout(
              () => message.destroy(new Error('the stream went silent')),
              request.timeoutMs
            );
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
          resolve({
            status: message.statusCode ?? 0,
            headers: message.headers,
            chunks: chunks(),
            close: () => {
              clearTimeout(silence);
              message.destroy();
            }
          });
        });
      });
    },
    send(request) {
      const url = new URL(request.url);
      const timeout = AbortSignal.timeout(request.timeoutMs);
      const signal = request.signal ? AbortSignal.any([request.signal, timeout]) : timeout;
      const classify = (error: unknown): TransportError => {
        if (request.signal?.aborted)
          return new TransportError('request aborted', 'aborted', { cause: error });
        if (timeout.aborted) {
          return new TransportError(`no answer within ${request.timeoutMs} ms`, 'timeout', { cause: error });
        }
        const message = error instanceof Error ? error.message : String(error);
        return new TransportError(message, 'connection', { cause: error });
      };
      if (signal.aborted) return Promise.reject(classify(signal.reason));

      const secure = url.protocol === 'https:';
      const info = {
        parsedUrl: url,
        httpModule: secure ? https : http,
        options: {
          host: url.hostname.replace(/^\[(.*)\]$/, '$1'),
          port: url.port ? Number(url.port) : secure ? 443 : 80,
          path: url.pathname + url.search,
          method: request.method,
          headers: { ...request.headers },
          agent: client.getAgent(request.url),
          signal
        }
      };
      return new Promise<HttpResponse>((resolve, reject) => {
        client.requestRawWithCallback(info, request.body ?? null, (error, response) => {
          if (error || !response) return reject(classify(error));
          const message = response.message;
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
            const limit = request.maxBytes ?? MAX_BODY_BYTES;
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
      });
    }
  };
}
