// Pieces of issue 39 that need no server: a rule's claim patterns (* wildcards), and the rule the
// executor helper action prints for the repository it runs in.
import { describe, expect, it } from '@jest/globals';
import { parse } from 'yaml';
import { claimMatches } from '../../src/executor/server/oidc.js';
import { oidcRuleFor } from '../../src/executor-action/oidc-rule.js';
import { parseConfig } from '../../src/executor/config/config.js';

describe('claim patterns', () => {
  it('match the whole value, with * for any run of characters', () => {
    expect(claimMatches('refs/heads/main', 'refs/heads/main')).toBe(true);
    expect(claimMatches('refs/heads/main2', 'refs/heads/main')).toBe(false);
    expect(claimMatches('refs/heads/feature/x', 'refs/heads/*')).toBe(true);
    expect(claimMatches('refs/tags/v1', 'refs/heads/*')).toBe(false);
    expect(claimMatches('acme/widgets', 'acme/*')).toBe(true);
    expect(claimMatches('acme-evil/widgets', 'acme/*')).toBe(false);
    expect(claimMatches('acme/w/.github/workflows/agent.yml@refs/heads/main', '*/agent.yml@*')).toBe(true);
    expect(claimMatches('ab', 'a*b*b')).toBe(false);
    expect(claimMatches('abb', 'a*b*b')).toBe(true);
    expect(claimMatches(true, 'true')).toBe(true);
    expect(claimMatches(42, '4*')).toBe(true);
    expect(claimMatches(undefined, '*')).toBe(false);
    expect(claimMatches({ a: 1 }, '*')).toBe(false);
  });

  it('a long value against a pattern of many stars is answered at once (no backtracking)', () => {
    expect(claimMatches('a'.repeat(50_000), `${'a*'.repeat(200)}b`)).toBe(false);
  });
});

describe('the rule the executor helper prints', () => {
  it("names GitHub's issuer, the repository and the ref, and is a rule the executor accepts", () => {
    const yaml = oidcRuleFor(
      {
        GITHUB_REPOSITORY: 'acme/widgets',
        GITHUB_REF: 'refs/heads/main',
        GITHUB_SERVER_URL: 'https://github.com'
      },
      'https://agents.example.com',
      'acme',
      'agent'
    );
    expect(parse(yaml)).toEqual({
      auth: {
        oidc: [
          {
            issuer: 'https://token.actions.githubusercontent.com',
            audience: 'https://agents.example.com',
            team: 'acme',
            kind: 'agent',
            claims: { repository: 'acme/widgets', ref: 'refs/heads/main' }
          }
        ]
      }
    });
    expect(parseConfig(parse(yaml), '/nonexistent').auth.oidc).toHaveLength(1);
  });

  it("names a GHES server's issuer", () => {
    const yaml = oidcRuleFor(
      { GITHUB_REPOSITORY: 'acme/widgets', GITHUB_SERVER_URL: 'https://github.acme.internal' },
      'https://agents.acme.internal',
      'acme',
      'agent'
    );
    expect(parse(yaml).auth.oidc[0].issuer).toBe('https://github.acme.internal/_services/token');
  });
});
