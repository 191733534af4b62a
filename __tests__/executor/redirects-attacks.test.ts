// The two public redirects played by an attacker, against the executor on a real port with a real
// SQLite file: a stranger probing run ids (the answer must not depend on whether the run exists),
// odd ids (case, percent-encoding, control characters, unicode, ids longer than a path parameter
// may be), every malformed or foreign credential in Authorization, other methods, and a `worker`
// node beside an api node (it serves the public endpoints, so it must answer as the API node does).
// No answer is a 5xx, and none hands a session id to anyone but a credential of the run's team.
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { randomUUID } from 'node:crypto';
import { rmSync } from 'node:fs';
import { request as httpRequest } from 'node:http';
import { join } from 'node:path';
import { parseConfig } from '../../src/executor/config/config.js';
import { type Executor, startExecutor } from '../../src/executor/node/serve.js';
import { KEY_PREFIX, RUN_TOKEN_PREFIX, issueKey } from '../../src/executor/store/keys.js';
import { type TestExecutor, startTestExecutor, tempDir } from '../support/executor.js';
import { type TestIssuer, startIssuer } from '../support/oidc-issuer.js';
import { createRun } from '../sandbox/support.js';
import { waitForState } from '../support/wait.js';

const AUDIENCE = 'https://agents.example.com';
const FORM = 'expected an id of 32 lower-case hex digits in the form 3f2b8c1e-9d4a-4e7b-a1c2-5d6e7f809a1b';
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

let issuer: TestIssuer;
let ex: TestExecutor;
let keyA: string;
let keyB: string;
let live: string;
let done: string;
/** The live run's session id, as a key of its team is answered it. */
let session: string;

interface Answer {
  status: number;
  body: string;
  headers: Record<string, string | string[] | undefined>;
}

/** A request with the path sent as written (fetch would normalize `..` and encodings). */
function raw(method: string, path: string, headers: Record<string, string> = {}, on = ex.url) {
  return new Promise<Answer>((resolve, reject) => {
    const url = new URL(on);
    const sent = httpRequest({ host: url.hostname, port: url.port, method, path, headers }, response => {
      let body = '';
      response.setEncoding('utf8');
      response.on('data', chunk => (body += chunk));
      response.on('end', () => resolve({ status: response.statusCode!, body, headers: response.headers }));
    });
    sent.on('error', reject);
    sent.end();
  });
}

const bearer = (credential: string) => ({ authorization: `Bearer ${credential}` });
const conversation = (id: string) => `/api/v1/agent/conversations/${id}/redirect`;
const sessionPath = (id: string) => `/api/v1/agent/sessions/${id}/redirect`;
const json = (answer: Answer) => JSON.parse(answer.body) as Record<string, unknown>;

/** A run of team-a in `local`, once it reached `state`. */
async function start(prompt: string, state: string): Promise<string> {
  const id = await createRun(ex, keyA, 'local', prompt);
  await waitForState({ on: ex, key: keyA, id }, [state]);
  return id;
}

beforeAll(async () => {
  issuer = await startIssuer(AUDIENCE);
  // A workload's OIDC token signs in to team-a, the team of the runs below.
  ex = await startTestExecutor({
    auth: {
      oidc: [
        { issuer: issuer.url, audience: AUDIENCE, team: 'team-a', claims: { repository: 'acme/widgets' } }
      ]
    }
  });
  keyA = (await ex.key('team-a')).raw;
  keyB = (await ex.key('team-b')).raw;
  [live, done] = await Promise.all([
    start('@sim say started\n@sim run tail -f /dev/null', 'INPROGRESS'),
    start('@sim result finished', 'SUCCEEDED')
  ]);
  session = json(await raw('GET', conversation(live), bearer(keyA))).session_id as string;
  expect(session).toMatch(UUID);
});
afterAll(async () => {
  await ex.stop(500);
  await issuer.close();
});

