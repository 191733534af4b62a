// Tolerant reading of what servers send: the production service and the spec disagree on the
// shape of status_message, and new states appear over time. Only run_id and state are required.

import {
  type RunRecord,
  type RunState,
  type StatusMessageObject,
  describeValue,
  showValue
} from '../api/index.js';

/**
 * A run as the client hands it out: every field the server sent, kept as it came, except that
 * `status_message` is always a string and the object form's `error_code` and `retryable` are
 * lifted to the top level.
 */
export interface Run extends RunRecord {
  status_message?: string;
  error_code?: string;
  retryable?: boolean;
}

export class ParseError extends Error {}

function isObject(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}

export function parseJson(body: string, what: string): unknown {
  try {
    return JSON.parse(body);
  } catch {
    throw new ParseError(`${what}: expected a JSON body, got ${showValue(body, 120)}`);
  }
}

export function parseRun(value: unknown, what = 'run record'): Run {
  if (!isObject(value)) throw new ParseError(`${what}: expected a JSON object, got ${describeValue(value)}`);
  const runId = value.run_id ?? value.task_id;
  if (typeof runId !== 'string' || runId === '') {
    throw new ParseError(`${what}: expected a string run_id, got ${describeValue(runId)}`);
  }
  if (typeof value.state !== 'string' || value.state === '') {
    throw new ParseError(`${what}: expected a string state, got ${describeValue(value.state)}`);
  }
  const run: Run = { ...value, run_id: runId, state: value.state as RunState };
  const status = value.status_message;
  if (isObject(status)) {
    const object = status as Partial<StatusMessageObject>;
    if (typeof object.message === 'string') run.status_message = object.message;
    else delete run.status_message;
    if (typeof object.error_code === 'string' && typeof value.error_code !== 'string') {
      run.error_code = object.error_code;
    }
    if (typeof object.retryable === 'boolean') run.retryable = object.retryable;
  } else if (typeof status !== 'string') {
    delete run.status_message;
  }
  if (typeof run.error_code !== 'string') delete run.error_code;
  if (typeof run.session_link !== 'string' || run.session_link === '') delete run.session_link;
  return run;
}
