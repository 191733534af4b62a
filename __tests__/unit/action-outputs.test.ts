// The action's new parts with the toolkit mocked (@actions/core records, @actions/github answers
// from memory) against a real contract server serving the service's conversation and artifact
// shapes: outputs, summary, comment, live log lines, the transcript file and the new inputs.
import { afterAll, beforeAll, beforeEach, describe, expect, it, jest } from '@jest/globals';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createFakeCore } from '../__fixtures__/core.js';
import { createFakeRepository, fakeGitHubModule } from '../__fixtures__/github.js';
import { ContractServer } from '../support/contract-server.js';

const core = createFakeCore();
const repository = createFakeRepository({ maintainer: 'admin' });
jest.unstable_mockModule('@actions/core', () => core);
jest.unstable_mockModule('@actions/github', () => fakeGitHubModule(repository));
const { run } = await import('../../src/action/main.js');
const { readSettings, InputError } = await import('../../src/action/inputs.js');
const { capText, isPatchArtifact } = await import('../../src/action/produced.js');
const { renderTranscript } = await import('../../src/action/transcript-file.js');
const { readEventContext } = await import('../../src/action/context.js');

const KEY = 'test-key-0123456789';
const dir = mkdtempSync(join(tmpdir(), 'action-outputs-'));
const PATCH = 'diff --git a/a.txt b/a.txt\n--- a/a.txt\n+++ b/a.txt\n@@ -1 +1 @@\n-old\n+new\n';
let server: ContractServer;
let inputs: Record<string, string>;

/** A conversation in the service's normalized shape: the answer is followed by events. */
function conversationOf(answer: string) {
  return {
    conversation_id: 'conv-1',
    steps: [
      {
        id: 's1',
        messages: [
          { role: 'user', content: [{ type: 'text', text: 'Fix the bug' }] },
          { role: 'assistant', content: [{ type: 'text', text: 'Looking at it.' }] },
          {
            role: 'assistant',
            content: [{ type: 'action', name: 'run_command', input: { command: 'npm test' } }]
          },
          {
            role: 'tool',
            content: [{ type: 'action_result', state: 'done', output: { exit_code: 1, output: '1 failing' } }]
          },
          { role: 'assistant', content: [{ type: 'text', text: answer }] },
          {
            role: 'system',
            content: [
              { type: 'event', event_type: 'file_change', data: { path: 'src/a.ts', change: 'modified' } },
              { type: 'event', event_type: 'state_change', data: { state: 'SUCCEEDED' } }
            ]
          }
        ],
        steps: []
      }
    ]
  };
}

const ARTIFACTS = [
  { artifact_type: 'PLAN', data: { document_uid: 'd1', title: 'The plan' } },
  { artifact_type: 'PULL_REQUEST', data: { url: 'https://github.com/octo/app/pull/9', branch: 'agent/fix' } },
  { artifact_type: 'FILE', data: { artifact_uid: 'p1', filename: 'changes.patch', mime_type: 'text/x-diff' } }
];

beforeAll(async () => {
  server = await new ContractServer({ apiKey: KEY, conversation: true }).start();
  server.artifactFiles.set('p1', {
    details: { artifact_uid: 'p1', artifact_type: 'FILE', download_url: `${server.url}/downloads/p1` },
    bytes: Buffer.from(PATCH)
  });
});
afterAll(() => server.stop());
beforeEach(() => {
  process.env.RUNNER_TEMP = mkdtempSync(join(dir, 'temp-'));
  inputs = { prompt: 'Fix the bug', 'environment-id': 'env-1', 'api-key': KEY, 'base-url': server.url };
  server.onCreate = () => {};
});

function finishWith(answer: string, fields: Record<string, unknown> = {}) {
  server.onCreate = created =>
    server.script(created.run_id, [
      [
        200,
        {
          state: 'SUCCEEDED',
          session_link: 'https://s/1',
          artifacts: ARTIFACTS,
          conversation: conversationOf(answer),
          ...fields
        }
      ]
    ]);
}

