// A harness as an agent kind of the registry: its `agent:` settings (command, model, args,
// max_cost_usd), its start-up look for the CLI's program, the CLI the node's start-up checks run
// for its version (`program`), and its run (harness.ts). One kind per HarnessSpec, so Claude
// Code, Codex and Gemini CLI differ only in their spec file.
//
//   agent:
//     kind: claude-code
//     command: [/opt/tools/claude]   # optional; default: the CLI's usual name on the run's PATH
//     model: claude-sonnet-4-5       # optional; a run's config.model_id overrides it
//     args: []                       # optional extra arguments
//     max_cost_usd: 2.5              # optional; a run that costs more is stopped (budget_exceeded)

import { accessSync, constants, statSync } from 'node:fs';
import { show, showPath } from '../../values/config-reader.js';
import { type AgentKind, agentKind } from '../types.js';
import { runHarness } from './harness.js';
import { type HarnessAgentConfig, findOnPath, harnessCommand } from './input.js';

export type { HarnessAgentConfig };
import type { HarnessSpec } from './cli-spec.js';

function executable(path: string): boolean {
  try {
    accessSync(path, constants.X_OK);
    return statSync(path).isFile();
  } catch {
    return false;
  }
}

/** The agent kind that runs `spec`'s CLI. */
export function harnessKind(spec: HarnessSpec): AgentKind {
  return agentKind<HarnessAgentConfig>({
    kind: spec.kind,
    summary: `runs the ${spec.defaultProgram} CLI natively: its tool calls, usage and session in the run`,
    keys: ['command', 'model', 'args', 'max_cost_usd'],
    harnessType: spec.harnessType,
    program: {
      command: agent => harnessCommand(agent, spec),
      cli: {
        defaultProgram: spec.defaultProgram,
        versionArgs: spec.versionArgs ?? ['--version'],
        install: spec.install
      }
    },

    parse(agent, at, read) {
      const command =
        typeof agent.command === 'string' ? [agent.command] : read.strings(agent.command, `${at}.command`);
      const model = agent.model === undefined ? undefined : read.string(agent.model, `${at}.model`, '');
      const args = read.strings(agent.args, `${at}.args`);
      let max: number | undefined;
      if (agent.max_cost_usd !== undefined) {
        if (typeof agent.max_cost_usd === 'number' && agent.max_cost_usd > 0) max = agent.max_cost_usd;
        else
          read.problems.push(
            `${at}.max_cost_usd ${show(agent.max_cost_usd)}: expected a number of US dollars above 0, e.g. 2.5`
          );
      }
      return { kind: spec.kind, command, model, args, max_cost_usd: max };
    },

    describe: agent =>
      [spec.kind, agent.command[0] ?? spec.defaultProgram, agent.model ? `model ${agent.model}` : '']
        .filter(Boolean)
        .join(' '),

    check(environment, at, processEnv) {
      const program = environment.agent.command[0] ?? spec.defaultProgram;
      const found = findOnPath(program, processEnv.PATH ?? '');
      if (found && executable(found)) return [];
      const where = program.includes('/')
        ? `no executable file at ${program}`
        : `${program} is not on the PATH runs get (${processEnv.PATH ?? 'empty'})`;
      return [
        `${at}.command ${showPath(program)}: ${where}; install it with \`${spec.install}\`, or set ${at}.command to its path`
      ];
    },

    run: context => runHarness(spec, context)
  });
}
