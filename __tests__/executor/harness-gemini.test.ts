// The Gemini harness spec with the real, unmodified Gemini CLI (pinned, installed on first use) run as
// a child process exactly as the spec says — arguments, HOME files, environment — against a loopback
// stand-in for the Gemini API that scripts a tool loop. Checks what a user would see of such a run:
// the tool calls and their results, the file written, the final answer, the token counts, the model
// and base prompt reaching the model, an MCP server's tool offered, and a bad key or an unknown
// model failing with the CLI's own words and no key anywhere.
import { afterAll, afterEach, beforeAll, describe, expect, it } from '@jest/globals';
import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { geminiHarness, geminiTranslator } from '../../src/executor/agents/harness/gemini.js';
import { installCli } from '../support/agent-clis.js';
import { type RecordingProxy, startRecordingProxy } from '../support/recording-proxy.js';
import { type GeminiStub, startGeminiStub } from '../support/gemini-stub.js';
import { eventsOf, removeHarnessDirs, runHarness } from '../support/harness-run.js';

const KEY = 'AIza-test-gemini-0123456789-secret';
const MCP_SERVER = resolve('__tests__/fixtures/mcp/lookup-server.mjs');
let gemini: string;
let stub: GeminiStub | undefined;
let proxy: RecordingProxy | undefined;

beforeAll(async () => {
  gemini = await installCli('gemini');
}, 900_000);

afterAll(() => removeHarnessDirs());

afterEach(async () => {
  await stub?.close();
  await proxy?.close();
  stub = undefined;
  proxy = undefined;
});

function listed(url: string): Record<string, string> {
  return { GEMINI_API_KEY: KEY, GOOGLE_GEMINI_BASE_URL: url };
}

describe('gemini harness with the real CLI', () => {
  it('runs a tool loop: actions with results, the file written, the final answer, the usage, model, base prompt and MCP tool at the model', async () => {
    stub = await startGeminiStub({ inputTokens: 1000, cachedTokens: 200, outputTokens: 50 });
    proxy = await startRecordingProxy();
    const run = await runHarness({
      extraEnv: proxy.env,
      spec: geminiHarness,
      program: gemini,
      input: {
        prompt: 'Write notes.txt, then say hello.',
        model: 'gemini-stub-pro',
        basePrompt: 'BASE-PROMPT-9c1e: be brief.',
        mcpServers: {
          lookup: { command: process.execPath, args: [MCP_SERVER], env: { LOOKUP_TOKEN: 'mcp-secret-2' } }
        }
      },
      listed: listed(stub.url)
    });
    expect(run.failure).toBeUndefined();
    expect(run.exitCode).toBe(0);

    const actions = eventsOf(run.events, 'action');
    const results = eventsOf(run.events, 'action_result');
    const write = actions.find(action => action.name === 'write_file');
    const shell = actions.find(action => action.name === 'run_shell_command');
    expect(write?.input).toMatchObject({ file_path: 'notes.txt' });
    expect(shell?.input).toMatchObject({ command: 'echo shell-says-hello' });
    expect(results.find(result => result.id === write?.id)).toMatchObject({ ok: true });
    expect(results.find(result => result.id === shell?.id)).toEqual({
      type: 'action_result',
      id: shell?.id,
      ok: true,
      output: 'shell-says-hello'
    });
    expect(eventsOf(run.events, 'file_edit').map(edit => edit.path)).toEqual(['notes.txt']);
    expect(readFileSync(join(run.workspace, 'notes.txt'), 'utf8')).toBe('written by the stub model\n');
    expect(eventsOf(run.events, 'final')).toEqual([
      { type: 'final', text: 'All done: the file is written and the command ran.' }
    ]);
    expect(eventsOf(run.events, 'session')).toHaveLength(1);

    const loop = stub.loopRequests();
    expect(loop.length).toBe(3);
    expect(eventsOf(run.events, 'usage')).toEqual([
      { type: 'usage', input_tokens: 3 * 1000, output_tokens: 3 * 50, cache_read_tokens: 3 * 200 }
    ]);
    for (const request of loop) {
      expect(request.model).toBe('gemini-stub-pro');
      expect(request.systemInstruction).toContain('BASE-PROMPT-9c1e: be brief.');
      expect(request.apiKey).toBe(KEY);
    }
    expect(loop[0]?.tools).toContain('mcp_lookup_stub_lookup');
    expect(JSON.stringify(loop[0]?.body.contents)).toContain('Write notes.txt, then say hello.');
    // Through a proxy (as in the sandbox), the model API is the only destination it contacts.
    expect([...new Set(proxy.destinations)]).toEqual([`127.0.0.1:${stub.port}`]);
    expect(JSON.stringify(run.events)).not.toContain(KEY);
    expect(JSON.stringify(run.events)).not.toContain('mcp-secret-2');
  });

  it('resumes the CLI session of an earlier run: the model sees both prompts', async () => {
    stub = await startGeminiStub();
    const first = await runHarness({
      spec: geminiHarness,
      program: gemini,
      input: { prompt: 'FIRST-PROMPT-41: write notes.txt.', model: 'gemini-stub-pro' },
      listed: listed(stub.url)
    });
    const session = eventsOf(first.events, 'session')[0]?.id;
    expect(first.failure).toBeUndefined();
    expect(session).toBeTruthy();
    const before = stub.requests.length;
    const second = await runHarness({
      spec: geminiHarness,
      program: gemini,
      reuse: { home: first.home, workspace: first.workspace },
      input: { prompt: 'SECOND-PROMPT-42: and now?', model: 'gemini-stub-pro', resumeSession: session },
      listed: listed(stub.url)
    });
    expect(second.failure).toBeUndefined();
    expect(eventsOf(second.events, 'session')[0]?.id).toBe(session);
    const resumed = JSON.stringify(stub.requests[before]?.body);
    expect(resumed).toContain('FIRST-PROMPT-41: write notes.txt.');
    expect(resumed).toContain('SECOND-PROMPT-42: and now?');
  });

  it('fails a bad key as agent_auth_failed with the CLI’s message and no key in any event', async () => {
    stub = await startGeminiStub({ status: 401 });
    const run = await runHarness({
      spec: geminiHarness,
      program: gemini,
      input: { prompt: 'Say hello.', model: 'gemini-stub-pro' },
      listed: listed(stub.url)
    });
    expect(run.exitCode).not.toBe(0);
    expect(run.failure?.code).toBe('agent_auth_failed');
    expect(run.failure?.message).toContain('API key not valid. Please pass a valid API key.');
    expect(JSON.stringify(run.events)).not.toContain(KEY);
    expect(run.failure?.message).not.toContain(KEY);
  });

  it('fails an unknown model as agent_model_not_found with the CLI’s message', async () => {
    stub = await startGeminiStub({ status: 404 });
    const run = await runHarness({
      spec: geminiHarness,
      program: gemini,
      input: { prompt: 'Say hello.', model: 'gemini-nonexistent' },
      listed: listed(stub.url)
    });
    expect(run.failure).toEqual({
      code: 'agent_model_not_found',
      message: expect.stringContaining('models/gemini-nonexistent is not found')
    });
  });
});

