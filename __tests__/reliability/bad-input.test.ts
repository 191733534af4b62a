// Bad input, generated: random and malformed bodies, odd headers, random paths and queries, huge
// and strange prompts, sent to a real executor on a real port. Whatever arrives, the executor
// answers without a 5xx, every 4xx is a well-formed problem+json, and it keeps serving. The
// action's input parsing gets the same treatment: settings or an InputError, nothing else.
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import fc from 'fast-check';
import { InputError, readSettings } from '../../src/action/inputs.js';
import { KNOWN_STATES } from '../../src/api/index.js';
import { type TestExecutor, startTestExecutor } from '../support/executor.js';
import { answerOf, expectWellFormed, rawRequest } from './http-checks.js';

const MAX_PROMPT_BYTES = 8192;
const MAX_BODY_BYTES = 32 * 1024;
/** Scales every numRuns, for longer local runs: RELIABILITY_SCALE=10. */
const SCALE = Number(process.env.RELIABILITY_SCALE ?? 1);
const runs = (n: number) => Math.max(1, Math.round(n * SCALE));
/** Every property runs all its cases; this only catches a hang, and is long, as a loaded machine needs. */
const HANG = 300_000 * SCALE;

let ex: TestExecutor;
let key: string;
let runId: string;

beforeAll(async () => {
  // One worker: the runs the accepted creates make are not what is tested, and run beside the other files.
  ex = await startTestExecutor({
    workers: 1,
    limits: {
      rate_limit_per_minute: 0,
      max_queued_runs: 1_000_000,
      max_prompt_bytes: MAX_PROMPT_BYTES,
      max_body_bytes: MAX_BODY_BYTES
    }
  });
  key = (await ex.key('fuzz', 'personal', 'fuzzer')).raw;
  const created = await ex.request('/api/v1/agent/run', {
    method: 'POST',
    key,
    body: JSON.stringify({ prompt: 'seed run', config: { environment_id: 'local' } })
  });
  runId = ((await created.json()) as { run_id: string }).run_id;
});
afterAll(() => ex.stop(1000));

async function expectAlive(): Promise<void> {
  const health = await fetch(`${ex.url}/healthz`);
  expect(health.status).toBe(200);
  await health.text();
}

// ---- generators -------------------------------------------------------------------------------

/** Characters that break naive code: NUL, lone surrogates, bidi controls, RTL, emoji, BOM, quotes. */
const NASTY = [
  '\u0000',
  '\ud800',
  '\udfff',
  '\u202e',
  '\u200f',
  '\u2066',
  'ש',
  'ع',
  '😀',
  '👩‍👩‍👧',
  '\ufeff',
  '\u0085',
  '\u2028',
  '\n',
  '\r',
  '\t',
  '"',
  '\\',
  '{',
  '}',
  'a',
  ' ',
  'é',
  '%'
];
const nastyString = fc.string({ unit: fc.constantFrom(...NASTY), maxLength: 200 });
/** Long runs of one character, most of them past the prompt limit (in bytes, not characters). */
const hugeString = fc
  .tuple(fc.constantFrom('a', 'é', '😀', '\u0000', '\ud800', 'ש'), fc.integer({ min: 1000, max: 12_000 }))
  .map(([c, n]) => c.repeat(n));
const anyString = fc.oneof(
  fc.string({ unit: 'binary', maxLength: 200 }),
  fc.string({ unit: 'grapheme', maxLength: 100 }),
  nastyString,
  hugeString
);
/** Never a simulated-agent directive: fuzzed prompts must not run shell commands. */
const defuse = (text: string) => text.replace(/@sim/gi, '@_sim');

const environmentId = fc.oneof(fc.constant('local'), anyString, fc.jsonValue({ maxDepth: 2 }));
const createBody = fc
  .tuple(
    fc.record(
      {
        prompt: fc.oneof(anyString, fc.constant(''), fc.constant(' \n\t'), fc.jsonValue({ maxDepth: 2 })),
        config: fc.oneof(
          fc.record({ environment_id: environmentId }, { requiredKeys: [] }),
          fc
            .tuple(fc.dictionary(anyString, fc.jsonValue({ maxDepth: 3 }), { maxKeys: 4 }), environmentId)
            .map(([extra, id]) => ({ ...extra, environment_id: id })),
          fc.jsonValue({ maxDepth: 2 })
        ),
        title: fc.oneof(anyString, fc.jsonValue({ maxDepth: 2 }))
      },
      { requiredKeys: [] }
    ),
    fc.dictionary(
      fc.oneof(fc.string({ maxLength: 20 }), fc.constantFrom('run_id', 'state', 'creator', 'metadata')),
      fc.jsonValue({ maxDepth: 2 }),
      { maxKeys: 3 }
    )
  )
  .map(([known, extra]) => {
    const body = { ...extra, ...known } as Record<string, unknown>;
    if (typeof body.prompt === 'string') body.prompt = defuse(body.prompt);
    return JSON.stringify(body);
  });

