// The executor's HTTP API on a real port with a real SQLite file in a temp dir (or a PostgreSQL
// database: jest's postgres project): the answers to bad requests, fields the server owns,
// idempotent creates, start-up and the endpoints that need no key.
import { describe, expect, it } from '@jest/globals';
import { apiSuite, ex, key, keyB, expectNoRawKeys, expectProblem } from '../support/api-suite.js';

const api = apiSuite();
const { post, get, create } = api;

describe('errors', () => {
  it('401 for a missing, malformed, unknown or revoked key, with WWW-Authenticate', async () => {
    const missing = await ex.request('/api/v1/agent/runs');
    expect(missing.headers.get('www-authenticate')).toBe('Bearer realm="agent-executor"');
    await expectProblem(missing, 401, 'unauthenticated', /missing Authorization header/);
    await expectProblem(await get('/api/v1/agent/runs', 'arx_nope'), 401, 'unauthenticated', /malformed/);
    const unknown = key.slice(0, -10) + 'AAAAAAAAAA';
    await expectProblem(await get('/api/v1/agent/runs', unknown), 401, 'unauthenticated');
    const { raw, id } = await ex.key('team-a');
    expect((await get('/api/v1/agent/runs', raw)).status).toBe(200);
    await ex.context.stores.accounts.revokeKey(id, new Date().toISOString());
    await expectProblem(await get('/api/v1/agent/runs', raw), 401, 'unauthenticated', /unknown or revoked/);
  });

  it('400 for a body that is not JSON or not an object', async () => {
    await expectProblem(
      await post('/api/v1/agent/run', '{"prompt": '),
      400,
      'invalid_request',
      /not valid JSON/
    );
    await expectProblem(
      await post('/api/v1/agent/run', '[1]'),
      400,
      'invalid_request',
      /must be a JSON object/
    );
  });

  it('413 for a body over the limit, 415 for another content type', async () => {
    const big = JSON.stringify({ prompt: 'x'.repeat(5000), config: { environment_id: 'local' } });
    await expectProblem(await post('/api/v1/agent/run', big), 413, 'payload_too_large', /4096 bytes/);
    await expectProblem(
      await post('/api/v1/agent/run', 'hi', key, { 'content-type': 'text/plain' }),
      415,
      'unsupported_media_type'
    );
  });

  it('422 naming the field for a bad prompt, config or title, and for a prompt over the limit', async () => {
    await expectProblem(
      await post('/api/v1/agent/run', { config: { environment_id: 'local' } }),
      422,
      'invalid_field',
      /^prompt: expected a string, got nothing$/
    );
    await expectProblem(
      await post('/api/v1/agent/run', { prompt: 5, config: {} }),
      422,
      'invalid_field',
      /^prompt: expected a string, got number 5$/
    );
    await expectProblem(
      await post('/api/v1/agent/run', { prompt: 'x' }),
      422,
      'invalid_field',
      /^config: expected an object/
    );
    await expectProblem(
      await post('/api/v1/agent/run', { prompt: 'x', config: { environment_id: '' } }),
      422,
      'invalid_field',
      /^config.environment_id/
    );
    await expectProblem(
      await post('/api/v1/agent/run', { prompt: 'x', config: { environment_id: 'local' }, title: 3 }),
      422,
      'invalid_field',
      /^title/
    );
    await expectProblem(
      await post('/api/v1/agent/run', { prompt: 'é'.repeat(600), config: { environment_id: 'local' } }),
      422,
      'prompt_too_large',
      /^prompt: 1200 bytes is over the limit of 1000 bytes$/
    );
  });

  it('404 naming an unknown environment, and for unknown runs and routes', async () => {
    await expectProblem(
      await post('/api/v1/agent/run', { prompt: 'x', config: { environment_id: 'prod' } }),
      404,
      'environment_not_found',
      /"prod" does not exist; this executor serves: local/
    );
    await expectProblem(await get('/api/v1/agent/runs/nope'), 404, 'not_found');
    await expectProblem(await get('/api/v1/agent/nothing'), 404, 'route_not_found');
  });

  it('400 for bad list parameters', async () => {
    await expectProblem(
      await get('/api/v1/agent/runs?limit=500'),
      400,
      'invalid_request',
      /limit "500": expected a whole number from 1 to 100/
    );
    await expectProblem(await get('/api/v1/agent/runs?state=DONE'), 400, 'invalid_request', /state "DONE"/);
    await expectProblem(
      await get('/api/v1/agent/runs?created_after=yesterday'),
      400,
      'invalid_request',
      /RFC 3339/
    );
    await expectProblem(
      await get('/api/v1/agent/runs?cursor=garbage'),
      400,
      'invalid_request',
      /next_cursor/
    );
  });
});

