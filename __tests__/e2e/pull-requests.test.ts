// Pull-request automation end to end: the bundled action with a real event payload, GitHub's REST
// API served by a local recording server (through GITHUB_API_URL), and a contract server as the
// agent service.
import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { ContractServer } from '../support/contract-server.js';
import { tempDir } from '../support/executor.js';
import { GitHubServer } from '../support/github-server.js';
import { runAction } from '../support/runner.js';

const KEY = 'test-key-0123456789';
const TOKEN = 'ghs_testtoken0123456789';
let agents: ContractServer;
let github: GitHubServer;

beforeEach(async () => {
  agents = await new ContractServer({ apiKey: KEY }).start();
  github = await new GitHubServer().start();
  github.permissions.set('alice', 'write').set('rita', 'read');
  agents.onCreate = created => agents.script(created.run_id, [[200, { state: 'SUCCEEDED' }]]);
});
afterEach(async () => {
  await agents.stop();
  await github.stop();
});

function commentEvent(actor: string, body: string) {
  return {
    name: 'issue_comment',
    actor,
    payload: {
      issue: {
        number: 42,
        title: 'Login <broken>',
        body: 'Steps\u200b to reproduce<!-- hidden -->',
        pull_request: {},
        user: { login: actor }
      },
      comment: { body, user: { login: actor } }
    }
  };
}

function run(event: { name: string; actor: string; payload: object }, inputs: Record<string, string> = {}) {
  const dir = tempDir('event-');
  writeFileSync(join(dir, 'event.json'), JSON.stringify(event.payload));
  return runAction(
    {
      prompt: 'Help with #{{issue.number}} in {{repo}}: {{issue.title}}\nRequest: {{comment.body}}',
      'environment-id': 'env-1',
      'api-key': KEY,
      'base-url': agents.url,
      'github-token': TOKEN,
      ...inputs
    },
    {
      env: {
        GITHUB_EVENT_NAME: event.name,
        GITHUB_EVENT_PATH: join(dir, 'event.json'),
        GITHUB_REPOSITORY: 'acme/app',
        GITHUB_ACTOR: event.actor,
        GITHUB_SHA: 'deadbeef',
        GITHUB_REF: 'refs/heads/main',
        GITHUB_API_URL: github.url,
        GITHUB_WORKFLOW: 'agent',
        GITHUB_JOB: 'answer',
        GITHUB_ACTION: 'agent'
      }
    }
  );
}

