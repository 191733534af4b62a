// The main step with the toolkit mocked (@actions/core records, @actions/github answers from
// memory) against a real contract server: what it outputs, saves, logs and skips.
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it, jest } from '@jest/globals';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createFakeCore } from '../__fixtures__/core.js';
import { createFakeRepository, fakeGitHubModule } from '../__fixtures__/github.js';
import { ContractServer } from '../support/contract-server.js';

const core = createFakeCore();
const repository = createFakeRepository({ maintainer: 'admin', reader: 'read' });
jest.unstable_mockModule('@actions/core', () => core);
jest.unstable_mockModule('@actions/github', () => fakeGitHubModule(repository));
const { run } = await import('../../src/action/main.js');

const KEY = 'test-key-0123456789';
const ENV = ['GITHUB_EVENT_NAME', 'GITHUB_EVENT_PATH', 'GITHUB_ACTOR', 'GITHUB_REPOSITORY', 'GITHUB_RUN_ID'];
const saved = Object.fromEntries(ENV.map(name => [name, process.env[name]]));
const dir = mkdtempSync(join(tmpdir(), 'action-main-'));
let server: ContractServer;
let inputs: Record<string, string>;

beforeAll(async () => {
  server = await new ContractServer({ apiKey: KEY }).start();
});
afterAll(() => server.stop());
beforeEach(() => {
  for (const name of ENV) delete process.env[name];
  inputs = { prompt: 'Fix the bug', 'environment-id': 'env-1', 'api-key': KEY, 'base-url': server.url };
  server.requests.length = 0;
  server.onCreate = () => {};
  repository.calls.length = 0;
});
afterEach(() => {
  for (const name of ENV) {
    if (saved[name] === undefined) delete process.env[name];
    else process.env[name] = saved[name];
  }
});

function event(name: string, actor: string, payload: object): void {
  const path = join(dir, `${name}-${actor}.json`);
  writeFileSync(path, JSON.stringify(payload));
  Object.assign(process.env, {
    GITHUB_EVENT_NAME: name,
    GITHUB_EVENT_PATH: path,
    GITHUB_ACTOR: actor,
    GITHUB_REPOSITORY: 'octo/app'
  });
}

describe('main step', () => {
  it('creates, waits and reports the run, saving what the post step needs', async () => {
    server.onCreate = created =>
      server.script(created.run_id, [[300, { state: 'SUCCEEDED', session_link: 'https://s/1' }]]);
    core.reset({ ...inputs, 'github-token': 'ghs_token' });
    await run();
    const { outputs, state, failures, secrets, summary } = core.record;
    expect(failures).toEqual([]);
    expect(secrets).toEqual([KEY, 'ghs_token']);
    expect(outputs).toMatchObject({
      state: 'SUCCEEDED',
      conclusion: 'succeeded',
      'session-link': 'https://s/1'
    });
    expect(state).toEqual({ isPost: 'true', 'run-id': outputs['run-id'], settled: 'true' });
    expect(summary?.heading).toBe('Agent run');
    expect(summary?.rows).toContainEqual(['State', 'SUCCEEDED']);
    expect(server.requests.filter(r => r.method === 'POST').map(r => r.path)).toEqual(['/api/v1/agent/runs']);
  });

  it('attaches to an existing run given by run-id instead of creating one', async () => {
    core.reset({ ...inputs, wait: 'false' });
    await run();
    const runId = core.record.outputs['run-id']!;
    server.requests.length = 0;
    setTimeout(() => server.update(runId, { state: 'FAILED', status_message: 'red' }), 200);
    core.reset({ 'api-key': KEY, 'base-url': server.url, 'run-id': runId });
    await run();
    expect(server.count('POST', '/api/v1/agent/runs')).toBe(0);
    expect(core.record.outputs.conclusion).toBe('failed');
    expect(core.record.failures).toEqual([`Run ${runId} ended FAILED: red`]);
  });

  it('with wait: false, ends after the create and still writes a job summary', async () => {
    core.reset({ ...inputs, wait: 'false' });
    await run();
    const runId = core.record.outputs['run-id']!;
    expect(core.record.outputs).toMatchObject({ state: 'QUEUED', conclusion: '' });
    expect(core.record.summary?.rows).toContainEqual(['Run', `<code>${runId}</code>`]);
    expect(core.record.summary?.rows).toContainEqual(['State', 'QUEUED']);
    expect(core.record.state.settled).toBe('true');
  });

  it('skips a comment by someone without write permission, creating nothing', async () => {
    event('issue_comment', 'reader', {
      action: 'created',
      issue: { number: 7, title: 'Bug', body: '' },
      comment: { body: '@agent fix it', user: { login: 'reader' } }
    });
    core.reset({ ...inputs, 'github-token': 'ghs_token' });
    await run();
    expect(core.record.notices).toEqual([
      'Not starting the agent: reader has read permission on octo/app; min-permission is write.'
    ]);
    expect(core.record.outputs.conclusion).toBe('skipped');
    expect(core.record.state.settled).toBe('true');
    expect(core.record.failures).toEqual([]);
    expect(repository.calls).toEqual(['permission reader']);
    expect(server.requests).toHaveLength(0);
  });

  it('skips a fork pull request without secrets, or fails it with on-untrusted: fail', async () => {
    const fork = {
      pull_request: {
        number: 12,
        head: { ref: 'fix', repo: { full_name: 'stranger/app' } },
        base: { ref: 'main', repo: { full_name: 'octo/app' } }
      }
    };
    event('pull_request', 'stranger', fork);
    core.reset({ ...inputs, 'api-key': '' });
    await run();
    expect(core.record.notices[0]).toMatch(/^Not starting the agent: pull request #12 comes from a fork/);
    expect(core.record.failures).toEqual([]);
    core.reset({ ...inputs, 'api-key': '', 'on-untrusted': 'fail' });
    await run();
    expect(core.record.failures[0]).toMatch(/^Not starting the agent: pull request #12 comes from a fork/);
    expect(server.requests).toHaveLength(0);
  });

  it('fails on invalid inputs, naming each', async () => {
    core.reset({ ...inputs, timeout: 'soon', wait: 'maybe' });
    await run();
    expect(core.record.failures).toEqual([
      '2 inputs are invalid:\n- wait "maybe": expected true or false\n- timeout "soon": expected a duration such as 90s, 45m or 1h30m, above zero'
    ]);
    expect(server.requests).toHaveLength(0);
  });

  it('runs the post step when the state says so', async () => {
    core.reset(inputs, { isPost: 'true' });
    await run();
    expect(core.record.state).toEqual({ isPost: 'true' });
    expect(server.requests).toHaveLength(0);
  });
});
