// MERGE NOTE (harness-others): rename to harness-codex-gemini.test.ts once codexHarness and geminiHarness are
// registered (agents/index.ts) and harnessInput() passes listed: { ...context.env } (agents/harness/input.ts).
// Passed against a trial merge of harness-others + harness-claude at 14:16 UTC (6 tests).
//
// The codex and gemini harnesses end to end: the real, unmodified CLIs (installed on first use into
// the CLI cache) run by the executor in the run's bubblewrap sandbox, their model APIs replaced by
// loopback stubs that script a tool loop and are the runs' only network destination (through the
// sandbox's filtering proxy). What the run records and keeps is read back through the API, as a user
// would: state, transcript, patch, request_usage, failures.

import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { execFileSync } from 'node:child_process';
import { chmodSync, copyFileSync, realpathSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { cliCacheDir, installCli } from '../support/agent-clis.js';
import { type TestExecutor, startTestExecutor, tempDir } from '../support/executor.js';
import { type GeminiStub, startGeminiStub } from '../support/gemini-stub.js';
import { type OpenAiStub, startOpenAiStub } from '../support/openai-stub.js';
import { requireBubblewrap, transcript } from './support.js';
import { waitForState } from '../support/wait.js';

type Json = Record<string, unknown>;

const OPENAI_KEY = `sk-test-codex-${process.pid}-${Date.now()}`;
const GEMINI_KEY = `AIza-test-gemini-${process.pid}-${Date.now()}`;
const BASE_PROMPT = `Sign as HARNESS-BASE-PROMPT-${process.pid}.`;
const FINAL = 'All done: the file is written and the command ran.';

let ex: TestExecutor;
let key: string;
let openai: OpenAiStub;
let gemini: GeminiStub;
let repo: string;
/** The MCP server fixture, copied where the runs' user can read it (a clone may be in a private folder). */
let fixtures: string;
const REFUSED = 'refused-model';

function sandbox(port: number): Json {
  return {
    network: [`127.0.0.1:${port}`],
    read: [dirname(realpathSync(process.execPath)), cliCacheDir(), fixtures]
  };
}

function environments(openaiUrl: string, openaiPort: number, geminiUrl: string, geminiPort: number): Json[] {
  return [
    {
      id: 'codex',
      source: repo,
      env: ['OPENAI_API_KEY', 'OPENAI_BASE_URL'],
      agent: { kind: 'codex', command: [process.env.CODEX_TEST_PROGRAM!], model: 'gpt-5.5' },
      sandbox: sandbox(openaiPort),
      timeout: '3m',
      _url: openaiUrl
    },
    {
      id: 'gemini',
      source: repo,
      env: ['GEMINI_API_KEY', 'GOOGLE_GEMINI_BASE_URL'],
      agent: { kind: 'gemini', command: [process.env.GEMINI_TEST_PROGRAM!], model: 'gemini-stub-pro' },
      sandbox: sandbox(geminiPort),
      timeout: '3m',
      _url: geminiUrl
    }
  ]
    .map(({ _url, ...environment }) => environment)
    .flatMap(environment => [
      environment,
      // The same without the key's variable: the CLI gets no key.
      {
        ...environment,
        id: `${String(environment.id)}-nokey`,
        env: (environment.env as string[]).filter(name => !name.endsWith('_API_KEY'))
      }
    ]);
}

beforeAll(async () => {
  requireBubblewrap();
  process.env.CODEX_TEST_PROGRAM = await installCli('codex');
  process.env.GEMINI_TEST_PROGRAM = await installCli('gemini');
  openai = await startOpenAiStub({ refuse: { [REFUSED]: 401 } });
  gemini = await startGeminiStub({ refuse: { [REFUSED]: 401 } });
  fixtures = tempDir('harness-mcp-');
  chmodSync(fixtures, 0o755);
  copyFileSync(resolve('__tests__/fixtures/mcp/lookup-server.mjs'), join(fixtures, 'lookup-server.mjs'));
  repo = tempDir('harness-others-source-');
  writeFileSync(join(repo, 'README.md'), 'hello\n');
  const git = (...args: string[]) =>
    execFileSync('git', ['-C', repo, '-c', 'user.name=t', '-c', 'user.email=t@t', ...args]);
  git('init', '--quiet');
  git('add', '--all');
  git('commit', '--quiet', '-m', 'initial');
  process.env.OPENAI_API_KEY = OPENAI_KEY;
  process.env.GEMINI_API_KEY = GEMINI_KEY;
  process.env.OPENAI_BASE_URL = openai.url;
  process.env.GOOGLE_GEMINI_BASE_URL = gemini.url;
  ex = await startTestExecutor({
    workers: 2,
    log_level: 'silent',
    environments: environments(openai.url, openai.port, gemini.url, gemini.port)
  });
  key = (await ex.key()).raw;
}, 900_000);

afterAll(async () => {
  await ex?.stop(1000);
  await Promise.all([openai, gemini].map(stub => stub?.close()));
});

async function run(executor: TestExecutor, apiKey: string, body: Json): Promise<Json> {
  const response = await executor.request('/api/v1/agent/run', {
    method: 'POST',
    key: apiKey,
    body: JSON.stringify(body)
  });
  expect(response.status).toBe(200);
  const { run_id } = (await response.json()) as { run_id: string };
  return (await waitForState({ on: executor, key: apiKey, id: run_id }, undefined, {
    timeoutMs: 240_000
  })) as Json;
}

async function patchOf(record: Json): Promise<string> {
  const uid = ((record.artifacts as Json[])[0]!.data as Json).artifact_uid as string;
  const details = (await (await ex.request(`/api/v1/agent/artifacts/${uid}`, { key })).json()) as Json;
  return (await fetch(details.download_url as string)).text();
}

const MCP = {
  lookup: {
    command: realpathSync(process.execPath),
    get args() {
      return [join(fixtures, 'lookup-server.mjs')];
    }
  }
};

describe.each([
  { kind: 'codex', type: 'codex', shell: 'shell', model: 'gpt-5.5', mcpTool: 'list_mcp_resources' },
  {
    kind: 'gemini',
    type: 'gemini',
    shell: 'run_shell_command',
    model: 'gemini-stub-pro',
    mcpTool: 'mcp_lookup_stub_lookup'
  }
])('a sandboxed $kind run against its stub model API', ({ kind, type, shell, model, mcpTool }) => {
  let record: Json;
  let events: Json[];
  beforeAll(async () => {
    record = await run(ex, key, {
      prompt: 'Write notes.txt, then say hello.',
      config: {
        environment_id: kind,
        model_id: model,
        base_prompt: BASE_PROMPT,
        harness: { type },
        mcp_servers: MCP
      }
    });
    events = await transcript(ex, key, record.run_id as string);
  }, 300_000);

  it('succeeds with the shell action and its result, the written file in the patch, and the answer', async () => {
    expect(record).toMatchObject({ state: 'SUCCEEDED' });
    expect(events).toContainEqual(expect.objectContaining({ kind: 'action', name: shell }));
    expect(events).toContainEqual(expect.objectContaining({ kind: 'result', text: FINAL }));
    const patch = await patchOf(record);
    expect(patch).toContain('+++ b/notes.txt');
    expect(patch).toContain('+written by the stub model');
    expect(record.request_usage).toMatchObject({ input_tokens: 3 * 1234, output_tokens: 3 * 56 });
    expect(JSON.stringify(events)).not.toContain(kind === 'codex' ? OPENAI_KEY : GEMINI_KEY);
  });

  it('sent the run model, the base prompt and the key to the stub', () => {
    const requests = (kind === 'codex' ? openai.requests : gemini.loopRequests()).filter(
      r => r.model !== REFUSED
    );
    expect(requests.length).toBeGreaterThanOrEqual(3);
    for (const request of requests) {
      expect(request.model).toBe(model);
      expect(request.apiKey).toBe(kind === 'codex' ? OPENAI_KEY : GEMINI_KEY);
      const system = 'instructions' in request ? request.instructions : request.systemInstruction;
      expect(system).toContain(BASE_PROMPT);
    }
    // The stdio MCP server ran in the sandbox: Gemini offers its tool; Codex with a model that has a tool
    // search offers its MCP resource tools up front and the server's tools through the search.
    expect(requests[0]!.tools).toContain(mcpTool);
  });
});

describe.each([{ kind: 'codex' }, { kind: 'gemini' }])(
  'a sandboxed $kind run whose key is refused',
  ({ kind }) => {
    it('fails agent_auth_failed with the CLI message and no key', async () => {
      const record = await run(ex, key, {
        prompt: 'hello',
        config: { environment_id: kind, model_id: REFUSED }
      });
      expect(record).toMatchObject({ state: 'FAILED', error_code: 'agent_auth_failed' });
      expect(String(record.status_message)).toContain(
        kind === 'codex'
          ? '401 Unauthorized: Incorrect API key provided'
          : 'API key not valid. Please pass a valid API key.'
      );
      expect(String(record.status_message)).toContain(
        `the model API refused the key in ${kind === 'codex' ? 'OPENAI_API_KEY' : 'GEMINI_API_KEY'}`
      );
      expect(JSON.stringify(record)).not.toContain(kind === 'codex' ? OPENAI_KEY : GEMINI_KEY);
    }, 300_000);
  }
);

describe.each([
  { kind: 'codex', names: 'OPENAI_API_KEY or CODEX_API_KEY' },
  { kind: 'gemini', names: 'GEMINI_API_KEY or GOOGLE_API_KEY' }
])('a sandboxed $kind run whose environment lists no key', ({ kind, names }) => {
  it('fails agent_auth_failed naming the variables to set', async () => {
    const record = await run(ex, key, { prompt: 'hello', config: { environment_id: `${kind}-nokey` } });
    expect(record).toMatchObject({ state: 'FAILED', error_code: 'agent_auth_failed' });
    expect(String(record.status_message)).toContain(
      `no model key reached the CLI: set ${names} where the executor runs and list it under the environment's \`env\``
    );
  }, 300_000);
});
