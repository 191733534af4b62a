// Sign-in with a workload's OIDC token (a GitHub Actions job's, say) instead of an API key. The
// token is checked by `jose`, against the keys its issuer publishes (OIDC discovery, then the JWKS
// it points at): signature, issuer, audience, expiry, not-before and issue time (with a small clock
// skew), and an allow-list of asymmetric algorithms (never `none`, never HMAC). Then the first
// `auth.oidc` rule whose claims all match gives the team and the kind.
//
// The keys are cached per issuer. A token signed with a key id the cache lacks makes it refetch
// (the issuer rotated its keys), but refetches are a token bucket per issuer: a stream of forged
// key ids costs the issuer a bounded number of requests, never one each. Before any fetch the
// token must name a trusted issuer and audience, so made-up issuers cost nothing at all.
//
// No answer or log line carries the token or a rule: a refused token is told what was wrong with
// it, never which rules exist.

import {
  type JWTPayload,
  type JWTVerifyGetKey,
  createLocalJWKSet,
  decodeJwt,
  decodeProtectedHeader,
  errors,
  jwtVerify
} from 'jose';
import { OIDC_CLOCK_SKEW_MS, type OidcRule, isLoopbackHost } from '../config/auth-config.js';
import type { KeyKind } from '../store/types.js';
import type { Workload } from '../../api/run.js';

/** Asymmetric algorithms only: `none` and HMAC (whose "key" would be the public key) never pass. */
export const OIDC_ALGORITHMS = [
  'RS256',
  'RS384',
  'RS512',
  'PS256',
  'PS384',
  'PS512',
  'ES256',
  'ES384',
  'ES512',
  'EdDSA',
  'Ed25519'
];

/** A token issued longer ago than this is refused (GitHub's live minutes). */
const MAX_TOKEN_AGE = '24h';
/** Longest token looked at; real ones are a few KiB. */
const MAX_TOKEN_LENGTH = 16 * 1024;
/** Longest discovery document or key set read from an issuer. */
const MAX_DOCUMENT_BYTES = 256 * 1024;
/** How long an issuer may take to answer one fetch. */
const FETCH_TIMEOUT_MS = 10_000;
/** Keys are refetched this often even when every token's key is known (a removed key stops working). */
const KEYS_MAX_AGE_MS = 15 * 60_000;
/** Refetches on an unknown key id: this many at once… */
const REFETCH_BURST = 3;
/** …then one per this many ms. */
const REFETCH_INTERVAL_MS = 60_000;

/** Who an accepted token acts as, and what of it a run created with it keeps. */
export interface WorkloadPrincipal {
  team: string;
  kind: KeyKind;
  /** The repository (or, without one, the subject): the creator's uid. */
  uid: string;
  /** `<repository> (<workflow>)`. */
  name: string;
  workload: Workload;
}

/** The token's claims a run record keeps (never the token): the contract's `workload` field. */
export type { Workload };

/** A refused token: `message` says what was wrong with it (never the token, never a rule). */
export class TokenRefused extends Error {}

/** Whether a bearer credential has the form of a JWT (three base64url parts); keys start `arx_`. */
export function looksLikeJwt(credential: string): boolean {
  return /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*$/.test(credential);
}

type Fetcher = (url: string) => Promise<unknown>;

interface IssuerKeys {
  keys?: JWTVerifyGetKey;
  kids: Set<string>;
  fetchedAt: number;
  /** Refetches left in the bucket, and when it was last filled. */
  tokens: number;
  tokensAt: number;
  /** The fetch under way, which every request that needs it waits for. */
  loading?: Promise<void>;
}

export class OidcVerifier {
  private readonly issuers = new Map<string, IssuerKeys>();
  /** Fetches made of each issuer (discovery and key set count one each): tests and metrics read it. */
  readonly fetches = new Map<string, number>();

  /**
   * `clockSkewMs`: how far the issuers' clocks and this machine's may differ
   * (`auth.oidc_clock_skew`, 60 s unless set).
   */
  constructor(
    private readonly rules: readonly OidcRule[],
    private readonly fetchJson: Fetcher = boundedFetch,
    private readonly clockSkewMs = OIDC_CLOCK_SKEW_MS
  ) {}

  get enabled(): boolean {
    return this.rules.length > 0;
  }

