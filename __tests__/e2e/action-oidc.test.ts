// `auth: oidc` end to end (issue 39): the bundled action signs in to the bundled executor with the
// workflow's OIDC token, which it asks for at the runner's token endpoint (ACTIONS_ID_TOKEN_REQUEST_URL
// and _TOKEN, served here by a real issuer on a loopback port that signs with keys it made). The
// executor trusts that issuer by an auth.oidc rule. No API key is given to the action.
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { type ExecutorWithKey, spawnExecutorWithKey, tempDir } from '../support/executor.js';
import { type TestIssuer, startIssuer } from '../support/oidc-issuer.js';
import { type ActionRun, runAction } from '../support/runner.js';
import { runCli } from '../cli/support.js';

const AUDIENCE = 'https://agents.example.com';
let issuer: TestIssuer;
let executor: ExecutorWithKey;

beforeAll(async () => {
  issuer = await startIssuer(AUDIENCE);
  executor = await spawnExecutorWithKey({
    prefix: 'action-oidc-',
    config: [
      'auth:',
      // Tokens the test makes short-lived are refused a second after their exp, not a minute.
      '  oidc_clock_skew: 1s',
      '  oidc:',
      `    - issuer: ${issuer.url}`,
      `      audience: ${AUDIENCE}`,
      '      team: default',
      '      claims: {repository: acme/widgets, ref: refs/heads/main}',
      ''
    ].join('\n')
  });
});
afterAll(async () => {
  await executor.stop();
  await issuer.close();
  rmSync(executor.dir, { recursive: true, force: true });
});

const runnerEnv = () => ({
  ACTIONS_ID_TOKEN_REQUEST_URL: `${issuer.url}/token?api-version=2.0`,
  ACTIONS_ID_TOKEN_REQUEST_TOKEN: issuer.requestToken,
  GITHUB_REPOSITORY: 'acme/widgets',
  GITHUB_REF: 'refs/heads/main'
});

const inputs = (prompt: string, extra: Record<string, string> = {}) => ({
  prompt,
  'environment-id': 'local',
  auth: 'oidc',
  'oidc-audience': AUDIENCE,
  'base-url': executor.url,
  context: 'false',
  ...extra
});

const readRun = async (id: string) =>
  (await (
    await fetch(`${executor.url}/api/v1/agent/runs/${id}`, {
      headers: { authorization: `Bearer ${executor.key}` }
    })
  ).json()) as Record<string, unknown>;

const runCount = async () =>
  (
    (await (
      await fetch(`${executor.url}/api/v1/agent/runs?limit=100`, {
        headers: { authorization: `Bearer ${executor.key}` }
      })
    ).json()) as { runs: unknown[] }
  ).runs.length;

/**
 * Nothing the step or the executor wrote carries a token (the runner's mask commands aside); the
 * tokens the step got (those issued from `since` on) were each masked.
 */
function expectNoToken(result: ActionRun, since: number, extra = ''): void {
  expect(issuer.issued.length).toBeGreaterThan(since);
  const stdout = result.stdout
    .split('\n')
    .filter(line => !line.startsWith('::add-mask::'))
    .join('\n');
  const seen =
    stdout + result.stderr + result.summary + JSON.stringify(result.outputs) + executor.stderr() + extra;
  for (const [i, token] of issuer.issued.entries()) {
    if (i >= since) expect(result.stdout).toContain(`::add-mask::${token}`);
    expect(seen).not.toContain(token.split('.')[2]);
  }
  expect(seen).not.toContain(issuer.requestToken);
}

