// What a harness run is given, read from the run's create config and the environment: the model
// (config.model_id, then config.harness.model_id, then the environment's agent.model), the base
// prompt, the MCP servers (the service's shape, checked here), and which program runs the CLI.

import { closeSync, openSync, readSync } from 'node:fs';
import { delimiter, isAbsolute, join } from 'node:path';
import type { AgentConfig, AgentContext } from '../types.js';
import type { HarnessInput, HarnessSpec, McpServer } from './cli-spec.js';

/** An environment's `agent:` for a harness kind, as read from the config. */
export interface HarnessAgentConfig extends AgentConfig {
  /** The program (and arguments before the harness's); empty: the spec's usual name. */
  command: string[];
  model?: string;
  args: string[];
  max_cost_usd?: number;
}

function text(value: unknown): string | undefined {
  return typeof value === 'string' && value.trim() !== '' ? value : undefined;
}

function stringMap(value: unknown): Record<string, string> | undefined {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return undefined;
  const entries = Object.entries(value).filter(([, v]) => typeof v === 'string') as [string, string][];
  return Object.fromEntries(entries);
}

/** config.mcp_servers as the harness passes them on: stdio `{command, args, env}` or remote `{url, headers}`. */
export function mcpServersOf(value: unknown): Record<string, McpServer> | undefined {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return undefined;
  const servers: Record<string, McpServer> = {};
  for (const [name, raw] of Object.entries(value as Record<string, unknown>)) {
    if (raw === null || typeof raw !== 'object' || Array.isArray(raw)) continue;
    const server = raw as Record<string, unknown>;
    const command = text(server.command);
    const url = text(server.url);
    if (command) {
      const args = Array.isArray(server.args) ? server.args.filter(a => typeof a === 'string') : [];
      servers[name] = { command, args, env: stringMap(server.env) ?? {} };
    } else if (url) servers[name] = { url, headers: stringMap(server.headers) ?? {} };
  }
  return Object.keys(servers).length > 0 ? servers : undefined;
}

/** Most MCP servers a run's config may name. */
export const MAX_MCP_SERVERS = 20;
/** Most `env` entries, and most `headers` entries, of one MCP server. */
export const MAX_MCP_ENTRIES = 64;
/** Most bytes of JSON `config.mcp_servers` may take in all. */
export const MAX_MCP_BYTES = 64 * 1024;

/**
 * Why config.mcp_servers is over its bounds, naming the limit and the server, or undefined. Every
 * env value and header is a secret the harness removes from everything the CLI prints, so their
 * number and size are a cost paid on each line of a run's output (and the config is in every record).
 */
export function mcpServersProblem(value: unknown): string | undefined {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return undefined;
  const servers = Object.entries(value as Record<string, unknown>);
  if (servers.length > MAX_MCP_SERVERS)
    return `config.mcp_servers: ${servers.length} servers; at most ${MAX_MCP_SERVERS} are allowed`;
  for (const [name, server] of servers) {
    if (server === null || typeof server !== 'object') continue;
    for (const field of ['env', 'headers'] as const) {
      const map = (server as Record<string, unknown>)[field];
      const count = map !== null && typeof map === 'object' ? Object.keys(map).length : 0;
      if (count > MAX_MCP_ENTRIES)
        return `config.mcp_servers.${name.slice(0, 100)}.${field}: ${count} entries; at most ${MAX_MCP_ENTRIES} per server are allowed`;
    }
  }
  const bytes = Buffer.byteLength(JSON.stringify(value));
  if (bytes > MAX_MCP_BYTES) {
    const sizes = servers.map(
      ([name, server]) => [name, Buffer.byteLength(JSON.stringify(server) ?? '')] as const
    );
    const [largest, size] = sizes.reduce((a, b) => (b[1] > a[1] ? b : a));
    return `config.mcp_servers: ${bytes} bytes of JSON, over the limit of ${MAX_MCP_BYTES} (64 KiB); the largest server is ${largest.slice(0, 100)} (${size} bytes)`;
  }
  return undefined;
}

