// Claude Code (checked with 2.1.331) in the harness: `claude -p` with the prompt on stdin, its
// stream as `--output-format stream-json --verbose` (one JSON object per line: `system` init with
// the session id, `assistant` messages with text and tool_use blocks, `user` messages with the
// tool results, one `result` with the answer, the usage and the cost), acting without prompting
// (`--permission-mode bypassPermissions`: the sandbox is the boundary). The model, the base prompt
// (`--append-system-prompt`) and MCP servers (`--mcp-config` in the run's HOME) come from the run.
// Claude Code retries a 401 for minutes unless the answer says not to: its `api_retry` lines name
// the status, so a refused key ends the run at the first one.

import type {
  HarnessEvent,
  HarnessFailure,
  HarnessInput,
  HarnessSpec,
  HarnessTranslator,
  McpServer
} from './cli-spec.js';
import { CallMemory } from './memory.js';

/** Where the run's MCP servers are written, relative to its HOME. */
const MCP_FILE = '.claude/agent-run-mcp.json';
/** Tools of Claude Code that write a file named by `file_path` (or `notebook_path`). */
const EDIT_TOOLS = new Set(['Write', 'Edit', 'MultiEdit', 'NotebookEdit']);

type Json = Record<string, unknown>;

function isObject(value: unknown): value is Json {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}

function mcpEntry(server: McpServer): Json {
  if (server.command)
    return { type: 'stdio', command: server.command, args: server.args ?? [], env: server.env ?? {} };
  return { type: 'http', url: server.url, headers: server.headers ?? {} };
}

/** A tool result's content as text: a string, or the text of its blocks. */
function resultText(content: unknown): string {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return content === undefined ? '' : JSON.stringify(content);
  return content
    .map(block => (isObject(block) && typeof block.text === 'string' ? block.text : JSON.stringify(block)))
    .join('\n');
}

/** The failure an HTTP status of the model API means. */
function byStatus(status: number, words: string): HarnessFailure {
  if (status === 401 || status === 403) return { code: 'agent_auth_failed', message: words };
  if (status === 429 || status === 529) return { code: 'agent_rate_limited', message: words };
  if (status === 404) return { code: 'agent_model_not_found', message: words };
  return { code: 'agent_crashed', message: words };
}

class ClaudeTranslator implements HarnessTranslator {
  private failure?: HarnessFailure;
  private early?: HarnessFailure;
  private result = false;
  /** Files an edit tool call names, by call id, reported once the call succeeded. */
  private readonly edits = new CallMemory<string>();

  line(value: unknown): HarnessEvent[] {
    if (!isObject(value)) return [];
    switch (value.type) {
      case 'system':
        return this.system(value);
      case 'assistant':
        return this.assistant(value);
      case 'user':
        return this.user(value);
      case 'result':
        return this.resultLine(value);
      default:
        return [];
    }
  }

  private system(value: Json): HarnessEvent[] {
    if (value.subtype === 'init' && typeof value.session_id === 'string')
      return [{ type: 'session', id: value.session_id }];
    if (value.subtype === 'api_retry' && typeof value.error_status === 'number') {
      const status = value.error_status;
      // A refused key or an unknown model does not get better by waiting; a rate limit may.
      if (status === 401 || status === 403 || status === 404)
        this.early = byStatus(
          status,
          `Claude Code: the model API answered ${status} (${String(value.error ?? 'error')}); stopped instead of retrying`
        );
    }
    return [];
  }

  private assistant(value: Json): HarnessEvent[] {
    const message = isObject(value.message) ? value.message : {};
    const content = Array.isArray(message.content) ? message.content : [];
    if (value.is_api_error_message === true || typeof value.error === 'string') {
      const words = content
        .map(block => (isObject(block) && typeof block.text === 'string' ? block.text : ''))
        .join(' ')
        .trim();
      const status = typeof value.api_error_status === 'number' ? value.api_error_status : 0;
      this.failure = byStatus(status, `Claude Code: ${words || String(value.error)}`);
      return [];
    }
    const events: HarnessEvent[] = [];
    for (const block of content) {
      if (!isObject(block)) continue;
      if (block.type === 'text' && typeof block.text === 'string')
        events.push({ type: 'text', text: block.text });
      if (block.type === 'tool_use' && typeof block.id === 'string') {
        const name = typeof block.name === 'string' ? block.name : 'tool';
        events.push({ type: 'action', id: block.id, name, input: block.input });
        const input = isObject(block.input) ? block.input : {};
        const path = input.file_path ?? input.notebook_path;
        if (EDIT_TOOLS.has(name) && typeof path === 'string') this.edits.set(block.id, path);
      }
    }
    return events;
  }

