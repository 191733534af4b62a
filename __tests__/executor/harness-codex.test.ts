// The Codex harness spec with the real, unmodified Codex CLI (pinned, installed on first use) run as
// a child process exactly as the spec says — arguments, stdin, HOME files, environment — against a
// loopback stand-in for the OpenAI Responses API that scripts a tool loop. Checks what a user would
// see of such a run: the tool calls and their results, the file written, the final answer, the
// token counts, the model and base prompt reaching the model, an MCP server's tool offered, and a
// bad key, a rate limit or an unknown model failing with the CLI's own words and no key anywhere.
import { afterAll, afterEach, beforeAll, describe, expect, it } from '@jest/globals';
import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { codexHarness, codexTranslator } from '../../src/executor/agents/harness/codex.js';
import { installCli } from '../support/agent-clis.js';
import { type RecordingProxy, startRecordingProxy } from '../support/recording-proxy.js';
import { eventsOf, removeHarnessDirs, runHarness } from '../support/harness-run.js';
import { type OpenAiStub, startOpenAiStub } from '../support/openai-stub.js';

const KEY = 'sk-test-codex-0123456789-secret';
const MCP_SERVER = resolve('__tests__/fixtures/mcp/lookup-server.mjs');
let codex: string;
let stub: OpenAiStub | undefined;
let proxy: RecordingProxy | undefined;

beforeAll(async () => {
  codex = await installCli('codex');
}, 900_000);

afterAll(() => removeHarnessDirs());

afterEach(async () => {
  await stub?.close();
  await proxy?.close();
  stub = undefined;
  proxy = undefined;
});

function listed(url: string): Record<string, string> {
  return { OPENAI_API_KEY: KEY, OPENAI_BASE_URL: url };
}

describe('codex harness with the real CLI', () => {
  it('runs a tool loop: actions with results, the file written, the final answer, the usage, model and base prompt at the model', async () => {
    stub = await startOpenAiStub({ inputTokens: 1000, cachedTokens: 200, outputTokens: 50 });
    proxy = await startRecordingProxy();
    const run = await runHarness({
      extraEnv: proxy.env,
      spec: codexHarness,
      program: codex,
      input: {
        prompt: 'Write notes.txt, then say hello.',
        model: 'gpt-5.5',
        basePrompt: 'BASE-PROMPT-7f3a: be brief.'
      },
      listed: listed(stub.url)
    });
    expect(run.failure).toBeUndefined();
    expect(run.exitCode).toBe(0);

    const actions = eventsOf(run.events, 'action');
    const results = eventsOf(run.events, 'action_result');
    const patch = actions.find(action => action.name === 'apply_patch');
    const shell = actions.find(action => action.name === 'shell');
    expect(patch).toBeDefined();
    expect(shell?.input).toEqual({ command: expect.stringContaining('echo shell-says-hello') });
    expect(results.find(result => result.id === patch?.id)).toMatchObject({ ok: true });
    expect(results.find(result => result.id === shell?.id)).toMatchObject({
      ok: true,
      output: 'shell-says-hello\n'
    });
    expect(eventsOf(run.events, 'file_edit').map(edit => edit.path)).toEqual([
      join(run.workspace, 'notes.txt')
    ]);
    expect(readFileSync(join(run.workspace, 'notes.txt'), 'utf8')).toBe('written by the stub model\n');
    expect(eventsOf(run.events, 'final')).toEqual([
      { type: 'final', text: 'All done: the file is written and the command ran.' }
    ]);
    expect(eventsOf(run.events, 'session')).toHaveLength(1);

    const requests = stub.requests.filter(request => request.path.endsWith('/responses'));
    expect(requests.length).toBe(3);
    expect(eventsOf(run.events, 'usage')).toEqual([
      {
        type: 'usage',
        input_tokens: 3 * 1000,
        output_tokens: 3 * 50,
        cache_read_tokens: 3 * 200,
        cache_write_tokens: 0
      }
    ]);
    for (const request of requests) {
      expect(request.model).toBe('gpt-5.5');
      expect(request.instructions).toContain('BASE-PROMPT-7f3a: be brief.');
      expect(request.apiKey).toBe(KEY); // OPENAI_API_KEY reached the CLI as the key it reads
    }
    // Through a proxy (as in the sandbox), the model API is the only destination it contacts.
    expect([...new Set(proxy.destinations)]).toEqual([`127.0.0.1:${stub.port}`]);
    expect(JSON.stringify(run.events)).not.toContain(KEY);
  });

  it('offers the tool of a stdio MCP server given in the config to the model', async () => {
    stub = await startOpenAiStub();
    const run = await runHarness({
      spec: codexHarness,
      program: codex,
      // A model Codex has no metadata for gets every tool up front (known models defer MCP tools to a search).
      input: {
        prompt: 'Look something up.',
        model: 'stub-model',
        mcpServers: {
          lookup: { command: process.execPath, args: [MCP_SERVER], env: { LOOKUP_TOKEN: 'mcp-secret-1' } }
        }
      },
      listed: listed(stub.url)
    });
    expect(run.failure).toBeUndefined();
    expect(stub.requests[0]?.tools).toContain('mcp__lookup.stub_lookup');
    expect(stub.requests[0]?.model).toBe('stub-model');
    // Without apply_patch the model wrote the file with a shell command: still there.
    expect(readFileSync(join(run.workspace, 'notes.txt'), 'utf8')).toBe('written by the stub model\n');
    expect(JSON.stringify(run.events)).not.toContain('mcp-secret-1');
  });

  it('resumes the CLI session of an earlier run: the model sees both prompts', async () => {
    stub = await startOpenAiStub();
    const first = await runHarness({
      spec: codexHarness,
      program: codex,
      input: { prompt: 'FIRST-PROMPT-41: write notes.txt.', model: 'gpt-5.5' },
      listed: listed(stub.url)
    });
    const session = eventsOf(first.events, 'session')[0]?.id;
    expect(first.failure).toBeUndefined();
    expect(session).toBeTruthy();
    const before = stub.requests.length;
    const second = await runHarness({
      spec: codexHarness,
      program: codex,
      reuse: { home: first.home, workspace: first.workspace },
      input: { prompt: 'SECOND-PROMPT-42: and now?', model: 'gpt-5.5', resumeSession: session },
      listed: listed(stub.url)
    });
    expect(second.failure).toBeUndefined();
    expect(eventsOf(second.events, 'session')[0]?.id).toBe(session);
    const resumed = JSON.stringify(stub.requests[before]?.body);
    expect(resumed).toContain('FIRST-PROMPT-41: write notes.txt.');
    expect(resumed).toContain('SECOND-PROMPT-42: and now?');
  });

  it('fails a bad key as agent_auth_failed with the CLI’s message and no key in any event', async () => {
    stub = await startOpenAiStub({ status: 401 });
    const run = await runHarness({
      spec: codexHarness,
      program: codex,
      input: { prompt: 'Say hello.', model: 'gpt-5.5' },
      listed: listed(stub.url)
    });
    expect(run.exitCode).not.toBe(0);
    expect(run.failure?.code).toBe('agent_auth_failed');
    expect(run.failure?.message).toContain('401 Unauthorized: Incorrect API key provided');
    expect(JSON.stringify(run.events)).not.toContain(KEY);
    expect(run.failure?.message).not.toContain(KEY);
    // The key did reach the API (the stub refused it), and the harness stopped Codex's retries early.
    expect(stub.keys.length).toBeGreaterThan(0);
    expect(stub.keys.every(key => key === KEY)).toBe(true);
  });

  it('fails a rate limit as agent_rate_limited and an unknown model as agent_model_not_found', async () => {
    stub = await startOpenAiStub({ status: 429 });
    const limited = await runHarness({
      spec: codexHarness,
      program: codex,
      input: { prompt: 'Say hello.', model: 'gpt-5.5' },
      listed: listed(stub.url)
    });
    expect(limited.failure).toEqual({ code: 'agent_rate_limited', message: expect.stringContaining('429') });
    await stub.close();

    stub = await startOpenAiStub({ status: 404 });
    const unknown = await runHarness({
      spec: codexHarness,
      program: codex,
      input: { prompt: 'Say hello.', model: 'gpt-nonexistent' },
      listed: listed(stub.url)
    });
    expect(unknown.failure).toEqual({
      code: 'agent_model_not_found',
      message: expect.stringContaining('The model `gpt-nonexistent` does not exist')
    });
  });
});