describe('auth: oidc', () => {
  it('signs in with the workflow token, and the run is attributed to the repository', async () => {
    const since = issuer.issued.length;
    const result = await runAction(inputs('@sim say done'), { env: runnerEnv() });
    expect(result.code).toBe(0);
    expect(result.outputs).toMatchObject({ state: 'SUCCEEDED', conclusion: 'succeeded' });
    const run = await readRun(result.outputs['run-id']!);
    expect(run.creator).toEqual({ type: 'agent', uid: 'acme/widgets', display_name: 'acme/widgets (Agent)' });
    expect(run.workload).toMatchObject({
      repository: 'acme/widgets',
      ref: 'refs/heads/main',
      run_id: '4242'
    });
    const page = await (await fetch(result.outputs['session-link']!)).text();
    expectNoToken(result, since, JSON.stringify(run) + page);
  });

  it('a token of another repository or ref is refused (401) and starts no run', async () => {
    const before = await runCount();
    for (const claims of [{ repository: 'acme/other' }, { ref: 'refs/heads/feature' }]) {
      issuer.tokenClaims = claims;
      const since = issuer.issued.length;
      try {
        const result = await runAction(inputs('@sim say done'), { env: runnerEnv() });
        expect(result.code).toBe(1);
        expect(result.stdout).toContain('the token is valid, but no rule of this executor admits its claims');
        expect(result.stdout).toContain(
          `the token was rejected; check the executor's auth.oidc rules for audience ${AUDIENCE}`
        );
        expectNoToken(result, since);
      } finally {
        issuer.tokenClaims = {};
      }
    }
    // Another audience: the executor accepts none but its own.
    const other = await runAction(
      inputs('@sim say done', { 'oidc-audience': 'https://elsewhere.example.com' }),
      {
        env: runnerEnv()
      }
    );
    expect(other.code).toBe(1);
    expect(other.stdout).toContain("the token's audience (aud) is not one this executor accepts");
    expect(await runCount()).toBe(before);
  });

  it('without id-token: write, an input error names the permission line, and nothing is sent', async () => {
    const before = await runCount();
    const result = await runAction(inputs('@sim say done'), {
      env: { GITHUB_REPOSITORY: 'acme/widgets', GITHUB_REF: 'refs/heads/main' }
    });
    expect(result.code).toBe(1);
    expect(result.stdout).toContain(
      '::error::auth is oidc, but this job may not request an OIDC token (the runner set no ACTIONS_ID_TOKEN_REQUEST_URL): add `id-token: write` under `permissions:` of the job or the workflow'
    );
    expect(await runCount()).toBe(before);
  });

  it('a pull request from a fork (which gets no token) is skipped as without secrets', async () => {
    const dir = tempDir('oidc-fork-');
    try {
      writeFileSync(
        join(dir, 'event.json'),
        JSON.stringify({
          pull_request: {
            number: 9,
            title: 't',
            body: '',
            base: { ref: 'main', repo: { full_name: 'acme/widgets' } },
            head: { ref: 'x', repo: { full_name: 'eve/widgets' } }
          }
        })
      );
      const result = await runAction(inputs('@sim say done'), {
        env: {
          GITHUB_REPOSITORY: 'acme/widgets',
          GITHUB_EVENT_NAME: 'pull_request',
          GITHUB_EVENT_PATH: join(dir, 'event.json'),
          GITHUB_ACTOR: 'eve'
        }
      });
      expect(result.code).toBe(0);
      expect(result.stdout).toContain(
        '::notice::Not starting the agent: pull request #9 comes from a fork, and GitHub gives such workflows no OIDC token.'
      );
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('a wait longer than the token life asks for fresh tokens, and the cancel at the timeout is accepted', async () => {
    // Tokens live 3 s; the executor allows 1 s of clock skew past that (auth.oidc_clock_skew), so
    // the first token is refused from about 4 s on. The step waits 6 s, then cancels.
    issuer.lifetime = 3;
    const issuedBefore = issuer.issued.length;
    try {
      const result = await runAction(inputs('@sim sleep 600', { timeout: '6s' }), { env: runnerEnv() });
      expect(result.code).toBe(1);
      expect(result.outputs.conclusion).toBe('timed_out');
      const run = await readRun(result.outputs['run-id']!);
      expect(run.state).toBe('CANCELLED');
      expect(issuer.issued.length - issuedBefore).toBeGreaterThan(1);
      expectNoToken(result, issuedBefore);
    } finally {
      issuer.lifetime = 300;
    }
  });

  it('the post step cancels a run the main step left, with a fresh token', async () => {
    const created = (await (
      await fetch(`${executor.url}/api/v1/agent/runs`, {
        method: 'POST',
        headers: { authorization: `Bearer ${executor.key}`, 'content-type': 'application/json' },
        body: JSON.stringify({ prompt: '@sim sleep 600', config: { environment_id: 'local' } })
      })
    ).json()) as { run_id: string };
    const issuedBefore = issuer.issued.length;
    const result = await runAction(inputs('@sim sleep 600'), {
      env: runnerEnv(),
      state: { isPost: 'true', 'run-id': created.run_id }
    });
    expect(result.code).toBe(0);
    expect(issuer.issued.length).toBe(issuedBefore + 1);
    expect((await readRun(created.run_id)).state).toBe('CANCELLED');
    expectNoToken(result, issuedBefore);
  });
});

describe('agent-run with AGENT_RUN_ID_TOKEN', () => {
  it('sends the token when no key is set, and names it when the token is refused', async () => {
    const env = { AGENT_RUN_BASE_URL: executor.url, AGENT_RUN_ID_TOKEN: await issuer.token() };
    const ok = await runCli(['run', '--environment', 'local', '--json', '@sim say hi'], { env });
    expect(ok.code).toBe(0);
    const runId = (JSON.parse(ok.stdout) as { run_id: string }).run_id;
    expect((await readRun(runId)).creator).toMatchObject({ uid: 'acme/widgets' });
    const other = {
      ...env,
      AGENT_RUN_ID_TOKEN: await issuer.token({ claims: { repository: 'acme/other' } })
    };
    const refused = await runCli(['list'], { env: other });
    expect(refused.stderr).toContain(
      "the token was rejected; check the token in AGENT_RUN_ID_TOKEN (and the executor's auth.oidc rules)"
    );
    expect(refused.stderr + refused.stdout).not.toContain(other.AGENT_RUN_ID_TOKEN.split('.')[2]);
  });
});
