// Orchestrate mode on a real executor (a real port, a real SQLite file, real bubblewrap sandboxes
// and the run's real proxy): an orchestrate turn's sandbox gets AGENT_RUN_BASE_URL and a run-scoped
// AGENT_RUN_API_KEY, reachable only through the run's proxy, valid only while the run lasts and
// only for runs below it. The agent's requests are made from inside the sandbox, by the simulated
// agent's `@sim child`/`@sim gather` or by a small HTTP client a `@sim run` starts there, the way a
// hostile agent would try them.

import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { randomBytes } from 'node:crypto';
import { chmodSync, existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { parseConfig } from '../../src/executor/config/config.js';
import { RUN_TOKEN_PREFIX, generateKey, hashKey } from '../../src/executor/store/keys.js';
import { type TestExecutor, startTestExecutor, tempDir } from '../support/executor.js';
import { eventually } from '../support/eventually.js';
import { waitForState } from '../support/wait.js';
import { requireBubblewrap, transcript } from '../sandbox/support.js';

let ex: TestExecutor;
let key: string;
let keyB: string;
const shared = tempDir('orchestrate-shared-');
chmodSync(shared, 0o777);
const source = tempDir('orchestrate-source-');
/** The bundled `agent-run` CLI, run inside the sandbox with the executor's own node. */
const CLI = resolve('dist/cli/index.js');
const TOKEN_SHAPE = new RegExp(`${RUN_TOKEN_PREFIX}[0-9A-Za-z]{36}`);

/**
 * An HTTP client for inside the sandbox: METHOD PATH [BODY] [TOKEN FILE or -] [IDEMPOTENCY KEY], through the run's proxy
 * to AGENT_RUN_BASE_URL with the turn's token (or the one in the file); prints <<STATUS BODY>>.
 */
const CALL = `
const http = require('node:http');
const fs = require('node:fs');
const [method, path, body, tokenFile, idempotencyKey] = process.argv.slice(2);
const token = tokenFile && tokenFile !== '-' ? fs.readFileSync(tokenFile, 'utf8') : process.env.AGENT_RUN_API_KEY;
const proxy = new URL(process.env.HTTP_PROXY);
const req = http.request({ host: proxy.hostname, port: proxy.port, method, path: process.env.AGENT_RUN_BASE_URL + path,
  headers: { authorization: 'Bearer ' + token, 'content-type': 'application/json',
    ...(idempotencyKey ? { 'idempotency-key': idempotencyKey } : {}) } }, res => {
  let text = '';
  res.on('data', chunk => (text += chunk));
  res.on('end', () => console.log('<<' + res.statusCode + ' ' + text + '>>'));
});
req.on('error', error => console.log('<<error ' + error.message + '>>'));
req.end(body || undefined);
`;

beforeAll(async () => {
  requireBubblewrap();
  writeFileSync(join(source, 'README.md'), 'hello\n');
  writeFileSync(join(shared, 'call.cjs'), CALL, { mode: 0o644 });
  const sandbox = { read: [shared, dirname(CLI)], write: [shared] };
  ex = await startTestExecutor({
    // Room for the sleeping runs the tests hold beside the ones they watch.
    workers: 8,
    environments: [
      { id: 'orch', source, sandbox, orchestrate_environments: ['helper'] },
      { id: 'helper', source },
      { id: 'foreign', source },
      { id: 'hostnet', source, sandbox: { network: 'host' } },
      { id: 'bare', source, sandbox: 'off' }
    ]
  });
  key = (await ex.key('team-a', 'personal', 'alice')).raw;
  keyB = (await ex.key('team-b', 'personal', 'bob')).raw;
}, 120_000);

afterAll(async () => {
  await ex?.stop(1000);
  rmSync(shared, { recursive: true, force: true });
  rmSync(source, { recursive: true, force: true });
});

async function create(
  prompt: string,
  extra: Record<string, unknown> = {},
  k = key,
  environment = 'orch'
): Promise<string> {
  const response = await ex.request('/api/v1/agent/runs', {
    method: 'POST',
    key: k,
    body: JSON.stringify({ prompt, config: { environment_id: environment }, ...extra })
  });
  expect(response.status).toBe(200);
  return ((await response.json()) as { run_id: string }).run_id;
}

const ended = (id: string, k = key) =>
  waitForState({ on: ex, key: k, id }, undefined, { timeoutMs: 180_000 });

async function answerOf(id: string): Promise<string> {
  const events = await transcript(ex, key, id);
  return String(events.findLast(event => event.kind === 'result')?.text ?? '');
}

/** The <<STATUS BODY>> lines the run's `@sim run` commands printed, in order. */
async function answers(id: string): Promise<{ status: number; body: string }[]> {
  const events = await transcript(ex, key, id);
  return events
    .filter(event => event.kind === 'command')
    .map(event => {
      const match = /<<(\d+) ([\s\S]*)>>/.exec(String(event.output));
      return { status: Number(match?.[1] ?? 0), body: match?.[2] ?? String(event.output) };
    });
}

/** A `@sim run` line that makes one request from inside the sandbox. */
function call(
  method: string,
  path: string,
  body?: unknown,
  tokenFile?: string,
  idempotencyKey?: string
): string {
  const json = body === undefined ? "''" : `'${JSON.stringify(body)}'`;
  const more = idempotencyKey ? ` ${tokenFile ?? '-'} ${idempotencyKey}` : tokenFile ? ` ${tokenFile}` : '';
  return `@sim run /run/agent-proxy-node ${shared}/call.cjs ${method} ${path} ${json}${more}`;
}

async function childrenOf(id: string, k = key): Promise<{ run_id: string; parent_run_id?: string }[]> {
  const response = await ex.request(`/api/v1/agent/runs?ancestor_run_id=${id}`, { key: k });
  expect(response.status).toBe(200);
  return ((await response.json()) as { runs: { run_id: string; parent_run_id?: string }[] }).runs;
}

describe('an orchestrate run', () => {
  it('starts two children from its sandbox and gathers their answers into its own', async () => {
    const id = await create(
      ['@sim child @sim result alpha', '@sim child @sim result beta', '@sim gather'].join('\n'),
      { mode: 'orchestrate' }
    );
    const run = await ended(id);
    expect(run.state).toBe('SUCCEEDED');
    const answer = await answerOf(id);
    const children = await childrenOf(id);
    expect(children).toHaveLength(2);
    for (const child of children) {
      expect(child.parent_run_id).toBe(id);
      const record = await ended(child.run_id);
      expect(record).toMatchObject({ state: 'SUCCEEDED', environment_id: 'orch' });
    }
    expect(answer).toMatch(/^Gathered 2 child runs:/);
    expect(answer).toMatch(/SUCCEEDED: alpha/);
    expect(answer).toMatch(/SUCCEEDED: beta/);
  }, 240_000);

  it('lets `agent-run` work inside the sandbox with AGENT_RUN_BASE_URL and AGENT_RUN_API_KEY', async () => {
    const id = await create(
      `@sim run /run/agent-proxy-node ${CLI} run "@sim result answered through the cli" && /run/agent-proxy-node ${CLI} list`,
      { mode: 'orchestrate' }
    );
    expect((await ended(id)).state).toBe('SUCCEEDED');
    const [child] = await childrenOf(id);
    expect(child).toBeDefined();
    const events = await transcript(ex, key, id);
    const output = String(events.find(event => event.kind === 'command')?.output);
    // The child's answer on stdout, then the list (of the runs below this one) naming it.
    expect(output).toContain('answered through the cli');
    expect(output).toContain(child!.run_id);
    expect((await ended(child!.run_id)).state).toBe('SUCCEEDED');
  }, 240_000);

  it('continues in mode orchestrate on a follow-up', async () => {
    const id = await create('@sim result first');
    expect((await ended(id)).state).toBe('SUCCEEDED');
    // A turn in mode normal has no credential.
    const response = await ex.request(`/api/v1/agent/runs/${id}/followups`, {
      method: 'POST',
      key,
      body: JSON.stringify({ message: '@sim child @sim result later\n@sim gather', mode: 'orchestrate' })
    });
    expect(response.status).toBe(200);
    await eventually(async () => (await answerOf(id)).includes('later') || undefined, {
      what: 'the orchestrate follow-up to gather its child',
      timeoutMs: 180_000
    });
    expect((await ended(id)).state).toBe('SUCCEEDED');
    expect(await childrenOf(id)).toHaveLength(1);
  }, 240_000);

  it('has no credential in a normal turn: @sim child fails saying so', async () => {
    const id = await create('@sim child @sim result x');
    const run = await ended(id);
    expect(run.state).toBe('FAILED');
    expect(run.status_message).toContain('not in mode orchestrate');
  }, 120_000);

  it('starts children that count against the depth: one 3 levels below its root cannot', async () => {
    const root = await create('@sim sleep 600');
    const one = await create('@sim sleep 600', { parent_run_id: root });
    try {
      const two = await create('@sim sleep 600', { parent_run_id: one });
      const three = await create('@sim child @sim result too deep', {
        parent_run_id: two,
        mode: 'orchestrate'
      });
      const run = await ended(three);
      expect(run.state).toBe('FAILED');
      expect(run.status_message).toContain('at most 3 levels below a root');
    } finally {
      await ex.request(`/api/v1/agent/runs/${root}/cancel`, { method: 'POST', key, body: '{}' });
    }
  }, 120_000);

  it('is refused where its credential could not stay inside the sandbox: network host, sandbox off', async () => {
    for (const environment of ['hostnet', 'bare']) {
      const response = await ex.request('/api/v1/agent/runs', {
        method: 'POST',
        key,
        body: JSON.stringify({ prompt: 'x', config: { environment_id: environment }, mode: 'orchestrate' })
      });
      expect(response.status).toBe(422);
      const problem = (await response.json()) as { error_code: string; detail: string };
      expect(problem.error_code).toBe('operation_not_supported');
      expect(problem.detail).toContain(`environment "${environment}"`);
    }
    const id = await create('@sim result x', {}, key, 'bare');
    expect((await ended(id)).state).toBe('SUCCEEDED');
    const followup = await ex.request(`/api/v1/agent/runs/${id}/followups`, {
      method: 'POST',
      key,
      body: JSON.stringify({ message: 'x', mode: 'orchestrate' })
    });
    expect(followup.status).toBe(422);
    expect(((await followup.json()) as { error_code: string }).error_code).toBe('operation_not_supported');
  }, 120_000);
});

describe("an orchestrate run's credential", () => {
  it('is refused from outside the sandbox and after its run ended, and never shows in the transcript', async () => {
    const tokenFile = join(shared, 'token-outside');
    const go = join(shared, 'go-outside');
    const id = await create(
      [
        `@sim run printf %s "$AGENT_RUN_API_KEY" > ${tokenFile}; echo "the key is $AGENT_RUN_API_KEY" | tee leaked.txt`,
        `@sim run while [ ! -e ${go} ]; do sleep 0.1; done`,
        '@sim result done'
      ].join('\n'),
      { mode: 'orchestrate' }
    );
    const token = await eventually(
      () => (existsSync(tokenFile) ? readFileSync(tokenFile, 'utf8') : undefined) || undefined,
      { what: 'the run to write out its token', timeoutMs: 120_000 }
    );
    expect(token).toMatch(TOKEN_SHAPE);
    // The test process presenting the token straight to the executor, while the run is running.
    const direct = (path: string, init: RequestInit = {}) => ex.request(path, { ...init, key: token });
    for (const response of [
      await direct(`/api/v1/agent/runs?ancestor_run_id=${id}`),
      await direct('/api/v1/agent/runs', {
        method: 'POST',
        body: JSON.stringify({ prompt: 'x', config: { environment_id: 'orch' }, parent_run_id: id })
      }),
      // A made-up proxy secret does no better.
      await direct(`/api/v1/agent/runs?ancestor_run_id=${id}`, {
        headers: { 'x-agent-run-via': randomBytes(32).toString('base64url') }
      })
    ]) {
      expect(response.status).toBe(403);
      const problem = (await response.json()) as { error_code: string; detail: string };
      expect(problem.error_code).toBe('forbidden');
      expect(problem.detail).toContain("through the run's proxy");
      expect(problem.detail).not.toContain(token);
    }
    writeFileSync(go, '');
    expect((await ended(id)).state).toBe('SUCCEEDED');
    expect(await childrenOf(id)).toHaveLength(0);

    const after = await direct(`/api/v1/agent/runs?ancestor_run_id=${id}`);
    expect(after.status).toBe(401);
    expect(((await after.json()) as { detail: string }).detail).not.toContain(token);
    // The transcript has the command's output with the token replaced.
    const text = JSON.stringify(await transcript(ex, key, id));
    expect(text).not.toContain(token);
    expect(text).not.toMatch(TOKEN_SHAPE);
    expect(text).toContain('the key is [redacted]');
    // So has the changes.patch artifact of the file the agent wrote it into.
    const record = (await (await ex.request(`/api/v1/agent/runs/${id}`, { key })).json()) as {
      artifacts: { data: { artifact_uid?: string; filename?: string } }[];
    };
    const uid = record.artifacts.find(artifact => artifact.data.filename === 'changes.patch')?.data
      .artifact_uid;
    const details = (await (await ex.request(`/api/v1/agent/artifacts/${uid}`, { key })).json()) as {
      download_url: string;
    };
    const patch = await (await fetch(details.download_url)).text();
    expect(patch).toContain('+the key is [redacted]');
    expect(patch).not.toMatch(TOKEN_SHAPE);

    // Leaked to another orchestrate run, it is refused there too, through that run's own proxy.
    const other = await create(
      `${call('GET', `/api/v1/agent/runs?ancestor_run_id=${id}`, undefined, tokenFile)}`,
      {
        mode: 'orchestrate'
      }
    );
    expect((await ended(other)).state).toBe('SUCCEEDED');
    const [reused] = await answers(other);
    expect(reused!.status).toBe(401);
    expect(reused!.body).toContain('has ended');
  }, 240_000);

  it("is refused once its run ended even while the store still holds it (the run's state is checked on each use)", async () => {
    const id = await create('@sim result x');
    expect((await ended(id)).state).toBe('SUCCEEDED');
    const token = generateKey(RUN_TOKEN_PREFIX);
    const via = randomBytes(32).toString('base64url');
    await ex.context.stores.accounts.createRunToken({
      hash: hashKey(token),
      via_hash: hashKey(via),
      run_id: id,
      team: 'team-a',
      environment_id: 'orch',
      created_at: new Date().toISOString()
    });
    const response = await ex.request(`/api/v1/agent/runs?ancestor_run_id=${id}`, {
      key: token,
      headers: { 'x-agent-run-via': via }
    });
    expect(response.status).toBe(401);
    expect(((await response.json()) as { detail: string }).detail).toContain('its run ended SUCCEEDED');
  });

  it('acts only below its own run and in its environments: the attacks of a hostile agent', async () => {
    const sibling = await create('@sim sleep 600');
    const foreignTeam = await create('@sim sleep 600', {}, keyB, 'helper');
    try {
      const id = await create(
        [
          call('POST', '/api/v1/agent/runs', {
            prompt: 'x',
            config: { environment_id: 'orch' },
            parent_run_id: sibling
          }),
          call('POST', '/api/v1/agent/runs', { prompt: 'x', config: { environment_id: 'foreign' } }),
          call('POST', '/api/v1/agent/runs', {
            prompt: 'x',
            config: { environment_id: 'orch' },
            parent_run_id: foreignTeam
          }),
          call('POST', '/api/v1/agent/runs', {
            prompt: 'x',
            config: { environment_id: 'orch' },
            conversation_id: sibling
          }),
          call('GET', `/api/v1/agent/runs/${sibling}`),
          call('GET', `/api/v1/agent/runs?ancestor_run_id=${sibling}`),
          call('POST', `/api/v1/agent/runs/${sibling}/cancel`, {}),
          call('POST', `/api/v1/agent/runs/${sibling}/followups`, { message: 'hijack' }),
          call('GET', `/api/v1/agent/runs/${sibling}/transcript`),
          call('GET', `/api/v1/agent/runs/${foreignTeam}`),
          call('GET', '/api/v1/agent/events'),
          call('GET', '/api/v1/agent/schedules'),
          call('POST', '/api/v1/agent/runs', {
            prompt: '@sim result helped',
            config: { environment_id: 'helper' }
          }),
          call('GET', '/api/v1/agent/runs')
        ].join('\n'),
        { mode: 'orchestrate' }
      );
      expect((await ended(id)).state).toBe('SUCCEEDED');
      const got = await answers(id);
      expect(got.map(answer => answer.status)).toEqual([
        403, 403, 403, 403, 404, 403, 404, 404, 404, 404, 403, 403, 200, 200
      ]);
      expect(got[0]!.body).toContain(`creates runs only below its run ${id}`);
      expect(got[1]!.body).toContain('environment \\"foreign\\"');
      expect(got[1]!.body).toContain('\\"orch\\", \\"helper\\"');
      expect(got[4]!.body).toContain(`is not below run ${id}`);
      // The one run it made is its own child, in the environment its own lists; the list it read
      // without an ancestor held only that child.
      const [child] = await childrenOf(id);
      expect(got[12]!.body).toContain(child!.run_id);
      expect((await ended(child!.run_id)).environment_id).toBe('helper');
      const listed = (JSON.parse(got[13]!.body) as { runs: { run_id: string }[] }).runs.map(
        run => run.run_id
      );
      expect(listed).toEqual([child!.run_id]);
      // The sibling and the other team's run went on, untouched.
      for (const [run, k] of [
        [sibling, key],
        [foreignTeam, keyB]
      ] as const) {
        const response = await ex.request(`/api/v1/agent/runs/${run}`, { key: k });
        expect(((await response.json()) as { state: string }).state).toBe('INPROGRESS');
        const events = await transcript(ex, k, run);
        expect(events.some(event => event.kind === 'followup')).toBe(false);
      }
    } finally {
      await ex.request(`/api/v1/agent/runs/${sibling}/cancel`, { method: 'POST', key, body: '{}' });
      await ex.request(`/api/v1/agent/runs/${foreignTeam}/cancel`, { method: 'POST', key: keyB, body: '{}' });
    }
  }, 240_000);
});

describe("an orchestrate run's idempotency keys", () => {
  it("live apart from the team's: replaying a team run's key and body makes a child, never answers the team's run", async () => {
    const body = { prompt: '@sim result team work', config: { environment_id: 'orch' } };
    const made = await ex.request('/api/v1/agent/runs', {
      method: 'POST',
      key,
      headers: { 'idempotency-key': 'nightly-42' },
      body: JSON.stringify(body)
    });
    expect(made.status).toBe(200);
    const teamRun = ((await made.json()) as { run_id: string }).run_id;
    // The team's own keys may not take the orchestrators' space.
    const reserved = await ex.request('/api/v1/agent/runs', {
      method: 'POST',
      key,
      headers: { 'idempotency-key': 'run:abc:nightly-42' },
      body: JSON.stringify(body)
    });
    expect(reserved.status).toBe(400);
    expect(await reserved.text()).toContain('keys starting with \\"run:\\" are orchestrate runs\' own');

    const id = await create(
      [
        call('POST', '/api/v1/agent/runs', body, undefined, 'nightly-42'),
        call('POST', '/api/v1/agent/runs', body, undefined, 'nightly-42')
      ].join('\n'),
      { mode: 'orchestrate' }
    );
    expect((await ended(id)).state).toBe('SUCCEEDED');
    const [first, again] = await answers(id);
    expect(first!.status).toBe(200);
    const child = (JSON.parse(first!.body) as { run_id: string }).run_id;
    expect(child).not.toBe(teamRun);
    // Its own retry replays its own child.
    expect((JSON.parse(again!.body) as { run_id: string }).run_id).toBe(child);
    expect((await childrenOf(id)).map(run => run.run_id)).toEqual([child]);
  }, 240_000);
});

describe('orchestrate_environments', () => {
  it('names other environments of the file; an unknown, own or repeated id is refused naming it', () => {
    const parse = (list: unknown) =>
      parseConfig(
        {
          environments: [{ id: 'a', orchestrate_environments: list }, { id: 'b' }]
        },
        source
      );
    expect(parse(['b']).environments[0]!.orchestrateEnvironments).toEqual(['b']);
    expect(() => parse(['c'])).toThrow(
      /environments\[0\]\.orchestrate_environments "c": expected the id of another environment of this file \(a, b\)/
    );
    expect(() => parse(['a'])).toThrow(/own id is always allowed/);
    expect(() => parse(['b', 'b'])).toThrow(/listed twice/);
    expect(() => parse('b')).toThrow(/orchestrate_environments "b": expected a list of strings/);
  });
});
