// Gemini CLI (`@google/gemini-cli`, checked with 0.61.0) as a harness: how to start it headless so
// that it acts without prompting and streams JSON, where model, base prompt, MCP servers and
// credentials go, and how its `stream-json` output becomes our events.
//
// Facts of 0.61 this relies on: `gemini -p '' --output-format stream-json`, the prompt on stdin, prints one event a
// line (`init` with the session id, `message` (assistant text comes in `delta` chunks, joined here into
// one message up to the next tool call), `tool_use`,
// `tool_result`, `error`, and a closing `result` with the run's token totals); `--approval-mode yolo`
// approves every tool call but is overridden to "default" in a folder it does not trust, so
// `--skip-trust`; it reads GEMINI_API_KEY, and honours GOOGLE_GEMINI_BASE_URL only when
// `~/.gemini/settings.json` selects the API-key auth type; MCP servers are configured in that file
// too, and `~/.gemini/GEMINI.md` becomes part of its system instruction.

import { failureFrom } from './failure-words.js';
import type { HarnessEvent, HarnessInput, HarnessSpec, HarnessTranslator, McpServer } from './cli-spec.js';
import { BoundedText, CallMemory, MAX_MESSAGE_PART_CHARS, MAX_RESULT_CHARS } from './memory.js';

/** Tools of Gemini CLI that write the file named by their `file_path` parameter. */
const WRITING_TOOLS = new Set(['write_file', 'replace', 'edit']);

function mcpEntry(server: McpServer): Record<string, unknown> {
  if (server.command !== undefined) {
    return { command: server.command, args: server.args ?? [], ...(server.env ? { env: server.env } : {}) };
  }
  // Gemini CLI speaks streamable HTTP to `httpUrl` (its `url` key means the older SSE transport).
  return { httpUrl: server.url, ...(server.headers ? { headers: server.headers } : {}) };
}

/** `~/.gemini/settings.json`: API-key auth (so a base URL is honoured), no update checks or usage pings, MCP servers. */
export function geminiSettings(input: HarnessInput): Record<string, unknown> {
  const settings: Record<string, unknown> = {
    security: { auth: { selectedType: 'gemini-api-key' } },
    general: { enableAutoUpdate: false, enableAutoUpdateNotification: false },
    privacy: { usageStatisticsEnabled: false }
  };
  const servers = Object.entries(input.mcpServers ?? {});
  if (servers.length > 0) {
    settings.mcpServers = Object.fromEntries(servers.map(([name, server]) => [name, mcpEntry(server)]));
  }
  return settings;
}

type GeminiEvent = {
  type?: string;
  session_id?: string;
  role?: string;
  content?: string;
  delta?: boolean;
  tool_name?: string;
  tool_id?: string;
  parameters?: Record<string, unknown>;
  status?: string;
  output?: string;
  error?: { type?: string; message?: string };
  severity?: string;
  message?: string;
  stats?: { input_tokens?: number; output_tokens?: number; cached?: number };
};

/** What a Gemini translator remembers between lines of one run's stream. */
interface GeminiState {
  /** Tool id → the file it writes. */
  writes: CallMemory<string>;
  /** Assistant text not yet given out: its chunks are joined into one message. */
  pending: string;
  /** Assistant text since the last tool call: the final answer. */
  answer: BoundedText;
  failure?: string;
  lastError?: string;
}

export function geminiTranslator(): HarnessTranslator {
  const state: GeminiState = {
    writes: new CallMemory<string>(),
    pending: '',
    answer: new BoundedText(MAX_RESULT_CHARS)
  };
  return {
    line: value => geminiLine(state, (value ?? {}) as GeminiEvent),
    finish(exitCode, stderrTail) {
      const words = state.failure ?? (exitCode === 0 ? undefined : state.lastError);
      return failureFrom('gemini', exitCode, words, stderrTail);
    }
  };
}

/** The assistant text gathered so far, as one message (before a tool call, an error or the end). */
function flush(state: GeminiState): HarnessEvent[] {
  const text = state.pending;
  state.pending = '';
  return text ? [{ type: 'text', text }] : [];
}