describe('gemini harness spec', () => {
  const input = { prompt: 'p', home: '/h', workspace: '/w', extraArgs: ['--foo'] };

  it('starts headless, approving every tool call, and takes the key by either conventional name', () => {
    expect(geminiHarness.args({ ...input, model: 'm' })).toEqual([
      '-p',
      '',
      '--output-format',
      'stream-json',
      '--approval-mode',
      'yolo',
      '--skip-trust',
      '-m',
      'm',
      '--foo'
    ]);
    expect(geminiHarness.env(input, { GOOGLE_API_KEY: 'k' })).toEqual({
      GOOGLE_API_KEY: 'k',
      GEMINI_API_KEY: 'k',
      GEMINI_CLI_NO_RELAUNCH: 'true'
    });
    expect(geminiHarness.stdin(input)).toBe('p');
  });

  it('writes API-key auth, remote MCP servers and the base prompt into HOME', () => {
    const files = geminiHarness.homeFiles({
      ...input,
      basePrompt: 'Be kind.',
      mcpServers: { docs: { url: 'https://mcp.example/x', headers: { Authorization: 'Bearer t' } } }
    });
    expect(JSON.parse(files['.gemini/settings.json'] ?? '{}')).toMatchObject({
      security: { auth: { selectedType: 'gemini-api-key' } },
      mcpServers: { docs: { httpUrl: 'https://mcp.example/x', headers: { Authorization: 'Bearer t' } } }
    });
    expect(files['.gemini/GEMINI.md']).toBe('Be kind.\n');
    expect(geminiHarness.homeFiles(input)['.gemini/GEMINI.md']).toBeUndefined();
  });

  it('joins the streamed chunks of the assistant’s text into one message per turn', () => {
    const translator = geminiTranslator();
    const chunks = ['Let me ', 'look.'].flatMap(content =>
      translator.line({ type: 'message', role: 'assistant', content, delta: true })
    );
    expect(chunks).toEqual([]);
    expect(
      translator.line({
        type: 'tool_use',
        tool_name: 'read_file',
        tool_id: 't1',
        parameters: { file_path: 'a' }
      })
    ).toEqual([
      { type: 'text', text: 'Let me look.' },
      { type: 'action', id: 't1', name: 'read_file', input: { file_path: 'a' } }
    ]);
    translator.line({ type: 'tool_result', tool_id: 't1', status: 'success', output: 'x' });
    translator.line({ type: 'message', role: 'assistant', content: 'Done', delta: true });
    translator.line({ type: 'message', role: 'assistant', content: '.', delta: true });
    expect(
      translator.line({ type: 'result', status: 'success', stats: { input_tokens: 3, output_tokens: 2 } })
    ).toEqual([
      { type: 'text', text: 'Done.' },
      { type: 'final', text: 'Done.' },
      { type: 'usage', input_tokens: 3, output_tokens: 2, cache_read_tokens: 0 }
    ]);
  });

  it('classifies a rate limit from the CLI’s error result', () => {
    const translator = geminiTranslator();
    translator.line({
      type: 'result',
      status: 'error',
      error: {
        type: 'unknown',
        message: '[API Error: {"error":{"code":429,"status":"RESOURCE_EXHAUSTED"}}]'
      },
      stats: {}
    });
    expect(translator.finish(1, '')).toMatchObject({ code: 'agent_rate_limited' });
  });
});
