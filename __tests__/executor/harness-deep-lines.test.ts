// A line of a harness CLI's stream nested thousands deep (any process in the run's sandbox can
// write lines to the CLI's stdout): the translator's and the harness's walks over it (the secret
// removal, JSON.stringify) overflow the stack, and thrown from the stdout handler that ends the
// executor, every run of the node with it. The real harness (agents/harness/harness.ts) runs a
// real CLI process here, in a child Node process (support/source-child.ts) so that a crash is seen
// as the child's end, not this test's.
import { describe, expect, it } from '@jest/globals';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runSourceChild, sourcePath } from '../support/source-child.js';

/** Runs the Claude Code harness over a CLI that prints `lines`; answers the outcome and events, or ''. */
function harnessOver(lines: string[]): Promise<string> {
  const dir = mkdtempSync(join(tmpdir(), 'harness-deep-'));
  const stream = join(dir, 'stream.jsonl');
  writeFileSync(stream, lines.join('\n') + '\n');
  const script = `import { runHarness } from ${JSON.stringify(sourcePath('src/executor/agents/harness/harness.ts'))};
import { claudeCode } from ${JSON.stringify(sourcePath('src/executor/agents/harness/claude.ts'))};
import { RunProcesses } from ${JSON.stringify(sourcePath('src/executor/sandbox/spawn.ts'))};
const signal = new AbortController().signal;
const events = [];
const outcome = await runHarness(claudeCode, {
  runId: 'deep',
  prompt: 'hello',
  workspace: ${JSON.stringify(dir)},
  home: ${JSON.stringify(dir)},
  agent: { kind: 'claude-code', command: ['/bin/sh', '-c', 'cat "$0"', ${JSON.stringify(stream)}], args: [] },
  env: {},
  signal,
  record: async (kind, data) => void events.push({ kind, ...data }),
  processes: new RunProcesses({ cwd: ${JSON.stringify(dir)}, signal, record: () => () => undefined })
});
process.stdout.write(JSON.stringify({ outcome, kinds: events.map(event => event.kind), notes: events.filter(event => event.kind === 'notice').map(event => event.text) }));`;
  return runSourceChild(script, '', 60_000);
}

const DEPTH = 20_000;
const deep = (inner: string) => `${'['.repeat(DEPTH)}${inner}${']'.repeat(DEPTH)}`;

describe('a harness stream line nested 20,000 deep', () => {
  it('is skipped with one notice; the run goes on to its answer (it ended the executor)', async () => {
    const lines = [
      JSON.stringify({ type: 'system', subtype: 'init', session_id: 's1' }),
      `{"type":"assistant","message":{"content":[{"type":"tool_use","id":"t1","name":"Bash","input":${deep('1')}}]}}`,
      `{"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"t1","content":{"a":${deep('2')}}}]}}`,
      JSON.stringify({ type: 'assistant', message: { content: [{ type: 'text', text: 'still here' }] } }),
      JSON.stringify({ type: 'result', subtype: 'success', result: 'the answer', usage: {} })
    ];
    const shown = JSON.parse((await harnessOver(lines)) || '{}') as {
      outcome?: { state: string };
      kinds?: string[];
      notes?: string[];
    };
    expect(shown.outcome).toMatchObject({ state: 'SUCCEEDED' });
    expect(shown.kinds).toEqual(['agent_session', 'notice', 'message', 'result']);
    expect(shown.notes).toEqual([expect.stringMatching(/could not be read and was skipped/)]);
  });
});