/** Well-formed creates with strange text in them: most of these are accepted. */
const validCreate = fc
  .record(
    {
      prompt: anyString.map(text => `x${defuse(text)}`),
      config: fc
        .dictionary(fc.string({ maxLength: 10 }), fc.jsonValue({ maxDepth: 2 }), { maxKeys: 3 })
        .map(extra => ({ ...extra, environment_id: 'local' })),
      title: fc.oneof(nastyString, fc.constant(null)),
      metadata: fc.jsonValue({ maxDepth: 3 })
    },
    { requiredKeys: ['prompt', 'config'] }
  )
  .map(value => JSON.stringify(value));

/** Objects written by hand, so that keys can repeat: `{"prompt":"a","prompt":5}`. */
const duplicateKeys = fc
  .array(
    fc.tuple(
      fc.constantFrom('prompt', 'config', 'title', 'environment_id', 'metadata'),
      fc.oneof(
        fc.constant({ environment_id: 'local' }),
        fc.constant('{"environment_id":"local","environment_id":"nope"}'),
        fc.jsonValue({ maxDepth: 2 }),
        nastyString
      )
    ),
    { minLength: 1, maxLength: 8 }
  )
  .map(
    pairs =>
      `{${pairs
        .map(([k, v]) => {
          const value = typeof v === 'string' && v.startsWith('{"environment_id"') ? v : JSON.stringify(v);
          return `${JSON.stringify(k)}:${typeof value === 'string' ? defuse(value) : 'null'}`;
        })
        .join(',')}}`
  );

const deepNesting = fc
  .tuple(fc.integer({ min: 500, max: 15_000 }), fc.constantFrom('[', '{"a":'), fc.boolean())
  .map(([depth, open, inConfig]) => {
    const close = open === '[' ? ']' : '}';
    const deep = open.repeat(depth) + (open === '[' ? '' : '1') + close.repeat(depth);
    return inConfig
      ? `{"prompt":"x","config":{"environment_id":"local","deep":${deep}}}`
      : `{"prompt":"x","config":{"environment_id":"local"},"deep":${deep}}`;
  });

const prototypeKeys = fc.constantFrom(
  '{"__proto__":{"polluted":1},"prompt":"x","config":{"environment_id":"local"}}',
  '{"prompt":"x","config":{"environment_id":"local","__proto__":{"environment_id":"other"}}}',
  '{"constructor":{"prototype":{"polluted":1}},"prompt":"x","config":{"environment_id":"local"}}',
  '{"prompt":"x","config":{"constructor":{"prototype":{"x":1}},"environment_id":"local"}}',
  '{"prompt":"x","config":{"environment_id":"local"},"toString":"no","hasOwnProperty":1}'
);

const malformed = fc.oneof(
  fc.string({ unit: 'binary', maxLength: 300 }),
  createBody.chain(body =>
    fc.integer({ min: 0, max: Math.max(0, body.length - 1) }).map(cut => body.slice(0, cut))
  ),
  createBody.map(body => `${body}garbage`),
  fc.constantFrom('', ' ', 'null', 'true', '0', '"x"', '[]', '{}', '{', '}', '{"prompt":}', '\ufeff{}', 'NaN')
);

/** A body as text, or as bytes that are not valid UTF-8. */
const body = fc.oneof(
  { weight: 4, arbitrary: createBody },
  { weight: 6, arbitrary: validCreate },
  { weight: 2, arbitrary: fc.json({ maxDepth: 3 }) },
  { weight: 3, arbitrary: malformed },
  { weight: 2, arbitrary: duplicateKeys },
  { weight: 1, arbitrary: deepNesting },
  { weight: 1, arbitrary: prototypeKeys },
  { weight: 1, arbitrary: fc.uint8Array({ maxLength: 400 }) }
);

/** fetch sends only printable header values; rawRequest below covers the rest. */
const printable = (maxLength: number) =>
  fc.string({ unit: fc.integer({ min: 0x20, max: 0x7e }).map(c => String.fromCharCode(c)), maxLength });

