// Every error answer is RFC 7807 problem+json with an error_code from the error reference.
// Problem helpers follow one contract, which their names say: `<thing>Problem(value)` returns why
// the value is refused (a message naming it and the expected form) or undefined, and throws nothing;
// `check<Thing>(…)` throws a ProblemError (the route's refusal); `build…Problem` returns a
// ProblemError without throwing; `sendProblem` writes one as the answer.

import type { FastifyReply } from 'fastify';
import { STATUS_CODES } from 'node:http';
import type { Duplex } from 'node:stream';
import { ERROR_CODES, type ErrorCode, type Problem } from '../../api/index.js';

export class ProblemError extends Error {
  constructor(
    readonly code: ErrorCode,
    readonly detail: string,
    readonly headers: Record<string, string> = {},
    readonly statusOverride?: number
  ) {
    super(detail);
  }

  get status(): number {
    return this.statusOverride ?? ERROR_CODES[this.code].status ?? 500;
  }
}

const TITLES: Record<number, string> = {
  400: 'Bad Request',
  401: 'Unauthorized',
  403: 'Forbidden',
  404: 'Not Found',
  409: 'Conflict',
  413: 'Content Too Large',
  415: 'Unsupported Media Type',
  422: 'Unprocessable Content',
  429: 'Too Many Requests',
  500: 'Internal Server Error',
  503: 'Service Unavailable'
};

/**
 * The answer to a request Node's HTTP parser refused before Fastify saw it (a header over the size
 * limit, a control byte in a header, a broken request line): written straight to the socket, but
 * problem+json like every other error.
 */
export function writeClientError(error: NodeJS.ErrnoException, socket: Duplex): void {
  if (error.code === 'ECONNRESET' || socket.destroyed) return;
  const status =
    error.code === 'HPE_HEADER_OVERFLOW' ? 431 : error.code === 'ERR_HTTP_REQUEST_TIMEOUT' ? 408 : 400;
  const detail =
    status === 431
      ? 'the request line and headers are larger than the server accepts'
      : status === 408
        ? 'the request was not received in time'
        : `the request is not valid HTTP/1.1 (${error.code ?? 'parse error'})`;
  const body = JSON.stringify(problemBody('invalid_request', detail, status));
  if (socket.writable) {
    socket.write(
      `HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\nContent-Type: application/problem+json\r\n` +
        `Content-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`
    );
  }
  socket.destroy(error);
}

/** The one builder of every problem body the executor sends. */
export function problemBody(
  code: ErrorCode,
  detail: string,
  status: number = ERROR_CODES[code].status ?? 500,
  instance?: string,
  requestId?: string
): Problem {
  const body: Problem = {
    type: `/api/v1/errors#${code}`,
    title: TITLES[status] ?? STATUS_CODES[status] ?? 'Error',
    status,
    detail,
    error_code: code,
    retryable: ERROR_CODES[code].retryable
  };
  if (instance !== undefined) body.instance = instance.split('?')[0];
  if (requestId !== undefined) body.request_id = requestId;
  return body;
}

export function sendProblem(reply: FastifyReply, problem: ProblemError): FastifyReply {
  const status = problem.status;
  for (const [name, value] of Object.entries(problem.headers)) reply.header(name, value);
  return reply
    .code(status)
    .type('application/problem+json')
    .send(problemBody(problem.code, problem.detail, status, reply.request.url, String(reply.request.id)));
}
