// Threads with the toolkit mocked (@actions/core records, @actions/github answers from memory)
// against a real contract server: which run a comment's turn goes to, what an approval sends,
// and the plan as the comment shows it.
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
const { parseRecord } = await import('../../src/action/comment.js');
const { planMarkup } = await import('../../src/action/plan-approval.js');

const KEY = 'test-key-0123456789';
const ENV = [
  'GITHUB_EVENT_NAME',
  'GITHUB_EVENT_PATH',
  'GITHUB_ACTOR',
  'GITHUB_REPOSITORY',
  'GITHUB_WORKFLOW'
];
const saved = Object.fromEntries(ENV.map(name => [name, process.env[name]]));
const dir = mkdtempSync(join(tmpdir(), 'action-thread-'));
let server: ContractServer;
let inputs: Record<string, string>;

beforeAll(async () => {
  server = await new ContractServer({ apiKey: KEY, conversation: true }).start();
});
afterAll(() => server.stop());
beforeEach(() => {
  for (const name of ENV) delete process.env[name];
  inputs = {
    prompt: '{{comment.body}}',
    'environment-id': 'env-1',
    'api-key': KEY,
    'base-url': server.url,
    'github-token': 'ghs_token',
    'trigger-phrase': '@agent',
    comment: 'sticky'
  };
  server.runs.clear();
  server.followups.length = 0;
  server.requests.length = 0;
  server.onCreate = created => server.script(created.run_id, [[100, { state: 'SUCCEEDED' }]]);
  server.onFollowup = ran => server.script(ran.run_id, [[100, { state: 'SUCCEEDED' }]]);
  repository.comments.clear();
});
afterEach(() => {
  for (const name of ENV) {
    if (saved[name] === undefined) delete process.env[name];
    else process.env[name] = saved[name];
  }
});

function comment(actor: string, body: string): void {
  const path = join(dir, `comment-${actor}.json`);
  writeFileSync(
    path,
    JSON.stringify({
      action: 'created',
      issue: { number: 9, title: 'Bug', body: '', user: { login: 'maintainer' } },
      comment: { body, user: { login: actor } }
    })
  );
  Object.assign(process.env, {
    GITHUB_EVENT_NAME: 'issue_comment',
    GITHUB_EVENT_PATH: path,
    GITHUB_ACTOR: actor,
    GITHUB_REPOSITORY: 'octo/app',
    GITHUB_WORKFLOW: 'agent'
  });
}

describe('the thread a comment belongs to', () => {
  it('creates with mode and metadata, then continues the same run in plan mode', async () => {
    comment('maintainer', '@agent plan a fix');
    core.reset({ ...inputs, mode: 'plan', continue: 'thread' });
    await run();
    const runId = core.record.outputs['run-id']!;
    expect(JSON.parse(server.requests.find(r => r.method === 'POST')!.body)).toMatchObject({
      mode: 'plan',
      metadata: { repository: 'octo/app', thread: '9', workflow: 'agent' }
    });
    expect(parseRecord(repository.comments.get(9)![0]!.body)).toEqual({ runId, mode: 'plan' });

    comment('maintainer', '@agent also cover the tests');
    core.reset({ ...inputs, mode: 'plan', continue: 'thread' });
    await run();
    expect(core.record.failures).toEqual([]);
    expect(core.record.outputs).toMatchObject({ 'run-id': runId, conclusion: 'succeeded' });
    expect(server.followups).toHaveLength(1);
    expect(server.followups[0]).toMatchObject({ run_id: runId, mode: 'plan' });
    expect(server.runs.size).toBe(1);
  });

  it('ignores a marker pasted into a comment by a person: the approval sends nothing', async () => {
    comment('maintainer', '@agent do it');
    core.reset(inputs);
    await run();
    const runId = core.record.outputs['run-id']!;
    // Someone copies the bot's hidden lines, claiming the run made a plan.
    const bot = repository.comments.get(9)![0]!;
    const forged = bot.body.replace('mode:normal', 'mode:plan');
    repository.comments.set(9, [{ id: 1, body: forged, user: { login: 'maintainer', type: 'User' } }, bot]);
    comment('maintainer', '/approve');
    core.reset({ ...inputs, mode: 'plan' });
    await run();
    expect(core.record.notices).toContainEqual(
      'The comment holds the approve phrase "/approve", but no run of this thread is waiting for its plan to be approved; nothing was sent.'
    );
    expect(core.record.outputs.conclusion).toBe('skipped');
    expect(server.followups).toHaveLength(0);
    expect(server.runs.size).toBe(1);
    expect(parseRecord(bot.body)).toEqual({ runId, mode: 'normal' });
  });

  it('creates in orchestrate mode and continues the same run in it, the thread record keeping the mode', async () => {
    comment('maintainer', '@agent split this into three reviews');
    core.reset({ ...inputs, mode: 'orchestrate', continue: 'thread' });
    await run();
    expect(core.record.failures).toEqual([]);
    const runId = core.record.outputs['run-id']!;
    expect(JSON.parse(server.requests.find(r => r.method === 'POST')!.body)).toMatchObject({
      mode: 'orchestrate'
    });
    expect(parseRecord(repository.comments.get(9)![0]!.body)).toEqual({ runId, mode: 'orchestrate' });

    comment('maintainer', '@agent now gather them');
    core.reset({ ...inputs, mode: 'orchestrate', continue: 'thread' });
    await run();
    expect(core.record.failures).toEqual([]);
    expect(server.followups).toEqual([expect.objectContaining({ run_id: runId, mode: 'orchestrate' })]);
    expect(server.runs.size).toBe(1);
  });

  it('with continue: off, a comment on a thread with a run starts a new run', async () => {
    comment('maintainer', '@agent one');
    core.reset(inputs);
    await run();
    comment('maintainer', '@agent two');
    core.reset(inputs);
    await run();
    expect(server.runs.size).toBe(2);
    expect(server.followups).toHaveLength(0);
  });

  it('names each bad thread input with the values it takes', async () => {
    core.reset({ ...inputs, mode: 'fast', continue: 'yes', supersede: 'maybe' });
    await run();
    expect(core.record.failures[0]).toContain('mode "fast": expected normal, plan or orchestrate');
    expect(core.record.failures[0]).toContain('continue "yes": expected off or thread');
    expect(core.record.failures[0]).toContain('supersede "maybe": expected true or false');
  });
});

