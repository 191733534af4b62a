// `agent-run` (dist/cli/index.js) against the contract server: a service with the conversation and
// artifact endpoints (answer, structured output, BLOCKED, downloads) and one without them.
import { afterEach, describe, expect, it } from '@jest/globals';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ContractServer, type StoredRun } from '../support/contract-server.js';
import { eventually } from '../support/eventually.js';
import { runCli } from './support.js';

const KEY = 'test-key-0123456789';
const servers: ContractServer[] = [];

async function start(conversation: boolean): Promise<ContractServer> {
  const server = await new ContractServer({ apiKey: KEY, conversation }).start();
  servers.push(server);
  return server;
}
afterEach(async () => {
  await Promise.all(servers.splice(0).map(server => server.stop()));
});

const env = (server: ContractServer) => ({ AGENT_RUN_BASE_URL: server.url, AGENT_RUN_API_KEY: KEY });

function conversationSaying(answer: string) {
  return {
    conversation_id: 'c-1',
    steps: [
      {
        id: 's-1',
        messages: [
          { role: 'user', content: [{ type: 'text', text: 'Review it' }] },
          {
            role: 'assistant',
            content: [
              { type: 'action', name: 'run_command', input: { command: 'npm test' } },
              { type: 'action_result', state: 'completed', output: { exit_code: 0, output: '12 passed' } },
              { type: 'text', text: answer },
              { type: 'event', name: 'state_change', text: 'SUCCEEDED' }
            ]
          }
        ],
        steps: []
      }
    ]
  };
}

function succeedWith(server: ContractServer, answer: string, extra: Partial<StoredRun> = {}) {
  server.onCreate = run => {
    run.conversation = conversationSaying(answer);
    server.script(run.run_id, [
      [100, { state: 'INPROGRESS', session_link: `${server.url}/sessions/${run.run_id}` }],
      [400, { state: 'SUCCEEDED', ...extra }]
    ]);
  };
}

