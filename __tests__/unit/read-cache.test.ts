// The server's read cache on its own: what it keeps, and when it lets go. The store's stamp is a
// plain counter here; read-cache.test.ts in __tests__/executor drives it through a real executor.
import { describe, expect, it } from '@jest/globals';
import { ReadCache } from '../../src/executor/server/read-cache.js';

/** A continuation's failure handler that no test here expects to be called. */
const fail = (error: unknown) => {
  throw error;
};

function cacheWithStamp(initial: string | undefined) {
  const state = { stamp: initial, loads: 0, looks: 0 };
  const cache = new ReadCache({ changeStamp: () => (state.looks++, state.stamp) });
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

  it('looks at the stamp once for the requests of one turn, after the last of them arrived', async () => {
    const { cache, state } = cacheWithStamp('1:1');
    const principal = { keyId: 'k', team: 't', kind: 'personal' as const, name: 'n' };
    await new Promise<void>(resolve =>
      cache.afterRefresh(
        () => void cache.principal('Bearer k', async () => principal).then(() => resolve()),
        fail
      )
    );
    const seen: (string | undefined)[] = [];
    const looksBefore = state.looks;
    const turn = new Promise<void>(resolve => {
      for (let i = 0; i < 5; i++)
        cache.afterRefresh(() => seen.push(cache.knownPrincipal('Bearer k')?.keyId), fail);
      // A write lands after the turn's requests arrived and before their answers: none of them may
      // answer from what was known before it.
      state.stamp = '1:2';
      cache.afterRefresh(resolve, fail);
    });
    expect(seen).toEqual([]);
    await turn;
    expect(seen).toEqual([undefined, undefined, undefined, undefined, undefined]);
    expect(state.looks - looksBefore).toBe(1);
  });

  it('answers at once on a store without a stamp', () => {
    const { cache } = cacheWithStamp(undefined);
    let answered = false;
    cache.afterRefresh(() => (answered = true), fail);
    expect(answered).toBe(true);
  });

  it('answers the other requests of a turn when one of them fails, and that one through its own failure', async () => {
    const reported: unknown[] = [];
    const cache = new ReadCache({ changeStamp: () => '1:1' }, error => reported.push(error));
    const answered: number[] = [];
    const refused: unknown[] = [];
    await new Promise<void>(resolve => {
      cache.afterRefresh(() => answered.push(1), fail);
      cache.afterRefresh(
        () => {
          throw new Error('a fault');
        },
        error => refused.push(error)
      );
      cache.afterRefresh(() => answered.push(3), fail);
      cache.afterRefresh(resolve, fail);
    });
    expect(answered).toEqual([1, 3]);
    expect(refused).toEqual([new Error('a fault')]);
    expect(reported).toEqual([new Error('a fault')]);
  });

  it('answers a turn uncached when its stamp cannot be read', async () => {
    const state = { broken: false };
    const reported: unknown[] = [];
    const cache = new ReadCache(
      {
        changeStamp: () => {
          if (state.broken) throw new Error('EIO reading the -shm header');
          return '1:1';
        }
      },
      error => reported.push(error)
    );
    const principal = { keyId: 'k', team: 't', kind: 'personal' as const, name: 'n' };
    await new Promise<void>(resolve =>
      cache.afterRefresh(
        () => void cache.principal('Bearer k', async () => principal).then(() => resolve()),
        fail
      )
    );
    state.broken = true;
    const seen = await new Promise(resolve =>
      cache.afterRefresh(() => resolve(cache.knownPrincipal('Bearer k')), fail)
    );
    expect(seen).toBeUndefined();
    expect(reported).toEqual([new Error('EIO reading the -shm header')]);
  });
});