/**
 * A CLI session id to resume, as the CLIs write them (UUIDs and the like). It comes from the CLI's
 * own stream, which the run can influence, and it goes on the CLI's command line: anything else
 * (an option such as `--mcp-config=…`, a path, spaces) is not resumed, and the turn starts a new
 * session instead.
 */
export function resumableSession(id: string | undefined): string | undefined {
  return id !== undefined && /^[A-Za-z0-9][A-Za-z0-9._:-]{0,199}$/.test(id) ? id : undefined;
}

/**
 * How a model id looks (`claude-sonnet-4-5`, `gpt-5.1-codex`, `models/gemini-2.5-pro`,
 * `us.anthropic.claude-3-7-sonnet-20250219-v1:0`, `claude-opus-4-1@20250805`): it goes on the CLI's
 * command line after `-m`/`--model`, where a value starting with `-` would be read by some CLIs
 * (Gemini CLI's parser) as an option of its own.
 */
export const MODEL_ID_FORM = /^[A-Za-z0-9][A-Za-z0-9._:/@+-]{0,199}$/;

/** Why `value` (at `field`) cannot be a model id, or undefined when it can (or is not given). */
export function modelIdProblem(value: unknown, field: string): string | undefined {
  if (value === undefined || value === null) return undefined;
  if (typeof value === 'string' && MODEL_ID_FORM.test(value)) return undefined;
  const shown = typeof value === 'string' ? JSON.stringify(value.slice(0, 100)) : typeof value;
  return `${field} ${shown}: expected a model id (a letter or digit, then letters, digits and . _ : / @ + -, at most 200 characters), e.g. claude-sonnet-4-5`;
}

/** The harness input of a run; `home` is the path the CLI sees as HOME. */
export function harnessInput(context: AgentContext<HarnessAgentConfig>, home: string): HarnessInput {
  const config = context.runConfig ?? {};
  const harness = (config.harness ?? {}) as Record<string, unknown>;
  return {
    prompt: context.prompt,
    model: text(config.model_id) ?? text(harness.model_id) ?? context.agent.model,
    basePrompt: text(config.base_prompt),
    mcpServers: mcpServersOf(config.mcp_servers),
    home,
    workspace: context.workspace,
    resumeSession: resumableSession(context.resumeSession),
    extraArgs: context.agent.args,
    maxCostUsd: context.agent.max_cost_usd,
    listed: { ...context.env }
  };
}

/** Whether `file` is a script run by node (`#!/usr/bin/env node`, `#!/usr/bin/node`). */
function isNodeScript(file: string): boolean {
  try {
    const fd = openSync(file, 'r');
    try {
      const head = Buffer.alloc(128);
      const bytes = readSync(fd, head, 0, head.length, 0);
      const line = head.subarray(0, bytes).toString('utf8').split('\n')[0]!;
      return line.startsWith('#!') && /\bnode\b/.test(line);
    } finally {
      closeSync(fd);
    }
  } catch {
    return false;
  }
}

/** `program` on `path` (or itself when it names a path), or undefined. */
export function findOnPath(program: string, path: string): string | undefined {
  if (program.includes('/')) return program;
  for (const dir of path.split(delimiter)) {
    if (!isAbsolute(dir)) continue;
    const file = join(dir, program);
    try {
      closeSync(openSync(file, 'r'));
      return file;
    } catch {
      // not here
    }
  }
  return undefined;
}

/** The CLI's program and the arguments before the spec's: agent.command, else the spec's usual name. */
export function harnessCommand(agent: HarnessAgentConfig, spec: HarnessSpec): string[] {
  return agent.command.length > 0 ? agent.command : [spec.defaultProgram];
}

/**
 * How the host runs `command` (a program, then arguments before the spec's): a CLI that is a node
 * script runs on the executor's own node (Node 24; the machine's may be too old for it).
 */
export function programOf(command: string[]): { program: string; prefix: string[] } {
  const [program = '', ...prefix] = command;
  const found = findOnPath(program, process.env.PATH ?? '');
  if (found && isNodeScript(found)) return { program: process.execPath, prefix: [found, ...prefix] };
  return { program, prefix };
}
