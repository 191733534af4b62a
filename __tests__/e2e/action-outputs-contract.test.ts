// The action's new endings and outputs against the contract server, run as the runner runs it:
// BLOCKED with on-blocked fail and wait, and a service without the conversation and artifact
// endpoints (those outputs empty, one notice, nothing fails, no extra polling).
import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import { ContractServer } from '../support/contract-server.js';
import { runAction } from '../support/runner.js';

const KEY = 'test-key-0123456789';
let server: ContractServer;
let inputs: Record<string, string>;

beforeEach(async () => {
  server = await new ContractServer({ apiKey: KEY }).start();
  inputs = { prompt: 'Fix the bug', 'environment-id': 'env-1', 'api-key': KEY, 'base-url': server.url };
});
afterEach(() => server.stop());

const warnings = (stdout: string) => stdout.split('\n').filter(line => line.startsWith('::warning::'));

describe('BLOCKED', () => {
  it('on-blocked: fail ends the step at once with conclusion blocked and leaves the run', async () => {
    server.onCreate = run =>
      server.script(run.run_id, [
        [300, { state: 'INPROGRESS', session_link: `${server.url}/sessions/${run.run_id}` }],
        [800, { state: 'BLOCKED', status_message: 'needs approval to push' }]
      ]);
    const result = await runAction({ ...inputs, 'on-blocked': 'fail' });
    expect(result.code).toBe(1);
    const runId = result.outputs['run-id']!;
    expect(result.outputs).toMatchObject({ state: 'BLOCKED', conclusion: 'blocked' });
    // At once on BLOCKED, not after a held poll's 50 s.
    expect(result.ms).toBeLessThan(50_000);
    const blocked = warnings(result.stdout).filter(line => line.includes('BLOCKED'));
    expect(blocked).toEqual([
      `::warning::Run ${runId} is BLOCKED: the agent is waiting for user input or approval. Open the session (its link is in the log above) to answer.`
    ]);
    expect(result.stdout).toContain(
      `::error::Run ${runId} is BLOCKED, waiting for user input or approval (on-blocked: fail)`
    );
    expect(result.summary).toContain('waiting for user input or approval');
    expect(result.summary).toContain(`<a href="${server.url}/sessions/${runId}">`);
    // Left as it is: no cancel, neither from the main step nor the post step (settled).
    expect(server.count('POST', `/api/v1/agent/runs/${runId}/cancel`)).toBe(0);
    expect(result.state.settled).toBe('true');
  });

  it('on-blocked: wait (the default) announces it once and waits for the end', async () => {
    server.onCreate = run =>
      server.script(run.run_id, [
        [300, { state: 'INPROGRESS', session_link: `${server.url}/sessions/${run.run_id}` }],
        [700, { state: 'BLOCKED' }],
        [1200, { state: 'INPROGRESS' }],
        [1600, { state: 'BLOCKED' }],
        [2200, { state: 'SUCCEEDED' }]
      ]);
    const result = await runAction(inputs);
    expect(result.code).toBe(0);
    expect(result.outputs).toMatchObject({ state: 'SUCCEEDED', conclusion: 'succeeded' });
    // Announced once however many of the two BLOCKED spells the polls saw (a loaded machine may
    // poll past the INPROGRESS between them), and followed to the end.
    expect(warnings(result.stdout).filter(line => line.includes('BLOCKED'))).toHaveLength(1);
    expect(result.stdout).toMatch(/BLOCKED → (?:INPROGRESS|SUCCEEDED)/);
  });

  it('refuses an on-blocked value it does not know', async () => {
    const result = await runAction({ ...inputs, 'on-blocked': 'ask' });
    expect(result.code).toBe(1);
    expect(result.stdout).toContain(`::error::on-blocked "ask": expected wait or fail`);
    expect(server.runs.size).toBe(0);
  });
});

describe('a service without the conversation and artifact endpoints', () => {
  it('leaves those outputs empty with one notice, fails nothing, and polls no more', async () => {
    server.onCreate = run =>
      server.script(run.run_id, [
        [300, { state: 'INPROGRESS' }],
        [
          3000,
          {
            state: 'SUCCEEDED',
            artifacts: [
              {
                artifact_type: 'PULL_REQUEST',
                data: { url: 'https://github.com/o/r/pull/7', branch: 'agent/fix' }
              },
              {
                artifact_type: 'FILE',
                data: { artifact_uid: 'art-1', filename: 'changes.patch', mime_type: 'text/x-diff' }
              },
              { artifact_type: 'SOMETHING_NEW', data: { whatever: 1 } }
            ]
          }
        ]
      ]);
    const schema = '{"type": "object", "required": ["verdict"]}';
    const result = await runAction({ ...inputs, 'output-schema': schema });
    expect(result.code).toBe(0);
    expect(result.outputs).toMatchObject({
      conclusion: 'succeeded',
      result: '',
      'structured-output': '',
      'patch-file': '',
      'transcript-file': '',
      'pull-request-url': 'https://github.com/o/r/pull/7',
      branch: 'agent/fix'
    });
    const artifacts = JSON.parse(result.outputs.artifacts!) as { artifact_type: string }[];
    expect(artifacts.map(a => a.artifact_type)).toEqual(['PULL_REQUEST', 'FILE', 'SOMETHING_NEW']);
    const notices = result.stdout.split('\n').filter(line => line.startsWith('::notice::'));
    expect(notices).toHaveLength(1);
    expect(notices[0]).toContain('no conversation endpoint');
    expect(notices[0]).toContain('no artifact endpoint');
    expect(result.stdout).not.toContain('::error::');
    expect(result.summary).toContain('<a href="https://github.com/o/r/pull/7">');
    // Without a transcript or conversation the run is not read beyond the wait's own polls:
    // one probe of each at the start, and the conversation once at the end for the outputs.
    const runId = result.outputs['run-id']!;
    expect(server.count('GET', `/api/v1/agent/runs/${runId}/transcript`)).toBe(1);
    expect(server.count('GET', `/api/v1/agent/runs/${runId}/conversation`)).toBe(2);
  });

  it('keeps outputs empty (not "[]") when the record has no artifacts field', async () => {
    server.onCreate = run => server.script(run.run_id, [[300, { state: 'SUCCEEDED' }]]);
    const result = await runAction({ ...inputs, 'log-conversation': 'false' });
    expect(result.code).toBe(0);
    expect(result.outputs.artifacts).toBe('');
    const runId = result.outputs['run-id']!;
    // log-conversation: false reads no transcript at all.
    expect(server.count('GET', `/api/v1/agent/runs/${runId}/transcript`)).toBe(0);
    expect(server.count('GET', `/api/v1/agent/runs/${runId}/conversation`)).toBe(1);
  });
});
