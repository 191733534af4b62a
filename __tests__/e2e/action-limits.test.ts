// The bundled action against a service that sends too much or too slowly, run as the runner runs
// it: every output and the job summary stay under GitHub's 1 MiB limits (with notices naming what
// was cut), a record nested a million levels deep costs one field, not the step, and a service
// trickling the conversation cannot keep the step past its timeout and the documented grace
// (`timeout-grace`, shortened here).
import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import { ContractServer } from '../support/contract-server.js';
import { runAction, startAction } from '../support/runner.js';

const KEY = 'test-key-0123456789';
const MiB = 1024 * 1024;
let server: ContractServer;
let inputs: Record<string, string>;

beforeEach(async () => {
  server = await new ContractServer({ apiKey: KEY, conversation: true }).start();
  inputs = { prompt: 'Fix the bug', 'environment-id': 'env-1', 'api-key': KEY, 'base-url': server.url };
});
afterEach(() => server.stop());

const big = (char: string) => char.repeat(3 * 1000 * 1000);

function answer(text: string) {
  return {
    conversation_id: 'c1',
    steps: [{ id: 's1', messages: [{ role: 'assistant', content: [{ type: 'text', text }] }] }]
  };
}

describe('limits', () => {
  it('caps 3 MB fields and a 9 MB summary, and survives a record nested a million levels deep', async () => {
    const deep = `${'{"a":'.repeat(1_000_000)}1${'}'.repeat(1_000_000)}`;
    server.onCreate = run =>
      server.script(run.run_id, [
        [
          300,
          {
            state: 'FAILED',
            title: big('t'),
            status_message: big('<'),
            error_code: big('e'),
            session_link: `https://s.example/${big('l')}`,
            request_usage: { tokens: big('9') },
            artifacts: [
              {
                artifact_type: 'PULL_REQUEST',
                data: { url: `https://github.com/${big('u')}`, branch: big('b') }
              },
              ...Array.from({ length: 200 }, (_, i) => ({
                artifact_type: 'FILE',
                data: { filename: `${i}-${'f'.repeat(10_000)}` }
              }))
            ],
            conversation: answer(big('>')),
            raw_json: `"metadata":${deep}`
          }
        ]
      ]);
    const result = await runAction({ ...inputs, 'poll-interval': '100ms' });
    expect(result.code).toBe(1);
    expect(result.stderr).not.toMatch(/Maximum call stack|RangeError/);
    for (const [name, value] of Object.entries(result.outputs)) {
      expect([name, Buffer.byteLength(value) < MiB]).toEqual([name, true]);
    }
    expect(Buffer.byteLength(result.summary)).toBeLessThan(MiB);
    expect(result.outputs).toMatchObject({ state: 'FAILED', conclusion: 'failed' });
    const run = JSON.parse(result.outputs.run!) as Record<string, unknown>;
    expect(run.truncated).toBe(true);
    expect(run.metadata).toBe('[omitted: nested too deeply for a step output]');
    expect(result.outputs['status-message']!.startsWith('<<<')).toBe(true);
    const notices = result.stdout.split('\n').filter(line => line.startsWith('::notice::'));
    for (const name of [
      'status-message',
      'error-code',
      'session-link',
      'usage',
      'pull-request-url',
      'branch'
    ]) {
      expect(notices.some(line => line.includes(`The ${name} output`))).toBe(true);
    }
    expect(
      notices.some(line => line.startsWith('::notice::The job summary shows only the start of: Title'))
    ).toBe(true);
    // All outputs together stay a few MiB, not the 9 MB the fields add up to.
    const total = Object.values(result.outputs).reduce((sum, value) => sum + Buffer.byteLength(value), 0);
    expect(total).toBeLessThan(4 * MiB);
  }, 120_000);

  it('a slow service cannot keep the step past timeout + its grace', async () => {
    server.onCreate = run => {
      // Ended at once: the step is left reading what it made until its deadline.
      server.update(run.run_id, { state: 'SUCCEEDED', conversation: answer('done') });
      // Every read of the conversation takes a minute: ten of them used to keep the step for ten.
      server.fault(`GET /api/v1/agent/runs/${run.run_id}/conversation`, { kind: 'delay', ms: 60_000 }, 10);
    };
    // The same bound with timeout-grace 2s instead of the default 30 s, reached sooner.
    const started = startAction({
      ...inputs,
      timeout: '3s',
      'timeout-grace': '2s',
      'poll-interval': '100ms'
    });
    const result = await started.done;
    expect(result.code).toBe(0);
    expect(result.outputs.conclusion).toBe('succeeded');
    expect(result.stdout).toContain(
      "::warning::Could not read what the run produced: the step's deadline (timeout 3s + 2 s) passed"
    );
    // timeout + grace is 5 s; the step ends there, long before one stalled read (60 s) would, with
    // room for a loaded machine.
    expect(result.ms).toBeLessThan(60_000);
  }, 150_000);
});