const contentType = fc.oneof(
  { weight: 6, arbitrary: fc.constantFrom('application/json', 'application/json; charset=utf-8') },
  {
    weight: 3,
    arbitrary: fc.constantFrom(
      undefined,
      'APPLICATION/JSON',
      'application/json;charset=ISO-8859-1',
      'application/json; charset=utf-16',
      'application/json; foo="bar;baz"',
      'text/plain',
      'text/plain; charset=utf-8',
      'application/x-www-form-urlencoded',
      'multipart/form-data; boundary=xyz',
      'application/problem+json',
      'application/jsonp',
      'application/json-patch+json',
      'application/vnd.api+json',
      'application/octet-stream',
      '*/*',
      'application/',
      ';',
      'application/json, text/plain'
    )
  },
  { weight: 1, arbitrary: printable(60) }
);

const idempotencyKey = fc.oneof(
  { weight: 4, arbitrary: fc.constant(undefined) },
  { weight: 2, arbitrary: fc.stringMatching(/^[\x21-\x7e]{1,255}$/) },
  { weight: 1, arbitrary: printable(300) },
  { weight: 1, arbitrary: fc.integer({ min: 256, max: 12_000 }).map(n => 'k'.repeat(n)) }
);

/** The Authorization header, given the valid key: the key itself, the key mangled, or nonsense. */
const authorization = fc.oneof(
  { weight: 5, arbitrary: fc.constant((key: string) => `Bearer ${key}`) },
  {
    weight: 2,
    arbitrary: fc
      .tuple(fc.nat(), fc.constantFrom('swap', 'suffix', 'upper', 'spaces', 'truncate', 'lower-scheme'))
      .map(([n, how]) => (key: string) => {
        const i = 4 + (n % (key.length - 4));
        switch (how) {
          case 'swap':
            return `Bearer ${key.slice(0, i)}${key[i] === 'a' ? 'b' : 'a'}${key.slice(i + 1)}`;
          case 'suffix':
            return `Bearer ${key}x`;
          case 'upper':
            return `Bearer ${key.toUpperCase()}`;
          case 'spaces':
            return `Bearer   ${key}  `;
          case 'lower-scheme':
            return `bearer ${key}`;
          default:
            return `Bearer ${key.slice(0, i)}`;
        }
      })
  },
  {
    weight: 3,
    arbitrary: fc
      .oneof(
        fc.constant(undefined),
        fc.constantFrom(
          '',
          'Bearer',
          'Bearer ',
          'Basic dXNlcjpwYXNz',
          'Token abc',
          'Bearer arx_',
          'Bearer arx_000000000000000000000000000000000000',
          'Bearer a b',
          'Bearer\tx'
        ),
        printable(100),
        fc.integer({ min: 1000, max: 12_000 }).map(n => `Bearer ${'x'.repeat(n)}`)
      )
      .map(value => () => value)
  }
);

/** Percent-encodes UTF-8 bytes (a lone surrogate becomes U+FFFD, as any UTF-8 encoder does). */
const pct = (text: string) =>
  [...Buffer.from(text)]
    .map(b =>
      /[A-Za-z0-9_.~-]/.test(String.fromCharCode(b))
        ? String.fromCharCode(b)
        : `%${b.toString(16).padStart(2, '0')}`
    )
    .join('');

const segment = fc.oneof(
  fc.uuid(),
  fc.constant('RUN'),
  anyString.map(pct),
  fc.constantFrom('%', '%zz', '%00', '%ff%fe', '%2F', '..', '.', '%2e%2e', 'a'.repeat(500), '', ' ')
);

const queryValue = fc.oneof(
  fc.integer({ min: -5, max: 200 }).map(String),
  fc.constantFrom('', '0', '1', '100', '101', '1e2', '0x10', ' 5', '5 ', '-1', '99999999999999999999', 'NaN'),
  fc.constantFrom(...KNOWN_STATES, 'queued', 'QUEUED,FAILED', 'QUEUED,,', ',', 'UNKNOWN'),
  fc.date({ noInvalidDate: true }).map(d => d.toISOString()),
  fc.constantFrom(
    '2026-13-45',
    '2024-02-30T00:00:00Z',
    '9999-12-31T23:59:59Z',
    '0000-01-01',
    '+275760-09-13T00:00:00Z',
    '2026-01-01T25:61:61Z',
    '2026-01-01garbage'
  ),
  fc.bigInt({ min: 0n, max: 10n ** 20n }).map(n => Buffer.from(`s:${n}`).toString('base64url')),
  anyString.map(s => Buffer.from(s).toString('base64url')),
  anyString
);
const query = fc
  .array(
    fc.tuple(
      fc.constantFrom(
        'limit',
        'cursor',
        'state',
        'environment_id',
        'created_after',
        'created_before',
        'foo',
        '__proto__',
        'constructor',
        'state[]'
      ),
      queryValue
    ),
    { maxLength: 6 }
  )
  .map(pairs => pairs.map(([k, v]) => `${pct(k)}=${pct(v)}`).join('&'));

