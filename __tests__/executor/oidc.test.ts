// Sign-in with a workload's OIDC token (issue 39): a real issuer on a loopback port (discovery and
// key set served by the test, keys made by the test, tokens signed with jose) and the executor on a
// real port trusting it by an auth.oidc rule. A matching token creates a run attributed to its
// repository; every kind of bad token is 401 with no run; a flood of forged key ids costs the
// issuer a bounded number of fetches. The executor on SQLite or (AGENT_EXECUTOR_TEST_STORE=postgres)
// PostgreSQL.
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { rmSync } from 'node:fs';
import { dirname } from 'node:path';
import { SignJWT, UnsecuredJWT, base64url } from 'jose';
import { ConfigError, parseConfig } from '../../src/executor/config/config.js';
import { type TestExecutor, startTestExecutor, tempDir } from '../support/executor.js';
import { GITHUB_CLAIMS, type TestIssuer, newSigningKey, startIssuer } from '../support/oidc-issuer.js';
import { waitForState } from '../support/wait.js';

const AUDIENCE = 'https://agents.example.com';
let issuer: TestIssuer;
let ex: TestExecutor;
let key: string;

beforeAll(async () => {
  issuer = await startIssuer(AUDIENCE);
  ex = await startTestExecutor({
    workers: 1,
    auth: {
      oidc: [
        {
          issuer: issuer.url,
          audience: AUDIENCE,
          team: 'acme',
          claims: { repository: 'acme/widgets', ref: 'refs/heads/main' }
        },
        {
          issuer: issuer.url,
          audience: AUDIENCE,
          team: 'acme-releases',
          kind: 'personal',
          claims: { repository_owner: 'acme', ref: 'refs/tags/v*' }
        }
      ]
    }
  });
  key = (await ex.key('acme', 'agent', 'ci')).raw;
});
afterAll(async () => {
  await ex.stop(1000);
  await issuer.close();
  rmSync(dirname(ex.dataDir), { recursive: true, force: true });
});

const create = (token: string) =>
  ex.request('/api/v1/agent/runs', {
    method: 'POST',
    key: token,
    body: JSON.stringify({ prompt: '@sim result ok', config: { environment_id: 'local' } })
  });

async function refused(token: string): Promise<string> {
  const response = await create(token);
  expect(response.headers.get('content-type')).toMatch(/^application\/problem\+json/);
  const body = (await response.json()) as { status: number; error_code: string; detail: string };
  expect({ status: response.status, error_code: body.error_code }).toEqual({
    status: 401,
    error_code: 'unauthenticated'
  });
  // No answer repeats the token, or any part of it.
  for (const part of token.split('.')) if (part.length > 8) expect(body.detail).not.toContain(part);
  return body.detail;
}

/** Runs the team `acme` has (an API key of the team sees them all). */
async function acmeRuns(): Promise<number> {
  const response = await ex.request('/api/v1/agent/runs?limit=100', { key });
  return ((await response.json()) as { runs: unknown[] }).runs.length;
}

