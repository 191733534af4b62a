import { describe, expect, it } from '@jest/globals';
import { formatDuration, parseDuration } from '../../src/common/duration.js';
import { InputError, defaultIdempotencyKey, readSettings } from '../../src/action/inputs.js';

const base = {
  'api-key': 'k-123',
  'base-url': 'https://agents.example.com',
  'environment-id': 'env-1',
  prompt: 'Fix it'
};

function settings(
  inputs: Record<string, string>,
  env: NodeJS.ProcessEnv = {},
  files: Record<string, string> = {}
) {
  return readSettings(
    name => inputs[name] ?? '',
    env,
    path => {
      if (path in files) return files[path]!;
      throw Object.assign(new Error('nope'), { code: 'ENOENT' });
    }
  );
}

function problems(inputs: Record<string, string>): string[] {
  try {
    settings(inputs);
  } catch (error) {
    expect(error).toBeInstanceOf(InputError);
    return (error as InputError).problems;
  }
  throw new Error('expected an InputError');
}

describe('readSettings', () => {
  it('applies the documented defaults', () => {
    const s = settings(base);
    expect(s).toMatchObject({
      baseUrl: 'https://agents.example.com/api/v1',
      apiKey: 'k-123',
      wait: true,
      timeoutMs: 60 * 60_000,
      onTimeout: 'cancel',
      failOn: ['FAILED', 'ERROR', 'CANCELLED'],
      cancelOnAbort: true,
      summary: true,
      create: { prompt: 'Fix it', environmentId: 'env-1', config: { environment_id: 'env-1' } }
    });
    expect(s.runId).toBeUndefined();
    expect(s.create?.idempotencyKey).toBeUndefined();
  });

  it('reads timeout-grace, poll-interval and github-timeout, with their defaults and forms', () => {
    expect(settings(base)).toMatchObject({ graceMs: 30_000, pollIntervalMs: 1000, githubTimeoutMs: 30_000 });
    expect(
      settings({ ...base, 'timeout-grace': '2m', 'poll-interval': '250ms', 'github-timeout': '5s' })
    ).toMatchObject({ graceMs: 120_000, pollIntervalMs: 250, githubTimeoutMs: 5000 });
    expect(settings({ ...base, 'poll-interval': '1m' }).pollIntervalMs).toBe(60_000);
    expect(
      problems({ ...base, 'timeout-grace': '0s', 'poll-interval': '50ms', 'github-timeout': 'soon' })
    ).toEqual([
      'timeout-grace "0s": expected a duration such as 90s, 45m or 1h30m, above zero',
      'poll-interval "50ms": expected a duration such as 500ms, 1s or 5s, from 100ms to 1m',
      'github-timeout "soon": expected a duration such as 90s, 45m or 1h30m, above zero'
    ]);
    expect(problems({ ...base, 'poll-interval': '2m' })).toEqual([
      'poll-interval "2m": expected a duration such as 500ms, 1s or 5s, from 100ms to 1m'
    ]);
  });

  it('accepts a base URL that already ends in /api/v1', () => {
    expect(settings({ ...base, 'base-url': 'http://127.0.0.1:8080/api/v1/' }).baseUrl).toBe(
      'http://127.0.0.1:8080/api/v1'
    );
  });

  it('explains an empty api key, mentioning forks and Dependabot', () => {
    const [message] = problems({ ...base, 'api-key': '' });
    expect(message).toMatch(/api-key is empty/);
    expect(message).toMatch(/forks or by Dependabot/);
  });

  it('names each bad value with the expected form, all at once', () => {
    const found = problems({
      ...base,
      timeout: '10 minutes',
      wait: 'yes',
      'on-timeout': 'ignore',
      'fail-on': 'FAILED,BROKEN',
      config: '[1,2]'
    });
    expect(found).toEqual([
      'wait "yes": expected true or false',
      'timeout "10 minutes": expected a duration such as 90s, 45m or 1h30m, above zero',
      'on-timeout "ignore": expected cancel or leave-running',
      'fail-on "BROKEN": expected a comma-separated list of SUCCEEDED, FAILED, ERROR, CANCELLED (or none)',
      'config "[1,2]": expected a JSON object, e.g. {"model_id": "auto"}'
    ]);
  });

  it('rejects a base URL that is not http(s) or carries credentials, without echoing them', () => {
    expect(problems({ ...base, 'base-url': 'ftp://x' })[0]).toMatch(
      /base-url "ftp:" scheme: expected an http\(s\) URL/
    );
    const [message] = problems({ ...base, 'base-url': 'https://user:hunter2@example.com' });
    expect(message).toMatch(/must not contain credentials/);
    expect(message).not.toContain('hunter2');
  });

  it('needs exactly one of prompt and prompt-file', () => {
    expect(problems({ ...base, prompt: '' })).toEqual([
      'prompt is empty: set prompt (the instruction for the agent) or prompt-file (a path to it)'
    ]);
    expect(problems({ ...base, 'prompt-file': 'p.md' })).toEqual([
      'prompt and prompt-file are both set: give exactly one of them'
    ]);
  });

  it('reads prompt-file relative to the workspace and names a missing file', () => {
    const env = { GITHUB_WORKSPACE: '/ws' };
    const s = settings({ ...base, prompt: '', 'prompt-file': 'prompts/fix.md' }, env, {
      '/ws/prompts/fix.md': 'From file'
    });
    expect(s.create?.prompt).toBe('From file');
    expect(() => settings({ ...base, prompt: '', 'prompt-file': 'nope.md' }, env)).toThrow(
      'prompt-file "nope.md": cannot read /ws/nope.md (ENOENT)'
    );
  });

  it('merges config and refuses a conflicting environment id', () => {
    const s = settings({ ...base, config: '{"model_id":"m1","environment_id":"env-1"}' });
    expect(s.create?.config).toEqual({ model_id: 'm1', environment_id: 'env-1' });
    expect(problems({ ...base, config: '{"environment_id":"other"}' })[0]).toMatch(
      /config.environment_id "other" differs from environment-id "env-1"/
    );
  });

  it('waits for an existing run without a prompt or environment', () => {
    const s = settings({
      'api-key': 'k',
      'base-url': 'https://x.example',
      'run-id': 'r-1',
      timeout: '1h30m'
    });
    expect(s.runId).toBe('r-1');
    expect(s.create).toBeUndefined();
    expect(s.timeoutMs).toBe(90 * 60_000);
    expect(problems({ ...base, 'run-id': 'r-1' })).toEqual([
      'prompt and run-id are both set: give one of them'
    ]);
  });

  it('parses fail-on case-insensitively and accepts none', () => {
    expect(settings({ ...base, 'fail-on': 'failed, error' }).failOn).toEqual(['FAILED', 'ERROR']);
    expect(settings({ ...base, 'fail-on': 'none' }).failOn).toEqual([]);
  });

  it('validates a given idempotency key', () => {
    expect(problems({ ...base, 'idempotency-key': 'has space' })[0]).toMatch(
      /idempotency-key "has space": expected 1–255/
    );
  });
});

