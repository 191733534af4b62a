// What one agent CLI contributes to the generic harness: how to start it, and how to read its stream.
export type HarnessKind = 'claude-code' | 'codex' | 'gemini';
/** The service's `config.harness.type` value each kind serves. */
export type HarnessType = 'claude' | 'codex' | 'gemini';

export interface McpServer {
  /** stdio */ command?: string; args?: string[]; env?: Record<string, string>;
  /** remote */ url?: string; headers?: Record<string, string>;
}

export interface HarnessInput {
  prompt: string;
  model?: string;                 // config.model_id, else the environment's agent.model
  basePrompt?: string;            // config.base_prompt
  mcpServers?: Record<string, McpServer>; // config.mcp_servers
  home: string;                   // the run's private HOME (host path of what the sandbox shows as HOME)
  workspace: string;
  resumeSession?: string;         // a CLI session id to resume: an earlier turn's, on a follow-up
  extraArgs: string[];            // the environment's agent.args
  /** Added by harness-claude: the environment's max_cost_usd, for a CLI that can stop itself there. */
  maxCostUsd?: number;
  /**
   * Added by harness-others: the variables the user listed (the values env() receives), for a spec whose
   * arguments depend on one (Codex takes its base URL only as `-c openai_base_url=…`, never from its
   * environment). Never put a secret from it into arguments.
   */
  listed?: Record<string, string>;
}

export interface HarnessSpec {
  kind: HarnessKind;
  harnessType: HarnessType;
  /** The CLI's usual program name on PATH (`claude`, `codex`, `gemini`). */
  defaultProgram: string;
  /** How to install it, said when it is missing: e.g. `npm install -g @anthropic-ai/claude-code`. */
  install: string;
  /**
   * The variables the CLI takes its model key from, the usual one first (`ANTHROPIC_API_KEY`): a
   * missing or refused key's failure names them, so the user knows what to list under `env`.
   */
  keyVariables: string[];
  args(input: HarnessInput): string[];
  /** Text on the CLI's stdin, or undefined (stdin closed). */
  stdin(input: HarnessInput): string | undefined;
  /** Files written into the run's HOME before start (relative path → content): settings, MCP config, GEMINI.md. */
  homeFiles(input: HarnessInput): Record<string, string>;
  /** Environment for the CLI from the variables the user listed (e.g. OPENAI_API_KEY → CODEX_API_KEY). */
  env(input: HarnessInput, listed: Record<string, string>): Record<string, string>;
  /** A translator for one run: one JSON value per stdout line in, our events out. */
  translator(): HarnessTranslator;
  /** Added by harness-claude: the arguments that print the CLI's version (default `--version`). */
  versionArgs?: string[];
}

export interface HarnessTranslator {
  line(value: unknown): HarnessEvent[];
  /** Called once at exit: the failure the CLI reported, in its own words, if any. */
  finish(exitCode: number | null, stderrTail: string): HarnessFailure | undefined;
  /**
   * Added by harness-claude: a failure already certain while the CLI still runs (it retries a 401
   * for minutes, say); asked after each line, and when it answers the harness stops the CLI.
   */
  stopWith?(): HarnessFailure | undefined;
}

export interface HarnessFailure {
  /** One of: agent_auth_failed, agent_rate_limited, agent_model_not_found, agent_crashed, budget_exceeded. */
  code: 'agent_auth_failed' | 'agent_rate_limited' | 'agent_model_not_found' | 'agent_crashed' | 'budget_exceeded';
  message: string;                // the CLI's words (the harness removes secrets before storing)
}

export type HarnessEvent =
  | { type: 'text'; text: string }                                   // assistant text as it comes
  | { type: 'action'; id: string; name: string; input: unknown }     // a tool call
  | { type: 'action_result'; id: string; ok: boolean; output: string } // its result (the harness bounds it)
  | { type: 'file_edit'; path: string }
  | { type: 'final'; text: string; dropped?: number }                // the final answer (`dropped`: characters left out past it)
  | { type: 'usage'; input_tokens: number; output_tokens: number;
      cache_read_tokens?: number; cache_write_tokens?: number; cost_usd?: number }
  | { type: 'session'; id: string };                                 // the CLI's session id