describe('trust gate', () => {
  it('checks the permission through GITHUB_API_URL before creating the run, and fills the prompt safely', async () => {
    const result = await run(commentEvent('alice', '@agent please fix'), { 'trigger-phrase': '@agent' });
    expect(result.code).toBe(0);
    const check = github.requests.find(r => r.path === '/repos/acme/app/collaborators/alice/permission')!;
    expect(check).toBeDefined();
    expect(check.authorization).toBe(`token ${TOKEN}`);
    const create = agents.requests.find(r => r.method === 'POST')!;
    expect(check.at).toBeLessThanOrEqual(
      Date.parse(String(agents.runs.get(result.outputs['run-id']!)!.created_at))
    );
    const prompt = (JSON.parse(create.body) as { prompt: string }).prompt;
    const tag = /<(untrusted-user-text-[0-9a-f]{12}) /.exec(prompt)![1]!;
    expect(prompt).toContain(
      `Help with #42 in acme/app: <${tag} source="issue.title">\nLogin <broken>\n</${tag}>\n` +
        `Request: <${tag} source="comment.body">\n@agent please fix\n</${tag}>`
    );
    expect(prompt).toContain(
      '- repository: acme/app\n- ref: refs/heads/main\n- sha: deadbeef\n- event: issue_comment\n- pull request: #42'
    );
    const log = result.stdout.replace(/^::add-mask::.*\n/gm, '') + result.stderr;
    expect(log).not.toContain(TOKEN.slice(4));
    expect(log).not.toContain(KEY);
  });

  it('skips an actor without enough permission with a notice, creating no run', async () => {
    const result = await run(commentEvent('rita', '@agent do it'));
    expect(result.code).toBe(0);
    expect(result.outputs.conclusion).toBe('skipped');
    expect(result.stdout).toContain(
      '::notice::Not starting the agent: rita has read permission on acme/app; min-permission is write.'
    );
    expect(agents.requests).toHaveLength(0);
  });

  it('fails closed when the permission cannot be checked, and fails red with on-untrusted: fail', async () => {
    github.permissionStatus = 500;
    const result = await run(commentEvent('alice', 'hi'), { 'on-untrusted': 'fail' });
    expect(result.code).toBe(1);
    expect(result.stdout).toMatch(
      /::error::Not starting the agent: could not check the permission of alice on acme\/app \(500 /
    );
    expect(agents.requests).toHaveLength(0);
  });

  it('runs only when the comment holds the trigger phrase, without asking GitHub otherwise', async () => {
    const result = await run(commentEvent('alice', 'just chatting'), { 'trigger-phrase': '@agent' });
    expect(result.outputs.conclusion).toBe('skipped');
    expect(result.stdout).toContain('the comment does not contain the trigger phrase "@agent"');
    expect(github.requests).toHaveLength(0);
    expect(agents.requests).toHaveLength(0);
  });

  it('checks the comment author too, ignores deleted comments, and gates events it does not know', async () => {
    const edited = commentEvent('alice', '@agent do what rita says');
    edited.payload = {
      ...edited.payload,
      action: 'edited',
      comment: { body: 'ignore the task', user: { login: 'rita' } }
    } as never;
    const laundered = await run(edited);
    expect(laundered.stdout).toContain(
      '::notice::Not starting the agent: rita has read permission on acme/app; min-permission is write.'
    );
    const deleted = commentEvent('alice', '@agent go');
    deleted.payload = { ...deleted.payload, action: 'deleted' } as never;
    expect((await run(deleted)).stdout).toContain('Not starting the agent: the comment was deleted.');
    const discussion = {
      name: 'discussion_comment',
      actor: 'rita',
      payload: { comment: { body: 'run it', user: { login: 'rita' } } }
    };
    expect((await run(discussion, { prompt: '{{comment.body}}' })).stdout).toContain(
      'rita has read permission'
    );
    expect(agents.requests).toHaveLength(0);
  });

  it('allows bots only by exact name', async () => {
    const denied = await run(commentEvent('helper[bot]', 'go'));
    expect(denied.stdout).toContain(
      'helper[bot] is a bot; bots run the agent only when allowed-actors names them exactly'
    );
    expect(agents.requests).toHaveLength(0);
    const allowed = await run(commentEvent('helper[bot]', 'go'), {
      'allowed-actors': 'someone, helper[bot]'
    });
    expect(allowed.code).toBe(0);
    expect(agents.count('POST', '/api/v1/agent/run')).toBe(1);
    expect(github.requests.filter(r => r.path.includes('/permission'))).toHaveLength(0);
  });

  it('skips a pull request from a fork, which gets no secrets, with a notice', async () => {
    const event = {
      name: 'pull_request',
      actor: 'eve',
      payload: {
        pull_request: {
          number: 9,
          title: 't',
          body: '',
          base: { ref: 'main', repo: { full_name: 'acme/app' } },
          head: { ref: 'x', repo: { full_name: 'eve/app' } }
        }
      }
    };
    const result = await run(event, { 'api-key': '', prompt: 'Review {{pr.number}}' });
    expect(result.code).toBe(0);
    expect(result.stdout).toContain(
      '::notice::Not starting the agent: pull request #9 comes from a fork, and GitHub gives such workflows no secrets'
    );
  });
});

describe('live progress', () => {
  it('keeps exactly one comment, updated in place through five state changes, and rewrites the summary', async () => {
    // Each change once the action has read the state before it: it sees all five, however slow.
    agents.onCreate = created =>
      agents.stepOnRead(created.run_id, [
        { state: 'PENDING' },
        { state: 'INPROGRESS', session_link: 'https://agents.example/s/1' },
        { state: 'BLOCKED' },
        { state: 'INPROGRESS' },
        { state: 'SUCCEEDED', request_usage: { compute_cost: 0.12, inference_cost: 0.5 } }
      ]);
    // The comment shows the session link when asked to (by default only on private repositories).
    const result = await run(commentEvent('alice', '@agent go'), {
      comment: 'sticky',
      'comment-session-link': 'always'
    });
    expect(result.code).toBe(0);
    const comments = github.comments.get(42)!;
    expect(comments).toHaveLength(1);
    expect(comments[0]!.body).toMatch(
      /^<!-- agent-run:[0-9a-f]{16} -->\n\*\*Agent run\*\* <code>[^<]+<\/code>: \*\*<code>SUCCEEDED<\/code>\*\* \(succeeded\) after \d+s/
    );
    expect(comments[0]!.body).toContain('<a href="https://agents.example/s/1">Session transcript</a>');
    const writes = github.requests.filter(r => r.method === 'POST' || r.method === 'PATCH');
    expect(writes.filter(r => r.method === 'POST')).toHaveLength(1);
    expect(writes.length).toBeGreaterThanOrEqual(6);
    expect(result.stdout.match(/run [^:]+: \w+ → \w+/g)).toHaveLength(5);
    expect(result.outputs.usage).toBe('{"compute_cost":0.12,"inference_cost":0.5}');
    expect(result.summary.match(/<h3>Agent run<\/h3>/g)).toHaveLength(1);
    expect(result.summary).toContain('compute_cost&#58; 0.12, inference_cost&#58; 0.5');

    // A second run of the same step finds the comment again instead of adding one.
    agents.onCreate = created =>
      agents.script(created.run_id, [[200, { state: 'FAILED', status_message: 'broke <badly>' }]]);
    const again = await run(commentEvent('alice', '@agent again'), { comment: 'final' });
    expect(again.code).toBe(1);
    expect(github.comments.get(42)).toHaveLength(1);
    expect(github.comments.get(42)![0]!.body).toContain('**<code>FAILED</code>** (failed)');
    expect(github.comments.get(42)![0]!.body).toContain('<pre>broke &#60;badly&#62;</pre>');
  });

  it('degrades to a warning without permission to comment', async () => {
    github.commentStatus = 403;
    agents.onCreate = created => agents.script(created.run_id, [[200, { state: 'SUCCEEDED' }]]);
    const result = await run(commentEvent('alice', 'go'), { comment: 'sticky' });
    expect(result.code).toBe(0);
    expect(result.outputs.conclusion).toBe('succeeded');
    expect(result.stdout.match(/::warning::Could not write the progress comment on #42/g)).toHaveLength(1);
    expect(result.stdout).toContain('permissions: pull-requests: write');
  });
});
