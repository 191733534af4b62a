// Every kind of the agent registry (src/executor/agents/index.ts) carries what the node's start-up
// checks read of it: a kind whose runs start a program has its own check and names that program,
// and a harness kind also names its CLI (usual program, version arguments, install command), which
// node/harness-startup.ts and node/image-startup.ts run. The checks find a kind only through the
// registry, so a kind registered without these would be skipped there without a word.
import { describe, expect, it } from '@jest/globals';
import { AGENT_KINDS } from '../../src/executor/agents/index.js';
import { ConfigReader } from '../../src/executor/values/config-reader.js';

const kinds = [...AGENT_KINDS.values()];

/** The kind's settings as the config reads an `agent:` that names only the kind (and `command`). */
function settingsOf(kind: (typeof kinds)[number], agent: Record<string, unknown> = {}) {
  return kind.parse({ kind: kind.kind, ...agent }, 'agent', new ConfigReader([]));
}

describe('the agent registry', () => {
  it('has kinds, each under its own name', () => {
    expect(kinds.length).toBeGreaterThan(0);
    for (const [name, kind] of AGENT_KINDS) expect(kind.kind).toBe(name);
  });

  describe.each(kinds.map(kind => [kind.kind, kind] as const))('kind %s', (_name, kind) => {
    it('has a start-up check exactly when its runs start a program', () => {
      expect(typeof kind.check === 'function').toBe(kind.program !== undefined);
    });

    it('names a CLI exactly when it is a harness kind', () => {
      expect(kind.program?.cli !== undefined).toBe(kind.harnessType !== undefined);
    });

    it('names the program a run starts: agent.command first', () => {
      if (!kind.program) return;
      const agent = settingsOf(kind, { command: ['/opt/tools/agent', '--flag'] });
      expect(kind.program.command(agent)).toEqual(['/opt/tools/agent', '--flag']);
    });

    it('as a harness kind, names its CLI: its usual program, version arguments and install command', () => {
      const cli = kind.program?.cli;
      if (kind.harnessType === undefined) return;
      expect(typeof kind.check).toBe('function');
      expect(cli?.defaultProgram).toMatch(/^[a-z][a-z0-9-]*$/);
      expect(cli?.versionArgs.length).toBeGreaterThan(0);
      expect(cli?.install).toMatch(/\S/);
      // Without agent.command a run starts the CLI's usual program.
      expect(kind.program!.command(settingsOf(kind))).toEqual([cli!.defaultProgram]);
    });
  });
});
