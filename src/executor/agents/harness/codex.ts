// The Codex CLI (`@openai/codex`, checked with 0.169.0) as a harness: how to start `codex exec` so that
// it acts without prompting and streams JSON, where model, base prompt, MCP servers and credentials
// go, and how its `--json` event stream becomes our events.
//
// Facts of 0.169 this relies on: `codex exec --json` prints one event a line (`thread.started`,
// `item.started|completed` with command_execution / file_change / mcp_tool_call / agent_message
// items, `turn.completed` with usage, `turn.failed`, `error`); the prompt comes from stdin when the
// prompt argument is `-`; its built-in OpenAI provider reads its key from CODEX_API_KEY and its base
// URL only from the `openai_base_url` setting (OPENAI_API_KEY and OPENAI_BASE_URL are ignored), so the
// conventional variables a user lists are mapped here. `--dangerously-bypass-approvals-and-sandbox`
// turns off both its approvals and its own Landlock/bubblewrap sandbox: our sandbox is the boundary,
// and a nested sandbox cannot be set up inside it.

import { classifyFailure, failureFrom } from './failure-words.js';
import type {
  HarnessEvent,
  HarnessFailure,
  HarnessInput,
  HarnessSpec,
  HarnessTranslator,
  McpServer
} from './cli-spec.js';
import { CallMemory } from './memory.js';

/** A TOML basic string (JSON's escapes are TOML's, except that TOML also wants DEL escaped). */
function tomlString(value: string): string {
  return JSON.stringify(value).replace(/\u007f/g, '\\u007f');
}

function tomlTable(values: Record<string, string>): string {
  return `{ ${Object.entries(values)
    .map(([key, value]) => `${tomlString(key)} = ${tomlString(value)}`)
    .join(', ')} }`;
}

function mcpSection(name: string, server: McpServer): string {
  const lines = [`[mcp_servers.${tomlString(name)}]`];
  if (server.command !== undefined) {
    lines.push(`command = ${tomlString(server.command)}`);
    lines.push(`args = [${(server.args ?? []).map(tomlString).join(', ')}]`);
    if (server.env && Object.keys(server.env).length > 0) lines.push(`env = ${tomlTable(server.env)}`);
  } else if (server.url !== undefined) {
    lines.push(`url = ${tomlString(server.url)}`);
    if (server.headers && Object.keys(server.headers).length > 0) {
      lines.push(`http_headers = ${tomlTable(server.headers)}`);
    }
  }
  return lines.join('\n');
}

/**
 * `~/.codex/config.toml`: the base prompt and the MCP servers, kept out of the command line (they may
 * be long, and MCP env values and headers may be secrets). Analytics and the plugin marketplace are
 * off: otherwise every run also calls github.com, api.github.com, chatgpt.com and ab.chatgpt.com,
 * destinations a sandbox's network list should not need.
 */
export function codexConfig(input: HarnessInput): string {
  const parts = ['# Written by agent-executor for this run.'];
  if (input.basePrompt) parts.push(`developer_instructions = ${tomlString(input.basePrompt)}`);
  parts.push('[analytics]\nenabled = false', '[features]\nplugins = false');
  for (const [name, server] of Object.entries(input.mcpServers ?? {})) parts.push(mcpSection(name, server));
  return `${parts.join('\n\n')}\n`;
}

type Item = {
  id?: string;
  type?: string;
  text?: string;
  command?: string;
  aggregated_output?: string;
  exit_code?: number | null;
  status?: string;
  changes?: { path?: string; kind?: string }[];
  server?: string;
  tool?: string;
  arguments?: unknown;
  result?: { content?: { type?: string; text?: string }[]; structured_content?: unknown } | null;
  error?: { message?: string } | null;
  query?: string;
  message?: string;
};

type CodexEvent = {
  type?: string;
  thread_id?: string;
  item?: Item;
  usage?: {
    input_tokens?: number;
    cached_input_tokens?: number;
    cache_write_input_tokens?: number;
    output_tokens?: number;
  };
  error?: { message?: string };
  message?: string;
};

function mcpOutput(item: Item): string {
  if (item.error?.message) return item.error.message;
  const content = item.result?.content ?? [];
  const text = content.map(part => part.text ?? '').join('\n');
  if (text) return text;
  return item.result?.structured_content === undefined ? '' : JSON.stringify(item.result.structured_content);
}

/** What a tool item is called and takes, as an action; undefined for items that are not tool calls. */
function actionOf(item: Item): { name: string; input: unknown } | undefined {
  switch (item.type) {
    case 'command_execution':
      return { name: 'shell', input: { command: item.command ?? '' } };
    case 'file_change':
      return { name: 'apply_patch', input: { changes: item.changes ?? [] } };
    case 'mcp_tool_call':
      return { name: `${item.server ?? 'mcp'}.${item.tool ?? '?'}`, input: item.arguments ?? {} };
    case 'web_search':
      return { name: 'web_search', input: { query: item.query ?? '' } };
    default:
      return undefined;
  }
}

function resultOf(item: Item): { ok: boolean; output: string } {
  switch (item.type) {
    case 'command_execution':
      return {
        ok: item.status === 'completed' && item.exit_code === 0,
        output: item.aggregated_output ?? ''
      };
    case 'file_change':
      return {
        ok: item.status === 'completed',
        output: (item.changes ?? [])
          .map(change => `${change.kind ?? 'update'} ${change.path ?? ''}`)
          .join('\n')
      };
    case 'mcp_tool_call':
      return { ok: item.status === 'completed' && !item.error, output: mcpOutput(item) };
    default:
      return { ok: item.status !== 'failed', output: '' };
  }
}

