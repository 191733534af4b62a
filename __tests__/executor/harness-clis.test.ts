// The harness specs with the real, unmodified agent CLIs (pinned, installed on first use), one suite
// run over each CLI as the store contract suite runs over both databases: each CLI is started as a
// child process exactly as its spec says — arguments, stdin, HOME files, environment — against a
// loopback stand-in for its model API that scripts a tool loop. Checks what a user would see of such
// a run: the tool calls and their results, the file written, the final answer, the token counts, the
// model and base prompt reaching the model, an MCP server's tool offered, a resumed session, and a
// bad key or an unknown model failing with the CLI's own words and no key anywhere. The CLIs are
// Claude Code, Codex and Gemini. What only one CLI does (Codex's MCP tools up front and its
// rate-limit stop, Gemini's streamed chunks) and each spec's pure functions are in
// harness-codex.test.ts and harness-gemini.test.ts; what only Claude Code does through a whole
// executor (its cost and budget, its rate limit, a missing key, no sandbox) is in the sandbox suite
// (__tests__/sandbox/harness-claude.test.ts).
import { afterAll, afterEach, beforeAll, describe, expect, it } from '@jest/globals';
import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import type { HarnessSpec } from '../../src/executor/agents/harness/cli-spec.js';
import { claudeCode } from '../../src/executor/agents/harness/claude.js';
import { codexHarness } from '../../src/executor/agents/harness/codex.js';
import { geminiHarness } from '../../src/executor/agents/harness/gemini.js';
import { type AgentCli, installCli } from '../support/agent-clis.js';
import { type RecordingProxy, startRecordingProxy } from '../support/recording-proxy.js';
import { type HarnessRun, eventsOf, removeHarnessDirs, runHarness } from '../support/harness-run.js';
import { type OpenAiStub, type OpenAiStubOptions, startOpenAiStub } from '../support/openai-stub.js';
import { type GeminiStub, type GeminiStubOptions, startGeminiStub } from '../support/gemini-stub.js';
import {
  type AnthropicStub,
  type MessagesBody,
  type StubReply,
  startAnthropicStub,
  systemText,
  toolResults
} from '../support/anthropic-stub.js';

const MCP_SERVER = resolve('__tests__/fixtures/mcp/lookup-server.mjs');

/** What a model API stand-in shows a test, whichever API it stands in for. */
interface ModelRequest {
  model: string;
  /** The base prompt's place in the request: `instructions` (OpenAI) or `systemInstruction` (Gemini). */
  basePrompt: string;
  tools: string[];
  apiKey: string | undefined;
  body: Record<string, unknown>;
}

interface Stub {
  url: string;
  port: number;
  /** Every request, in order. */
  requests: ModelRequest[];
  /** The requests of the scripted tool loop (not the CLI's side calls). */
  loop(): ModelRequest[];
  close(): Promise<void>;
}

type StubOptions = OpenAiStubOptions & GeminiStubOptions;

/** One CLI of the suite: its spec, its model API stand-in, and what of it differs from the others. */
interface CliCase {
  cli: AgentCli;
  spec: HarnessSpec;
  key: string;
  model: string;
  listed(url: string): Record<string, string>;
  startStub(options?: StubOptions): Promise<Stub>;
  /** The tool loop's tools and what they show. */
  writeTool: string;
  shellTool: string;
  checkWrite(action: { input?: unknown } | undefined): void;
  checkShell(input: unknown, result: unknown, id: string | undefined): void;
  /** The `file_edit` paths of the loop's write. */
  editedPaths(run: HarnessRun): string[];
  usage: Record<string, unknown>;
  /** More of the tool loop's input (Gemini's loop offers the MCP tool too), and its checks. */
  loopExtra: {
    mcpServers?: Record<string, { command: string; args: string[]; env: Record<string, string> }>;
  };
  checkLoopExtra(run: HarnessRun, stub: Stub, loop: ModelRequest[]): void;
  authMessage: string;
  checkAuthExtra(stub: Stub): void;
  unknownModel: string;
  unknownModelMessage: string;
}

function openAiStub(stub: OpenAiStub): Stub & { keys: string[] } {
  const requests = () => stub.requests.map(request => ({ ...request, basePrompt: request.instructions }));
  return {
    url: stub.url,
    port: stub.port,
    get requests() {
      return requests();
    },
    get keys() {
      return stub.keys;
    },
    loop: () => requests().filter((_, i) => stub.requests[i]!.path.endsWith('/responses')),
    close: () => stub.close()
  };
}

