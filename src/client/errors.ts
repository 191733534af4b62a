// One error class per status family, so callers can branch with `instanceof` and users read a
// message that says what happened and what to do about it.

import type { Problem } from '../api/index.js';

export interface ErrorDetails {
  /** HTTP method and path of the failed request, e.g. `POST /api/v1/agent/run`. */
  request: string;
  status?: number;
  errorCode?: string;
  detail?: string;
  requestId?: string;
  problem?: Problem;
  cause?: unknown;
}

/** Base class of every error the client throws. */
export class AgentRunError extends Error {
  readonly request: string;
  readonly status?: number;
  readonly errorCode?: string;
  readonly detail?: string;
  readonly requestId?: string;
  readonly problem?: Problem;

  constructor(message: string, details: ErrorDetails) {
    super(message, details.cause === undefined ? undefined : { cause: details.cause });
    this.name = new.target.name;
    this.request = details.request;
    this.status = details.status;
    this.errorCode = details.errorCode;
    this.detail = details.detail;
    this.requestId = details.requestId;
    this.problem = details.problem;
  }
}

/** The server answered with an error status. */
export class APIError extends AgentRunError {}
/** 400, 413, 415, 422: the request itself is wrong; repeating it cannot help. */
export class InvalidRequestError extends APIError {}
/** 401: the key is missing, unknown or revoked. */
export class AuthenticationError extends APIError {}
/** 403: the key is valid but not allowed to do this. */
export class PermissionDeniedError extends APIError {}
/** 404: the run or environment does not exist (or is not visible to this key). */
export class NotFoundError extends APIError {}
/** 409: the request conflicts with the run's current state. */
export class ConflictError extends APIError {}
/** 429: rate limit or capacity. */
export class RateLimitError extends APIError {}
/** 5xx: the server failed. */
export class ServerError extends APIError {}
/** No answer: the connection failed or was reset. */
export class ConnectionError extends AgentRunError {}
/** No answer within the per-request timeout. */
export class TimeoutError extends ConnectionError {}
/** The caller's AbortSignal fired. */
export class AbortError extends AgentRunError {}

const ADVICE: Record<number, string> = {
  400: 'the server rejected the request as malformed',
  401: 'the API key was rejected; check the api-key secret',
  403: 'the API key is not allowed to do this; check its team and plan',
  404: 'not found; check the ids in the request and that the key belongs to the right team',
  409: 'the request conflicts with the current state of the run',
  413: 'the request body is too large; shorten the prompt or config',
  415: 'the server expects a JSON body',
  422: 'the server rejected a field of the request',
  429: 'the service is rate limiting or at capacity; try again later'
};

function classFor(status: number): new (message: string, details: ErrorDetails) => APIError {
  if (status === 401) return AuthenticationError;
  if (status === 403) return PermissionDeniedError;
  if (status === 404) return NotFoundError;
  if (status === 409) return ConflictError;
  if (status === 429) return RateLimitError;
  if (status >= 500) return ServerError;
  if (status >= 400) return InvalidRequestError;
  return APIError;
}

/** Builds the error for an answer with an error status, from its problem body when it has one. */
export function errorFromResponse(
  request: string,
  status: number,
  body: string,
  requestId: string | undefined,
  context: { keyName?: string; apiRoot?: string; token?: boolean } = {}
): APIError {
  const problem = parseProblem(body);
  const detail =
    problem?.detail ?? (problem === undefined ? body.trim().slice(0, 300) || undefined : problem.title);
  const errorCode = problem?.error_code ?? (typeof problem?.error === 'string' ? problem.error : undefined);
  let advice = ADVICE[status] ?? (status >= 500 ? 'the server failed; try again later' : 'unexpected answer');
  if (status === 401 && context.keyName)
    advice = `the ${context.token ? 'token' : 'API key'} was rejected; check ${context.keyName}`;
  if (status === 404) advice = notFoundAdvice(request, errorCode) ?? advice;
  // No such route at all (our executor says route_not_found; other servers answer a bare 404 page):
  // the run id is not the problem, the base URL is.
  if (status === 404 && (errorCode === 'route_not_found' || (problem === undefined && context.apiRoot))) {
    advice = `no such route; the base URL looks wrong${context.apiRoot ? ` (requests go to ${context.apiRoot})` : ''}`;
  }
  let message = `${status} from ${request}: ${advice}`;
  if (detail) message += ` (${errorCode ? `${errorCode}: ` : ''}${detail})`;
  else if (errorCode) message += ` (${errorCode})`;
  if (requestId) message += ` [request id ${requestId}]`;
  const Class = classFor(status);
  return new Class(message, { request, status, errorCode, detail, requestId, problem });
}

/** What a 404 asks to check, by what was asked for: a run, an environment, an artifact, a schedule. */
function notFoundAdvice(request: string, errorCode: string | undefined): string | undefined {
  const path = request.split(' ')[1] ?? '';
  const team = 'and that the key belongs to its team';
  if (errorCode === 'environment_not_found' || /\/agent\/run$/.test(path))
    return `not found; check the environment id (agent-run environments lists them) ${team}`;
  if (errorCode === 'artifact_not_found' || path.includes('/agent/artifacts/'))
    return `not found; check the artifact id ${team}`;
  if (path.includes('/agent/schedules/')) return `not found; check the schedule id ${team}`;
  if (errorCode === 'not_found' || path.includes('/agent/runs/'))
    return `not found; check the run id ${team}`;
  return undefined;
}

function parseProblem(body: string): Problem | undefined {
  if (!body.trimStart().startsWith('{')) return undefined;
  try {
    const value: unknown = JSON.parse(body);
    return value !== null && typeof value === 'object' && !Array.isArray(value)
      ? (value as Problem)
      : undefined;
  } catch {
    return undefined;
  }
}
