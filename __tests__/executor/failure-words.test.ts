// How a CLI's error message becomes an error code (agents/harness/failure-words.ts). The message is
// whatever the CLI's stream says, and any process in the run's sandbox can write lines to the CLI's
// stdout: the words are read in the executor's own event loop, so reading them must take time in
// proportion to what is shown, however the message was crafted. The crafted one is read in a child
// process (support/source-child.ts), so a reading that never ends fails this test, not hangs it.
import { describe, expect, it } from '@jest/globals';
import { classifyFailure } from '../../src/executor/agents/harness/failure-words.js';
import { runSourceChild, sourcePath } from '../support/source-child.js';

describe('a CLI error message', () => {
  it.each([
    ['unexpected status 401 Unauthorized: Incorrect API key provided', 'agent_auth_failed'],
    ['[API Error: {"error":{"code":429,"status":"RESOURCE_EXHAUSTED"}}]', 'agent_rate_limited'],
    ['models/gemini-9 is not found for API version v1beta', 'agent_model_not_found'],
    ['The model `gpt-9` does not exist or you do not have access to it.', 'agent_model_not_found'],
    ['segmentation fault', 'agent_crashed']
  ])('%s → %s', (message, code) => {
    expect(classifyFailure(message)).toBe(code);
  });

  it('crafted to make a pattern backtrack is classified at once (it held the executor for hours)', async () => {
    const script = `import { classifyFailure } from ${JSON.stringify(sourcePath('src/executor/agents/harness/failure-words.ts'))};
let message = '';
process.stdin.on('data', chunk => (message += chunk));
process.stdin.on('end', () => process.stdout.write(classifyFailure(message)));`;
    // One stream line of `models/` and no space: 140 s of CPU a MiB before, quadratic in its length.
    const message = 'models/'.repeat(300_000);
    // Generous: classified in milliseconds.
    expect(await runSourceChild(script, message, 60_000)).toBe('agent_crashed');
  });
});
