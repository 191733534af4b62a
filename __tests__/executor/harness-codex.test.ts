// What only the Codex harness does, beyond the suite every agent CLI runs (harness-clis.test.ts):
// with the real, unmodified Codex CLI against a loopback stand-in for the OpenAI Responses API, an
// MCP server's tool offered up front to a model Codex has no metadata for, and a rate limit failing
// with the CLI's own words; then the spec's pure functions.
import { afterAll, afterEach, beforeAll, describe, expect, it } from '@jest/globals';
import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { codexHarness, codexTranslator } from '../../src/executor/agents/harness/codex.js';
import { installCli } from '../support/agent-clis.js';
import { removeHarnessDirs, runHarness } from '../support/harness-run.js';
import { type OpenAiStub, startOpenAiStub } from '../support/openai-stub.js';

const KEY = 'sk-test-codex-0123456789-secret';
const MCP_SERVER = resolve('__tests__/fixtures/mcp/lookup-server.mjs');
let codex: string;
let stub: OpenAiStub | undefined;

beforeAll(async () => {
  codex = await installCli('codex');
}, 900_000);

afterAll(() => removeHarnessDirs());

afterEach(async () => {
  await stub?.close();
  stub = undefined;
});

function listed(url: string): Record<string, string> {
  return { OPENAI_API_KEY: KEY, OPENAI_BASE_URL: url };
}

describe('codex harness with the real CLI, beyond the shared suite', () => {
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

  it('fails a rate limit as agent_rate_limited', async () => {
    stub = await startOpenAiStub({ status: 429 });
    const limited = await runHarness({
      spec: codexHarness,
      program: codex,
      input: { prompt: 'Say hello.', model: 'gpt-5.5' },
      listed: listed(stub.url)
    });
    expect(limited.failure).toEqual({ code: 'agent_rate_limited', message: expect.stringContaining('429') });
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
