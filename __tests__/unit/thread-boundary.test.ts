// The action's trust boundary on a thread (issue 34), with the toolkit mocked (@actions/core
// records, @actions/github answers from memory as the GitHub stand-in) against a contract server:
// a thread touches only its own runs and its own comments, an approval carries out only the plan
// the comment shows, phrases count only outside quotes and code, an older step never overwrites a
// newer one's record, and nothing of a run's text reaches GitHub live.
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it, jest } from '@jest/globals';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createFakeCore } from '../__fixtures__/core.js';
import { createFakeRepository, fakeGitHubModule } from '../__fixtures__/github.js';
import { ContractServer, type StoredRun } from '../support/contract-server.js';
import { HOSTILE, liveParts } from '../support/live-markup.js';

const core = createFakeCore();
const repository = createFakeRepository({ maintainer: 'admin', stranger: 'read' });
jest.unstable_mockModule('@actions/core', () => core);
jest.unstable_mockModule('@actions/github', () => fakeGitHubModule(repository));
const { run } = await import('../../src/action/main.js');
const { parseRecord } = await import('../../src/action/comment.js');
const { markdownFields, plainFields } = await import('../../src/executor/publish/pr-text.js');

const KEY = 'test-key-0123456789';
const ENV = [
  'GITHUB_EVENT_NAME',
  'GITHUB_EVENT_PATH',
  'GITHUB_ACTOR',
  'GITHUB_REPOSITORY',
  'GITHUB_WORKFLOW',
  'GITHUB_RUN_ID',
  'GITHUB_RUN_ATTEMPT'
];
const saved = Object.fromEntries(ENV.map(name => [name, process.env[name]]));
const dir = mkdtempSync(join(tmpdir(), 'thread-boundary-'));
let server: ContractServer;
let inputs: Record<string, string>;
let runNumber = 1000;

beforeAll(async () => {
  server = await new ContractServer({ apiKey: KEY, conversation: true }).start();
});
afterAll(async () => {
  await server.stop();
  rmSync(dir, { recursive: true, force: true });
});
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
  server.options.metadataFilter = true;
  server.onCreate = created => server.script(created.run_id, [[50, { state: 'SUCCEEDED' }]]);
  server.onFollowup = ran => server.script(ran.run_id, [[50, { state: 'SUCCEEDED' }]]);
  repository.comments.clear();
});
afterEach(() => {
  for (const name of ENV) {
    if (saved[name] === undefined) delete process.env[name];
    else process.env[name] = saved[name];
  }
});

/** A comment by `actor` on issue 9 of octo/app, as a new workflow run (a later run id each time). */
function comment(actor: string, body: string, runId = ++runNumber): void {
  const path = join(dir, `comment-${randomUUID()}.json`);
  writeFileSync(
    path,
    JSON.stringify({
      action: 'created',
      issue: { number: 9, title: 'Bug', body: '', user: { login: 'maintainer' } },
      comment: { body, user: { login: actor } },
      repository: { full_name: 'octo/app', private: false }
    })
  );
  Object.assign(process.env, {
    GITHUB_EVENT_NAME: 'issue_comment',
    GITHUB_EVENT_PATH: path,
    GITHUB_ACTOR: actor,
    GITHUB_REPOSITORY: 'octo/app',
    GITHUB_WORKFLOW: 'agent',
    GITHUB_RUN_ID: String(runId),
    GITHUB_RUN_ATTEMPT: '1'
  });
}

/** A run the service holds without this action having made it. */
function existing(state: string, metadata?: Record<string, string>): string {
  const now = new Date().toISOString();
  const stored: StoredRun = {
    run_id: randomUUID(),
    state,
    prompt: 'someone else’s work',
    config: { environment_id: 'env-1' },
    created_at: now,
    updated_at: now,
    version: 1,
    ...(metadata ? { metadata } : {})
  };
  server.runs.set(stored.run_id, stored);
  return stored.run_id;
}

const comments = () => repository.comments.get(9) ?? [];
const created = () => server.requests.filter(r => r.method === 'POST' && /\/agent\/runs?$/.test(r.path));
const cancelled = () =>
  server.requests.filter(r => r.path.endsWith('/cancel')).map(r => r.path.split('/').at(-2));