describe('agent-run against a service with conversations', () => {
  it("prints the agent's last text as the answer, and the record with --json", async () => {
    const server = await start(true);
    succeedWith(server, 'All 12 tests pass. ✓');
    const run = await runCli(['run', '--environment', 'env-1', 'Review it'], { env: env(server) });
    expect(run.code).toBe(0);
    expect(run.stdout).toBe('All 12 tests pass. ✓\n');
    expect(run.stderr).not.toContain('no conversation endpoint');
    const json = await runCli(['run', '--environment', 'env-1', '--json', 'Review it'], { env: env(server) });
    expect(JSON.parse(json.stdout)).toMatchObject({ state: 'SUCCEEDED', result: 'All 12 tests pass. ✓' });
    const id = (JSON.parse(json.stdout) as { run_id: string }).run_id;
    const logs = await runCli(['logs', id], { env: env(server) });
    expect(logs.stdout).toContain('$ npm test → exit 0');
    expect(logs.stdout).toContain('agent: All 12 tests pass. ✓');
  });

  it('checks --output-schema: the object on success, path and rule on a mismatch', async () => {
    const server = await start(true);
    const dir = mkdtempSync(join(tmpdir(), 'cli-schema-'));
    const schema = join(dir, 'schema.json');
    writeFileSync(
      schema,
      JSON.stringify({
        type: 'object',
        required: ['verdict'],
        properties: { verdict: { enum: ['approve', 'reject'] } }
      })
    );
    succeedWith(server, 'Looks good.\n```json\n{"verdict": "approve"}\n```');
    const good = await runCli(['run', '--environment', 'e', '--json', '--output-schema', schema, 'Review'], {
      env: env(server)
    });
    expect(good.code).toBe(0);
    expect(JSON.parse(good.stdout)).toMatchObject({ structured_output: { verdict: 'approve' } });
    const sent = JSON.parse(server.requests.find(r => r.method === 'POST')!.body) as { prompt: string };
    expect(sent.prompt).toContain('End your answer with one JSON object that matches this JSON Schema');

    succeedWith(server, 'Hmm. {"verdict": "maybe"}');
    const bad = await runCli(['run', '--environment', 'e', '--output-schema', schema, 'Review'], {
      env: env(server)
    });
    expect(bad.code).toBe(1);
    expect(bad.stderr).toContain('/verdict: must be one of "approve", "reject" (enum)');

    writeFileSync(schema, '{"type": "frobnicate"}');
    const invalid = await runCli(['run', '--environment', 'e', '--output-schema', schema, 'Review'], {
      env: env(server)
    });
    expect(invalid.code).toBe(2);
    expect(invalid.stderr).toContain('not a valid JSON Schema');
    expect(server.count('POST', '/api/v1/agent/run')).toBe(2);
  });

  it('exits 4 at once on BLOCKED with the session link, or waits with --on-blocked wait', async () => {
    const server = await start(true);
    const created: string[] = [];
    server.onCreate = run => {
      run.conversation = conversationSaying('Approved and done.');
      created.push(run.run_id);
      // BLOCKED until the test approves it.
      server.script(run.run_id, [
        [100, { state: 'BLOCKED', session_link: `${server.url}/sessions/${run.run_id}` }]
      ]);
    };
    const failed = await runCli(['run', '--environment', 'e', 'Deploy'], { env: env(server) });
    expect(failed.code).toBe(4);
    expect(failed.stderr).toMatch(
      /warning: run \S+ is BLOCKED.*Approve or answer it at http:\/\/127\.0\.0\.1:\d+\/sessions\//
    );
    const waiting = runCli(['run', '--environment', 'e', '--on-blocked', 'wait', 'Deploy'], {
      env: env(server)
    });
    // Approved once the CLI has read the run while it was BLOCKED: it waits on past it.
    const id = await eventually(() => created[1], { what: 'the second run', timeoutMs: 60_000 });
    await eventually(() => server.runs.get(id)?.state === 'BLOCKED', {
      what: `${id} BLOCKED`,
      timeoutMs: 60_000
    });
    const reads = () =>
      server.requests.filter(r => r.method === 'GET' && r.path.startsWith(`/api/v1/agent/runs/${id}`)).length;
    const seen = reads();
    await eventually(() => reads() > seen, { what: `a read of ${id} while BLOCKED`, timeoutMs: 60_000 });
    server.update(id, { state: 'SUCCEEDED' });
    const waited = await waiting;
    expect(waited.code).toBe(0);
    expect(waited.stdout).toBe('Approved and done.\n');
  });

  it('downloads artifacts, sending the key only to the service itself', async () => {
    const server = await start(true);
    const storage = await start(false);
    server.artifactFiles.set('file-1', {
      details: { artifact_uid: 'file-1', download_url: `${storage.url}/downloads/file-1` }
    });
    storage.artifactFiles.set('file-1', {
      details: {},
      bytes: Buffer.from('diff --git a/x b/x\n\u0000binary\n')
    });
    server.artifactFiles.set('file-2', {
      details: { artifact_uid: 'file-2', url: `${server.url}/downloads/file-2` },
      bytes: Buffer.from('same origin')
    });
    succeedWith(server, 'Opened the PR.', {
      artifacts: [
        {
          artifact_type: 'PULL_REQUEST',
          created_at: 'now',
          data: { url: 'https://github.com/o/r/pull/7', branch: 'fix' }
        },
        {
          artifact_type: 'FILE',
          data: { artifact_uid: 'file-1', filename: '../changes.patch', mime_type: 'text/x-diff' }
        },
        { artifact_type: 'FILE', data: { artifact_uid: 'file-2', filepath: 'out/notes.txt' } },
        { artifact_type: 'HOLOGRAM', data: { shimmer: true } }
      ]
    });
    const run = await runCli(['run', '--environment', 'e', '--json', 'Fix'], { env: env(server) });
    const id = (JSON.parse(run.stdout) as { run_id: string }).run_id;
    expect((JSON.parse(run.stdout) as { artifacts: unknown[] }).artifacts).toHaveLength(4);
    const out = mkdtempSync(join(tmpdir(), 'cli-artifacts-'));
    const listed = await runCli(['artifacts', id, '--download', out], { env: env(server) });
    expect(listed.code).toBe(0);
    expect(listed.stdout).toMatch(/PULL_REQUEST +https:\/\/github\.com\/o\/r\/pull\/7 +fix/);
    expect(listed.stdout).toContain('HOLOGRAM');
    expect(readFileSync(join(out, 'changes.patch'), 'utf8')).toBe('diff --git a/x b/x\n\u0000binary\n');
    expect(readFileSync(join(out, 'notes.txt'), 'utf8')).toBe('same origin');
    const foreign = storage.requests.filter(r => r.path === '/downloads/file-1');
    expect(foreign).toHaveLength(1);
    expect(foreign[0]!.headers.authorization).toBeUndefined();
    const own = server.requests.find(r => r.path === '/downloads/file-2')!;
    expect(own.headers.authorization).toBe(`Bearer ${KEY}`);
  });
});

describe('agent-run against a service without conversations', () => {
  it('says so once on stderr and prints nothing on stdout', async () => {
    const server = await start(false);
    server.onCreate = run => server.script(run.run_id, [[200, { state: 'SUCCEEDED' }]]);
    const run = await runCli(['run', '--environment', 'e', 'Do it'], { env: env(server) });
    expect(run.code).toBe(0);
    expect(run.stdout).toBe('');
    expect(run.stderr.match(/no conversation endpoint/g)).toHaveLength(1);
    expect(run.stderr + run.stdout).not.toContain(KEY);
  });
});