describe('server-owned fields', () => {
  it('keeps extra body fields but never lets them pose as server fields', async () => {
    const id = await create('@sim sleep 5', {
      status_message: 'spoof',
      session_link: 'https://evil',
      state: 'SUCCEEDED',
      metadata: { a: '1' }
    });
    const run = (await (await get(`/api/v1/agent/runs/${id}`)).json()) as Record<string, unknown>;
    expect(run.state).not.toBe('SUCCEEDED');
    expect(run.status_message).toBeUndefined();
    expect(run.session_link === undefined || String(run.session_link).startsWith(ex.url)).toBe(true);
    expect(run.metadata).toEqual({ a: '1' });
    await post(`/api/v1/agent/runs/${id}/cancel`, '');
  });

  it('answers 400, not 500, to absurdly nested JSON and to malformed URLs', async () => {
    const deep =
      '{"prompt":"x","config":{"environment_id":"local","x":' +
      '['.repeat(100_000) +
      ']'.repeat(100_000) +
      '}}';
    const response = await ex.request('/api/v1/agent/run', {
      method: 'POST',
      key,
      body: deep,
      headers: { 'content-type': 'application/json' }
    });
    expect(response.status).toBeGreaterThanOrEqual(400);
    expect(response.status).toBeLessThan(500);
    await expectProblem(await get('/api/v1/agent/runs/%ZZ'), 400, 'invalid_request');
  });
});

describe('idempotency', () => {
  it('50 concurrent identical creates with one key make exactly one run', async () => {
    const body = { prompt: 'once', config: { environment_id: 'local' } };
    const responses = await Promise.all(
      Array.from({ length: 50 }, () =>
        post('/api/v1/agent/run', body, key, { 'idempotency-key': 'same-key-50' })
      )
    );
    const ids = new Set<string>();
    for (const response of responses) {
      expect([200, 409]).toContain(response.status);
      if (response.status === 200) ids.add(((await response.json()) as { run_id: string }).run_id);
    }
    expect(ids.size).toBe(1);
    const all = (await (await get('/api/v1/agent/runs?limit=100')).json()) as {
      runs: { run_id: string; prompt: string }[];
    };
    expect(all.runs.filter(r => r.prompt === 'once')).toHaveLength(1);
  });

  it('replays the same run for the same key and body (keys order aside), 422 for another body', async () => {
    const first = await post(
      '/api/v1/agent/run',
      { prompt: 'p', config: { environment_id: 'local', a: 1, b: 2 } },
      key,
      { 'idempotency-key': 'k2' }
    );
    const again = await post(
      '/api/v1/agent/run',
      { config: { b: 2, a: 1, environment_id: 'local' }, prompt: 'p' },
      key,
      { 'idempotency-key': 'k2' }
    );
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(((await again.json()) as { run_id: string }).run_id).toBe(
      ((await first.json()) as { run_id: string }).run_id
    );
    await expectProblem(
      await post('/api/v1/agent/run', { prompt: 'other', config: { environment_id: 'local' } }, key, {
        'idempotency-key': 'k2'
      }),
      422,
      'idempotency_key_reused'
    );
    // Keys are per team: team B may use the same key for its own run.
    const other = await post(
      '/api/v1/agent/run',
      { prompt: 'p', config: { environment_id: 'local', a: 1, b: 2 } },
      keyB,
      { 'idempotency-key': 'k2' }
    );
    expect(other.status).toBe(200);
  });
});

describe('start-up', () => {
  it('prints no Fastify deprecation warning (FSTDEP023)', async () => {
    // Fastify warns through process.emitWarning(message, name, code): record each call.
    const warnings: string[] = [];
    const emitWarning = process.emitWarning;
    process.emitWarning = ((message: string | Error, ...rest: unknown[]) => {
      warnings.push(`${String(rest[1] ?? '')} ${String(message)}`);
    }) as typeof process.emitWarning;
    try {
      const { buildApp } = await import('../../src/executor/server/app.js');
      const app = await buildApp(ex.context, { publicUrl: () => ex.url, requestPrefix: 'test' });
      // app.inject() needs an ESM-only cookie parser jest cannot load: a real port instead.
      await app.listen({ host: '127.0.0.1', port: 0 });
      const { port } = app.server.address() as { port: number };
      const answer = await fetch(`http://127.0.0.1:${port}/api/v1/agent/runs?limit=1`, {
        headers: { authorization: `Bearer ${key}` }
      });
      expect(answer.status).toBe(200);
      await app.close();
      await new Promise(resolve => setImmediate(resolve));
    } finally {
      process.emitWarning = emitWarning;
    }
    expect(warnings.filter(warning => warning.includes('FSTDEP'))).toEqual([]);
  });
});

describe('service endpoints', () => {
  it('serves health, readiness, the OpenAPI document and the error reference without a key', async () => {
    expect(await (await ex.request('/healthz')).json()).toEqual({ status: 'ok' });
    expect(await (await ex.request('/readyz')).json()).toEqual({ status: 'ready', environments: ['local'] });
    const doc = (await (await ex.request('/api/v1/openapi.json')).json()) as {
      openapi: string;
      paths: Record<string, unknown>;
      components: { schemas: Record<string, unknown> };
    };
    expect(doc.openapi).toBe('3.1.0');
    expect(Object.keys(doc.paths)).toEqual(
      expect.arrayContaining([
        '/api/v1/agent/run',
        '/api/v1/agent/runs',
        '/api/v1/agent/runs/{run_id}',
        '/api/v1/agent/runs/{run_id}/cancel'
      ])
    );
    expect(doc.components.schemas.RunRecord).toBeDefined();
    const errors = (await (await ex.request('/api/v1/errors')).json()) as {
      errors: { error_code: string; meaning: string }[];
    };
    expect(errors.errors.map(e => e.error_code)).toEqual(
      expect.arrayContaining(['executor_restarted', 'idempotency_key_reused', 'rate_limited'])
    );
  });
});

describe('storage', () => {
  it('keeps no raw key in the database files', () => {
    expectNoRawKeys(ex, [key, keyB]);
  });
});
