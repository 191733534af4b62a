// Signatures by the Standard Webhooks specification: a secret is `whsec_` and the base64 of random
// bytes; a signature is `v1,` and the base64 HMAC-SHA256, keyed with those bytes, of
// "{webhook-id}.{webhook-timestamp}.{body}". During a rotation's grace period the header carries
// one signature per secret, separated by spaces, and a receiver accepts any that verifies.

import { createHmac, randomBytes } from 'node:crypto';

const PREFIX = 'whsec_';

export function newSecret(): string {
  return PREFIX + randomBytes(24).toString('base64');
}

/** Whether a string is a secret of this form (for the operator's declared ones). */
export function isSecret(value: string): boolean {
  if (!value.startsWith(PREFIX)) return false;
  const key = Buffer.from(value.slice(PREFIX.length), 'base64');
  return key.length >= 16 && key.toString('base64') === value.slice(PREFIX.length);
}

export function signature(secret: string, id: string, timestamp: number, body: string): string {
  const key = Buffer.from(secret.slice(PREFIX.length), 'base64');
  return `v1,${createHmac('sha256', key).update(`${id}.${timestamp}.${body}`).digest('base64')}`;
}

/** The webhook-signature header: one signature for each secret in use. */
export function signatureHeader(
  secrets: readonly string[],
  id: string,
  timestamp: number,
  body: string
): string {
  return secrets.map(secret => signature(secret, id, timestamp, body)).join(' ');
}