/** What a Codex translator remembers between lines of one run's stream. */
interface CodexState {
  /** Calls already shown as started. */
  started: CallMemory<true>;
  lastMessage?: string;
  /** The turn.failed message. */
  failure?: string;
  /** The last `error` event's message (Codex's retries), in case no turn.failed follows. */
  lastError?: string;
  /** A failure retrying cannot cure, known while the CLI still runs. */
  certain?: HarnessFailure;
}

export function codexTranslator(): HarnessTranslator {
  const state: CodexState = { started: new CallMemory<true>() };
  return {
    line: value => codexLine(state, (value ?? {}) as CodexEvent),
    stopWith: () => state.certain,
    finish(exitCode, stderrTail) {
      if (state.certain) return state.certain;
      const words = state.failure ?? (exitCode === 0 ? undefined : state.lastError);
      return failureFrom('codex', exitCode, words, stderrTail);
    }
  };
}

/** The events of one line of Codex's stream. */
function codexLine(state: CodexState, event: CodexEvent): HarnessEvent[] {
  switch (event.type) {
    case 'thread.started':
      return event.thread_id ? [{ type: 'session', id: event.thread_id }] : [];
    case 'item.started':
      return codexItem(state, event, false);
    case 'item.completed':
      return codexItem(state, event, true);
    case 'turn.completed':
      return turnCompleted(state, event);
    case 'turn.failed':
      state.failure = event.error?.message ?? state.lastError ?? 'the turn failed';
      return [];
    case 'error':
      if (event.message) codexError(state, event.message);
      return [];
    default:
      return [];
  }
}

/** An item started or completed: a message, or a tool call and (when done) its result and file edits. */
function codexItem(state: CodexState, event: CodexEvent, done: boolean): HarnessEvent[] {
  const it = event.item ?? {};
  const id = it.id ?? '';
  if (it.type === 'agent_message') {
    if (!done || !it.text) return [];
    state.lastMessage = it.text;
    return [{ type: 'text', text: it.text }];
  }
  const action = actionOf(it);
  if (!action) return []; // reasoning, todo lists, and Codex's own warnings (`error` items)
  const events: HarnessEvent[] = [];
  if (!state.started.has(id)) {
    if (!done) state.started.set(id, true);
    events.push({ type: 'action', id, ...action });
  }
  if (done) {
    state.started.forget(id);
    events.push({ type: 'action_result', id, ...resultOf(it) });
    if (it.type === 'file_change' && it.status === 'completed') {
      for (const change of it.changes ?? [])
        if (change.path) events.push({ type: 'file_edit', path: change.path });
    }
  }
  return events;
}

/** The end of a turn: the last message as the final answer, and the turn's usage. */
function turnCompleted(state: CodexState, event: CodexEvent): HarnessEvent[] {
  const usage = event.usage ?? {};
  const events: HarnessEvent[] = [];
  if (state.lastMessage !== undefined) events.push({ type: 'final', text: state.lastMessage });
  events.push({
    type: 'usage',
    input_tokens: usage.input_tokens ?? 0,
    output_tokens: usage.output_tokens ?? 0,
    cache_read_tokens: usage.cached_input_tokens ?? 0,
    cache_write_tokens: usage.cache_write_input_tokens ?? 0
  });
  return events;
}

/** An `error` event: "Reconnecting... n/5 (…)" while Codex retries; the last one is kept. */
function codexError(state: CodexState, message: string): void {
  state.lastError = message;
  const cause = /^Reconnecting\.\.\. \d+\/\d+ \((.*)\)$/s.exec(message)?.[1] ?? message;
  const code = classifyFailure(cause);
  // A refused key or an unknown model does not get better by retrying (Codex retries a 401 ten times).
  if (code === 'agent_auth_failed' || code === 'agent_model_not_found')
    state.certain ??= { code, message: cause };
}

export const codexHarness: HarnessSpec = {
  kind: 'codex',
  harnessType: 'codex',
  defaultProgram: 'codex',
  install: 'npm install -g @openai/codex@0.169.0',
  keyVariables: ['OPENAI_API_KEY', 'CODEX_API_KEY'],
  args(input) {
    const args = ['exec', '--json', '--skip-git-repo-check', '--dangerously-bypass-approvals-and-sandbox'];
    if (input.model) args.push('-m', input.model);
    const baseUrl = input.listed?.OPENAI_BASE_URL;
    if (baseUrl) args.push('-c', `openai_base_url=${tomlString(baseUrl)}`);
    args.push(...input.extraArgs);
    // A follow-up continues the CLI's own session (its thread id), which lives in the run's HOME.
    if (input.resumeSession) args.push('resume', input.resumeSession);
    args.push('-');
    return args;
  },
  stdin: input => input.prompt,
  homeFiles: input => ({ '.codex/config.toml': codexConfig(input) }),
  env(_input, listed) {
    const env: Record<string, string> = { ...listed };
    const key = listed.CODEX_API_KEY ?? listed.OPENAI_API_KEY;
    if (key !== undefined) env.CODEX_API_KEY = key;
    return env;
  },
  translator: codexTranslator
};
