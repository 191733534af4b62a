// A pull request's thread continued on the real executor: the bundled action, one step per comment
// as GitHub runs it, against the bundled executor (the simulated agent, whose `@sim run` lines are
// real shell commands in the run's workspace) and the GitHub REST stand-in.
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { AgentRunClient } from '../../src/client/index.js';
import { type ExecutorProcess, spawnExecutorWithKey, tempDir } from '../support/executor.js';
import { GitHubServer } from '../support/github-server.js';
import { runAction } from '../support/runner.js';

let executor: ExecutorProcess;
let key: string;
let github: GitHubServer;

beforeAll(async () => {
  const started = await spawnExecutorWithKey({ kind: 'personal', name: 'threads' });
  ({ key } = started);
  executor = started;
  github = await new GitHubServer().start();
  github.permissions.set('alice', 'write');
});
afterAll(async () => {
  await executor.stop();
  await github.stop();
});

function step(body: string, extra: Record<string, string> = {}) {
  const dir = tempDir('thread-executor-');
  const payload = {
    action: 'created',
    issue: { number: 5, title: 'Notes', body: '', pull_request: {}, user: { login: 'alice' } },
    comment: { body, user: { login: 'alice' } }
  };
  writeFileSync(join(dir, 'event.json'), JSON.stringify(payload));
  return runAction(
    {
      prompt: '{{comment.body}}',
      'environment-id': 'local',
      'api-key': key,
      'base-url': executor.url,
      'github-token': 'ghs_test',
      'trigger-phrase': '@agent',
      comment: 'sticky',
      continue: 'thread',
      ...extra
    },
    {
      env: {
        GITHUB_EVENT_NAME: 'issue_comment',
        GITHUB_EVENT_PATH: join(dir, 'event.json'),
        GITHUB_REPOSITORY: 'acme/app',
        GITHUB_ACTOR: 'alice',
        GITHUB_API_URL: github.url,
        GITHUB_WORKFLOW: 'agent',
        GITHUB_JOB: 'answer',
        GITHUB_ACTION: 'agent'
      }
    }
  );
}

describe('continue: thread on the executor', () => {
  it('the second comment continues the same run in the same workspace', async () => {
    const first = await step('@agent start the notes\n@sim write NOTES.md one\n@sim result wrote the notes');
    expect(first.code).toBe(0);
    expect(first.outputs).toMatchObject({
      state: 'SUCCEEDED',
      result: expect.stringContaining('wrote the notes')
    });
    const runId = first.outputs['run-id']!;

    const second = await step('@agent extend them\n@sim run grep -q one NOTES.md\n@sim result extended');
    expect(second.code).toBe(0);
    expect(second.outputs).toMatchObject({ 'run-id': runId, state: 'SUCCEEDED', conclusion: 'succeeded' });
    // The outputs describe the latest turn: its answer, not the first one.
    expect(second.outputs.result).toContain('extended');
    expect(second.outputs.result).not.toContain('wrote the notes');
    const comments = github.comments.get(5) ?? [];
    expect(comments).toHaveLength(1);
    expect(comments[0]!.body).toContain(`<!-- agent-run-run:${runId} mode:normal -->`);
  });
});

describe('supersede on the executor', () => {
  it('finds the still-running earlier run of the thread by its metadata and cancels it', async () => {
    const first = await step('@agent long job\n@sim sleep 120', { wait: 'false', comment: 'off' });
    expect(first.code).toBe(0);
    const older = first.outputs['run-id']!;
    const client = new AgentRunClient({ baseUrl: executor.url, apiKey: key });
    try {
      expect((await client.runs.get(older)).metadata).toEqual({
        repository: 'acme/app',
        thread: '5',
        workflow: 'agent'
      });
      const second = await step('@agent start over\n@sim result fresh', {
        supersede: 'true',
        comment: 'off'
      });
      expect(second.code).toBe(0);
      expect(second.stdout).toContain(
        `::notice::supersede: cancelled the earlier run ${older} of this thread`
      );
      expect(second.outputs['run-id']).not.toBe(older);
      const cancelled = await client.runs.wait(older, { timeoutMs: 60_000 });
      expect(cancelled.run?.state).toBe('CANCELLED');
      expect(String(cancelled.run?.status_message)).toContain('superseded by a newer request on #5');
    } finally {
      client.close();
    }
  });
});
