// Shared pieces of the reliability tests: the problem+json check every error answer must pass, a
// raw HTTP/1.1 client for requests fetch refuses to send (bytes beyond ASCII in headers, broken
// request lines), and bounded polling.

import { expect } from '@jest/globals';
import { connect } from 'node:net';
import { eventually } from '../support/eventually.js';

export interface Answer {
  status: number;
  contentType: string;
  text: string;
}

/** Reads a fetch response into an Answer. */
export async function answerOf(response: Response): Promise<Answer> {
  return {
    status: response.status,
    contentType: response.headers.get('content-type') ?? '',
    text: await response.text()
  };
}

/**
 * No 5xx, and every 4xx is `application/problem+json` with a JSON body whose `status` equals the
 * HTTP status and whose `title`, `error_code` and `detail` are non-empty strings.
 */
export function expectWellFormed(answer: Answer, what: string, method = 'GET'): void {
  const context = `${what.slice(0, 200)} → ${answer.status} ${answer.contentType} ${answer.text.slice(0, 300)}`;
  expect({ context, serverError: answer.status >= 500 }).toEqual({ context, serverError: false });
  if (answer.status < 400) return;
  expect({ context, type: answer.contentType }).toEqual({
    context,
    type: expect.stringMatching(/^application\/problem\+json(;|$)/)
  });
  if (method === 'HEAD') return; // no body to check
  let body: Record<string, unknown>;
  try {
    body = JSON.parse(answer.text) as Record<string, unknown>;
  } catch {
    throw new Error(`the body of a ${answer.status} is not JSON: ${context}`);
  }
  expect({ context, body }).toEqual({
    context,
    body: expect.objectContaining({
      status: answer.status,
      title: expect.stringMatching(/\S/),
      error_code: expect.stringMatching(/^[a-z_]+$/),
      detail: expect.stringMatching(/\S/)
    })
  });
}

/**
 * Sends `head` (the request line and headers, CRLF-separated, without the blank line) and
 * `body` on a fresh connection and reads the answer until the server closes it. Rejects when the
 * server closes without an answer.
 */
export function rawRequest(
  url: string,
  head: string | Buffer,
  body: Buffer = Buffer.alloc(0),
  timeoutMs = 10_000
): Promise<Answer> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve, reject) => {
    const socket = connect(Number(port), hostname);
    const chunks: Buffer[] = [];
    const timer = setTimeout(() => {
      socket.destroy();
      reject(new Error('no answer in time'));
    }, timeoutMs);
    socket.on('data', chunk => chunks.push(chunk));
    const finish = (error?: Error) => {
      clearTimeout(timer);
      const data = Buffer.concat(chunks);
      if (data.length === 0) return reject(error ?? new Error('connection closed without an answer'));
      try {
        resolve(parseResponse(data));
      } catch (parseError) {
        reject(parseError as Error);
      }
    };
    socket.on('error', error => finish(error));
    socket.on('close', () => finish());
    socket.write(Buffer.concat([Buffer.from(head), Buffer.from('\r\n\r\n'), body]));
  });
}

function parseResponse(data: Buffer): Answer {
  const end = data.indexOf('\r\n\r\n');
  if (end < 0) throw new Error(`incomplete answer: ${JSON.stringify(data.toString('latin1'))}`);
  const lines = data.subarray(0, end).toString('latin1').split('\r\n');
  const status = Number(/^HTTP\/1\.[01] (\d{3})/.exec(lines[0]!)?.[1]);
  const headers = new Map<string, string>();
  for (const line of lines.slice(1)) {
    const colon = line.indexOf(':');
    headers.set(line.slice(0, colon).trim().toLowerCase(), line.slice(colon + 1).trim());
  }
  let rest = data.subarray(end + 4);
  if (/chunked/i.test(headers.get('transfer-encoding') ?? '')) {
    const parts: Buffer[] = [];
    for (let i = 0; i < 10_000; i++) {
      const lineEnd = rest.indexOf('\r\n');
      const size = parseInt(rest.subarray(0, lineEnd).toString('latin1'), 16);
      if (!size) break;
      parts.push(rest.subarray(lineEnd + 2, lineEnd + 2 + size));
      rest = rest.subarray(lineEnd + 2 + size + 2);
    }
    rest = Buffer.concat(parts);
  } else if (headers.has('content-length')) {
    rest = rest.subarray(0, Number(headers.get('content-length')));
  }
  return { status, contentType: headers.get('content-type') ?? '', text: rest.toString('utf8') };
}

/** Calls `probe` every `everyMs` until it returns a value, at most `timeoutMs`. */
export async function poll<T>(
  probe: () => Promise<T | undefined>,
  what: string,
  timeoutMs = 15_000,
  everyMs = 50
): Promise<T> {
  return (await eventually(probe, { what, timeoutMs, intervalMs: everyMs })) as T;
}