function geminiStub(stub: GeminiStub): Stub {
  const view = (request: GeminiStub['requests'][number]) => ({
    ...request,
    basePrompt: request.systemInstruction
  });
  return {
    url: stub.url,
    port: stub.port,
    get requests() {
      return stub.requests.map(view);
    },
    loop: () => stub.loopRequests().map(view),
    close: () => stub.close()
  };
}

/**
 * The Anthropic Messages API scripted with the same tool loop as the other stand-ins: a shell
 * command (which also prints the working directory, since Claude Code's Write takes an absolute
 * path), the file written, the answer; or the refusal `status` asks for, as the service answers it
 * (the CLI would retry it). Its requests are the conversation's: the CLI's side calls are left out.
 */
async function anthropicStub(options: StubOptions = {}): Promise<Stub & { stub: AnthropicStub }> {
  const usage = {
    input_tokens: options.inputTokens ?? 10,
    output_tokens: options.outputTokens ?? 5,
    cache_read_input_tokens: options.cachedTokens ?? 0
  };
  const script = (body: MessagesBody): StubReply => {
    if (options.status === 401)
      return {
        status: 401,
        error: { type: 'authentication_error', message: 'invalid x-api-key' },
        retry: true
      };
    if (options.status === 404)
      return {
        status: 404,
        error: { type: 'not_found_error', message: `model: ${body.model}` },
        retry: true
      };
    const results = toolResults(body);
    if (results.length === 0)
      return { tool: { name: 'Bash', input: { command: 'echo shell-says-hello && pwd' } }, usage };
    if (results.length === 1) {
      const cwd = results[0]!.trim().split('\n').at(-1)!;
      const input = { file_path: `${cwd}/notes.txt`, content: 'written by the stub model\n' };
      return { tool: { name: 'Write', input }, usage };
    }
    return { text: 'All done: the file is written and the command ran.', usage };
  };
  const stub = await startAnthropicStub(script);
  const requests = () =>
    stub.turns().map(request => ({
      model: String(request.body.model),
      basePrompt: systemText(request.body),
      tools: (request.body.tools ?? []).map(tool => tool.name),
      apiKey: request.headers['x-api-key'] as string | undefined,
      body: request.body as Record<string, unknown>
    }));
  return {
    stub,
    url: stub.url,
    port: stub.port,
    get requests() {
      return requests();
    },
    loop: requests,
    close: () => stub.close()
  };
}

const CLAUDE_KEY = 'sk-ant-api03-test-claude-0123456789-secret';
const CODEX_KEY = 'sk-test-codex-0123456789-secret';
const GEMINI_KEY = 'AIza-test-gemini-0123456789-secret';

const codex: CliCase = {
  cli: 'codex',
  spec: codexHarness,
  key: CODEX_KEY,
  model: 'gpt-5.5',
  listed: url => ({ OPENAI_API_KEY: CODEX_KEY, OPENAI_BASE_URL: url }),
  startStub: async options => openAiStub(await startOpenAiStub(options)),
  writeTool: 'apply_patch',
  shellTool: 'shell',
  checkWrite: action => expect(action).toBeDefined(),
  checkShell: (input, result) => {
    expect(input).toEqual({ command: expect.stringContaining('echo shell-says-hello') });
    expect(result).toMatchObject({ ok: true, output: 'shell-says-hello\n' });
  },
  editedPaths: run => [join(run.workspace, 'notes.txt')],
  usage: {
    type: 'usage',
    input_tokens: 3 * 1000,
    output_tokens: 3 * 50,
    cache_read_tokens: 3 * 200,
    cache_write_tokens: 0
  },
  loopExtra: {},
  checkLoopExtra: () => {},
  authMessage: '401 Unauthorized: Incorrect API key provided',
  checkAuthExtra: stub => {
    // The key did reach the API (the stub refused it), and the harness stopped Codex's retries early.
    const { keys } = stub as Stub & { keys: string[] };
    expect(keys.length).toBeGreaterThan(0);
    expect(keys.every(key => key === CODEX_KEY)).toBe(true);
  },
  unknownModel: 'gpt-nonexistent',
  unknownModelMessage: 'The model `gpt-nonexistent` does not exist'
};

