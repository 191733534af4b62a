// What the executor API suites (__tests__/executor/api-*.test.ts) share: one executor per file,
// started with the same limits (each file its own, so jest's workers run the files side by side),
// two keys of two teams, request helpers bound to them, and the check of a problem answer.
import { afterAll, beforeAll, expect } from '@jest/globals';
import { readFileSync } from 'node:fs';
import { type TestExecutor, startTestExecutor } from './executor.js';

/** This file's executor and its two keys, set once it is up (live bindings: read them in tests or hooks). */
export let ex: TestExecutor;
/** team-a's personal key of alice. */
export let key: string;
/** team-b's agent key of bot-b. */
export let keyB: string;

export interface ApiSuite {
  ex: TestExecutor;
  /** team-a's personal key of alice. */
  key: string;
  /** team-b's agent key of bot-b. */
  keyB: string;
  post(path: string, body: unknown, k?: string, headers?: Record<string, string>): Promise<Response>;
  get(path: string, k?: string, headers?: Record<string, string>): Promise<Response>;
  /** Creates a run in the `local` environment; answers its id. */
  create(prompt?: string, extra?: Record<string, unknown>, k?: string): Promise<string>;
}

/**
 * Starts this file's executor before its tests and stops it after them. `raw` is its config (as
 * startTestExecutor takes it), over the limits every API suite has: small prompt and body limits,
 * a queue deep enough for the 250 runs of one team that paging creates. The fields of the answer
 * are set once the executor is up (read them inside tests or hooks).
 */
export function apiSuite(raw: Record<string, unknown> = {}): ApiSuite {
  const suite = {
    post: (path: string, body: unknown, k = suite.key, headers: Record<string, string> = {}) =>
      suite.ex.request(path, {
        method: 'POST',
        key: k,
        body: typeof body === 'string' ? body : JSON.stringify(body),
        headers
      }),
    get: (path: string, k = suite.key, headers: Record<string, string> = {}) =>
      suite.ex.request(path, { key: k, headers }),
    async create(prompt = 'hello', extra: Record<string, unknown> = {}, k = suite.key): Promise<string> {
      const response = await suite.post(
        '/api/v1/agent/run',
        { prompt, config: { environment_id: 'local' }, ...extra },
        k
      );
      expect(response.status).toBe(200);
      return ((await response.json()) as { run_id: string }).run_id;
    }
  } as ApiSuite;
  beforeAll(async () => {
    suite.ex = await startTestExecutor({
      ...raw,
      limits: {
        max_prompt_bytes: 1000,
        max_body_bytes: 4096,
        max_queued_runs_per_team: 1000,
        ...(raw.limits as Record<string, unknown> | undefined)
      }
    });
    suite.key = (await suite.ex.key('team-a', 'personal', 'alice')).raw;
    suite.keyB = (await suite.ex.key('team-b', 'agent', 'bot-b')).raw;
    ({ ex, key, keyB } = suite);
  });
  afterAll(() => suite.ex.stop(1000));
  return suite;
}

export async function expectProblem(response: Response, status: number, code: string, detail?: RegExp) {
  expect(response.status).toBe(status);
  expect(response.headers.get('content-type')).toMatch(/^application\/problem\+json/);
  const body = (await response.json()) as Record<string, unknown>;
  expect(body).toMatchObject({ status, error_code: code });
  expect(typeof body.title).toBe('string');
  expect(typeof body.type).toBe('string');
  if (detail) expect(body.detail).toMatch(detail);
  return body;
}

/** No raw key is in the files the executor's store keeps its data in (after a file's requests). */
export function expectNoRawKeys(ex: TestExecutor, keys: string[]): void {
  const files = ex.storeFiles();
  expect(files.length).toBeGreaterThan(0);
  for (const file of files) {
    let bytes: Buffer;
    try {
      bytes = readFileSync(file);
    } catch (error) {
      // PostgreSQL removes and writes anew some files of its own while it runs (pg_internal.init):
      // one gone between the listing and the read holds no key.
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') continue;
      throw error;
    }
    for (const raw of keys) expect(bytes.includes(raw)).toBe(false);
  }
}
