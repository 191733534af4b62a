// The registry of agent kinds: the one place the config, the worker, the CLI and the node's
// start-up checks look a kind up. Adding a kind is its own file in this folder plus one line below
// (a harness: its HarnessSpec in harness/, wrapped by harnessKind); what the start-up checks need
// of it is in its entry (`check`, `program`), which __tests__/unit/agent-registry.test.ts holds to.

import { commandAgent } from './command.js';
import { claudeCode } from './harness/claude.js';
import { codexHarness } from './harness/codex.js';
import { geminiHarness } from './harness/gemini.js';
import { harnessKind } from './harness/kind.js';
import { simulatedAgent } from './simulated.js';
import type { AgentKind } from './types.js';

export const AGENT_KINDS: ReadonlyMap<string, AgentKind> = new Map(
  [
    simulatedAgent,
    commandAgent,
    harnessKind(claudeCode),
    harnessKind(codexHarness),
    harnessKind(geminiHarness)
  ].map(kind => [kind.kind, kind])
);

/** The kind an environment's `agent.kind` names; undefined for a kind this executor lacks. */
export function agentKindOf(kind: string): AgentKind | undefined {
  return AGENT_KINDS.get(kind);
}

export type {
  AgentCli,
  AgentConfig,
  AgentContext,
  AgentEnvironment,
  AgentKind,
  AgentProgram,
  AgentResult
} from './types.js';