const gemini: CliCase = {
  cli: 'gemini',
  spec: geminiHarness,
  key: GEMINI_KEY,
  model: 'gemini-stub-pro',
  listed: url => ({ GEMINI_API_KEY: GEMINI_KEY, GOOGLE_GEMINI_BASE_URL: url }),
  startStub: async options => geminiStub(await startGeminiStub(options)),
  writeTool: 'write_file',
  shellTool: 'run_shell_command',
  checkWrite: action => expect(action?.input).toMatchObject({ file_path: 'notes.txt' }),
  checkShell: (input, result, id) => {
    expect(input).toMatchObject({ command: 'echo shell-says-hello' });
    expect(result).toEqual({ type: 'action_result', id, ok: true, output: 'shell-says-hello' });
  },
  editedPaths: () => ['notes.txt'],
  usage: { type: 'usage', input_tokens: 3 * 1000, output_tokens: 3 * 50, cache_read_tokens: 3 * 200 },
  loopExtra: {
    mcpServers: {
      lookup: { command: process.execPath, args: [MCP_SERVER], env: { LOOKUP_TOKEN: 'mcp-secret-2' } }
    }
  },
  checkLoopExtra: (run, _stub, loop) => {
    expect(loop[0]?.tools).toContain('mcp_lookup_stub_lookup');
    expect(JSON.stringify(loop[0]?.body.contents)).toContain('Write notes.txt, then say hello.');
    expect(JSON.stringify(run.events)).not.toContain('mcp-secret-2');
  },
  authMessage: 'API key not valid. Please pass a valid API key.',
  checkAuthExtra: () => {},
  unknownModel: 'gemini-nonexistent',
  unknownModelMessage: 'models/gemini-nonexistent is not found'
};

const claude: CliCase = {
  cli: 'claude-code',
  spec: claudeCode,
  key: CLAUDE_KEY,
  model: 'claude-stub-sonnet',
  listed: url => ({ ANTHROPIC_API_KEY: CLAUDE_KEY, ANTHROPIC_BASE_URL: url }),
  startStub: options => anthropicStub(options),
  writeTool: 'Write',
  shellTool: 'Bash',
  checkWrite: action =>
    expect(action?.input).toMatchObject({ file_path: expect.stringMatching(/\/notes\.txt$/) }),
  checkShell: (input, result) => {
    expect(input).toEqual({ command: 'echo shell-says-hello && pwd' });
    expect(result).toMatchObject({ ok: true, output: expect.stringContaining('shell-says-hello\n') });
  },
  editedPaths: run => [join(run.workspace, 'notes.txt')],
  // Claude Code reports its own cost beside the stub's counts.
  usage: {
    type: 'usage',
    input_tokens: 3 * 1000,
    output_tokens: 3 * 50,
    cache_read_tokens: 3 * 200,
    cache_write_tokens: 0,
    cost_usd: expect.any(Number)
  },
  loopExtra: {},
  checkLoopExtra: () => {},
  authMessage: 'the model API answered 401 (authentication_failed)',
  checkAuthExtra: stub => {
    // The key did reach the API (the stub refused it), and the harness stopped the CLI's retries early.
    const turns = (stub as Stub & { stub: AnthropicStub }).stub.turns();
    expect(turns.length).toBeGreaterThan(0);
    expect(turns.length).toBeLessThanOrEqual(2);
    expect(turns.every(turn => turn.headers['x-api-key'] === CLAUDE_KEY)).toBe(true);
  },
  unknownModel: 'claude-nonexistent',
  unknownModelMessage: 'claude-nonexistent'
};

const CLIS = [claude, codex, gemini];

const programs = new Map<AgentCli, string>();
let stub: Stub | undefined;
let proxy: RecordingProxy | undefined;

beforeAll(async () => {
  for (const cli of CLIS) programs.set(cli.cli, await installCli(cli.cli));
}, 1_800_000);

afterAll(() => removeHarnessDirs());

afterEach(async () => {
  await stub?.close();
  await proxy?.close();
  stub = undefined;
  proxy = undefined;
});