describe('defaultIdempotencyKey', () => {
  const env = {
    GITHUB_REPOSITORY: 'o/r',
    GITHUB_RUN_ID: '42',
    GITHUB_RUN_ATTEMPT: '1',
    GITHUB_JOB: 'agent',
    GITHUB_ACTION: 'run',
    RUNNER_NAME: 'r1'
  };
  const body = { prompt: 'p' };

  it('is stable for one step and attempt, and differs for another attempt, runner or body', () => {
    const key = defaultIdempotencyKey(env, body);
    expect(key).toMatch(/^gha-[0-9a-f]{40}$/);
    expect(defaultIdempotencyKey({ ...env }, { prompt: 'p' })).toBe(key);
    expect(defaultIdempotencyKey({ ...env, GITHUB_RUN_ATTEMPT: '2' }, body)).not.toBe(key);
    expect(defaultIdempotencyKey({ ...env, RUNNER_NAME: 'r2' }, body)).not.toBe(key);
    expect(defaultIdempotencyKey(env, { prompt: 'q' })).not.toBe(key);
  });

  it('is left to the client outside GitHub Actions', () => {
    expect(defaultIdempotencyKey({}, body)).toBeUndefined();
  });

  it('is derived in readSettings when running in a workflow', () => {
    expect(settings(base, env).create?.idempotencyKey).toMatch(/^gha-/);
  });
});

describe('durations', () => {
  it.each([
    ['90s', 90_000],
    ['45m', 2_700_000],
    ['1h30m', 5_400_000],
    ['2H', 7_200_000],
    ['1h0m5s', 3_605_000]
  ])('parses %s', (text, ms) => expect(parseDuration(text)).toBe(ms));

  it.each(['', '10', 'm', '1.5h', '5m1h', '-3s'])('refuses %j', text =>
    expect(parseDuration(text)).toBeUndefined()
  );

  it('formats compactly', () => {
    expect(formatDuration(0)).toBe('0s');
    expect(formatDuration(65_000)).toBe('1m5s');
    expect(formatDuration(3_725_000)).toBe('1h2m5s');
  });
});

describe('auth: oidc', () => {
  const runner = {
    ACTIONS_ID_TOKEN_REQUEST_URL: 'https://runner.example/token?x=1',
    ACTIONS_ID_TOKEN_REQUEST_TOKEN: 'r'
  };
  const oidc = { ...base, 'api-key': '', auth: 'oidc' };

  it('needs no api-key, and asks for a token for the base URL origin unless oidc-audience names one', () => {
    expect(settings({ ...oidc, 'base-url': 'https://agents.example.com:8443/api/v1' }, runner)).toMatchObject(
      {
        auth: 'oidc',
        apiKey: '',
        oidcAudience: 'https://agents.example.com:8443'
      }
    );
    expect(settings({ ...oidc, 'oidc-audience': 'api://agents' }, runner).oidcAudience).toBe('api://agents');
    // The default stays the key, which is then required.
    expect(settings(base)).toMatchObject({ auth: 'api-key', apiKey: 'k-123' });
  });

  it('without the runner variables (no id-token: write) is an input error naming the permission line', () => {
    expect(() => settings(oidc)).toThrow(
      'auth is oidc, but this job may not request an OIDC token (the runner set no ACTIONS_ID_TOKEN_REQUEST_URL): add `id-token: write` under `permissions:` of the job or the workflow'
    );
    expect(problems({ ...base, auth: 'token' })).toEqual(['auth "token": expected api-key or oidc']);
  });
});
