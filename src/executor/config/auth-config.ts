// `auth.oidc`: the rules by which the executor accepts a workload's OIDC token (a GitHub Actions
// job's, say) instead of an API key. Each rule names the issuer it trusts, the audience the token
// must be made for, the team and kind a matching token acts as, and the claims it must carry.
// Checked at start-up like every other key: the issuer's URL and scheme, the audience, the claim
// names and their patterns.

import { isIP } from 'node:net';
import Type, { type Static } from 'typebox';
import type { KeyKind } from '../store/types.js';
import { show } from '../values/config-reader.js';
import { type Read, choice, custom, readMapping, section, text } from './schema-kit.js';

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

/** A rule's `issuer`: an https:// URL (http:// on a loopback address), GitHub Actions' by default. */
const readIssuer: Read = (value, at, { r }) => {
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
};

/** A rule's `team`: required, an id. */
const readTeam: Read = (value, at, { r }) => {
  const team = r.string(value, at, '');
  if (team !== '' && !TEAM_FORM.test(team))
    r.problems.push(`${at} ${show(value)}: expected 1–64 letters, digits, '.', '_' or '-'`);
  return team;
};

/** A rule's `claims`: known claim names to patterns, one of them naming the repository. */
const readClaims: Read = (value, at, { r }) => {
  const claims: Record<string, string> = {};
  for (const [name, pattern] of Object.entries(r.object(value, at))) {
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
  if (!SCOPING_CLAIMS.some(name => claims[name] !== undefined) && value !== null)
    r.problems.push(
      `${at}: names no repository; expected at least one of ${SCOPING_CLAIMS.join(', ')} ` +
        '(without one, every repository on the issuer could sign in), such as {repository: acme/widgets, ref: refs/heads/main}'
    );
  return claims;
};

/** One rule of `auth.oidc`. */
export const OIDC_RULE = Type.Object({
  issuer: custom<string>(
    'issuer',
    'the issuer trusted, as tokens name it in iss (GHES: https://HOST/_services/token)',
    'an https:// URL',
    readIssuer,
    {
      fallback: GITHUB_ACTIONS_ISSUER
    }
  ),
  audience: text('audience', "the token's aud must name it (required)", ''),
  team: custom<string>(
    'team',
    'the team a matching token acts for (letters, digits, . _ -)',
    'a string',
    readTeam
  ),
  kind: choice<KeyKind>(
    'kind',
    'creator.type agent or user of what a matching token creates, as for keys',
    ['agent', 'personal'],
    'agent'
  ),
  /** Claim name → pattern; `*` in a pattern stands for any run of characters (none too). */
  claims: custom<Record<string, string>>(
    'claims',
    'claims that must all match, one naming the repository; * matches any characters',
    'a mapping of claim names to patterns',
    readClaims
  )
});

export type OidcRule = Static<typeof OIDC_RULE>;

/** `auth.oidc`: a list of rules; a rule missing its issuer, audience or team is left out (with its problem). */
const readRules: Read = (value, at, ctx) => {
  if (value === undefined || value === null) return [];
  if (!Array.isArray(value)) {
    ctx.r.problems.push(
      `${at} ${show(value)}: expected a list of rules, each with audience, team and claims`
    );
    return [];
  }
  return value
    .map((item: unknown, index: number) => readMapping(OIDC_RULE, item, `${at}[${index}]`, ctx) as OidcRule)
    .filter(rule => rule.issuer !== undefined && rule.audience !== '' && rule.team !== '');
};

/** `auth.oidc_clock_skew`: a duration up to 5 minutes (a larger one would keep expired tokens alive). */
const readClockSkew: Read = (value, at, { r }) => {
  const ms = r.duration(value, at, OIDC_CLOCK_SKEW_MS, true);
  if (ms <= MAX_OIDC_CLOCK_SKEW_MS) return ms;
  r.problems.push(`${at} ${show(value)}: expected a duration from 0 to 5m, such as 60s`);
  return OIDC_CLOCK_SKEW_MS;
};

/** The `auth:` mapping. */
export const AUTH = section('auth', 'who may sign in without an API key', {
  oidc: custom<OidcRule[]>(
    'oidc',
    "rules by which a workload's OIDC token (a GitHub Actions job's) is accepted instead of an API key",
    'a list of rules',
    readRules,
    { fallback: '[]', inner: OIDC_RULE, list: true }
  ),
  /** How far the issuers' clocks and this machine's may differ when a token's exp, nbf and iat are checked. */
  oidcClockSkewMs: custom<number>(
    'oidc_clock_skew',
    "how far the issuer's clock may be off when exp, nbf and iat are checked",
    'a duration (90s, 30m, 1h30m)',
    readClockSkew,
    { fallback: '1m', range: '0s to 5m' }
  )
});

export type AuthConfig = Static<typeof AUTH>;