const path = fc.oneof(
  { weight: 4, arbitrary: query.map(q => `/api/v1/agent/runs?${q}`) },
  {
    weight: 1,
    arbitrary: fc.constantFrom('%', '%zz', 'limit=%', '&&&', '=', 'a=%ff').map(q => `/api/v1/agent/runs?${q}`)
  },
  { weight: 2, arbitrary: segment.map(s => `/api/v1/agent/runs/${s}`) },
  { weight: 1, arbitrary: segment.map(s => `/api/v1/agent/runs/${s}/cancel`) },
  { weight: 1, arbitrary: segment.map(s => `/api/v1/agent/runs/${s}/transcript`) },
  {
    weight: 1,
    arbitrary: fc.tuple(segment, segment).map(([s, t]) => `/sessions/${s}?token=${t}&token=${t}`)
  },
  { weight: 1, arbitrary: fc.webPath() },
  {
    weight: 1,
    arbitrary: fc.constantFrom(
      '/healthz',
      '/readyz',
      '/api/v1/openapi.json',
      '/api/v1/errors',
      '/',
      '/api/v1/agent/run'
    )
  }
);

const method = fc.oneof(
  { weight: 6, arbitrary: fc.constant('GET') },
  { weight: 2, arbitrary: fc.constant('POST') },
  { weight: 2, arbitrary: fc.constantFrom('PUT', 'DELETE', 'PATCH', 'HEAD', 'OPTIONS') }
);

// ---- the executor -----------------------------------------------------------------------------

