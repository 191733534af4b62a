// `agent-run` (dist/cli/index.js) and conversations that continue: a plan made with --mode plan,
// approved with `followup`, runs found by --metadata, and a service without follow-ups.
import { afterEach, describe, expect, it } from '@jest/globals';
import { ContractServer } from '../support/contract-server.js';
import { runCli } from './support.js';

const KEY = 'test-key-0123456789';
const servers: ContractServer[] = [];

async function start(followups = true): Promise<ContractServer> {
  const server = await new ContractServer({ apiKey: KEY, conversation: true, followups }).start();
  servers.push(server);
  return server;
}
afterEach(async () => {
  await Promise.all(servers.splice(0).map(server => server.stop()));
});

const env = (server: ContractServer) => ({ AGENT_RUN_BASE_URL: server.url, AGENT_RUN_API_KEY: KEY });

const saying = (text: string) => ({
  conversation_id: 'c-1',
  steps: [{ id: 's', messages: [{ role: 'assistant', content: [{ type: 'text', text }] }], steps: [] }]
});

describe('agent-run plan → approve', () => {
  it('plans with --mode plan and --metadata, finds the run by metadata, and carries the plan out with followup --wait', async () => {
    const server = await start();
    server.onCreate = run => {
      run.conversation = saying('Plan: 1. add a limiter');
      server.script(run.run_id, [[200, { state: 'SUCCEEDED' }]]);
    };
    server.onFollowup = run => {
      run.conversation = saying('Done: the limiter is in place.');
      server.script(run.run_id, [[300, { state: 'SUCCEEDED' }]]);
    };
    const planned = await runCli(
      [
        'run',
        '--environment',
        'env-1',
        '--mode',
        'plan',
        '--metadata',
        'team=web',
        '--metadata',
        'ticket=42',
        'Add rate limiting'
      ],
      { env: env(server) }
    );
    expect(planned.code).toBe(0);
    expect(planned.stdout).toBe('Plan: 1. add a limiter\n');
    const runId = [...server.runs.keys()][0]!;
    const created = JSON.parse(server.requests.find(r => r.method === 'POST')!.body);
    expect(created).toMatchObject({ mode: 'plan', metadata: { team: 'web', ticket: '42' } });

    const listed = await runCli(['list', '--metadata', 'team=web', '--json', 'run_id'], { env: env(server) });
    expect(JSON.parse(listed.stdout)).toEqual([{ run_id: runId }]);
    const none = await runCli(['list', '--metadata', 'team=api', '--json', 'run_id'], { env: env(server) });
    expect(JSON.parse(none.stdout)).toEqual([]);

    const approved = await runCli(['followup', runId, 'approved: carry out the plan', '--wait'], {
      env: env(server)
    });
    expect(approved.code).toBe(0);
    expect(approved.stderr).toContain(`Sent a follow-up to run ${runId}.`);
    expect(approved.stdout).toBe('Done: the limiter is in place.\n');
    expect(server.followups).toEqual([
      { run_id: runId, message: 'approved: carry out the plan', mode: 'normal' }
    ]);
  });

  it('sends --mode and prints the id and state without --wait', async () => {
    const server = await start();
    server.onCreate = run => server.script(run.run_id, [[100, { state: 'SUCCEEDED' }]]);
    const created = await runCli(['run', '--environment', 'env-1', '--no-wait', 'Go'], { env: env(server) });
    const runId = created.stdout.trim();
    const sent = await runCli(['followup', runId, 'revise it', '--mode', 'plan'], { env: env(server) });
    expect(sent.code).toBe(0);
    expect(sent.stdout).toBe(`${runId} QUEUED\n`);
    expect(server.followups[0]).toMatchObject({ run_id: runId, mode: 'plan' });
  });

  it('names the missing endpoint on a service without follow-ups, and refuses bad options', async () => {
    const server = await start(false);
    server.onCreate = run => server.script(run.run_id, [[100, { state: 'SUCCEEDED' }]]);
    const created = await runCli(['run', '--environment', 'env-1', '--no-wait', 'Go'], { env: env(server) });
    const missing = await runCli(['followup', created.stdout.trim(), 'more'], { env: env(server) });
    expect(missing.code).toBe(1);
    expect(missing.stderr).toMatch(
      /POST \/api\/v1\/agent\/runs\/[^/]+\/followups: this server has no follow-up endpoint \(POST \/api\/v1\/agent\/runs\/\{run_id\}\/followups answered 404\)/
    );
    const badMode = await runCli(['run', '--environment', 'env-1', '--mode', 'fast', 'Go'], {
      env: env(server)
    });
    expect(badMode.code).toBe(2);
    expect(badMode.stderr).toContain('--mode "fast": expected normal, plan or orchestrate');
    const badPair = await runCli(['list', '--metadata', 'team'], { env: env(server) });
    expect(badPair.code).toBe(2);
    expect(badPair.stderr).toContain('--metadata "team": expected KEY=VALUE');
  });
});
