// The `auth.oidc` rule that admits the current repository's workflows on its current ref, for the
// executor helper's `print-oidc-rule` input: paste it into agent-executor.yaml of the executor the
// main action signs in to with `auth: oidc`.

import { stringify } from 'yaml';

/** The issuer of the runner's OIDC tokens: GitHub's, or a GitHub Enterprise Server's. */
export function issuerOf(env: NodeJS.ProcessEnv): string {
  const server = (env.GITHUB_SERVER_URL ?? 'https://github.com').replace(/\/+$/, '');
  return server === 'https://github.com'
    ? 'https://token.actions.githubusercontent.com'
    : `${server}/_services/token`;
}

/** The rule as YAML, under `auth: oidc:`; refs of pull requests and tags are scoped the same way. */
export function oidcRuleFor(env: NodeJS.ProcessEnv, audience: string, team: string, kind: string): string {
  const repository = env.GITHUB_REPOSITORY;
  if (!repository)
    throw new Error('GITHUB_REPOSITORY is not set: print-oidc-rule needs the repository it runs in');
  const claims: Record<string, string> = { repository };
  if (env.GITHUB_REF) claims.ref = env.GITHUB_REF;
  return stringify({ auth: { oidc: [{ issuer: issuerOf(env), audience, team, kind, claims }] } });
}
