// A run's life as data: for each change a run can go through (create, claim, renew, finish,
// cancel, abandon, prune), the states it may start from, the states it leads to, the columns it
// writes, the status message and error code it sets, and whether the transcript records it. The SQL
// store (store/sql-store.ts) builds its statements from this table; nothing else states these rules.
// A new change (a follow-up that re-queues a finished run, a run BLOCKED on a person) is a new row.
//
//   create   (nothing)         →  QUEUED
//   claim    QUEUED            →  INPROGRESS, under a lease to its worker
//   renew    INPROGRESS        →  INPROGRESS, its lease longer (by the worker holding it)
//   finish   INPROGRESS        →  SUCCEEDED | FAILED | CANCELLED (by the worker holding the lease)
//   cancel   any not terminal  →  CANCELLED (by a client)
//   abandon  INPROGRESS, lease expired or left by a previous process  →  FAILED
//   followup any terminal      →  QUEUED again, same run (a queued or running run keeps its state:
//                                 the message is a transcript event the worker takes at its next turn)
//   prune    any terminal, completed before a cut-off  →  deleted with its transcript and artifacts

import { abandoned, cancelledByClient } from './outcomes.js';
import {
  type ErrorCode,
  KNOWN_STATES,
  type RunState,
  TERMINAL_STATES,
  isTerminalState
} from '../../api/index.js';

export { TERMINAL_STATES };

/** The state a new run starts in. */
export const CREATED_STATE = 'QUEUED' satisfies RunState;
/** The state of a run a worker holds. */
export const CLAIMED_STATE = 'INPROGRESS' satisfies RunState;

/** Every change of a run the store makes. */
export type ChangeName =
  'create' | 'claim' | 'renew' | 'finish' | 'cancel' | 'abandon' | 'followup' | 'prune';

/**
 * What a column gets: the change's state, status message or error code; the caller's time; the
 * claiming worker; the store's clock plus the lease length; NULL; or one more than before.
 */
export type Source = 'state' | 'message' | 'code' | 'at' | 'owner' | 'lease' | 'null' | 'next';

/** Which lease a change needs: none, the caller's own, or one that expired (or any, at start-up). */
export type LeaseGuard = 'none' | 'own' | 'expired';

export interface Rule {
  /** The states the change may start from; any other state refuses it (create starts from none). */
  from: readonly RunState[];
  /** The states it may lead to (none: the run is deleted). */
  to: readonly RunState[];
  /** The lease it needs besides the state. */
  lease: LeaseGuard;
  /** The columns it writes and what each gets (the store adds its own bookkeeping). */
  writes: Readonly<Record<string, Source>>;
  /** Whether the transcript records a `state` event in the same transaction. */
  recorded: boolean;
}

/** A lease given up: written here once, by every change that ends a run. */
export const LEASE_RELEASED = { lease_owner: 'null', lease_expires_at: 'null' } as const satisfies Record<
  string,
  Source
>;

/** What every change that ends a run writes. */
const ENDING = {
  state: 'state',
  status_message: 'message',
  error_code: 'code',
  completed_at: 'at',
  updated_at: 'at',
  version: 'next',
  ...LEASE_RELEASED
} as const satisfies Record<string, Source>;

/** States a client's cancel applies to: every state the contract names that is not terminal. */
export const CANCELLABLE: readonly RunState[] = KNOWN_STATES.filter(state => !isTerminalState(state));

export const LIFECYCLE: Readonly<Record<ChangeName, Rule>> = {
  create: {
    from: [],
    to: [CREATED_STATE],
    lease: 'none',
    writes: { state: 'state', created_at: 'at', updated_at: 'at' },
    recorded: true
  },
  claim: {
    from: [CREATED_STATE],
    to: [CLAIMED_STATE],
    lease: 'none',
    writes: {
      state: 'state',
      started_at: 'at',
      updated_at: 'at',
      version: 'next',
      lease_owner: 'owner',
      lease_expires_at: 'lease'
    },
    recorded: true
  },
  renew: {
    from: [CLAIMED_STATE],
    to: [CLAIMED_STATE],
    lease: 'own',
    writes: { lease_expires_at: 'lease' },
    recorded: false
  },
  finish: {
    from: [CLAIMED_STATE],
    to: ['SUCCEEDED', 'FAILED', 'CANCELLED'],
    lease: 'own',
    writes: ENDING,
    recorded: true
  },
  cancel: { from: CANCELLABLE, to: ['CANCELLED'], lease: 'none', writes: ENDING, recorded: true },
  abandon: { from: [CLAIMED_STATE], to: ['FAILED'], lease: 'expired', writes: ENDING, recorded: true },
  followup: {
    from: TERMINAL_STATES,
    to: [CREATED_STATE],
    lease: 'none',
    writes: {
      state: 'state',
      status_message: 'message',
      error_code: 'code',
      completed_at: 'null',
      updated_at: 'at',
      version: 'next'
    },
    recorded: true
  },
  prune: { from: TERMINAL_STATES, to: [], lease: 'none', writes: {}, recorded: false }
};

/** Whether `change` may start from a run in `state` (leases aside). */
export function allows(change: ChangeName, state: RunState): boolean {
  return LIFECYCLE[change].from.includes(state);
}

/** What a change sets on the run: its state, status message and error code. */
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

/** A new run. */
export function create(): Transition {
  return { state: CREATED_STATE, status_message: null, error_code: null };
}

/** A worker's claim of a queued run. */
export function claim(): Transition {
  return { state: CLAIMED_STATE, status_message: null, error_code: null };
}

/** A client's cancel: allowed while the run is not terminal; a finished run stays as it is. */
export function cancel(state: RunState, reason?: string): Transition | undefined {
  return isTerminalState(state) ? undefined : cancelled(reason);
}

/** What a client's cancel sets, whichever state it started from. */
export function cancelled(reason?: string): Transition {
  return finish(cancelledByClient(reason));
}

/** A follow-up to an ended run: queued again, its old status message and error code cleared. */
export function followup(): Transition {
  return { state: CREATED_STATE, status_message: null, error_code: null };
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
  return finish(abandoned(message));
}

/** The fields of a run that the state event and the wire record are built from. */
export type StateFields = Transition;

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
