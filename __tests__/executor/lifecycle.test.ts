// The run lifecycle table (src/executor/runs/lifecycle.ts) against the rules written out by hand:
// every state × change allowed or refused, the states each leads to, the messages and codes each
// sets, and the state event the transcript records. The store contract suite replays the same
// cases on both stores.
import { describe, expect, it } from '@jest/globals';
import { KNOWN_STATES } from '../../src/api/index.js';
import {
  LIFECYCLE,
  LEASE_RELEASED,
  abandon,
  allows,
  cancel,
  finish,
  stateEvent
} from '../../src/executor/runs/lifecycle.js';
import { CASES, STATES } from '../support/lifecycle-cases.js';

describe('run lifecycle table', () => {
  it('covers every state the contract names', () => {
    expect([...STATES].sort()).toEqual([...KNOWN_STATES].sort());
  });

  it.each(CASES)('$change from $state: allowed $allowed', ({ state, change, allowed }) => {
    expect(allows(change, state)).toBe(allowed);
  });

  it('says where each change leads', () => {
    expect(LIFECYCLE.create.to).toEqual(['QUEUED']);
    expect(LIFECYCLE.claim.to).toEqual(['INPROGRESS']);
    expect(LIFECYCLE.renew.to).toEqual(['INPROGRESS']);
    expect([...LIFECYCLE.finish.to].sort()).toEqual(['CANCELLED', 'FAILED', 'SUCCEEDED']);
    expect(LIFECYCLE.cancel.to).toEqual(['CANCELLED']);
    expect(LIFECYCLE.abandon.to).toEqual(['FAILED']);
    expect(LIFECYCLE.prune.to).toEqual([]);
  });

  it('gives up the lease on every change that ends a run, and only there', () => {
    for (const [name, rule] of Object.entries(LIFECYCLE)) {
      const releases = rule.writes.lease_owner === 'null' && rule.writes.lease_expires_at === 'null';
      expect({ name, releases }).toEqual({ name, releases: ['finish', 'cancel', 'abandon'].includes(name) });
    }
    expect(LEASE_RELEASED).toEqual({ lease_owner: 'null', lease_expires_at: 'null' });
  });

  it('sets the messages and codes clients see', () => {
    expect(cancel('QUEUED')).toEqual({
      state: 'CANCELLED',
      status_message: 'cancelled by a client',
      error_code: 'cancelled'
    });
    expect(cancel('INPROGRESS', 'wrong branch')?.status_message).toBe('cancelled by a client: wrong branch');
    expect(cancel('SUCCEEDED')).toBeUndefined();
    expect(abandon('its worker stopped')).toEqual({
      state: 'FAILED',
      status_message: 'its worker stopped',
      error_code: 'executor_restarted'
    });
    expect(finish({ state: 'SUCCEEDED' })).toEqual({
      state: 'SUCCEEDED',
      status_message: null,
      error_code: null
    });
  });

  it('records the state event: the message only once the run ended, the code when there is one', () => {
    expect(stateEvent({ state: 'QUEUED', status_message: 'x', error_code: null })).toEqual({
      state: 'QUEUED'
    });
    expect(stateEvent({ state: 'INPROGRESS', status_message: 'x', error_code: null })).toEqual({
      state: 'INPROGRESS'
    });
    expect(stateEvent({ state: 'FAILED', status_message: 'boom', error_code: 'agent_failed' })).toEqual({
      state: 'FAILED',
      status_message: 'boom',
      error_code: 'agent_failed'
    });
  });
});