describe('an anonymous caller probing run ids', () => {
  it('gets byte-identical answers for a live run, an ended run and no run at all', async () => {
    const answers = await Promise.all(
      [live, done, randomUUID(), '00000000-0000-0000-0000-000000000000'].map(id =>
        raw('GET', conversation(id))
      )
    );
    for (const answer of answers) {
      expect({ status: answer.status, body: answer.body }).toEqual({ status: 200, body: '{}' });
      expect(answer.headers['content-length']).toBe('2');
    }
  });

  it('cannot make a session id from a run id, nor find one among random ids', async () => {
    for (const id of [live, done, randomUUID(), 'ffffffff-ffff-ffff-ffff-ffffffffffff'])
      expect(await raw('GET', sessionPath(id))).toMatchObject({ status: 200, body: '{}' });
  });

  it('gets the same {} by HEAD as by GET, and no route for other methods', async () => {
    const head = await raw('HEAD', conversation(live));
    expect({ status: head.status, body: head.body }).toEqual({ status: 200, body: '' });
    for (const method of ['POST', 'PUT', 'DELETE', 'PATCH']) {
      const answer = await raw(method, conversation(live), bearer(keyA));
      expect(answer.status).toBe(404);
      expect(json(answer).error_code).toBe('route_not_found');
      expect(answer.body).not.toContain(session);
    }
  });
});

describe('odd ids', () => {
  it('refuses upper case, empty, control characters and unicode with a 400 naming the value and the form', async () => {
    const cases: [string, string][] = [
      [live.toUpperCase(), JSON.stringify(live.toUpperCase())],
      ['', '""'],
      ['%00', '"\\u0000"'],
      ['%F0%9F%98%80', '"😀"'],
      [`${live}%0A`, JSON.stringify(`${live}\n`)],
      [` ${live}`.replace(' ', '%20'), JSON.stringify(` ${live}`)],
      ['{run_id}', '"{run_id}"']
    ];
    for (const [id, shown] of cases)
      for (const [path, name] of [
        [conversation(id), 'conversation_id'],
        [sessionPath(id), 'session_id']
      ] as const) {
        const answer = await raw('GET', path, bearer(keyA));
        expect({ status: answer.status, detail: json(answer).detail }).toEqual({
          status: 400,
          detail: `${name} ${shown}: ${FORM}`
        });
      }
  });

  it('reads a percent-encoded id as the id itself', async () => {
    const encoded = [...live].map(c => `%${c.charCodeAt(0).toString(16)}`).join('');
    expect(json(await raw('GET', conversation(encoded), bearer(keyA)))).toEqual({ session_id: session });
  });

  it('answers a 400, never a 5xx or a session id, for broken encodings and ids longer than a path parameter', async () => {
    for (const id of ['%zz', '%ED%A0%80', '%', 'a'.repeat(101), 'a'.repeat(8000), `${live}${'0'.repeat(70)}`])
      for (const path of [conversation(id), sessionPath(id)]) {
        const answer = await raw('GET', path, bearer(keyA));
        expect(answer.status).toBe(400);
        expect(json(answer).error_code).toBe('invalid_request');
        expect(answer.headers['x-request-id']).toBeDefined();
      }
  });

  it('does not route around the id through dot segments or a trailing slash', async () => {
    for (const path of [`/api/v1/agent/conversations/x/../${live}/redirect`, `${conversation(live)}/`]) {
      const answer = await raw('GET', path, bearer(keyA));
      expect(answer.status).toBe(404);
      expect(answer.body).not.toContain(session);
    }
  });
});

describe('credentials in Authorization', () => {
  it('refuses every malformed or unknown credential with 401 and a Bearer challenge, never as anonymous', async () => {
    const headers = [
      '',
      'Bearer',
      'Bearer ',
      'Basic Zm9vOmJhcg==',
      `Bearer ${keyA} ${keyA}`,
      `Token ${keyA}`,
      `Bearer ${keyA.slice(0, -1)}x`,
      `Bearer ${RUN_TOKEN_PREFIX}${keyA.slice(KEY_PREFIX.length)}`,
      'Bearer eyJhbGciOiJub25lIn0.eyJzdWIiOiJ4In0.',
      `Bearer ${'x'.repeat(8000)}`
    ];
    for (const authorization of headers) {
      const answer = await raw('GET', conversation(live), { authorization });
      expect({ authorization, status: answer.status, error_code: json(answer).error_code }).toEqual({
        authorization,
        status: 401,
        error_code: 'unauthenticated'
      });
      expect(answer.headers['www-authenticate']).toBe('Bearer realm="agent-executor"');
      expect(answer.body).not.toContain(keyA.slice(KEY_PREFIX.length, KEY_PREFIX.length + 10));
    }
  });

  it("takes the scheme in any case, and gives another team's valid key {} as for no run", async () => {
    expect(json(await raw('GET', conversation(live), { authorization: `bearer ${keyA}` }))).toEqual({
      session_id: session
    });
    expect(json(await raw('GET', conversation(live), { authorization: `BEARER  ${keyA}  ` }))).toEqual({
      session_id: session
    });
    for (const id of [live, done, randomUUID()])
      expect(await raw('GET', conversation(id), bearer(keyB))).toMatchObject({ status: 200, body: '{}' });
  });

  it('does not let a session id be had by a key of the team once the key is revoked', async () => {
    const { raw: doomed, id } = await ex.key('team-a', 'personal', 'doomed');
    expect(json(await raw('GET', conversation(live), bearer(doomed)))).toEqual({ session_id: session });
    const store = await ex.openStore();
    await store.accounts.revokeKey(id, new Date().toISOString());
    await store.close();
    const answer = await raw('GET', conversation(live), bearer(doomed));
    expect(answer.status).toBe(401);
    expect(answer.body).not.toContain(session);
  });

  // Every keyed endpoint takes `Bearer <API key or OIDC token>`: a workload's valid OIDC token of
  // the run's team, which reads the run, is answered here as the team's key is.
  it("answers a workload's OIDC token of the run's team as it answers the team's key", async () => {
    const token = await issuer.token();
    const read = await raw('GET', `/api/v1/agent/runs/${live}`, bearer(token));
    expect(read.status).toBe(200);
    const answer = await raw('GET', conversation(live), bearer(token));
    expect({ status: answer.status, body: json(answer) }).toEqual({
      status: 200,
      body: { session_id: session }
    });
  });
});