/** The events of one line of Gemini CLI's stream. */
function geminiLine(state: GeminiState, event: GeminiEvent): HarnessEvent[] {
  switch (event.type) {
    case 'init':
      return event.session_id ? [{ type: 'session', id: event.session_id }] : [];
    case 'message':
      return assistantMessage(state, event);
    case 'tool_use': {
      const id = event.tool_id ?? '';
      const name = event.tool_name ?? '?';
      const path = event.parameters?.file_path;
      if (WRITING_TOOLS.has(name) && typeof path === 'string') state.writes.set(id, path);
      state.answer.clear();
      return [...flush(state), { type: 'action', id, name, input: event.parameters ?? {} }];
    }
    case 'tool_result':
      return toolResult(state, event);
    case 'error':
      if (event.message) state.lastError = event.message;
      return flush(state);
    case 'result':
      return runResult(state, event);
    default:
      return [];
  }
}

/** Assistant text: a chunk joins the pending message; a whole message is given out at once. */
function assistantMessage(state: GeminiState, event: GeminiEvent): HarnessEvent[] {
  if (event.role !== 'assistant' || !event.content) return [];
  if (event.delta) {
    state.pending += event.content;
    state.answer.add(event.content);
    // A message longer than a part is given out in parts: nothing joins without limit.
    return state.pending.length >= MAX_MESSAGE_PART_CHARS ? flush(state) : [];
  }
  state.pending = '';
  state.answer.set(event.content);
  return [{ type: 'text', text: event.content }];
}

/** A tool's result, and the file it wrote when it is a writing tool that succeeded. */
function toolResult(state: GeminiState, event: GeminiEvent): HarnessEvent[] {
  const id = event.tool_id ?? '';
  const ok = event.status === 'success';
  const events: HarnessEvent[] = [
    ...flush(state),
    { type: 'action_result', id, ok, output: event.output ?? event.error?.message ?? '' }
  ];
  const path = state.writes.get(id);
  if (ok && path !== undefined) events.push({ type: 'file_edit', path });
  state.writes.forget(id);
  return events;
}

/** The closing `result`: the final answer (or the failure) and the run's token totals. */
function runResult(state: GeminiState, event: GeminiEvent): HarnessEvent[] {
  const events: HarnessEvent[] = flush(state);
  if (event.status === 'success') {
    if (state.answer.length > 0) events.push({ type: 'final', ...state.answer.value });
  } else {
    state.failure =
      event.error?.message ?? state.lastError ?? `the run ended with status ${event.status ?? '?'}`;
  }
  const stats = event.stats ?? {};
  events.push({
    type: 'usage',
    input_tokens: stats.input_tokens ?? 0,
    output_tokens: stats.output_tokens ?? 0,
    cache_read_tokens: stats.cached ?? 0
  });
  return events;
}

export const geminiHarness: HarnessSpec = {
  kind: 'gemini',
  harnessType: 'gemini',
  defaultProgram: 'gemini',
  install: 'npm install -g @google/gemini-cli@0.61.0',
  keyVariables: ['GEMINI_API_KEY', 'GOOGLE_API_KEY'],
  args(input) {
    // `-p ''` runs it headless; the prompt comes on stdin (which it reads whole when stdin is not a
    // terminal), so a long prompt meets no argument-length limit and stays out of the process list.
    const args = ['-p', '', '--output-format', 'stream-json', '--approval-mode', 'yolo', '--skip-trust'];
    if (input.model) args.push('-m', input.model);
    // A follow-up continues the CLI's own session (kept under the run's HOME), by its session id.
    if (input.resumeSession) args.push('--resume', input.resumeSession);
    args.push(...input.extraArgs);
    return args;
  },
  stdin: input => input.prompt,
  homeFiles(input) {
    const files: Record<string, string> = {
      '.gemini/settings.json': `${JSON.stringify(geminiSettings(input), null, 2)}\n`
    };
    if (input.basePrompt) files['.gemini/GEMINI.md'] = `${input.basePrompt}\n`;
    return files;
  },
  env(_input, listed) {
    // Without GEMINI_CLI_NO_RELAUNCH the CLI starts a second node of itself with a heap of half the
    // machine's memory: a second start-up (about a third of its start-up time here) and a heap size
    // that ignores the run's memory limit.
    const env: Record<string, string> = { GEMINI_CLI_NO_RELAUNCH: 'true', ...listed };
    const key = listed.GEMINI_API_KEY ?? listed.GOOGLE_API_KEY;
    if (key !== undefined) env.GEMINI_API_KEY = key;
    return env;
  },
  translator: geminiTranslator
};