describe('a token that matches a rule', () => {
  it('creates a run of the rule team, attributed to the repository, keeping the token claims but not the token', async () => {
    const token = await issuer.token();
    const response = await create(token);
    expect(response.status).toBe(200);
    const { run_id } = (await response.json()) as { run_id: string };
    // The team's API key sees it: the token acted for team acme.
    const run = await waitForState({ on: ex, key, id: run_id });
    expect(run.state).toBe('SUCCEEDED');
    const record = (await (
      await ex.request(`/api/v1/agent/runs/${run_id}`, { key: token })
    ).json()) as Record<string, unknown>;
    expect(record.creator).toEqual({
      type: 'agent',
      uid: 'acme/widgets',
      display_name: 'acme/widgets (Agent)'
    });
    expect(record.workload).toEqual({
      issuer: issuer.url,
      repository: 'acme/widgets',
      ref: 'refs/heads/main',
      workflow_ref: GITHUB_CLAIMS.workflow_ref,
      run_id: '4242'
    });
    expect(record.source).toBe('API');
    expect(JSON.stringify(record)).not.toContain(token);
    // The store holds no trace of the token either.
    const store = await ex.openStore();
    try {
      expect(JSON.stringify(await store.runs.getRun('acme', run_id))).not.toContain(token.split('.')[2]);
    } finally {
      await store.close();
    }
  });

  it('matches claims with * wildcards, and the first matching rule gives the team and the kind', async () => {
    const token = await issuer.token({ claims: { ref: 'refs/tags/v1.2.3', ref_type: 'tag' } });
    const response = await create(token);
    expect(response.status).toBe(200);
    const { run_id } = (await response.json()) as { run_id: string };
    const record = (await (
      await ex.request(`/api/v1/agent/runs/${run_id}`, { key: token })
    ).json()) as Record<string, unknown>;
    expect(record.creator).toMatchObject({ type: 'user', uid: 'acme/widgets' });
    // Another team's run: acme's key does not see it.
    expect((await ex.request(`/api/v1/agent/runs/${run_id}`, { key })).status).toBe(404);
  });

  it('a client cannot claim a workload of its own in the body', async () => {
    const response = await ex.request('/api/v1/agent/runs', {
      method: 'POST',
      key,
      body: JSON.stringify({
        prompt: '@sim result ok',
        config: { environment_id: 'local' },
        workload: { repository: 'acme/secret' }
      })
    });
    expect(response.status).toBe(200);
    const { run_id } = (await response.json()) as { run_id: string };
    const record = (await (await ex.request(`/api/v1/agent/runs/${run_id}`, { key })).json()) as Record<
      string,
      unknown
    >;
    expect(record.workload).toBeUndefined();
    expect(record.creator).toMatchObject({ type: 'agent', display_name: 'ci' });
  });
});

describe('the clock skew allowed (auth.oidc_clock_skew, 60 s unless set)', () => {
  it('accepts a token 30 s past its exp', async () => {
    const response = await create(await issuer.token({ expiresIn: -30 }));
    expect(response.status).toBe(200);
    const { run_id } = (await response.json()) as { run_id: string };
    expect((await waitForState({ on: ex, key, id: run_id })).state).toBe('SUCCEEDED');
  });
});