describe('codex harness spec', () => {
  const input = { prompt: 'p', home: '/h', workspace: '/w', extraArgs: ['--foo'] };

  it('maps the conventional variables to what the CLI reads, and the base URL to its setting', () => {
    expect(codexHarness.env(input, { OPENAI_API_KEY: 'k', OTHER: 'o' })).toEqual({
      OPENAI_API_KEY: 'k',
      OTHER: 'o',
      CODEX_API_KEY: 'k'
    });
    const args = codexHarness.args({
      ...input,
      model: 'm',
      listed: { OPENAI_BASE_URL: 'http://x/v1', OPENAI_API_KEY: 'k' }
    });
    expect(args).toEqual([
      'exec',
      '--json',
      '--skip-git-repo-check',
      '--dangerously-bypass-approvals-and-sandbox',
      '-m',
      'm',
      '-c',
      'openai_base_url="http://x/v1"',
      '--foo',
      '-'
    ]);
    expect(args.join(' ')).not.toContain('k"');
    expect(codexHarness.stdin(input)).toBe('p');
  });

  it('writes base prompt and MCP servers as valid TOML strings, whatever they contain', () => {
    const files = codexHarness.homeFiles({
      ...input,
      basePrompt: 'line one\n"quoted" \\ back\u007f',
      mcpServers: { 'my server': { url: 'https://mcp.example/x', headers: { Authorization: 'Bearer t' } } }
    });
    expect(files['.codex/config.toml']).toContain(
      'developer_instructions = "line one\\n\\"quoted\\" \\\\ back\\u007f"'
    );
    expect(files['.codex/config.toml']).toContain('[mcp_servers."my server"]');
    expect(files['.codex/config.toml']).toContain('http_headers = { "Authorization" = "Bearer t" }');
  });

  it('stops on a refused key at the first retry, but lets a rate limit be retried', () => {
    const translator = codexTranslator();
    translator.line({
      type: 'error',
      message: 'Reconnecting... 2/5 (exceeded retry limit, last status: 429 Too Many Requests)'
    });
    expect(translator.stopWith?.()).toBeUndefined();
    translator.line({
      type: 'error',
      message:
        'Reconnecting... 3/5 (unexpected status 401 Unauthorized: Incorrect API key provided., url: ws://h/v1/responses)'
    });
    const known = {
      code: 'agent_auth_failed',
      message: 'unexpected status 401 Unauthorized: Incorrect API key provided., url: ws://h/v1/responses'
    };
    expect(translator.stopWith?.()).toEqual(known);
    expect(translator.finish(null, '')).toEqual(known);
  });

  it('names a crash with nothing in the stream by its exit code and stderr', () => {
    const translator = codexTranslator();
    expect(translator.finish(0, '')).toBeUndefined();
    expect(translator.finish(2, 'thread main panicked\n')).toEqual({
      code: 'agent_crashed',
      message: 'codex exited with code 2: thread main panicked'
    });
  });
});