describe('the executor under bad input', () => {
  it(
    'answers random and malformed create requests with 200 or a problem, never a 5xx',
    async () => {
      await fc.assert(
        fc.asyncProperty(
          body,
          contentType,
          idempotencyKey,
          fc.constantFrom('/api/v1/agent/run', '/api/v1/agent/runs'),
          async (payload, type, idem, target) => {
            const headers: Record<string, string> = { authorization: `Bearer ${key}` };
            if (type !== undefined) headers['content-type'] = type;
            if (idem !== undefined) headers['idempotency-key'] = idem;
            const response = await fetch(ex.url + target, {
              method: 'POST',
              headers,
              body: typeof payload === 'string' ? payload : Buffer.from(payload)
            });
            const answer = await answerOf(response);
            expectWellFormed(
              answer,
              `POST ${target} ${JSON.stringify(headers)} ${String(payload).slice(0, 200)}`
            );
            if (answer.status === 200) {
              // A new run is QUEUED; a replayed Idempotency-Key answers the run's current state.
              const replayed = response.headers.get('idempotent-replayed') === 'true';
              const { state } = JSON.parse(answer.text) as { state: string };
              expect(replayed ? KNOWN_STATES : ['QUEUED']).toContain(state);
            }
          }
        ),
        { numRuns: runs(400) }
      );
      await expectAlive();
    },
    HANG
  );

  it(
    'answers random methods, paths, queries and Authorization values without a 5xx',
    async () => {
      await fc.assert(
        fc.asyncProperty(method, path, authorization, async (verb, target, auth) => {
          const url = ex.url + target.replace('RUN', runId);
          const headers: Record<string, string> = {};
          const value = auth(key);
          if (value !== undefined) headers.authorization = value;
          const init: RequestInit = { method: verb, headers };
          if (verb !== 'GET' && verb !== 'HEAD' && verb !== 'OPTIONS') {
            headers['content-type'] = 'application/json';
            init.body = '{}';
          }
          const answer = await answerOf(await fetch(url, init));
          expectWellFormed(answer, `${verb} ${target} ${JSON.stringify(headers)}`, verb);
        }),
        { numRuns: runs(400) }
      );
      await expectAlive();
    },
    HANG
  );

  it(
    'stores huge and strange prompts exactly, or refuses them with a problem',
    async () => {
      await fc.assert(
        fc.asyncProperty(
          fc.oneof(nastyString, hugeString, fc.string({ unit: 'binary', maxLength: 500 })),
          fc.option(nastyString, { nil: undefined }),
          async (raw, title) => {
            const prompt = `x${defuse(raw)}`; // never blank
            const json = JSON.stringify({ prompt, title, config: { environment_id: 'local' } });
            const response = await ex.request('/api/v1/agent/run', { method: 'POST', key, body: json });
            const answer = await answerOf(response);
            expectWellFormed(answer, `prompt of ${prompt.length} characters`);
            if (Buffer.byteLength(json) > MAX_BODY_BYTES) {
              expect(answer.status).toBe(413);
              return;
            }
            if (Buffer.byteLength(prompt) > MAX_PROMPT_BYTES) {
              expect(answer.status).toBe(422);
              expect(JSON.parse(answer.text)).toMatchObject({ error_code: 'prompt_too_large' });
              return;
            }
            expect(answer.status).toBe(200);
            const { run_id } = JSON.parse(answer.text) as { run_id: string };
            const read = await ex.request(`/api/v1/agent/runs/${run_id}`, { key });
            expect(read.status).toBe(200);
            const run = (await read.json()) as { prompt: string; title: string | null };
            // Well-formed text comes back exactly (NUL, RTL, emoji included); a lone surrogate cannot
            // be stored as UTF-8 and comes back as U+FFFD, like every UTF-8 store does.
            expect(run.prompt).toBe(prompt.toWellFormed());
            expect(run.title).toBe(title === undefined ? null : title.toWellFormed());
          }
        ),
        { numRuns: runs(150) }
      );
      await expectAlive();
    },
    HANG
  );

  it(
    'answers header values fetch cannot send (UTF-8, control bytes, huge) with a problem',
    async () => {
      const utf8 = fc.string({
        unit: fc.constantFrom('é', 'ש', 'ع', '😀', '\u202e', 'a', '-', ' '),
        minLength: 1,
        maxLength: 80
      });
      const control = fc.string({
        unit: fc.constantFrom('\u0000', '\u0001', '\u007f', '\u001b', 'a'),
        minLength: 1,
        maxLength: 10
      });
      const headerValue = fc.oneof(
        utf8,
        control,
        fc.integer({ min: 17_000, max: 40_000 }).map(n => 'v'.repeat(n))
      );
      await fc.assert(
        fc.asyncProperty(
          fc.constantFrom(
            'authorization',
            'idempotency-key',
            'content-type',
            'prefer',
            'if-none-match',
            'x-odd'
          ),
          headerValue,
          fc.constantFrom('POST /api/v1/agent/run', 'GET /api/v1/agent/runs', 'GET /api/v1/agent/runs/RUN'),
          fc.boolean(),
          async (name, value, line, bearer) => {
            const payload = Buffer.from(JSON.stringify({ prompt: 'x', config: { environment_id: 'local' } }));
            const headers = [
              `${line.replace('RUN', runId)} HTTP/1.1`,
              `Host: 127.0.0.1`,
              'Connection: close',
              `Content-Type: application/json`,
              `Content-Length: ${line.startsWith('POST') ? payload.length : 0}`
            ];
            if (name !== 'authorization' || bearer) headers.push(`Authorization: Bearer ${key}`);
            const written = name === 'authorization' && bearer ? `Bearer ${value}` : value;
            headers.push(`${name}: ${written}`);
            const answer = await rawRequest(
              ex.url,
              Buffer.from(headers.join('\r\n')),
              line.startsWith('POST') ? payload : undefined
            );
            expectWellFormed(answer, `${line} with ${name}: ${JSON.stringify(written.slice(0, 80))}`);
          }
        ),
        {
          numRuns: runs(150),
          // Always tried: a NUL byte in a header and headers past Node's 16 KiB limit (both once
          // answered by Fastify's default handler as application/json).
          examples: [
            ['authorization', '\u0000', 'POST /api/v1/agent/run', true],
            ['x-odd', 'v'.repeat(20_000), 'GET /api/v1/agent/runs', false]
          ]
        }
      );
      await expectAlive();
    },
    HANG
  );
});

// ---- the action's inputs ----------------------------------------------------------------------