describe('a token that is refused (401, no run)', () => {
  it('for the wrong audience, issuer, lifetime or claims, naming what is wrong and no rule', async () => {
    const before = await acmeRuns();
    const other = await startIssuer(AUDIENCE);
    try {
      expect(await refused(await issuer.token({ audience: 'https://elsewhere.example.com' }))).toBe(
        "the token's audience (aud) is not one this executor accepts"
      );
      expect(await refused(await other.token())).toBe(
        "the token's issuer (iss) is not one this executor trusts"
      );
      // A token of another issuer that claims ours as iss: its key is not ours.
      expect(await refused(await other.token({ issuer: issuer.url, kid: issuer.keys[0]!.kid }))).toBe(
        "the token's signature is not valid"
      );
    } finally {
      await other.close();
    }
    expect(await refused(await issuer.token({ expiresIn: -600, issuedAt: -900, notBefore: -900 }))).toBe(
      'the token has expired (exp), or was issued too long ago'
    );
    // 60 s of clock skew by default (auth.oidc_clock_skew): 90 s past exp is out.
    expect(await refused(await issuer.token({ expiresIn: -90 }))).toBe(
      'the token has expired (exp), or was issued too long ago'
    );
    expect(await refused(await issuer.token({ notBefore: 600 }))).toBe('the token is not valid yet (nbf)');
    expect(await refused(await issuer.token({ issuedAt: 600 }))).toBe(
      'the token was issued in the future (iat)'
    );
    for (const claims of [
      { repository: 'acme/other', sub: 'repo:acme/other:ref:refs/heads/main' },
      { ref: 'refs/heads/feature' },
      { repository_owner: 'mallory', repository: 'mallory/widgets', ref: 'refs/tags/v1' }
    ]) {
      const detail = await refused(await issuer.token({ claims }));
      expect(detail).toBe('the token is valid, but no rule of this executor admits its claims');
      expect(detail).not.toMatch(/acme|widgets|refs\//);
    }
    expect(await acmeRuns()).toBe(before);
  });

  it('for a bad signature, alg none, or HS256 keyed with the published public key', async () => {
    const good = await issuer.token();
    const [head, body, signature] = good.split('.') as [string, string, string];
    const flipped = `${head}.${body}.${signature.startsWith('A') ? 'B' : 'A'}${signature.slice(1)}`;
    expect(await refused(flipped)).toBe("the token's signature is not valid");
    // The claims changed under the issuer's signature (another repository).
    const forged = base64url.encode(
      JSON.stringify({
        ...JSON.parse(new TextDecoder().decode(base64url.decode(body))),
        repository: 'acme/secret'
      })
    );
    expect(await refused(`${head}.${forged}.${signature}`)).toBe("the token's signature is not valid");

    const now = Math.floor(Date.now() / 1000);
    const claims = { ...GITHUB_CLAIMS, iss: issuer.url, aud: AUDIENCE, iat: now, exp: now + 300 };
    const unsigned = new UnsecuredJWT(claims).encode();
    expect(await refused(unsigned)).toMatch(
      /^the token's algorithm "none" is not accepted; expected one of RS256/
    );
    // HS256 whose secret is the issuer's public key (which anyone can read from its key set).
    const publicJwk = issuer.keys[0]!.publicJwk;
    const hmac = await new SignJWT(claims)
      .setProtectedHeader({ alg: 'HS256', kid: publicJwk.kid })
      .sign(new TextEncoder().encode(JSON.stringify(publicJwk)));
    expect(await refused(hmac)).toMatch(/^the token's algorithm "HS256" is not accepted/);
    expect(await refused('aaaa.bbbb.cccc')).toBe('the token is not a well-formed JWT');
  });
});

describe("the issuer's keys", () => {
  it('are fetched again when a token names a new kid (a rotation is picked up); a kid still unknown is 401', async () => {
    // Known keys first, so the next fetch is the rotation's.
    expect((await create(await issuer.token())).status).toBe(200);
    const before = issuer.hits.get('/keys') ?? 0;
    await issuer.rotate();
    const response = await create(await issuer.token());
    expect(response.status).toBe(200);
    expect(issuer.hits.get('/keys')).toBe(before + 1);
    // Keys nobody published: refetched, still unknown, refused.
    const stranger = await newSigningKey('never-published');
    expect(await refused(await issuer.token({ key: stranger }))).toBe(
      'the token is signed with a key its issuer does not publish (unknown kid)'
    );
    expect(issuer.hits.get('/keys')).toBe(before + 2);
  });

  it('a flood of tokens with made-up kids makes a bounded number of fetches', async () => {
    // A fresh executor, so its bucket of refetches is full: it holds 3, then one a minute.
    const own = await startIssuer(AUDIENCE);
    const fresh = await startTestExecutor({
      auth: {
        oidc: [{ issuer: own.url, audience: AUDIENCE, team: 'acme', claims: { repository: 'acme/*' } }]
      }
    });
    try {
      const post = (token: string) =>
        fresh.request('/api/v1/agent/runs', {
          method: 'POST',
          key: token,
          body: JSON.stringify({ prompt: '@sim result ok', config: { environment_id: 'local' } })
        });
      expect((await post(await own.token())).status).toBe(200);
      expect(own.hits.get('/keys')).toBe(1);
      const stranger = await newSigningKey();
      const tokens = await Promise.all(
        Array.from({ length: 200 }, (_, i) => own.token({ key: stranger, kid: `forged-${i}` }))
      );
      // In waves of 20 at once, as an attacker would send them.
      for (let i = 0; i < tokens.length; i += 20) {
        const answers = await Promise.all(tokens.slice(i, i + 20).map(post));
        expect(answers.map(answer => answer.status)).toEqual(Array(20).fill(401));
      }
      // The first fetch, the burst of 3, and at most one more if a minute passed meanwhile.
      expect(own.hits.get('/keys')).toBeLessThanOrEqual(5);
      expect(own.hits.get('/.well-known/openid-configuration')).toBeLessThanOrEqual(5);
      // A real token is still accepted with the keys held.
      expect((await post(await own.token())).status).toBe(200);
    } finally {
      await fresh.stop(1000);
      await own.close();
      rmSync(dirname(fresh.dataDir), { recursive: true, force: true });
    }
  });
});

describe('auth.oidc rules at start-up', () => {
  const load = (rule: Record<string, unknown>) => () => {
    const dir = tempDir('oidc-config-');
    try {
      return parseConfig({ auth: { oidc: [rule] } }, dir);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  };
  const base = { audience: AUDIENCE, team: 'acme', claims: { repository: 'acme/widgets' } };

  it('refuses an http issuer that is not on a loopback address, naming it and the expected form', () => {
    expect(load({ ...base, issuer: 'http://issuer.example.com' })).toThrow(
      new ConfigError(
        'config: auth.oidc[0].issuer "http://issuer.example.com": expected an https:// URL such as https://token.actions.githubusercontent.com (http:// only on a loopback address)'
      )
    );
    expect(load({ ...base, issuer: 'http://127.0.0.1:9999' })().auth.oidc[0]!.issuer).toBe(
      'http://127.0.0.1:9999'
    );
    expect(load(base)().auth.oidc[0]).toEqual({
      issuer: 'https://token.actions.githubusercontent.com',
      audience: AUDIENCE,
      team: 'acme',
      kind: 'agent',
      claims: { repository: 'acme/widgets' }
    });
  });

  it('reads auth.oidc_clock_skew as a duration (60 s unless set), naming a bad value and the form', () => {
    expect(load(base)().auth.oidcClockSkewMs).toBe(60_000);
    const dir = tempDir('oidc-config-');
    try {
      const skew = (value: unknown) => () =>
        parseConfig({ auth: { oidc_clock_skew: value, oidc: [base] } }, dir);
      expect(skew('5s')().auth.oidcClockSkewMs).toBe(5000);
      expect(skew('0')().auth.oidcClockSkewMs).toBe(0);
      expect(skew('1h')).toThrow('auth.oidc_clock_skew "1h": expected a duration from 0 to 5m, such as 60s');
      expect(skew('a minute')).toThrow(
        'auth.oidc_clock_skew "a minute": expected a duration such as 90s, 30m or 1h30m, at most 24 days'
      );
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('requires an audience, a team and a repository claim, and refuses unknown claims and keys', () => {
    expect(load({ team: 'acme', claims: { repository: 'acme/widgets' } })).toThrow(
      'auth.oidc[0].audience: required, expected a string'
    );
    expect(load({ ...base, claims: { repo: 'acme/widgets', repository: 'acme/widgets' } })).toThrow(
      /auth\.oidc\[0\]\.claims\.repo: unknown claim; expected one of sub, repository, /
    );
    expect(load({ ...base, claims: { ref: 'refs/heads/main' } })).toThrow(
      /auth\.oidc\[0\]\.claims: names no repository; expected at least one of repository, /
    );
    expect(load({ ...base, team: 'a team' })).toThrow(`auth.oidc[0].team "a team": expected 1–64 letters`);
    expect(load({ ...base, audiences: 'x' })).toThrow(
      'auth.oidc[0].audiences: unknown key; expected one of issuer, audience, team, kind, claims'
    );
  });
});
