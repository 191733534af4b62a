// Every error answer is RFC 7807 problem+json with an error_code from the error reference.

import type { FastifyReply } from 'fastify';
import { ERROR_CODES, type ErrorCode } from '../../api/index.js';

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
  404: 'Not Found',
  409: 'Conflict',
  413: 'Content Too Large',
  415: 'Unsupported Media Type',
  422: 'Unprocessable Content',
  429: 'Too Many Requests',
  500: 'Internal Server Error',
  503: 'Service Unavailable'
};

export function sendProblem(reply: FastifyReply, problem: ProblemError): FastifyReply {
  const status = problem.status;
  for (const [name, value] of Object.entries(problem.headers)) reply.header(name, value);
  return reply
    .code(status)
    .type('application/problem+json')
    .send({
      type: `/api/v1/errors#${problem.code}`,
      title: TITLES[status] ?? 'Error',
      status,
      detail: problem.detail,
      error_code: problem.code,
      retryable: ERROR_CODES[problem.code].retryable,
      instance: reply.request.url.split('?')[0],
      request_id: String(reply.request.id)
    });
}