const INPUT_NAMES = [
  'prompt',
  'prompt-file',
  'environment-id',
  'api-key',
  'base-url',
  'title',
  'config',
  'wait',
  'run-id',
  'timeout',
  'on-timeout',
  'fail-on',
  'cancel-on-abort',
  'idempotency-key',
  'summary',
  'context',
  'github-token',
  'allowed-actors',
  'min-permission',
  'trigger-phrase',
  'on-untrusted',
  'comment'
];

const inputValue = fc.oneof(
  fc.constant(''),
  anyString,
  fc.constantFrom(
    'true',
    'false',
    'TRUE',
    'yes',
    '90s',
    '1h30m',
    '0s',
    '-5m',
    '999999999999999999999h',
    'cancel',
    'leave-running',
    'FAILED,ERROR',
    'none',
    'NONE, FAILED',
    'https://agents.example.com',
    'http://127.0.0.1:8080/api/v1/',
    'https://user:pw@agents.example.com',
    'ftp://x',
    'http://[::1',
    'https://agents.example.com/?q=1#x',
    'arx_abc',
    'a\nb',
    '{"model_id":"auto"}',
    '{"environment_id":"other"}',
    '{"environment_id":5}',
    '[1,2]',
    'null',
    '{{repo}} {{pr.title}}',
    '{{nope}}',
    '{{ comment.body }}',
    'write',
    'admin',
    'sticky',
    'skip',
    'fail'
  ),
  fc.json({ maxDepth: 3 }),
  fc.integer({ min: 1000, max: 200_000 }).map(n => `{"a":${'['.repeat(n)}${']'.repeat(n)}}`)
);

const envValue = fc.oneof(
  fc.constant(undefined),
  fc.constantFrom('1', 'o/r', 'push', 'issue_comment'),
  anyString
);

describe("the action's input parsing", () => {
  it(
    'returns settings or throws an InputError with a readable message, nothing else',
    () => {
      fc.assert(
        fc.property(
          fc.dictionary(fc.constantFrom(...INPUT_NAMES), inputValue, { maxKeys: INPUT_NAMES.length }),
          fc.record(
            {
              GITHUB_RUN_ID: envValue,
              GITHUB_REPOSITORY: envValue,
              GITHUB_EVENT_NAME: envValue,
              GITHUB_WORKSPACE: envValue,
              GITHUB_JOB: envValue
            },
            { requiredKeys: [] }
          ),
          fc.oneof(fc.constant(undefined), anyString, fc.constant('')),
          fc.boolean(),
          (inputs, env, fileContent, fillRequired) => {
            if (fillRequired) {
              inputs['api-key'] ??= 'arx_key';
              inputs['base-url'] ??= 'https://agents.example.com';
              inputs['environment-id'] ??= 'local';
              inputs.prompt ??= 'do it';
            }
            const readFile = () => {
              if (fileContent === undefined)
                throw Object.assign(new Error('ENOENT: no such file'), { code: 'ENOENT' });
              return fileContent;
            };
            const event = {
              event: env.GITHUB_EVENT_NAME ?? '',
              repo: env.GITHUB_REPOSITORY ?? '',
              ref: '',
              sha: '',
              actor: ''
            };
            try {
              const settings = readSettings(name => inputs[name] ?? '', env, readFile, event);
              expect(settings.baseUrl).toMatch(/^https?:\/\/.+\/api\/v1$/);
              expect(settings.apiKey).not.toBe('');
              expect(settings.timeoutMs).toBeGreaterThan(0);
            } catch (error) {
              if (!(error instanceof InputError)) {
                throw new Error(
                  `readSettings threw ${(error as Error)?.constructor?.name}: ${(error as Error)?.message} for ${JSON.stringify(inputs).slice(0, 400)}`
                );
              }
              expect(error.problems.length).toBeGreaterThan(0);
              expect(error.message).toMatch(/[a-z]{2,}/);
              expect(error.message).not.toContain('    at ');
              expect(error.message).not.toMatch(/\bat .+:\d+:\d+\)/);
              for (const problem of error.problems) {
                expect(problem.trim()).not.toBe('');
                expect(problem).not.toMatch(/^(Type|Range|Syntax|Reference)Error/);
              }
            }
          }
        ),
        {
          numRuns: runs(2000),
          // Always tried: a config too deep for JSON.stringify (once a RangeError out of readSettings).
          examples: [
            [
              { config: `{"a":${'['.repeat(100_000)}${']'.repeat(100_000)}}` },
              { GITHUB_RUN_ID: '1' },
              undefined,
              true
            ]
          ]
        }
      );
    },
    HANG
  );
});
