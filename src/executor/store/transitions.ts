// A run's states and every change between them, in one place: which state a create, a claim, a
// finish, a cancel and an abandon lead to, with the status message and error code each sets; the
// `state` event the transcript records for each change; which fields show in which state. Both
// stores (sqlite.ts, postgres.ts) apply these rules in their own SQL; they do not restate them.
//
//   create  →  QUEUED
//   claim      QUEUED      →  INPROGRESS (under a lease)
//   finish     INPROGRESS  →  SUCCEEDED | FAILED | CANCELLED (by the worker holding the lease)
//   cancel     any not terminal  →  CANCELLED (by a client)
//   abandon    INPROGRESS with its lease expired (or left by a previous process)  →  FAILED

import { type ErrorCode, type RunState, TERMINAL_STATES, isTerminalState } from '../../api/index.js';

export { TERMINAL_STATES };

/** The state a new run starts in. */
export const CREATED_STATE = 'QUEUED' satisfies RunState;
/** The state of a run a worker holds. */
export const CLAIMED_STATE = 'INPROGRESS' satisfies RunState;

/** What a transition writes on the run besides its timestamps and lease. */
export interface Transition {
  state: RunState;
  status_message: string | null;
  error_code: ErrorCode | null;
}

/** How a worker ends a run it holds. */
export interface Outcome {
  state: 'SUCCEEDED' | 'FAILED' | 'CANCELLED';
  status_message?: string;
  error_code?: ErrorCode;
}

/** The terminal states as an SQL list, for `state IN …` (the same text on SQLite and PostgreSQL). */
export const TERMINAL_SQL = `(${TERMINAL_STATES.map(state => `'${state}'`).join(', ')})`;

/** A client's cancel: allowed while the run is not terminal; a finished run stays as it is. */
export function cancel(state: RunState, reason?: string): Transition | undefined {
  if (isTerminalState(state)) return undefined;
  const status_message = reason === undefined ? 'cancelled by a client' : `cancelled by a client: ${reason}`;
  return { state: 'CANCELLED', status_message, error_code: 'cancelled' };
}

/** A worker's finish of the run it holds. */
export function finish(outcome: Outcome): Transition {
  return {
    state: outcome.state,
    status_message: outcome.status_message ?? null,
    error_code: outcome.error_code ?? null
  };
}

/** A run left INPROGRESS by a process that stopped (restarted, or stopped renewing its lease). */
export function abandon(message: string): Transition {
  return { state: 'FAILED', status_message: message, error_code: 'executor_restarted' };
}

/** The fields of a run that the state event and the wire record are built from. */
export interface StateFields {
  state: RunState;
  status_message: string | null;
  error_code: ErrorCode | null;
}

/**
 * The transcript's `state` event for a change, recorded in the transaction that makes it: the new
 * state, its status message once the run has ended, and its error code if any.
 */
export function stateEvent(run: StateFields): Record<string, unknown> {
  const data: Record<string, unknown> = { state: run.state };
  if (run.status_message !== null && run.state !== CREATED_STATE && run.state !== CLAIMED_STATE)
    data.status_message = run.status_message;
  if (run.error_code !== null) data.error_code = run.error_code;
  return data;
}

const WITH_MESSAGE: ReadonlySet<RunState> = new Set(['FAILED', 'CANCELLED', 'ERROR']);

/** Whether a run's record shows its status message: only when it ended other than in success. */
export function showsStatusMessage(state: RunState): boolean {
  return WITH_MESSAGE.has(state);
}

/** Whether a run's record has a session link: once it has started (and so has a transcript). */
export function showsSessionLink(state: RunState): boolean {
  return state === CLAIMED_STATE || isTerminalState(state);
}
