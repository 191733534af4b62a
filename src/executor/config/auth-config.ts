// `auth.oidc`: the rules by which the executor accepts a workload's OIDC token (a GitHub Actions
// job's, say) instead of an API key. Each rule names the issuer it trusts, the audience the token
// must be made for, the team and kind a matching token acts as, and the claims it must carry.
// Checked at start-up like every other key: the issuer's URL and scheme, the audience, the claim
// names and their patterns.

import { isIP } from 'node:net';
import type { KeyKind } from '../store/types.js';
import { type ConfigReader, show } from '../values/config-reader.js';

/** GitHub Actions' issuer, the rule's default. */
export const GITHUB_ACTIONS_ISSUER = 'https://token.actions.githubusercontent.com';

/**
 * Claims a rule may test: those of a GitHub Actions token (github.com and GHES alike). A rule that
 * names another claim is a typo, and a typo in a trust rule must not pass silently.
 */
export const OIDC_CLAIMS = [
  'sub',
  'repository',
  'repository_id',
  'repository_owner',
  'repository_owner_id',
  'repository_visibility',
  'ref',
  'ref_type',
  'ref_protected',
  'sha',
  'workflow',
  'workflow_ref',
  'workflow_sha',
  'job_workflow_ref',
  'job_workflow_sha',
  'event_name',
  'environment',
  'actor',
  'actor_id',
  'head_ref',
  'base_ref',
  'runner_environment',
  'enterprise',
  'enterprise_id',
  'run_id',
  'run_number',
  'run_attempt'
] as const;

/**
 * Claims of which a rule must test one: without it the rule would admit any repository the issuer
 * serves (anyone can run a workflow on github.com and ask for a token of any audience).
 */
const SCOPING_CLAIMS = ['repository', 'repository_id', 'repository_owner', 'repository_owner_id', 'sub'];

export interface OidcRule {
  /** The issuer's URL as tokens name it in `iss` (no trailing slash). */
  issuer: string;
  audience: string;
  team: string;
  kind: KeyKind;
  /** Claim name → pattern; `*` in a pattern stands for any run of characters (none too). */
  claims: Record<string, string>;
}

export interface AuthConfig {
  oidc: OidcRule[];
  /** How far the issuers' clocks and this machine's may differ when a token's exp, nbf and iat are checked. */
  oidcClockSkewMs: number;
}

/** `auth.oidc_clock_skew`'s default: 60 s. */
export const OIDC_CLOCK_SKEW_MS = 60_000;
/** …and its most: 5 minutes. */
const MAX_OIDC_CLOCK_SKEW_MS = 300_000;

const TEAM_FORM = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/;

/** Whether `host` (a URL's hostname) is this machine: localhost or a loopback address. */
export function isLoopbackHost(host: string): boolean {
  const bare = host.replace(/^\[|\]$/g, '');
  if (bare === 'localhost') return true;
  if (isIP(bare) === 4) return bare.startsWith('127.');
  if (isIP(bare) === 6) return bare === '::1' || bare === '0:0:0:0:0:0:0:1';
  return false;
}

export function parseAuth(r: ConfigReader, raw: unknown): AuthConfig {
  const auth = r.object(raw, 'auth');
  r.known(auth, 'auth', ['oidc', 'oidc_clock_skew']);
  let oidcClockSkewMs = r.duration(auth.oidc_clock_skew, 'auth.oidc_clock_skew', OIDC_CLOCK_SKEW_MS, true);
  // A larger allowance would keep expired tokens alive: what the tokens' short lives are for.
  if (oidcClockSkewMs > MAX_OIDC_CLOCK_SKEW_MS) {
    r.problems.push(
      `auth.oidc_clock_skew ${show(auth.oidc_clock_skew)}: expected a duration from 0 to 5m, such as 60s`
    );
    oidcClockSkewMs = OIDC_CLOCK_SKEW_MS;
  }
  const rules: OidcRule[] = [];
  if (auth.oidc === undefined || auth.oidc === null) return { oidc: rules, oidcClockSkewMs };
  if (!Array.isArray(auth.oidc)) {
    r.problems.push(
      `auth.oidc ${show(auth.oidc)}: expected a list of rules, each with audience, team and claims`
    );
    return { oidc: rules, oidcClockSkewMs };
  }
  auth.oidc.forEach((item, index) => {
    const rule = parseRule(r, item, `auth.oidc[${index}]`);
    if (rule) rules.push(rule);
  });
  return { oidc: rules, oidcClockSkewMs };
}

function parseRule(r: ConfigReader, raw: unknown, at: string): OidcRule | undefined {
  const rule = r.object(raw, at);
  r.known(rule, at, ['issuer', 'audience', 'team', 'kind', 'claims']);
  const issuer = issuerOf(r, rule.issuer, `${at}.issuer`);
  const audience = r.string(rule.audience, `${at}.audience`, '');
  const team = r.string(rule.team, `${at}.team`, '');
  if (team !== '' && !TEAM_FORM.test(team))
    r.problems.push(`${at}.team ${show(rule.team)}: expected 1–64 letters, digits, '.', '_' or '-'`);
  const kind = r.oneOf<KeyKind>(rule.kind, `${at}.kind`, ['agent', 'personal'], 'agent');
  const claims = claimsOf(r, rule.claims, `${at}.claims`);
  if (!SCOPING_CLAIMS.some(name => claims[name] !== undefined) && rule.claims !== null)
    r.problems.push(
      `${at}.claims: names no repository; expected at least one of ${SCOPING_CLAIMS.join(', ')} ` +
        '(without one, every repository on the issuer could sign in), such as {repository: acme/widgets, ref: refs/heads/main}'
    );
  if (issuer === undefined || audience === '' || team === '') return undefined;
  return { issuer, audience, team, kind, claims };
}

function issuerOf(r: ConfigReader, value: unknown, at: string): string | undefined {
  if (value === undefined || value === null) return GITHUB_ACTIONS_ISSUER;
  const form = `expected an https:// URL such as ${GITHUB_ACTIONS_ISSUER} (http:// only on a loopback address)`;
  let url: URL;
  try {
    url = new URL(String(value));
  } catch {
    r.problems.push(`${at} ${show(value)}: ${form}`);
    return undefined;
  }
  const plainOnLoopback = url.protocol === 'http:' && isLoopbackHost(url.hostname);
  if ((url.protocol !== 'https:' && !plainOnLoopback) || url.search !== '' || url.hash !== '') {
    r.problems.push(`${at} ${show(value)}: ${form}`);
    return undefined;
  }
  if (url.username !== '' || url.password !== '') {
    r.problems.push(`${at}: a URL with a user name or password; ${form}`);
    return undefined;
  }
  return url.href.replace(/\/+$/, '');
}

function claimsOf(r: ConfigReader, value: unknown, at: string): Record<string, string> {
  const claims: Record<string, string> = {};
  const object = r.object(value, at);
  for (const [name, pattern] of Object.entries(object)) {
    if (!(OIDC_CLAIMS as readonly string[]).includes(name)) {
      r.problems.push(`${at}.${name}: unknown claim; expected one of ${OIDC_CLAIMS.join(', ')}`);
      continue;
    }
    if (
      (typeof pattern !== 'string' && typeof pattern !== 'number' && typeof pattern !== 'boolean') ||
      String(pattern) === ''
    ) {
      r.problems.push(
        `${at}.${name} ${show(pattern)}: expected a non-empty string, where * matches any characters (such as refs/heads/*)`
      );
      continue;
    }
    claims[name] = String(pattern);
  }
  return claims;
}
