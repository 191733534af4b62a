// The server's read cache on its own: what it keeps, and when it lets go. The store's stamp is a
// plain counter here; read-cache.test.ts in __tests__/executor drives it through a real executor.
import { describe, expect, it } from '@jest/globals';
import { ReadCache } from '../../src/executor/server/read-cache.js';

function cacheWithStamp(initial: string | undefined) {
  const state = { stamp: initial, loads: 0 };
  const cache = new ReadCache({ changeStamp: () => state.stamp });
  const read = (key: string, body = 'x') =>
    cache.body(key, async () => {
      state.loads++;
      return { body };
    });
  return { cache, state, read };
}

describe('the read cache', () => {
  it('answers from memory while the stamp stays, and reads again once it moved', async () => {
    const { cache, state, read } = cacheWithStamp('1:1');
    cache.refresh();
    await read('a');
    await read('a');
    expect(state.loads).toBe(1);
    state.stamp = '2:1';
    cache.refresh();
    await read('a');
    expect(state.loads).toBe(2);
  });

  it('keeps nothing for a store without a stamp', async () => {
    const { cache, state, read } = cacheWithStamp(undefined);
    cache.refresh();
    await read('a');
    await read('a');
    expect(state.loads).toBe(2);
  });

  it('does not keep an answer whose read began under an older stamp', async () => {
    const { cache, state } = cacheWithStamp('1:1');
    cache.refresh();
    await cache.body('a', async () => {
      state.stamp = '1:2';
      cache.refresh();
      return { body: 'read across a write' };
    });
    let loads = 0;
    await cache.body('a', async () => ({ body: String(++loads) }));
    expect(loads).toBe(1);
  });

  it('never keeps an answer over 1 MiB', async () => {
    const { cache, state, read } = cacheWithStamp('1:1');
    cache.refresh();
    const big = 'x'.repeat(1024 * 1024 + 1);
    await read('big', big);
    await read('big', big);
    expect(state.loads).toBe(2);
  });

  it('remembers a principal only once the store accepted the key, and forgets it on a write', async () => {
    const { cache, state } = cacheWithStamp('1:1');
    const principal = { keyId: 'k', team: 't', kind: 'personal' as const, name: 'n' };
    let lookups = 0;
    const accept = async () => (lookups++, principal);
    const refuse = async () => {
      lookups++;
      throw new Error('unknown key');
    };
    cache.refresh();
    await expect(cache.principal('Bearer bad', refuse)).rejects.toThrow('unknown key');
    await expect(cache.principal('Bearer bad', refuse)).rejects.toThrow('unknown key');
    expect(lookups).toBe(2);
    expect(await cache.principal('Bearer good', accept)).toBe(principal);
    expect(await cache.principal('Bearer good', accept)).toBe(principal);
    expect(lookups).toBe(3);
    state.stamp = '1:2';
    cache.refresh();
    await expect(cache.principal('Bearer good', refuse)).rejects.toThrow('unknown key');
  });
});
