// The service's two public redirects, against the executor on a real port with a real SQLite
// file, played by a stranger as well as by the run's team: a conversation (run id) gives its live
// session's id only to a key of the run's team, and that session id gives the conversation back
// once the run ended. Without a key, a run id alone learns nothing: every id answers the same {}.
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { randomUUID } from 'node:crypto';
import { AgentRunClient } from '../../src/client/index.js';
import { type TestExecutor, startTestExecutor } from '../support/executor.js';
import { createRun } from '../sandbox/support.js';
import { waitForState } from '../support/wait.js';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

let ex: TestExecutor;
let keyA: string;
let keyB: string;
let live: string;
let done: string;

const get = async (path: string, key?: string) => {
  const response = await ex.request(`/api/v1/agent/${path}`, key ? { key } : {});
  return { status: response.status, body: (await response.json()) as Record<string, unknown> };
};

/** A run of team-a in `local`, once it reached `state`. */
async function start(prompt: string, state: string): Promise<string> {
  const id = await createRun(ex, keyA, 'local', prompt);
  await waitForState({ on: ex, key: keyA, id }, [state]);
  return id;
}

beforeAll(async () => {
  ex = await startTestExecutor();
  keyA = (await ex.key('team-a')).raw;
  keyB = (await ex.key('team-b')).raw;
  // Live until the test cancels it (the cancel is what ends it, not the time).
  [live, done] = await Promise.all([
    start('@sim say started\n@sim run tail -f /dev/null', 'INPROGRESS'),
    start('@sim result finished', 'SUCCEEDED')
  ]);
});
afterAll(() => ex.stop(500));

describe('GET /agent/conversations/{id}/redirect', () => {
  it("answers a live run's session id to a key of its team, and {} to everyone else alike", async () => {
    const own = await get(`conversations/${live}/redirect`, keyA);
    expect(own.status).toBe(200);
    expect(own.body.session_id).toMatch(UUID);
    expect(own.body.session_id).not.toBe(live);
    // The same id every time: it names the run.
    expect((await get(`conversations/${live}/redirect`, keyA)).body).toEqual(own.body);
    // A stranger, another team, an ended run and a run that does not exist: the same empty answer.
    for (const [id, key] of [
      [live, undefined],
      [live, keyB],
      [done, keyA],
      [randomUUID(), keyA],
      [randomUUID(), undefined]
    ] as const)
      expect(await get(`conversations/${id}/redirect`, key)).toEqual({ status: 200, body: {} });
  });

  it('refuses a wrong key with 401 rather than answering as anonymous', async () => {
    const answer = await get(`conversations/${live}/redirect`, 'ak_wrong');
    expect(answer.status).toBe(401);
    expect(answer.body).toMatchObject({ error_code: 'unauthenticated' });
  });

  it('refuses an id that is not of UUID form, naming it and the form', async () => {
    const answer = await get('conversations/not-a-run/redirect');
    expect(answer.status).toBe(400);
    expect(answer.body.detail).toBe(
      'conversation_id "not-a-run": expected an id of 32 lower-case hex digits in the form 3f2b8c1e-9d4a-4e7b-a1c2-5d6e7f809a1b'
    );
  });
});

describe('GET /agent/sessions/{id}/redirect', () => {
  it('gives the conversation once the run ended, and nothing while it runs', async () => {
    const client = new AgentRunClient({ baseUrl: ex.url, apiKey: keyA });
    const { session_id } = await client.redirects.conversation(live);
    expect(await client.redirects.session(session_id!)).toEqual({});
    // Anonymous, as a viewer of a shared link would ask.
    expect(await get(`sessions/${session_id}/redirect`)).toEqual({ status: 200, body: {} });
    await client.runs.cancel(live);
    await waitForState({ on: ex, key: keyA, id: live }, ['CANCELLED']);
    expect(await get(`sessions/${session_id}/redirect`)).toEqual({
      status: 200,
      body: { conversation_id: live }
    });
    expect(await client.redirects.session(session_id!)).toEqual({ conversation_id: live });
    // Ended, the run has no live session to go to.
    expect(await client.redirects.conversation(live)).toEqual({});
    client.close();
  });

  it('cannot be forged from a run id: the run id itself and random ids go nowhere', async () => {
    for (const id of [done, live, randomUUID()])
      expect(await get(`sessions/${id}/redirect`)).toEqual({ status: 200, body: {} });
  });

  it('refuses a malformed session id, naming it', async () => {
    const answer = await get(`sessions/${'A'.repeat(36)}/redirect`);
    expect(answer.status).toBe(400);
    expect(answer.body.detail).toContain(
      `session_id "${'A'.repeat(36)}": expected an id of 32 lower-case hex digits`
    );
  });
});