/** The step's own comment on issue 9, with its marker, naming `runId` (as an earlier step wrote it). */
async function ownRecordNaming(runId: string, mode: 'normal' | 'plan'): Promise<void> {
  comment('maintainer', '@agent hello');
  core.reset(inputs);
  await run();
  const own = comments()[0]!;
  own.body = own.body.replace(
    /<!-- agent-run-run:\S+ mode:\w+ -->/,
    `<!-- agent-run-run:${runId} mode:${mode} -->`
  );
  server.requests.length = 0;
  server.followups.length = 0;
}

describe('a thread touches only its own runs', () => {
  it('supersede against a service that ignores the metadata filter cancels only this thread’s run', async () => {
    server.options.metadataFilter = false;
    const other = existing('INPROGRESS', { repository: 'octo/other', thread: '9', workflow: 'agent' });
    const otherThread = existing('INPROGRESS', { repository: 'octo/app', thread: '99', workflow: 'agent' });
    const otherWorkflow = existing('INPROGRESS', {
      repository: 'octo/app',
      thread: '9',
      workflow: 'nightly'
    });
    const bare = existing('INPROGRESS');
    const mine = existing('INPROGRESS', { repository: 'octo/app', thread: '9', workflow: 'agent' });
    comment('maintainer', '@agent start over');
    core.reset({ ...inputs, supersede: 'true', comment: 'off' });
    await run();
    expect(core.record.failures).toEqual([]);
    expect(cancelled()).toEqual([mine]);
    for (const id of [other, otherThread, otherWorkflow, bare])
      expect(server.runs.get(id)!.state).toBe('INPROGRESS');
    expect(core.record.notices).toContainEqual(
      expect.stringMatching(/^supersede: left alone 4 run\(s\) that are not this thread's and workflow's/)
    );
  });

  it('a record naming a run without metadata is neither continued, approved nor cancelled', async () => {
    const bare = existing('SUCCEEDED');
    server.plan(bare, 'the plan of a run started from a terminal');
    for (const body of ['@agent continue please', '/approve']) {
      await ownRecordNaming(bare, 'plan');
      comment('maintainer', body);
      core.reset({ ...inputs, mode: 'plan', continue: 'thread', supersede: 'true' });
      await run();
      expect(core.record.failures).toEqual([]);
      expect(core.record.warnings).toContainEqual(
        `The thread's progress comment names run ${bare}, which has no metadata naming a repository and thread: it is not this thread's run, so it is neither continued, approved nor cancelled.`
      );
      expect(server.followups).toEqual([]);
      expect(cancelled()).toEqual([]);
    }
  });

  it('a record whose run cannot be read is not touched, with one notice', async () => {
    await ownRecordNaming('gone-run', 'normal');
    comment('maintainer', '@agent continue please');
    core.reset({ ...inputs, continue: 'thread' });
    await run();
    expect(server.followups).toEqual([]);
    expect(created()).toHaveLength(1);
    expect(core.record.notices.filter(n => n.includes('gone-run'))).toEqual([
      expect.stringContaining('names run gone-run, whose record could not be read')
    ]);
  });

  it('another bot’s comment that begins with the marker is neither read nor edited', async () => {
    const victim = existing('INPROGRESS', { repository: 'octo/app', thread: '9', workflow: 'agent' });
    await ownRecordNaming(victim, 'normal');
    // The same text, written by another bot (one that echoes what strangers wrote, say).
    const forged = {
      id: 1,
      body: comments()[0]!.body,
      user: { login: 'greeter[bot]', type: 'Bot' as const }
    };
    repository.comments.set(9, [forged]);
    comment('maintainer', '@agent keep going');
    core.reset({ ...inputs, continue: 'thread' });
    await run();
    expect(server.followups).toEqual([]);
    expect(comments()[0]).toEqual(forged);
    expect(comments()).toHaveLength(2);
    expect(parseRecord(comments()[1]!.body)?.runId).toBe(core.record.outputs['run-id']);
  });
});

