// Bearer authentication (an API key, or a workload's OIDC token: oidc.ts) and the per-key rate limit.

import type { FastifyRequest } from 'fastify';
import { hashKey, isWellFormedKey, sameHash } from '../store/keys.js';
import type { KeyRecord, KeyStore } from '../store/types.js';
import { type OidcVerifier, TokenRefused, type Workload, looksLikeJwt } from './oidc.js';
import { ProblemError } from './problem.js';
import type { Orchestrator } from './run-token.js';

export interface Principal {
  /** The key's id; for an OIDC token, its repository (the creator's uid, and the rate limit's bucket). */
  keyId: string;
  team: string;
  kind: KeyRecord['kind'];
  name: string;
  /** Set when an OIDC token signed in: the claims a run it creates keeps. */
  workload?: Workload;
  /** Set when an orchestrate run's token signed in: the run below which it may act (run-token.ts). */
  orchestrator?: Orchestrator;
}

const CHALLENGE = { 'www-authenticate': 'Bearer realm="agent-executor"' };

/**
 * SHA-256 of the keys that recently authenticated, so a busy client's key is not hashed on every
 * request. Only keys the store knew are kept (made-up keys cannot grow it), at most this many.
 */
const MAX_REMEMBERED_HASHES = 1_000;
const hashes = new Map<string, string>();

/** The credential of an Authorization header: `Bearer <API key or OIDC token>`. */
export function bearerOf(header: string | undefined): string {
  if (!header)
    throw new ProblemError(
      'unauthenticated',
      'missing Authorization header; expected `Bearer <API key>`',
      CHALLENGE
    );
  const match = /^Bearer\s+(\S+)\s*$/i.exec(header);
  if (!match)
    throw new ProblemError(
      'unauthenticated',
      'Authorization header is not of the form `Bearer <API key>`',
      CHALLENGE
    );
  return match[1]!;
}

/** Whether the header carries an OIDC token rather than a key (such principals are not cached). */
export function carriesToken(header: string | undefined): boolean {
  const match = header === undefined ? null : /^Bearer\s+(\S+)\s*$/i.exec(header);
  return match !== null && looksLikeJwt(match[1]!);
}

/** The principal of a workload's OIDC token, or a 401 saying what was wrong with it. */
export async function authenticateToken(oidc: OidcVerifier, request: FastifyRequest): Promise<Principal> {
  const token = bearerOf(request.headers.authorization);
  try {
    const found = await oidc.verify(token);
    return {
      keyId: found.uid,
      team: found.team,
      kind: found.kind,
      name: found.name,
      workload: found.workload
    };
  } catch (error) {
    if (error instanceof TokenRefused) throw new ProblemError('unauthenticated', error.message, CHALLENGE);
    throw error;
  }
}

export async function authenticate(store: KeyStore, request: FastifyRequest): Promise<Principal> {
  const key = bearerOf(request.headers.authorization);
  if (!isWellFormedKey(key)) {
    throw new ProblemError(
      'unauthenticated',
      'the API key is malformed (wrong prefix, length or checksum)',
      CHALLENGE
    );
  }
  const hash = hashes.get(key) ?? hashKey(key);
  // The store is asked every time (it knows about revocations); only the hashing is remembered.
  const record = await store.findKeyByHash(hash);
  if (!record || !sameHash(record.hash, hash) || record.revoked_at !== null) {
    hashes.delete(key);
    throw new ProblemError('unauthenticated', 'the API key is unknown or revoked', CHALLENGE);
  }
  if (!hashes.has(key)) {
    if (hashes.size >= MAX_REMEMBERED_HASHES) hashes.delete(hashes.keys().next().value!);
    hashes.set(key, hash);
  }
  return { keyId: record.id, team: record.team, kind: record.kind, name: record.name };
}

/** A token bucket per key: `perMinute` requests a minute, in bursts of up to the same number. */
export class RateLimiter {
  private readonly buckets = new Map<string, { tokens: number; at: number }>();

  constructor(private readonly perMinute: number) {}

  /** Takes a token; returns the seconds to wait when none is left. */
  take(key: string, now = Date.now()): number | undefined {
    if (this.perMinute <= 0) return undefined;
    const rate = this.perMinute / 60_000;
    const bucket = this.buckets.get(key) ?? { tokens: this.perMinute, at: now };
    bucket.tokens = Math.min(this.perMinute, bucket.tokens + (now - bucket.at) * rate);
    bucket.at = now;
    this.buckets.set(key, bucket);
    if (bucket.tokens >= 1) {
      bucket.tokens -= 1;
      return undefined;
    }
    if (this.buckets.size > 10_000) this.sweep(now);
    return Math.max(1, Math.ceil((1 - bucket.tokens) / rate / 1000));
  }

  private sweep(now: number): void {
    for (const [key, bucket] of this.buckets) if (now - bucket.at > 60_000) this.buckets.delete(key);
  }
}
