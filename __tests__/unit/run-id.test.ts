// New run ids are UUIDs of version 7 (src/executor/runs/run-id.ts): ordered by creation time, so
// the store's indexes on run ids grow at their end.
import { describe, expect, it } from '@jest/globals';
import { newRunId, shortRunId } from '../../src/executor/runs/run-id.js';

const V7 = /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

describe('a new run id', () => {
  it('is a version-7 UUID carrying the time it was made', () => {
    const at = Date.parse('2026-11-27T17:00:00.123Z');
    const id = newRunId(at);
    expect(id).toMatch(V7);
    expect(parseInt(id.slice(0, 8) + id.slice(9, 13), 16)).toBe(at);
  });

  it('sorts after the ids made before it, and differs from one made in the same millisecond', () => {
    const ids = Array.from({ length: 1000 }, (_, i) => newRunId(1_700_000_000_000 + i));
    expect([...ids].sort()).toEqual(ids);
    const same = new Set(Array.from({ length: 1000 }, () => newRunId(1_700_000_000_000)));
    expect(same.size).toBe(1000);
  });

  it('is told apart in short by its random digits, while an older random id keeps its first eight', () => {
    const a = newRunId(1_700_000_000_000);
    const b = newRunId(1_700_000_000_001);
    expect(shortRunId(a)).toBe(a.slice(-8));
    expect(shortRunId(a)).not.toBe(shortRunId(b));
    expect(shortRunId('8cbae86b-011d-4671-8f7d-c52276637530')).toBe('8cbae86b');
  });
});