  private user(value: Json): HarnessEvent[] {
    const message = isObject(value.message) ? value.message : {};
    const content = Array.isArray(message.content) ? message.content : [];
    const events: HarnessEvent[] = [];
    for (const block of content) {
      if (!isObject(block) || block.type !== 'tool_result' || typeof block.tool_use_id !== 'string') continue;
      const ok = block.is_error !== true;
      events.push({ type: 'action_result', id: block.tool_use_id, ok, output: resultText(block.content) });
      const path = this.edits.get(block.tool_use_id);
      this.edits.forget(block.tool_use_id);
      if (ok && path !== undefined) events.push({ type: 'file_edit', path });
    }
    return events;
  }

  private resultLine(value: Json): HarnessEvent[] {
    this.result = true;
    const events: HarnessEvent[] = [];
    const usage = isObject(value.usage) ? value.usage : {};
    const count = (name: string) => (typeof usage[name] === 'number' ? usage[name] : 0);
    events.push({
      type: 'usage',
      input_tokens: count('input_tokens'),
      output_tokens: count('output_tokens'),
      cache_read_tokens: count('cache_read_input_tokens'),
      cache_write_tokens: count('cache_creation_input_tokens'),
      cost_usd: typeof value.total_cost_usd === 'number' ? value.total_cost_usd : undefined
    });
    const text = typeof value.result === 'string' ? value.result : '';
    const subtype = String(value.subtype ?? '');
    if (subtype === 'error_max_budget_usd') {
      this.failure = {
        code: 'budget_exceeded',
        message: `Claude Code stopped at its budget: ${text || subtype}`
      };
    } else if (value.is_error === true || subtype.startsWith('error')) {
      const status = typeof value.api_error_status === 'number' ? value.api_error_status : 0;
      const errors = Array.isArray(value.errors) ? value.errors.map(String).join('; ') : '';
      this.failure ??= byStatus(status, `Claude Code: ${text || errors || subtype}`);
    } else events.push({ type: 'final', text });
    return events;
  }

  stopWith(): HarnessFailure | undefined {
    return this.early;
  }

  finish(exitCode: number | null, stderrTail: string): HarnessFailure | undefined {
    if (this.early) return this.early;
    if (this.failure) return this.failure;
    const tail = stderrTail.trim().split('\n').slice(-5).join('\n');
    if (!this.result)
      return {
        code: 'agent_crashed',
        message: `Claude Code ended (exit code ${exitCode ?? 'none'}) without a result${tail ? `: ${tail}` : ''}`
      };
    return undefined;
  }
}

export const claudeCode: HarnessSpec = {
  kind: 'claude-code',
  harnessType: 'claude',
  defaultProgram: 'claude',
  install: 'npm install -g @anthropic-ai/claude-code@2.1.331',
  keyVariables: ['ANTHROPIC_API_KEY'],

  args(input: HarnessInput): string[] {
    const args = [
      '-p',
      '--output-format',
      'stream-json',
      '--verbose',
      '--permission-mode',
      'bypassPermissions'
    ];
    if (input.model) args.push('--model', input.model);
    if (input.basePrompt) args.push('--append-system-prompt', input.basePrompt);
    if (input.mcpServers) args.push('--mcp-config', `${input.home}/${MCP_FILE}`, '--strict-mcp-config');
    if (input.maxCostUsd !== undefined) args.push('--max-budget-usd', String(input.maxCostUsd));
    if (input.resumeSession) args.push('--resume', input.resumeSession);
    return [...args, ...input.extraArgs];
  },

  stdin: input => input.prompt,

  homeFiles(input: HarnessInput): Record<string, string> {
    if (!input.mcpServers) return {};
    const servers = Object.fromEntries(
      Object.entries(input.mcpServers).map(([name, s]) => [name, mcpEntry(s)])
    );
    return { [MCP_FILE]: JSON.stringify({ mcpServers: servers }, null, 2) };
  },

  env(_input: HarnessInput, listed: Record<string, string>): Record<string, string> {
    return {
      ...listed,
      // The sandbox is the boundary (and lets a root-started CLI act); no updater, telemetry or
      // other traffic beyond the model API, so the network list needs only the API's host.
      IS_SANDBOX: '1',
      DISABLE_AUTOUPDATER: '1',
      CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1'
    };
  },

  translator: () => new ClaudeTranslator()
};