describe.each(CLIS)('$cli harness with the real CLI', cli => {
  const program = () => programs.get(cli.cli)!;

  it('runs a tool loop: actions with results, the file written, the final answer, the usage, model and base prompt at the model', async () => {
    stub = await cli.startStub({ inputTokens: 1000, cachedTokens: 200, outputTokens: 50 });
    proxy = await startRecordingProxy();
    const run = await runHarness({
      extraEnv: proxy.env,
      spec: cli.spec,
      program: program(),
      input: {
        prompt: 'Write notes.txt, then say hello.',
        model: cli.model,
        basePrompt: `BASE-PROMPT-${cli.cli}: be brief.`,
        ...cli.loopExtra
      },
      listed: cli.listed(stub.url)
    });
    expect(run.failure).toBeUndefined();
    expect(run.exitCode).toBe(0);

    const actions = eventsOf(run.events, 'action');
    const results = eventsOf(run.events, 'action_result');
    const write = actions.find(action => action.name === cli.writeTool);
    const shell = actions.find(action => action.name === cli.shellTool);
    cli.checkWrite(write);
    cli.checkShell(
      shell?.input,
      results.find(result => result.id === shell?.id),
      shell?.id
    );
    expect(results.find(result => result.id === write?.id)).toMatchObject({ ok: true });
    expect(eventsOf(run.events, 'file_edit').map(edit => edit.path)).toEqual(cli.editedPaths(run));
    expect(readFileSync(join(run.workspace, 'notes.txt'), 'utf8')).toBe('written by the stub model\n');
    expect(eventsOf(run.events, 'final')).toEqual([
      { type: 'final', text: 'All done: the file is written and the command ran.' }
    ]);
    expect(eventsOf(run.events, 'session')).toHaveLength(1);

    const loop = stub.loop();
    expect(loop.length).toBe(3);
    expect(eventsOf(run.events, 'usage')).toEqual([cli.usage]);
    for (const request of loop) {
      expect(request.model).toBe(cli.model);
      expect(request.basePrompt).toContain(`BASE-PROMPT-${cli.cli}: be brief.`);
      expect(request.apiKey).toBe(cli.key); // the key reached the CLI as the key it reads
    }
    cli.checkLoopExtra(run, stub, loop);
    // Through a proxy (as in the sandbox), the model API is the only destination it contacts.
    expect([...new Set(proxy.destinations)]).toEqual([`127.0.0.1:${stub.port}`]);
    expect(JSON.stringify(run.events)).not.toContain(cli.key);
  });

  it('resumes the CLI session of an earlier run: the model sees both prompts', async () => {
    stub = await cli.startStub();
    const first = await runHarness({
      spec: cli.spec,
      program: program(),
      input: { prompt: 'FIRST-PROMPT-41: write notes.txt.', model: cli.model },
      listed: cli.listed(stub.url)
    });
    const session = eventsOf(first.events, 'session')[0]?.id;
    expect(first.failure).toBeUndefined();
    expect(session).toBeTruthy();
    const before = stub.requests.length;
    const second = await runHarness({
      spec: cli.spec,
      program: program(),
      reuse: { home: first.home, workspace: first.workspace },
      input: { prompt: 'SECOND-PROMPT-42: and now?', model: cli.model, resumeSession: session },
      listed: cli.listed(stub.url)
    });
    expect(second.failure).toBeUndefined();
    expect(eventsOf(second.events, 'session')[0]?.id).toBe(session);
    const resumed = JSON.stringify(stub.requests[before]?.body);
    expect(resumed).toContain('FIRST-PROMPT-41: write notes.txt.');
    expect(resumed).toContain('SECOND-PROMPT-42: and now?');
  });

  it('fails a bad key as agent_auth_failed with the CLI’s message and no key in any event', async () => {
    stub = await cli.startStub({ status: 401 });
    const run = await runHarness({
      spec: cli.spec,
      program: program(),
      input: { prompt: 'Say hello.', model: cli.model },
      listed: cli.listed(stub.url)
    });
    expect(run.exitCode).not.toBe(0);
    expect(run.failure?.code).toBe('agent_auth_failed');
    expect(run.failure?.message).toContain(cli.authMessage);
    expect(JSON.stringify(run.events)).not.toContain(cli.key);
    expect(run.failure?.message).not.toContain(cli.key);
    cli.checkAuthExtra(stub);
  });

  it('fails an unknown model as agent_model_not_found with the CLI’s message', async () => {
    stub = await cli.startStub({ status: 404 });
    const run = await runHarness({
      spec: cli.spec,
      program: program(),
      input: { prompt: 'Say hello.', model: cli.unknownModel },
      listed: cli.listed(stub.url)
    });
    expect(run.failure).toEqual({
      code: 'agent_model_not_found',
      message: expect.stringContaining(cli.unknownModelMessage)
    });
  });
});