describe('an approval carries out exactly the plan the comment shows', () => {
  async function planned(markdown = 'Step 1: fix it', url?: string): Promise<string> {
    server.onCreate = created =>
      setTimeout(() => {
        const uid = server.plan(created.run_id, markdown);
        if (url) {
          const artifacts = server.runs.get(created.run_id)!.artifacts as { data: Record<string, unknown> }[];
          artifacts.at(-1)!.data.url = url;
        }
        void uid;
        server.update(created.run_id, { state: 'SUCCEEDED' });
      }, 50);
    comment('maintainer', '@agent plan a fix');
    core.reset({ ...inputs, mode: 'plan' });
    await run();
    expect(core.record.outputs.conclusion).toBe('succeeded');
    return core.record.outputs['run-id']!;
  }

  async function approve(): Promise<void> {
    comment('maintainer', '/approve');
    core.reset({ ...inputs, mode: 'plan' });
    await run();
  }

  it('not while the plan is still being made, nor after a failed plan turn', async () => {
    const runId = await planned();
    server.update(runId, { state: 'INPROGRESS' });
    await approve();
    expect(core.record.notices).toContainEqual(
      `The comment holds the approve phrase "/approve", but the plan is still being made (run ${runId} is INPROGRESS); nothing was sent.`
    );
    server.update(runId, { state: 'FAILED', status_message: 'the model gave up' });
    await approve();
    expect(core.record.notices).toContainEqual(
      `The comment holds the approve phrase "/approve", but the plan turn failed (run ${runId} ended FAILED); nothing was sent.`
    );
    expect(server.followups).toEqual([]);
    server.update(runId, { state: 'SUCCEEDED' });
    await approve();
    expect(server.followups).toEqual([expect.objectContaining({ run_id: runId, mode: 'normal' })]);
  });

  it('not a newer plan the comment never showed', async () => {
    const runId = await planned();
    server.plan(runId, 'a different plan, made after the comment was written');
    await approve();
    expect(core.record.notices).toContainEqual(expect.stringContaining('but the plan could not be shown'));
    expect(server.followups).toEqual([]);
  });

  it('a 20,000-< plan fits the comment, cut; approvable only with a link to the whole', async () => {
    const runId = await planned('<'.repeat(20_000));
    expect(core.record.warnings).toEqual([]);
    const body = comments()[0]!.body;
    expect(body.length).toBeLessThanOrEqual(65_536);
    expect(body).toContain('it cannot be approved from this comment');
    await approve();
    expect(core.record.notices).toContainEqual(expect.stringContaining('but the plan could not be shown'));
    expect(server.followups).toEqual([]);

    repository.comments.clear();
    const linked = await planned('<'.repeat(20_000), 'https://plans.example/p/1');
    expect(linked).not.toBe(runId);
    const shown = comments()[0]!.body;
    expect(shown.length).toBeLessThanOrEqual(65_536);
    expect(shown).toContain('<a href="https://plans.example/p/1">read the whole plan</a>');
    await approve();
    expect(server.followups).toEqual([expect.objectContaining({ run_id: linked, mode: 'normal' })]);
  });
});

describe('phrases count only outside quoted lines and code', () => {
  it.each([
    ['a quoted approve line', '> To carry it out, reply with a comment containing /approve\n\nwhy step 2?'],
    ['a quoted trigger', '> @agent do it\n\nI disagree'],
    ['inline code', 'the bot answers to `@agent` and `/approve`'],
    ['a fenced block', '```\n@agent /approve\n```\nsee the log above']
  ])('%s starts and approves nothing', async (_name, body) => {
    comment('maintainer', body);
    core.reset({ ...inputs, mode: 'plan', continue: 'thread' });
    await run();
    expect(core.record.notices).toEqual([
      'Not starting the agent: the comment does not contain the trigger phrase "@agent".'
    ]);
    expect(server.requests).toEqual([]);
  });
});