// The supported split: one `api` node beside one `worker` node on one SQLite file. The worker
// serves the endpoints that need no key, these two among them: it must answer as the API does.
describe('an api node and a worker node on one store', () => {
  const dir = tempDir();
  const nodes: Executor[] = [];
  let key: string;
  let other: string;
  let run: string;
  let id: string;
  beforeAll(async () => {
    for (const role of ['api', 'worker'] as const) {
      const config = parseConfig({ log_level: 'silent', data_dir: join(dir, 'data') }, dir);
      config.port = 0;
      nodes.push(await startExecutor(config, { role, checkEnvironments: false }));
    }
    const issue = (team: string) =>
      issueKey(nodes[0]!.context.stores.accounts, { team, kind: 'personal', name: team });
    [key, other] = (await Promise.all([issue('team-a'), issue('team-b')])).map(issued => issued.raw) as [
      string,
      string
    ];
    const created = await fetch(`${nodes[0]!.url}/api/v1/agent/runs`, {
      method: 'POST',
      headers: { ...bearer(key), 'content-type': 'application/json' },
      body: JSON.stringify({
        prompt: '@sim say started\n@sim run tail -f /dev/null',
        config: { environment_id: 'local' }
      })
    });
    run = ((await created.json()) as { run_id: string }).run_id;
    await waitForState({ on: nodes[0]!, key, id: run }, ['INPROGRESS']);
    id = json(await raw('GET', conversation(run), bearer(key), nodes[0]!.url)).session_id as string;
    expect(id).toMatch(UUID);
  });
  afterAll(async () => {
    for (const node of nodes.reverse()) await node.stop(500);
    rmSync(dir, { recursive: true, force: true });
  });

  it('answers the same on both: the session id to the team, {} to strangers, the conversation once ended', async () => {
    const on = nodes[1]!.url;
    expect(json(await raw('GET', conversation(run), bearer(key), on))).toEqual({ session_id: id });
    expect(await raw('GET', conversation(run), {}, on)).toMatchObject({ status: 200, body: '{}' });
    expect(await raw('GET', conversation(run), bearer(other), on)).toMatchObject({ status: 200, body: '{}' });
    expect((await raw('GET', conversation(run), bearer('ak_wrong'), on)).status).toBe(401);
    expect(await raw('GET', sessionPath(id), {}, on)).toMatchObject({ status: 200, body: '{}' });
    // The keyed endpoints stay the API node's.
    expect((await raw('GET', `/api/v1/agent/runs/${run}`, bearer(key), on)).status).toBe(404);

    const cancelled = await fetch(`${nodes[0]!.url}/api/v1/agent/runs/${run}/cancel`, {
      method: 'POST',
      headers: bearer(key)
    });
    expect(cancelled.status).toBeLessThan(300);
    await waitForState({ on: nodes[0]!, key, id: run }, ['CANCELLED']);
    for (const node of nodes)
      expect(json(await raw('GET', sessionPath(id), {}, node.url))).toEqual({ conversation_id: run });
    expect(await raw('GET', conversation(run), bearer(key), on)).toMatchObject({ status: 200, body: '{}' });
  });
});
