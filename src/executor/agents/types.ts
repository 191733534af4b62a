// What an agent kind is: how it reads its settings from an environment's `agent:` mapping, what it
// checks at start-up (and which program the node's start-up checks look for), how the CLI shows
// it, and how it runs. The worker owns the run's lifecycle; a kind only does the work in the
// workspace and records what happened. A kind starts processes only through its context's
// `processes`, which confines each one in the run's sandbox (the lint forbids node:child_process
// in this folder).

import type { ConfigReader } from '../values/config-reader.js';
import type { Processes } from '../sandbox/spawn.js';
import type { Outcome } from '../store/types.js';

/** An environment's `agent:` as parsed: the kind, and that kind's own settings. */
export interface AgentConfig {
  kind: string;
  [setting: string]: unknown;
}

/** What a kind's start-up check knows of the environment it serves. */
export interface AgentEnvironment<C extends AgentConfig = AgentConfig> {
  id: string;
  /** A directory, or a git URL (then nothing of it is on this machine yet). */
  source: string;
  remoteSource: boolean;
  agent: C;
  /** Variables passed from the executor's environment to the run. */
  env: string[];
}

export interface AgentContext<C extends AgentConfig = AgentConfig> {
  runId: string;
  /** The environment the run runs in (an orchestrate turn's children run there unless told otherwise). */
  environmentId?: string;
  prompt: string;
  /** Directory the agent works in: this run's own copy of the environment's source. */
  workspace: string;
  agent: C;
  /** Variables passed through from the executor's environment (by the environment's `env` list). */
  env: Record<string, string>;
  /**
   * The container image the run's processes see as `/` (the environment's `image`): its programs are
   * the image's, looked up on its PATH inside, never the executor host's.
   */
  image?: string;
  /** Fires when the run is cancelled, times out or the executor stops. */
  signal: AbortSignal;
  /** Appends an event to the run's transcript. */
  record(kind: string, data: Record<string, unknown>): Promise<void>;
  /** The run's `config` as created (model_id, base_prompt, mcp_servers, harness, …). */
  runConfig?: Record<string, unknown>;
  /** The run's own HOME on the host (what the sandbox shows as HOME), kept for the whole run. */
  home?: string;
  /**
   * A harness run without a sandbox: a temporary folder of the turn's own on the host, for the CLI's
   * TMPDIR (a sandbox's /tmp is the run's own already), removed when the turn ends.
   */
  tmp?: string;
  /** The turn of the run's conversation, from 1; a later one is a follow-up's. */
  turn?: number;
  /**
   * `plan`: the workspace is read-only (the sandbox enforces it) and the final answer is the plan;
   * `orchestrate`: `env` holds AGENT_RUN_BASE_URL and the turn's AGENT_RUN_API_KEY, with which
   * the run may start and steer child runs of its own.
   */
  mode?: 'normal' | 'plan' | 'orchestrate';
  /** The CLI session an earlier turn left (its `agent_session` event), for a harness to resume. */
  resumeSession?: string;
  /**
   * The only way a kind starts a process: each goes through the run's sandbox, starts in the
   * workspace unless told otherwise, and is stopped with the run (cancel, timeout, shutdown).
   */
  processes: Processes;
}

export type AgentResult = Omit<Outcome, 'state'> & {
  state: 'SUCCEEDED' | 'FAILED';
  /** The run's request_usage as the agent's harness measured it (stored over AGENT_USAGE_FILE's). */
  request_usage?: Record<string, unknown>;
};

export interface AgentKind<C extends AgentConfig = AgentConfig> {
  kind: string;
  /** One line for the CLI's usage: what the kind does. */
  summary: string;
  /** Keys of `agent:` the kind reads besides `kind`. */
  keys: string[];
  /** Reads the kind's settings; problems go to the reader, named with `at` (e.g. environments[0].agent). */
  parse(agent: Record<string, unknown>, at: string, read: ConfigReader): C;
  /** The agent column of `environments list`. */
  describe(agent: C): string;
  /**
   * Problems that would fail every run of the environment, found before the executor listens
   * (e.g. a program not on the PATH runs get). Each names the key, the bad value and the expected form.
   */
  check?(environment: AgentEnvironment<C>, at: string, processEnv: NodeJS.ProcessEnv): string[];
  /** The `config.harness.type` a run of this kind may name (a harness kind); undefined: any. */
  harnessType?: string;
  /**
   * The program the kind's runs start, which the start-up checks look for on the host
   * (node/harness-startup.ts) and in an image (node/image-startup.ts); undefined: none (simulated).
   */
  program?: AgentProgram<C>;
  run(context: AgentContext<C>): Promise<AgentResult>;
}

/** What the start-up checks know of the program a kind's runs start. */
export interface AgentProgram<C extends AgentConfig = AgentConfig> {
  /** The program a run of `agent` starts, then the arguments it puts before the kind's own. */
  command(agent: C): string[];
  /** The known CLI a harness kind runs, whose version the checks print; undefined: only looked for. */
  cli?: AgentCli;
}

/** A harness kind's CLI, as the start-up checks run it. */
export interface AgentCli {
  /** Its usual program name (`claude`): the program when agent.command names none. */
  defaultProgram: string;
  /** The arguments that make it print its version. */
  versionArgs: string[];
  /** How to install it, said when it is missing or does not run. */
  install: string;
}

/** Erases a kind's settings type so that kinds of different settings share one registry. */
export function agentKind<C extends AgentConfig>(kind: AgentKind<C>): AgentKind {
  return kind as unknown as AgentKind;
}
