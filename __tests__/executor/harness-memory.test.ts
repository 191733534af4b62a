// A harness CLI's stream is not only the CLI's: any process in the run's sandbox can write lines to
// the CLI's stdout (it opens /proc/<the CLI>/fd/1, which the executor reads). What each translator
// keeps between lines must therefore stay bounded however long the stream: a translator that joins
// or remembers without limit grows the executor's heap until the process dies, with every run of
// the node. Each stream is fed to the translator in a child process whose heap is 256 MB, a
// quarter of what the forged stream carries: the child ends with what the translator gave out, or
// dies (out of memory, or an invalid string length thrown from the stdout handler).
import { describe, expect, it } from '@jest/globals';
import { runSourceChild, sourcePath } from '../support/source-child.js';

/** Feeds `lines` made by `make(i)` to the named harness's translator; answers a summary of its events. */
function feed(harness: 'gemini' | 'codex' | 'claude', make: string, lines: number, end: string) {
  const modules = {
    gemini: ['gemini.ts', 'geminiHarness'],
    codex: ['codex.ts', 'codexHarness'],
    claude: ['claude.ts', 'claudeCode']
  } as const;
  const [file, name] = modules[harness];
  const script = `import { ${name} as spec } from ${JSON.stringify(sourcePath(`src/executor/agents/harness/${file}`))};
const translator = spec.translator();
const MiB = 1024 * 1024;
// A fresh string a line, as JSON.parse gives one.
const big = i => String(i).padEnd(MiB, 'x');
const make = ${make};
let events = 0;
let longest = 0;
const seen = list => {
  for (const event of list) {
    events++;
    longest = Math.max(longest, JSON.stringify(event).length);
  }
};
for (let i = 0; i < ${lines}; i++) seen(translator.line(make(i)));
const last = translator.line(${end});
seen(last);
const final = last.find(event => event.type === 'final');
process.stdout.write(JSON.stringify({ events, longest, final: final && { chars: final.text.length, dropped: final.dropped } }));`;
  return runSourceChild(script, '', 120_000, ['--max-old-space-size=256']);
}

// 1,000 lines of 1 MiB: 1 GiB of characters, four times the child's heap.
const LINES = 1000;

describe('a harness translator fed a forged stream of 1 GiB', () => {
  it('Gemini: streamed text comes out in parts, and the answer keeps its first MiB with a count of the rest', async () => {
    const out = await feed(
      'gemini',
      "i => ({ type: 'message', role: 'assistant', delta: true, content: big(i) })",
      LINES,
      "{ type: 'result', status: 'success', stats: {} }"
    );
    const summary = JSON.parse(out || '{}') as { events: number; final?: { chars: number; dropped: number } };
    expect(summary.final).toEqual({ chars: 1024 * 1024, dropped: (LINES - 1) * 1024 * 1024 });
    expect(summary.events).toBeGreaterThan(LINES);
  }, 180_000);

  it('Codex: started calls that never complete are not all remembered', async () => {
    const out = await feed(
      'codex',
      "i => ({ type: 'item.started', item: { id: big(i), type: 'command_execution', command: 'ls' } })",
      LINES,
      "{ type: 'turn.completed', usage: {} }"
    );
    expect(JSON.parse(out || '{}')).toMatchObject({ events: LINES + 1 });
  }, 180_000);

  it('Claude Code: edit calls with no result are not all remembered', async () => {
    const out = await feed(
      'claude',
      "i => ({ type: 'assistant', message: { content: [{ type: 'tool_use', id: big(i), name: 'Write', input: { file_path: 'a.txt' } }] } })",
      LINES,
      "{ type: 'result', subtype: 'success', result: 'done', usage: {} }"
    );
    // Each call shown as an action, then the answer and the usage.
    expect(JSON.parse(out || '{}')).toMatchObject({ events: LINES + 2 });
  }, 180_000);
});