  async verify(token: string): Promise<WorkloadPrincipal> {
    if (!this.enabled)
      throw new TokenRefused(
        'this executor accepts no OIDC tokens (its auth.oidc is empty); send an API key'
      );
    if (token.length > MAX_TOKEN_LENGTH)
      throw new TokenRefused(`the token is longer than ${MAX_TOKEN_LENGTH} characters`);
    let unverified: JWTPayload;
    let header: ReturnType<typeof decodeProtectedHeader>;
    try {
      header = decodeProtectedHeader(token);
      unverified = decodeJwt(token);
    } catch {
      throw new TokenRefused('the token is not a well-formed JWT');
    }
    if (typeof header.alg !== 'string' || !OIDC_ALGORITHMS.includes(header.alg))
      throw new TokenRefused(
        `the token's algorithm ${JSON.stringify(String(header.alg).slice(0, 20))} is not accepted; expected one of ${OIDC_ALGORITHMS.join(', ')}`
      );
    const issuer = typeof unverified.iss === 'string' ? unverified.iss.replace(/\/+$/, '') : undefined;
    const ofIssuer = this.rules.filter(rule => rule.issuer === issuer);
    if (issuer === undefined || ofIssuer.length === 0)
      throw new TokenRefused("the token's issuer (iss) is not one this executor trusts");
    const audiences = [...new Set(ofIssuer.map(rule => rule.audience))];
    const given = Array.isArray(unverified.aud) ? unverified.aud : [unverified.aud];
    if (!given.some(aud => typeof aud === 'string' && audiences.includes(aud)))
      throw new TokenRefused("the token's audience (aud) is not one this executor accepts");

    const payload = await this.checked(token, issuer, unverified.iss as string, audiences, header.kid);
    const rule = ofIssuer.find(
      candidate =>
        (Array.isArray(payload.aud) ? payload.aud : [payload.aud]).includes(candidate.audience) &&
        Object.entries(candidate.claims).every(([name, pattern]) => claimMatches(payload[name], pattern))
    );
    if (!rule) throw new TokenRefused('the token is valid, but no rule of this executor admits its claims');
    const text = (name: string): string | undefined => {
      const value = payload[name];
      return typeof value === 'string' || typeof value === 'number' ? String(value) : undefined;
    };
    const repository = text('repository');
    const uid = repository ?? text('sub') ?? issuer;
    const workflow = text('workflow');
    const workload: Workload = { issuer };
    for (const name of ['repository', 'ref', 'workflow_ref', 'run_id'] as const) {
      const value = text(name);
      if (value !== undefined) workload[name] = value;
    }
    return {
      team: rule.team,
      kind: rule.kind,
      uid,
      name: workflow === undefined ? uid : `${uid} (${workflow})`,
      workload
    };
  }

  /** The verified claims; refetches the issuer's keys (within the bucket) when the key id is new. */
  private async checked(
    token: string,
    issuer: string,
    iss: string,
    audiences: string[],
    kid: string | undefined
  ): Promise<JWTPayload> {
    const state = this.stateOf(issuer);
    // The first fetch and the periodic one are free; any other (a new key id, or keys that could
    // not be fetched before) takes a refetch from the bucket.
    const due =
      state.fetchedAt === 0 || (state.keys !== undefined && Date.now() - state.fetchedAt > KEYS_MAX_AGE_MS);
    const missing = state.keys === undefined || (kid !== undefined && !state.kids.has(kid));
    if (due || missing) await this.refresh(issuer, state, due);
    if (!state.keys) throw new TokenRefused("the issuer's signing keys could not be fetched; retry later");
    try {
      const { payload } = await jwtVerify(token, state.keys, {
        issuer: iss,
        audience: audiences,
        algorithms: OIDC_ALGORITHMS,
        clockTolerance: this.clockSkewMs / 1000,
        maxTokenAge: MAX_TOKEN_AGE,
        requiredClaims: ['exp', 'iat']
      });
      return payload;
    } catch (error) {
      throw new TokenRefused(refusal(error));
    }
  }

  private stateOf(issuer: string): IssuerKeys {
    let state = this.issuers.get(issuer);
    if (!state) {
      state = { kids: new Set(), fetchedAt: 0, tokens: REFETCH_BURST, tokensAt: Date.now() };
      this.issuers.set(issuer, state);
    }
    return state;
  }

  /**
   * Fetches the issuer's keys again, unless a fetch is under way (then waits for it) or, for an
   * unknown key id, the issuer's bucket of refetches is empty (then keeps the keys it has).
   */
  private async refresh(issuer: string, state: IssuerKeys, due: boolean): Promise<void> {
    if (state.loading) return state.loading;
    if (!due) {
      const now = Date.now();
      state.tokens = Math.min(REFETCH_BURST, state.tokens + (now - state.tokensAt) / REFETCH_INTERVAL_MS);
      state.tokensAt = now;
      if (state.tokens < 1) return;
      state.tokens -= 1;
    }
    state.loading = (async () => {
      try {
        const { keys, kids } = await this.load(issuer);
        state.keys = keys;
        state.kids = kids;
      } catch {
        // The keys held are kept; without any, the token is refused as unverifiable.
      } finally {
        // Counted even when failed: a failing issuer is not asked again before its time.
        state.fetchedAt = Date.now();
        state.loading = undefined;
      }
    })();
    return state.loading;
  }

