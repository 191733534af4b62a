import { describe, expect, it } from '@jest/globals';
import { escapeHtml } from '../../src/action/markup.js';
import { conclusionOf, durationOf, runOutput } from '../../src/action/report.js';

describe('report helpers', () => {
  it('maps terminal states to conclusions', () => {
    expect(['SUCCEEDED', 'FAILED', 'CANCELLED', 'ERROR', 'INPROGRESS'].map(conclusionOf)).toEqual([
      'succeeded',
      'failed',
      'cancelled',
      'error',
      ''
    ]);
  });

  it('measures duration from the record when it can', () => {
    const run = {
      run_id: 'r',
      state: 'SUCCEEDED',
      created_at: '2026-01-01T00:00:00Z',
      completed_at: '2026-01-01T00:01:30Z'
    };
    expect(durationOf(run, 5)).toBe(90_000);
    expect(durationOf({ run_id: 'r', state: 'X' }, 1234)).toBe(1234);
  });

  it('measures a run that has not ended by the time waited, not by its last change', () => {
    const created = '2026-01-01T00:00:00Z';
    const queued = { run_id: 'r', state: 'QUEUED', created_at: created, updated_at: created };
    expect(durationOf(queued, 3000)).toBe(3000);
    const cancelled = { ...queued, state: 'CANCELLED', updated_at: '2026-01-01T00:00:03Z' };
    expect(durationOf(cancelled, 9999)).toBe(3000);
  });

  it('keeps the run output valid JSON under the limit', () => {
    const run = {
      run_id: 'r',
      state: 'SUCCEEDED',
      prompt: 'x'.repeat(5000),
      agent_config: { environment_id: 'e' }
    };
    const small = runOutput(run, 2000);
    expect(small.length).toBeLessThanOrEqual(2000);
    expect(JSON.parse(small)).toMatchObject({ run_id: 'r', state: 'SUCCEEDED', truncated: true });
    expect(JSON.parse(runOutput(run, 50))).toEqual({ run_id: 'r', state: 'SUCCEEDED', truncated: true });
    expect(JSON.parse(runOutput(run))).toEqual(run);
  });

  it('escapes HTML', () => expect(escapeHtml('<b a="1">&\'')).toBe('&#60;b a=&#34;1&#34;&#62;&#38;&#39;'));
});
