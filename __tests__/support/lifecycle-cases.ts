// Which change of a run each state allows, written out by hand (not read from the code under test):
// the lifecycle table's unit test and the store contract suite both check every state × change
// against it, so a rule that moves in src/executor/runs/lifecycle.ts or in a store's SQL fails here.

export const CHANGES = ['claim', 'renew', 'finish', 'cancel', 'abandon', 'prune'] as const;
export type CheckedChange = (typeof CHANGES)[number];

export const STATES = [
  'QUEUED',
  'PENDING',
  'CLAIMED',
  'INPROGRESS',
  'BLOCKED',
  'SUCCEEDED',
  'FAILED',
  'ERROR',
  'CANCELLED'
] as const;

/** The states each change may start from; every other state refuses it. */
export const ALLOWED: Record<CheckedChange, readonly string[]> = {
  claim: ['QUEUED'],
  renew: ['INPROGRESS'],
  finish: ['INPROGRESS'],
  cancel: ['QUEUED', 'PENDING', 'CLAIMED', 'INPROGRESS', 'BLOCKED'],
  abandon: ['INPROGRESS'],
  prune: ['SUCCEEDED', 'FAILED', 'ERROR', 'CANCELLED']
};

/** Every state × change, with whether it is allowed. */
export const CASES = STATES.flatMap(state =>
  CHANGES.map(change => ({ state, change, allowed: ALLOWED[change].includes(state) }))
);