  private async load(issuer: string): Promise<{ keys: JWTVerifyGetKey; kids: Set<string> }> {
    this.count(issuer);
    const discovery = (await this.fetchJson(`${issuer}/.well-known/openid-configuration`)) as {
      issuer?: unknown;
      jwks_uri?: unknown;
    };
    if (typeof discovery?.issuer !== 'string' || discovery.issuer.replace(/\/+$/, '') !== issuer)
      throw new Error('the discovery document names another issuer');
    if (typeof discovery.jwks_uri !== 'string' || !trustedUrl(discovery.jwks_uri))
      throw new Error('the discovery document names no https jwks_uri');
    this.count(issuer);
    const jwks = (await this.fetchJson(discovery.jwks_uri)) as { keys?: unknown };
    if (!Array.isArray(jwks?.keys)) throw new Error('the key set has no keys');
    const kids = new Set<string>();
    for (const key of jwks.keys as { kid?: unknown }[]) if (typeof key?.kid === 'string') kids.add(key.kid);
    return { keys: createLocalJWKSet(jwks as Parameters<typeof createLocalJWKSet>[0]), kids };
  }

  private count(issuer: string): void {
    this.fetches.set(issuer, (this.fetches.get(issuer) ?? 0) + 1);
  }
}

/** Whether a claim's value matches a rule's pattern (`*`: any run of characters). */
export function claimMatches(value: unknown, pattern: string): boolean {
  if (typeof value !== 'string' && typeof value !== 'number' && typeof value !== 'boolean') return false;
  const text = String(value);
  if (!pattern.includes('*')) return text === pattern;
  const parts = pattern.split('*');
  const first = parts[0]!;
  const last = parts[parts.length - 1]!;
  if (!text.startsWith(first) || text.length < first.length + last.length || !text.endsWith(last))
    return false;
  // The middle parts in order, each as early as it fits: no regular expression, no backtracking.
  let at = first.length;
  const end = text.length - last.length;
  for (const part of parts.slice(1, -1)) {
    const found = text.indexOf(part, at);
    if (found === -1 || found + part.length > end) return false;
    at = found + part.length;
  }
  return true;
}

/** What was wrong with a token, in words that name neither the token nor a rule. */
function refusal(error: unknown): string {
  if (error instanceof errors.JWTExpired) return 'the token has expired (exp), or was issued too long ago';
  if (error instanceof errors.JWTClaimValidationFailed) {
    switch (error.claim) {
      case 'nbf':
        return 'the token is not valid yet (nbf)';
      case 'iat':
        return 'the token was issued in the future (iat)';
      case 'aud':
        return "the token's audience (aud) is not one this executor accepts";
      case 'iss':
        return "the token's issuer (iss) is not one this executor trusts";
      default:
        return `the token lacks a valid ${JSON.stringify(error.claim)} claim`;
    }
  }
  if (error instanceof errors.JOSEAlgNotAllowed) return "the token's algorithm is not accepted";
  if (error instanceof errors.JWKSNoMatchingKey)
    return 'the token is signed with a key its issuer does not publish (unknown kid)';
  if (error instanceof errors.JWKSMultipleMatchingKeys)
    return 'the token names no key id (kid) and its issuer publishes several keys';
  if (error instanceof errors.JWSSignatureVerificationFailed) return "the token's signature is not valid";
  return 'the token could not be verified';
}

function trustedUrl(text: string): boolean {
  try {
    const url = new URL(text);
    return url.protocol === 'https:' || (url.protocol === 'http:' && isLoopbackHost(url.hostname));
  } catch {
    return false;
  }
}

/** GETs a JSON document of at most MAX_DOCUMENT_BYTES, within FETCH_TIMEOUT_MS, following no redirect. */
async function boundedFetch(url: string): Promise<unknown> {
  const response = await fetch(url, {
    redirect: 'error',
    signal: AbortSignal.timeout(FETCH_TIMEOUT_MS),
    headers: { accept: 'application/json' }
  });
  if (!response.ok) {
    await response.body?.cancel();
    throw new Error(`HTTP ${response.status}`);
  }
  const chunks: Uint8Array[] = [];
  let bytes = 0;
  for await (const chunk of response.body ?? []) {
    bytes += chunk.byteLength;
    if (bytes > MAX_DOCUMENT_BYTES) throw new Error('document too large');
    chunks.push(chunk);
  }
  return JSON.parse(Buffer.concat(chunks).toString('utf8')) as unknown;
}
