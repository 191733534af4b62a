import { describe, expect, it } from '@jest/globals';
import { retryDelayMs, serverDelayMs, shouldRetry } from '../../src/client/retry.js';

const headers = (values: Record<string, string>) => (name: string) => values[name];

describe('shouldRetry', () => {
  it.each([408, 409, 429, 500, 502, 503, 504])('retries %d', status =>
    expect(shouldRetry(status)).toBe(true)
  );
  it.each([400, 401, 403, 404, 413, 422])('never retries %d', status =>
    expect(shouldRetry(status)).toBe(false)
  );
  it('retries when there was no answer', () => expect(shouldRetry(undefined)).toBe(true));
  it('obeys x-should-retry either way', () => {
    expect(shouldRetry(400, headers({ 'x-should-retry': 'true' }))).toBe(true);
    expect(shouldRetry(503, headers({ 'x-should-retry': 'false' }))).toBe(false);
  });
});

describe('retryDelayMs', () => {
  const none = headers({});
  it('doubles from 0.5 s to an 8 s cap, jitter taking off at most 25 %', () => {
    expect([1, 2, 3, 4, 5, 6].map(n => retryDelayMs(n, none, undefined, () => 0))).toEqual([
      500, 1000, 2000, 4000, 8000, 8000
    ]);
    expect(retryDelayMs(1, none, undefined, () => 1)).toBe(375);
    expect(retryDelayMs(5, none, undefined, () => 0.5)).toBe(7000);
  });

  it('lets retry-after-ms and Retry-After win when within 0–60 s', () => {
    expect(retryDelayMs(1, headers({ 'retry-after-ms': '1234' }))).toBe(1234);
    expect(retryDelayMs(1, headers({ 'retry-after': '3' }))).toBe(3000);
    expect(retryDelayMs(1, headers({ 'retry-after': '0' }))).toBe(0);
    const now = Date.parse('2026-01-01T00:00:00Z');
    const date = headers({ 'retry-after': 'Thu, 01 Jan 2026 00:00:05 GMT' });
    expect(serverDelayMs(date, () => now)).toBe(5000);
  });

  it('ignores server delays outside 0–60 s or unparsable', () => {
    expect(retryDelayMs(1, headers({ 'retry-after': '3600' }), undefined, () => 0)).toBe(500);
    expect(retryDelayMs(2, headers({ 'retry-after': 'soon' }), undefined, () => 0)).toBe(1000);
    expect(retryDelayMs(1, headers({ 'retry-after-ms': '-5' }), undefined, () => 0)).toBe(500);
  });
});
