// What an agent driver gets and gives back. The worker owns the run's lifecycle; a driver only
// does the work in the workspace and records what happened.

import type { EnvironmentConfig } from '../config.js';
import type { Outcome } from '../store/types.js';

export interface AgentContext {
  runId: string;
  prompt: string;
  /** Directory the agent works in: this run's own copy of the environment's source. */
  workspace: string;
  environment: EnvironmentConfig;
  /** Variables passed through from the executor's environment (by the environment's `env` list). */
  env: Record<string, string>;
  /** Fires when the run is cancelled, times out or the executor stops. */
  signal: AbortSignal;
  /** Appends an event to the run's transcript. */
  record(kind: string, data: Record<string, unknown>): Promise<void>;
}

export type AgentResult = Omit<Outcome, 'state'> & { state: 'SUCCEEDED' | 'FAILED' };

export interface Agent {
  run(context: AgentContext): Promise<AgentResult>;
}
