// API keys: `arx_` + 30 random base62 characters + a 6-character CRC32 checksum, so secret
// scanners can recognise a leaked key and the server can refuse a mistyped one without a lookup.
// Only the SHA-256 of a key is stored; keys are random enough that a fast hash is safe.

import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { crc32 } from 'node:zlib';
import type { AccountStore } from './account-types.js';
import type { KeyKind } from './records.js';

export type { KeyKind };

export const KEY_PREFIX = 'arx_';
const ALPHABET = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';
const BODY_LENGTH = 30;
const CHECK_LENGTH = 6;
const KEY_PATTERN = new RegExp(`^${KEY_PREFIX}[0-9A-Za-z]{${BODY_LENGTH + CHECK_LENGTH}}$`);

function base62(bytes: Buffer, length: number): string {
  let out = '';
  for (const byte of bytes) {
    // 248 = 62 × 4: rejecting higher bytes keeps every character equally likely.
    if (byte < 248) out += ALPHABET[byte % 62];
    if (out.length === length) return out;
  }
  return out + base62(randomBytes(length), length - out.length);
}

function checksum(body: string): string {
  let value = crc32(body);
  let out = '';
  for (let i = 0; i < CHECK_LENGTH; i++) {
    out = ALPHABET[value % 62] + out;
    value = Math.floor(value / 62);
  }
  return out;
}

export function generateKey(prefix = KEY_PREFIX): string {
  const body = base62(randomBytes(48), BODY_LENGTH);
  return `${prefix}${body}${checksum(body)}`;
}

/**
 * An orchestrate turn's credential (worker/orchestrate.ts): the shape of a key under its own
 * prefix, so the server tells it from an API key before any lookup and scanners can still spot it.
 */
export const RUN_TOKEN_PREFIX = 'art_';

export function isWellFormedRunToken(token: string): boolean {
  return (
    token.startsWith(RUN_TOKEN_PREFIX) && isWellFormedKey(KEY_PREFIX + token.slice(RUN_TOKEN_PREFIX.length))
  );
}

export function generateKeyId(): string {
  return `key_${base62(randomBytes(24), 16)}`;
}

/** Whether the text has the shape and checksum of a key (says nothing about whether it exists). */
export function isWellFormedKey(key: string): boolean {
  if (!KEY_PATTERN.test(key)) return false;
  const body = key.slice(KEY_PREFIX.length, KEY_PREFIX.length + BODY_LENGTH);
  return checksum(body) === key.slice(KEY_PREFIX.length + BODY_LENGTH);
}

export function hashKey(key: string): string {
  return createHash('sha256').update(key).digest('hex');
}

/** Constant-time comparison of two hex digests. */
export function sameHash(a: string, b: string): boolean {
  const left = Buffer.from(a, 'hex');
  const right = Buffer.from(b, 'hex');
  return left.length === right.length && timingSafeEqual(left, right);
}

/** The part of a key that is safe to show in lists: its prefix and first characters. */
export function keyHint(key: string): string {
  return `${key.slice(0, KEY_PREFIX.length + 4)}…`;
}

/** Makes a new key for a team and stores its hash; the raw key is returned once and kept nowhere. */
export async function issueKey(
  store: Pick<AccountStore, 'createKey'>,
  options: { team: string; kind: KeyKind; name: string }
): Promise<{ raw: string; id: string }> {
  const raw = generateKey();
  const id = generateKeyId();
  await store.createKey({
    id,
    ...options,
    hash: hashKey(raw),
    hint: keyHint(raw),
    created_at: new Date().toISOString(),
    revoked_at: null
  });
  return { raw, id };
}