describe('one step per thread at a time', () => {
  it('an older step does not overwrite the record a newer step wrote', async () => {
    comment('maintainer', '@agent newer request', 500);
    core.reset(inputs);
    await run();
    const newer = core.record.outputs['run-id']!;
    expect(parseRecord(comments()[0]!.body)).toMatchObject({ runId: newer, step: { run: 500, attempt: 1 } });

    comment('maintainer', '@agent older request, delivered late', 499);
    core.reset(inputs);
    await run();
    expect(core.record.outputs['run-id']).not.toBe(newer);
    expect(comments()).toHaveLength(1);
    expect(parseRecord(comments()[0]!.body)).toMatchObject({ runId: newer, step: { run: 500, attempt: 1 } });
    expect(core.record.notices).toContainEqual(
      "A newer step (workflow run 500, attempt 1) now reports on #9's progress comment; this step no longer updates it."
    );
  });
});

describe('nothing of a run reaches GitHub live', () => {
  function conversationOf(answer: string) {
    return {
      conversation_id: 'conv-1',
      steps: [
        { id: 's1', messages: [{ role: 'assistant', content: [{ type: 'text', text: answer }] }], steps: [] }
      ]
    };
  }

  it('hostile answer, status message, title, plan and artifact names: comment and summary are inert', async () => {
    const hostileArtifacts = [
      { artifact_type: 'FILE', data: { artifact_uid: 'f1', filename: HOSTILE, mime_type: 'text/plain' } },
      { artifact_type: 'SCREENSHOT', data: { artifact_uid: 'f2', description: HOSTILE, title: HOSTILE } },
      { artifact_type: HOSTILE, data: { title: HOSTILE } }
    ];
    const bodies: string[] = [];
    const summaries: string[] = [];
    const finish = (fields: Partial<StoredRun>) => {
      server.onCreate = created =>
        server.script(created.run_id, [
          [20, { state: 'INPROGRESS', title: HOSTILE, session_link: 'https://s/1' }],
          [50, { title: HOSTILE, artifacts: hostileArtifacts, ...fields }]
        ]);
    };
    const step = async (extra: Record<string, string> = {}) => {
      comment('maintainer', '@agent go');
      core.reset({ ...inputs, title: 'x', ...extra });
      await run();
      bodies.push(...comments().map(c => c.body));
      summaries.push(...(core.record.summary?.rows ?? []).flat());
      repository.comments.clear();
    };
    finish({ state: 'SUCCEEDED', conversation: conversationOf(HOSTILE) });
    await step();
    finish({ state: 'FAILED', status_message: HOSTILE, error_code: HOSTILE });
    await step();
    server.onCreate = created =>
      setTimeout(() => {
        server.plan(created.run_id, HOSTILE, HOSTILE);
        server.update(created.run_id, { state: 'SUCCEEDED', title: HOSTILE });
      }, 50);
    await step({ mode: 'plan' });
    expect(bodies).toHaveLength(3);
    expect(bodies.join('\n')).toContain('please approve');
    for (const text of [...bodies, ...summaries]) expect(liveParts(text)).toEqual([]);
  });

  it('the executor’s pull request title, body and commit message from the same values are inert', () => {
    const fields = { title: HOSTILE, result: HOSTILE, run_id: HOSTILE, branch: 'agent/x' };
    const fromRun = ['title', 'result', 'run_id'];
    for (const text of Object.values(markdownFields(fields, fromRun))) expect(liveParts(text)).toEqual([]);
    for (const text of Object.values(plainFields(fields, fromRun)))
      expect(liveParts(text, false)).toEqual([]);
  });
});

describe('comment-session-link', () => {
  it('auto hides the session link on a public repository; always shows it; never hides it', async () => {
    server.onCreate = created =>
      server.script(created.run_id, [[50, { state: 'SUCCEEDED', session_link: 'https://s/secret-1' }]]);
    const shown: Record<string, boolean> = {};
    for (const mode of ['auto', 'always', 'never']) {
      repository.comments.clear();
      comment('maintainer', '@agent go');
      core.reset({ ...inputs, 'comment-session-link': mode });
      await run();
      expect(core.record.outputs['session-link']).toBe('https://s/secret-1');
      shown[mode] = comments()[0]!.body.includes('https://s/secret-1');
    }
    expect(shown).toEqual({ auto: false, always: true, never: false });
  });
});