describe('outputs of what the agent made', () => {
  it('sets result, artifacts, pull request, patch and transcript files, and shows them in the summary', async () => {
    finishWith('Fixed: the test passes now.');
    core.reset(inputs);
    await run();
    const { outputs, failures, summary, notices } = core.record;
    expect(failures).toEqual([]);
    expect(notices).toEqual([]);
    expect(outputs.result).toBe('Fixed: the test passes now.');
    expect(JSON.parse(outputs.artifacts!)).toEqual(ARTIFACTS);
    expect(outputs['pull-request-url']).toBe('https://github.com/octo/app/pull/9');
    expect(outputs.branch).toBe('agent/fix');
    expect(outputs['patch-file']!.startsWith(process.env.RUNNER_TEMP!)).toBe(true);
    expect(readFileSync(outputs['patch-file']!, 'utf8')).toBe(PATCH);
    const transcript = readFileSync(outputs['transcript-file']!, 'utf8');
    expect(outputs['transcript-file']!.startsWith(process.env.RUNNER_TEMP!)).toBe(true);
    expect(transcript).toContain('## Prompt\n\nFix the bug');
    expect(transcript).toContain('### Command (exit code 1)\n\n```sh\nnpm test\n```\n\n```\n1 failing\n```');
    expect(transcript).toContain('- file_change: `src/a.ts` (modified)');
    expect(summary?.rows).toContainEqual([
      'Pull request',
      '<a href="https://github.com/octo/app/pull/9">https://github.com/octo/app/pull/9</a>'
    ]);
    expect(summary?.rows).toContainEqual(['Result', '<pre>Fixed&#58; the test passes now.</pre>']);
    const artifacts = summary?.rows.find(row => row[0] === 'Artifacts')?.[1];
    expect(artifacts).toContain('PLAN: <code>The plan</code>');
    expect(artifacts).toContain('FILE: <code>changes.patch</code>');
  });

  it('puts a long answer inside <details>, escaped, and cuts an oversized one with a notice', async () => {
    const long = `<b>report</b>\n${'line\n'.repeat(50)}`;
    finishWith(long);
    core.reset(inputs);
    await run();
    const result = core.record.summary?.rows.find(row => row[0] === 'Result')?.[1];
    expect(result).toMatch(/^<details><summary>Agent's answer \(\d+ characters\)<\/summary>/);
    expect(result).toContain('&#60;b&#62;report');
    expect(result).not.toContain('<b>');

    const huge = `${'é'.repeat(300 * 1024)}`;
    finishWith(huge);
    core.reset(inputs);
    await run();
    expect(Buffer.byteLength(core.record.outputs.result!)).toBeLessThanOrEqual(512 * 1024);
    expect(huge.startsWith(core.record.outputs.result!)).toBe(true);
    expect(core.record.notices).toEqual([
      `The agent's answer is ${Buffer.byteLength(huge)} bytes; the result output holds its first ${512 * 1024}.`,
      'The job summary shows only the start of: Result (GitHub keeps at most 1 MiB of summary per step).'
    ]);
  });

  it('shows the answer and the pull request in the final comment', async () => {
    const path = join(dir, 'event.json');
    writeFileSync(
      path,
      JSON.stringify({
        pull_request: {
          number: 9,
          head: { ref: 'fix', repo: { full_name: 'octo/app' } },
          base: { ref: 'main', repo: { full_name: 'octo/app' } }
        }
      })
    );
    Object.assign(process.env, {
      GITHUB_EVENT_NAME: 'pull_request',
      GITHUB_EVENT_PATH: path,
      GITHUB_ACTOR: 'maintainer',
      GITHUB_REPOSITORY: 'octo/app'
    });
    try {
      finishWith('All green.');
      core.reset({ ...inputs, comment: 'final', 'github-token': 'ghs_token' });
      await run();
      const body = repository.comments.get(9)?.at(-1)?.body ?? '';
      expect(body).toContain('Pull request: <a href="https://github.com/octo/app/pull/9">');
      expect(body).toContain('<pre>All green.</pre>');
      expect(body).toContain('PULL_REQUEST: <a href=');
    } finally {
      for (const name of ['GITHUB_EVENT_NAME', 'GITHUB_EVENT_PATH', 'GITHUB_ACTOR', 'GITHUB_REPOSITORY'])
        delete process.env[name];
    }
  });

  it('checks the structured output and fails a succeeded run whose object does not match', async () => {
    const schema =
      '{"type":"object","properties":{"verdict":{"enum":["pass","fail"]}},"required":["verdict"]}';
    finishWith('Done.\n```json\n{"verdict": "pass", "notes": "ok ✓"}\n```');
    core.reset({ ...inputs, 'output-schema': schema });
    await run();
    expect(core.record.failures).toEqual([]);
    expect(core.record.outputs['structured-output']).toBe('{"verdict":"pass","notes":"ok ✓"}');
    const sent = [...server.runs.values()].at(-1)!.prompt;
    expect(sent.startsWith('Fix the bug')).toBe(true);
    expect(sent).toContain('End your answer with one JSON object that matches this JSON Schema');

    finishWith('Done. {"verdict": "unsure"}');
    core.reset({ ...inputs, 'output-schema': schema });
    await run();
    expect(core.record.outputs).toMatchObject({ conclusion: 'failed', 'structured-output': '' });
    expect(core.record.failures).toEqual([
      `Run ${core.record.outputs['run-id']} succeeded, but its structured output is missing or invalid: the JSON object does not match the schema: /verdict: must be one of "pass", "fail" (enum)`
    ]);
  });

  it('does not add a schema failure to a run that already failed', async () => {
    finishWith('Could not do it.', { state: 'FAILED', status_message: 'tests red' });
    core.reset({ ...inputs, 'output-schema': '{"type":"object","required":["verdict"]}' });
    await run();
    const runId = core.record.outputs['run-id']!;
    // Each fact once: the wait logged the end state and the link; the failure adds only the cause.
    expect(core.record.failures).toEqual([`Run ${runId} ended FAILED: tests red`]);
    const log = [...core.record.info, ...core.record.failures];
    expect(log.filter(line => line.includes('https://s/1'))).toEqual(['Session: https://s/1']);
    expect(log.filter(line => line.includes('FAILED'))).toEqual([
      expect.stringMatching(new RegExp(`^\\[\\d+s\\] run ${runId}: (INPROGRESS → )?FAILED$`)),
      `Run ${runId} ended FAILED: tests red`
    ]);
    expect(core.record.outputs.result).toBe('Could not do it.');
  });

  it('logs the conversation as it arrives: text as lines, commands as groups with their exit code', async () => {
    server.onCreate = created =>
      server.script(created.run_id, [
        [200, { state: 'INPROGRESS', conversation: conversationOf('Half way.') }],
        [700, { state: 'SUCCEEDED', conversation: conversationOf('Half way.') }]
      ]);
    core.reset(inputs);
    await run();
    const info = core.record.info;
    expect(info).toContain('│ Looking at it.');
    const group = info.indexOf('::group::$ npm test (exit code 1)');
    expect(group).toBeGreaterThan(-1);
    expect(info.slice(group + 1, group + 3)).toEqual(['│ 1 failing', '::endgroup::']);
    // Each item once, though the conversation was read on each state change and at the end.
    expect(info.filter(line => line === '│ Looking at it.')).toHaveLength(1);
    // The end state once (the wait's line), then the run's duration.
    expect(info.filter(line => line.includes('SUCCEEDED'))).toEqual([
      expect.stringMatching(/^\[\d+s\] run \S+: (INPROGRESS → )?SUCCEEDED$/)
    ]);
    expect(info.at(-1)).toMatch(/^The run took \d+s\.$/);
  });
});

describe('BLOCKED', () => {
  it('warns once with the session link, shows it in the summary, and ends with on-blocked: fail', async () => {
    server.onCreate = created =>
      server.script(created.run_id, [
        [100, { state: 'INPROGRESS', session_link: 'https://s/2' }],
        [300, { state: 'BLOCKED' }]
      ]);
    core.reset({ ...inputs, 'on-blocked': 'fail' });
    await run();
    const runId = core.record.outputs['run-id']!;
    expect(core.record.warnings).toEqual([
      `Run ${runId} is BLOCKED: the agent is waiting for user input or approval. Open the session (its link is in the log above) to answer.`
    ]);
    expect(core.record.outputs).toMatchObject({ state: 'BLOCKED', conclusion: 'blocked' });
    expect(core.record.failures).toEqual([
      `Run ${runId} is BLOCKED, waiting for user input or approval (on-blocked: fail); it is left as it is.`
    ]);
    expect(core.record.info.filter(line => line.includes('https://s/2'))).toEqual(['Session: https://s/2']);
    expect(core.record.summary?.rows).toContainEqual([
      'Blocked',
      'The agent is waiting for user input or approval: <a href="https://s/2">https://s/2</a>'
    ]);
    expect(server.runs.get(runId)?.state).toBe('BLOCKED');
  });
});

describe('new inputs', () => {
  const env = { GITHUB_WORKSPACE: dir };
  const read = (values: Record<string, string>, files: Record<string, string> = {}) =>
    readSettings(
      name => ({ ...inputs, ...values })[name] ?? '',
      env,
      path => {
        if (!(path in files)) throw Object.assign(new Error('missing'), { code: 'ENOENT' });
        return files[path]!;
      },
      readEventContext({})
    );

  it('reads output-schema inline or from a .json file relative to the workspace', () => {
    const inline = read({ 'output-schema': '{"type":"object"}' });
    expect(inline.outputSchema?.schema).toEqual({ type: 'object' });
    expect(inline.create?.prompt).toContain('"type": "object"');
    const fromFile = read(
      { 'output-schema': 'schemas/verdict.json' },
      { [join(dir, 'schemas/verdict.json')]: '{"required":["a"]}' }
    );
    expect(fromFile.outputSchema?.check({}).problems).toEqual([
      '(the object): must have property "a" (required)'
    ]);
    expect(read({}).outputSchema).toBeUndefined();
    expect(read({}).onBlocked).toBe('wait');
    expect(read({}).logConversation).toBe(true);
  });

  it('names every bad new input, the value and the form expected', () => {
    const problems = (values: Record<string, string>) => {
      try {
        read(values);
        return [];
      } catch (error) {
        expect(error).toBeInstanceOf(InputError);
        return (error as InstanceType<typeof InputError>).problems;
      }
    };
    expect(problems({ 'output-schema': '{"type": "nope"}' })[0]).toMatch(
      /^output-schema .*: output schema is not a valid JSON Schema: .*type/
    );
    expect(problems({ 'output-schema': '{"type": ' })[0]).toMatch(/^output-schema .*: not valid JSON/);
    expect(problems({ 'output-schema': 'verdict.yaml' })).toEqual([
      'output-schema "verdict.yaml": expected a JSON Schema object (inline JSON) or the path of a .json file'
    ]);
    expect(problems({ 'output-schema': 'missing.json' })).toEqual([
      `output-schema "missing.json": cannot read ${join(dir, 'missing.json')} (ENOENT)`
    ]);
    expect(problems({ 'on-blocked': 'ask' })).toEqual(['on-blocked "ask": expected wait or fail']);
    expect(problems({ 'log-conversation': 'yes' })).toEqual([
      'log-conversation "yes": expected true or false'
    ]);
  });
});

describe('pieces', () => {
  it('cuts text on a character boundary', () => {
    expect(capText('aé', 2)).toEqual({ text: 'a', cut: true });
    expect(capText('aé', 3)).toEqual({ text: 'aé', cut: false });
  });

  it('knows a patch artifact by its type or name', () => {
    expect(isPatchArtifact({ artifact_type: 'FILE', data: { mime_type: 'text/x-diff' } })).toBe(true);
    expect(isPatchArtifact({ artifact_type: 'FILE', data: { filename: 'work.DIFF' } })).toBe(true);
    expect(isPatchArtifact({ artifact_type: 'FILE', data: { filename: 'shot.png' } })).toBe(false);
    expect(isPatchArtifact({ artifact_type: 'SCREENSHOT', data: { filename: 'a.patch' } })).toBe(false);
  });

  it('fences command output so that backticks in it cannot close the fence', () => {
    const markdown = renderTranscript(
      {
        steps: [
          {
            messages: [
              {
                role: 'assistant',
                content: [{ type: 'action', name: 'run_command', input: { command: 'cat x' } }]
              },
              {
                role: 'tool',
                content: [{ type: 'action_result', output: { exit_code: 0, output: 'a\n```\nb' } }]
              },
              { role: 'assistant', content: [{ type: 'mystery', text: 'kept' }] }
            ],
            steps: []
          }
        ]
      },
      { runId: 'r1', prompt: 'Do it' }
    );
    expect(markdown).toContain('## Prompt\n\nDo it');
    expect(markdown).toContain('````\na\n```\nb\n````');
    expect(markdown).toContain('- mystery block');
  });
});