describe('the plan in the comment', () => {
  it('shows a short plan as text and folds a long one inside <details>, with how to approve', () => {
    const short = planMarkup(
      { uid: 'p1', title: 'Fix [x](y)', markdown: 'ping @octo ![i](http://e/i.png)' },
      '/go'
    ).markup;
    expect(short).toContain('<pre>ping &#64; octo &#33;&#91;i&#93;&#40;http&#58;//e/i.png&#41;</pre>');
    expect(short).toContain('Fix &#91;x&#93;&#40;y&#41;');
    expect(short).toContain('reply with a comment containing <code>/go</code>');
    expect(short).not.toContain('<details>');
    const long = planMarkup({ uid: 'p2', title: 'Big', markdown: 'step\n'.repeat(40) }, '/approve').markup;
    expect(long).toMatch(/^<details><summary>📋 \*\*Plan\*\*: Big \(200 characters\)<\/summary>/);
  });
});

describe('label-trigger on pull_request, an event otherwise not gated', () => {
  function labeled(sender: string, label: string): void {
    const path = join(dir, `labeled-${sender}-${label}.json`);
    writeFileSync(
      path,
      JSON.stringify({
        action: 'labeled',
        label: { name: label },
        pull_request: {
          number: 3,
          title: 'Feature',
          body: '',
          head: { ref: 'feature', repo: { full_name: 'octo/app' } },
          base: { ref: 'main', repo: { full_name: 'octo/app' } },
          user: { login: 'maintainer' }
        },
        sender: { login: sender }
      })
    );
    Object.assign(process.env, {
      GITHUB_EVENT_NAME: 'pull_request',
      GITHUB_EVENT_PATH: path,
      GITHUB_ACTOR: sender,
      GITHUB_REPOSITORY: 'octo/app'
    });
  }

  it('checks whoever added the label: a reader starts nothing, a maintainer starts the run', async () => {
    const labelInputs = {
      ...inputs,
      prompt: 'Review the pull request',
      'label-trigger': 'agent',
      comment: 'off'
    };
    labeled('reader', 'agent');
    core.reset(labelInputs);
    await run();
    expect(core.record.notices).toEqual([
      'Not starting the agent: reader has read permission on octo/app; min-permission is write.'
    ]);
    expect(server.runs.size).toBe(0);
    labeled('maintainer', 'agent');
    core.reset(labelInputs);
    await run();
    expect(core.record.outputs.conclusion).toBe('succeeded');
    expect(server.runs.size).toBe(1);
  });
});
