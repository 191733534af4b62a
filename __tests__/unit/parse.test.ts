import { describe, expect, it } from '@jest/globals';
import { ParseError, parseRun } from '../../src/client/parse.js';

describe('parseRun', () => {
  it('accepts status_message as a string', () => {
    const run = parseRun({
      run_id: 'r',
      state: 'FAILED',
      status_message: 'boom',
      error_code: 'agent_failed'
    });
    expect(run.status_message).toBe('boom');
    expect(run.error_code).toBe('agent_failed');
  });

  it('accepts status_message as an object and lifts its code and retryable flag', () => {
    const run = parseRun({
      run_id: 'r',
      state: 'ERROR',
      status_message: { message: 'platform down', error_code: 'internal', retryable: true }
    });
    expect(run).toMatchObject({ status_message: 'platform down', error_code: 'internal', retryable: true });
  });

  it('keeps unknown fields and unknown states as they came', () => {
    const run = parseRun({
      run_id: 'r',
      state: 'WARMING_UP',
      artifacts: [{ type: 'PLAN' }],
      request_usage: { x: 1 }
    });
    expect(run.state).toBe('WARMING_UP');
    expect(run.artifacts).toEqual([{ type: 'PLAN' }]);
    expect(run.request_usage).toEqual({ x: 1 });
  });

  it('falls back to the deprecated task_id', () => {
    expect(parseRun({ task_id: 't-1', state: 'QUEUED' }).run_id).toBe('t-1');
  });

  it('drops a null session link and status message rather than reporting "null"', () => {
    const run = parseRun({ run_id: 'r', state: 'QUEUED', session_link: null, status_message: null });
    expect('session_link' in run).toBe(false);
    expect('status_message' in run).toBe(false);
  });

  it('names what is missing', () => {
    expect(() => parseRun({ state: 'QUEUED' })).toThrow(
      new ParseError('run record: expected a string run_id, got nothing')
    );
    expect(() => parseRun({ run_id: 'r', state: 7 })).toThrow(
      'run record: expected a string state, got number 7'
    );
    expect(() => parseRun([])).toThrow('run record: expected a JSON object, got an array');
  });
});
