// A run started with `conversation_id` reads the earlier run's files (its changes, its HOME). While
// it does, no process of the earlier run may exist or start: the store holds the earlier run
// (holdRun), a follow-up of it stays queued until the hold is released, and a second reader waits
// for the first. The hold is taken here through a second handle on the same store, as another
// node's reader would; the executor's pool, routes and worker are the real ones.

import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { AgentRunClient } from '../../src/client/index.js';
import type { Stores } from '../../src/executor/store/types.js';
import { type TestExecutor, startTestExecutor } from '../support/executor.js';
import { waitForState } from '../support/wait.js';

let ex: TestExecutor;
let client: AgentRunClient;
let key: string;
let store: Stores;

beforeAll(async () => {
  ex = await startTestExecutor({ workers: 2 });
  key = (await ex.key('team-a', 'personal', 'alice')).raw;
  client = new AgentRunClient({ baseUrl: ex.url, apiKey: key });
  store = await ex.openStore();
});
afterAll(async () => {
  client.close();
  await store?.close();
  await ex.stop(1000);
});

const ended = (id: string) => waitForState({ on: ex, key, id });
const start = async (prompt: string, extra: Record<string, unknown> = {}) =>
  (await client.runs.create({ prompt, config: { environment_id: 'local' }, ...extra })).run_id;

describe('an earlier run held while its files are read', () => {
  it('keeps a follow-up of it queued until the hold is released; other runs go on', async () => {
    const earlier = await start('@sim write held.txt one\n@sim result first');
    expect((await ended(earlier)).state).toBe('SUCCEEDED');
    expect(await store.holds.holdRun('team-a', earlier, 'another-reader', 60_000)).toBe(true);
    await client.runs.followUp(earlier, { message: '@sim result second' });
    // Runs created after the follow-up are claimed and end; the held run's turn does not start.
    for (const prompt of ['@sim result other one', '@sim result other two'])
      expect((await ended(await start(prompt))).state).toBe('SUCCEEDED');
    expect((await client.runs.get(earlier)).state).toBe('QUEUED');
    expect(await store.holds.heldRuns()).toContain(earlier);
    expect(await store.holds.releaseRun(earlier, 'another-reader')).toBe(true);
    expect(await ended(earlier)).toMatchObject({ state: 'SUCCEEDED' });
    const events = (await client.runs.wholeTranscript(earlier))?.events ?? [];
    expect(events.filter(e => e.kind === 'result').map(e => e.text)).toEqual(['first', 'second']);
  });

  it('makes a second run continuing the same conversation wait for the first reader, then start from it', async () => {
    const earlier = await start('@sim write from-earlier.txt one\n@sim result first');
    expect((await ended(earlier)).state).toBe('SUCCEEDED');
    expect(await store.holds.holdRun('team-a', earlier, 'first-reader', 60_000)).toBe(true);
    const later = await start('@sim run grep -q one from-earlier.txt\n@sim result continued', {
      conversation_id: earlier
    });
    await waitForState({ on: ex, key, id: later }, ['INPROGRESS']);
    // The other worker is free: a run created now ends while the later one still waits for the hold.
    expect((await ended(await start('@sim result meanwhile'))).state).toBe('SUCCEEDED');
    expect((await client.runs.get(later)).state).toBe('INPROGRESS');
    await store.holds.releaseRun(earlier, 'first-reader');
    expect(await ended(later)).toMatchObject({ state: 'SUCCEEDED' });
    // Its own hold ended with its start.
    expect(await store.holds.heldRuns()).not.toContain(earlier);
  });
});
