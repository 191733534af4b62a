// The shared rules about values: a valid Idempotency-Key, and how messages show a bad value.
import { describe, expect, it } from '@jest/globals';
import { describeValue, isValidIdempotencyKey, showValue } from '../../src/api/index.js';
import { AgentRunClient } from '../../src/client/index.js';

describe('values', () => {
  it('accepts 1–255 printable ASCII characters without spaces as an Idempotency-Key', () => {
    expect(['k', 'gha-0123', '~!'.repeat(127)].map(isValidIdempotencyKey)).toEqual([true, true, true]);
    expect(['', 'a b', 'é', 'x'.repeat(256), 7].map(isValidIdempotencyKey)).toEqual([
      false,
      false,
      false,
      false,
      false
    ]);
  });

  it('describes a value by kind, strings quoted and cut', () => {
    expect([undefined, null, [], {}, 5, true].map(value => describeValue(value))).toEqual([
      'nothing',
      'null',
      'an array',
      'an object',
      'number 5',
      'boolean true'
    ]);
    expect(describeValue('abc')).toBe('the string "abc"');
    expect(describeValue('x'.repeat(100))).toBe(`the string "${'x'.repeat(60)}…"`);
  });

  it('shows a value inline as bounded JSON', () => {
    expect(showValue('forever')).toBe('"forever"');
    expect(showValue({ a: 1 })).toBe('{"a":1}');
    expect(showValue(0)).toBe('0');
    expect(showValue(undefined)).toBe('nothing');
    expect(showValue('s'.repeat(500), 10)).toBe(`"${'s'.repeat(10)}…"`);
  });

  it('makes the client refuse an invalid key before sending anything', async () => {
    const client = new AgentRunClient({ baseUrl: 'http://127.0.0.1:9', apiKey: 'k' });
    await expect(
      client.runs.create({ prompt: 'p', config: { environment_id: 'e' } }, { idempotencyKey: 'has space' })
    ).rejects.toThrow('idempotencyKey "has space": expected 1–255 printable ASCII characters without spaces');
    client.close();
  });
});
