// A plan-mode run's answer becomes its PLAN artifact, titled by the answer's first heading. The
// answer is the agent's (a stranger's comment can steer it), and the executor reads the title in
// its own event loop: a title that takes hours to find freezes every run and request of the node.
// The crafted answer is read in a child process (support/source-child.ts), so that a title which
// never comes fails this test instead of hanging it.
import { describe, expect, it } from '@jest/globals';
import { planTitle } from '../../src/executor/worker/plan-artifact.js';
import { runSourceChild, sourcePath } from '../support/source-child.js';

/** planTitle(answer, null) in a child process: its output, or 'still running' once `waitMs` passed. */
function titleInChild(answer: string, waitMs: number): Promise<string> {
  const script = `import { planTitle } from ${JSON.stringify(sourcePath('src/executor/worker/plan-artifact.ts'))};
let answer = '';
process.stdin.on('data', chunk => (answer += chunk));
process.stdin.on('end', () => process.stdout.write(JSON.stringify(planTitle(answer, null))));`;
  return runSourceChild(script, answer, waitMs);
}

describe('the title of a plan', () => {
  it('is the first heading without its closing #s, else the run title, else "Plan"', () => {
    expect(planTitle('intro\n## Fix the parser ##\n1. read it', 'run')).toBe('Fix the parser');
    expect(planTitle('# C# tips\r\n', null)).toBe('C# tips');
    expect(planTitle('#not a heading\nplain text', 'The run')).toBe('The run');
    expect(planTitle('no heading', null)).toBe('Plan');
    expect(planTitle(`# ${'x'.repeat(300)}`, null)).toHaveLength(200);
  });

  it('of an answer crafted to make a pattern backtrack comes at once (it froze the executor for hours)', async () => {
    // A heading line with a long run of spaces that does not end the line, then the real heading.
    const answer = `# a${' '.repeat(50_000)}x\n# Second\n`;
    // Generous: the title is found in milliseconds; the old pattern needed about a day.
    const shown = await titleInChild(answer, 60_000);
    expect(shown).toBe(JSON.stringify(`a${' '.repeat(199)}`));
  });
});
