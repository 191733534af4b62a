// What only the Gemini harness does, beyond the suite every agent CLI runs (harness-clis.test.ts):
// its spec's pure functions (arguments, environment, HOME files, the streamed chunks joined, a rate
// limit classified).
import { describe, expect, it } from '@jest/globals';
import { geminiHarness, geminiTranslator } from '../../src/executor/agents/harness/gemini.js';

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
