// Who is signed in to the dashboard, and the checks every state-changing request passes. The
// cookie holds a random id; the store keeps only its SHA-256, bound to the key's team, so any node
// knows the session and a revoked key ends it at the next request. The CSRF token is derived from
// the id (an attacker who cannot read the cookie cannot compute it), and a POST must also come
// from this site's own origin.

import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { hashKey, isWellFormedKey, sameHash } from '../../store/keys.js';
import type { AccountStore } from '../../store/types.js';
import type { ServerSettings } from '../context.js';
import type { Viewer } from './html.js';

/** What of the settings a dashboard session reads: the address it is served at. */
type SessionSettings = Pick<ServerSettings, 'publicUrl'>;

export const COOKIE = 'agent_run_session';
/** How long a sign-in lasts. */
export const SESSION_TTL_MS = 12 * 60 * 60 * 1000;

export interface SignedIn extends Viewer {
  idHash: string;
}

const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');
const csrfOf = (id: string) => createHash('sha256').update(`csrf\n${id}`).digest('base64url');

function cookieValue(request: FastifyRequest): string | undefined {
  const header = request.headers.cookie ?? '';
  for (const part of header.split(';')) {
    const [name, ...rest] = part.trim().split('=');
    if (name === COOKIE) return rest.join('=');
  }
  return undefined;
}

/** The signed-in viewer, or undefined (no cookie, unknown, expired, or its key revoked). */
export async function viewerOf(store: AccountStore, request: FastifyRequest): Promise<SignedIn | undefined> {
  const id = cookieValue(request);
  if (!id || !/^[A-Za-z0-9_-]{43}$/.test(id)) return undefined;
  const session = await store.findWebSession(sha256(id), Date.now());
  if (!session) return undefined;
  return { team: session.team, keyName: session.key_name, csrf: csrfOf(id), idHash: session.id_hash };
}

/** True when the site is reached over https, so the cookie must be Secure. */
function secure(settings: SessionSettings, request: FastifyRequest): boolean {
  return request.protocol === 'https' || (settings.publicUrl ?? '').startsWith('https:');
}

/** Checks an API key and makes a session of it; false for a malformed, unknown or revoked key. */
export async function signIn(
  store: AccountStore,
  settings: SessionSettings,
  request: FastifyRequest,
  reply: FastifyReply,
  key: string
): Promise<boolean> {
  if (!isWellFormedKey(key)) return false;
  const hash = hashKey(key);
  const record = await store.findKeyByHash(hash);
  if (!record || !sameHash(record.hash, hash) || record.revoked_at !== null) return false;
  const id = randomBytes(32).toString('base64url');
  const now = Date.now();
  await store.createWebSession({
    id_hash: sha256(id),
    key_id: record.id,
    team: record.team,
    created_at: new Date(now).toISOString(),
    expires_at: now + SESSION_TTL_MS
  });
  const flags = `Path=/; HttpOnly; SameSite=Strict; Max-Age=${SESSION_TTL_MS / 1000}`;
  reply.header('set-cookie', `${COOKIE}=${id}; ${flags}${secure(settings, request) ? '; Secure' : ''}`);
  return true;
}

export function clearCookie(settings: SessionSettings, request: FastifyRequest, reply: FastifyReply): void {
  const flags = 'Path=/; HttpOnly; SameSite=Strict; Max-Age=0';
  reply.header('set-cookie', `${COOKIE}=; ${flags}${secure(settings, request) ? '; Secure' : ''}`);
}

/** The origins this site is served at: the request's own host, and the configured public URL. */
function sameOrigin(settings: SessionSettings, request: FastifyRequest): boolean {
  const origin = request.headers.origin;
  if (typeof origin !== 'string') return false;
  if (origin === `${request.protocol}://${request.host}`) return true;
  if (settings.publicUrl) {
    try {
      return new URL(settings.publicUrl).origin === origin;
    } catch {
      return false;
    }
  }
  return false;
}

/**
 * Why a form POST is refused, or undefined when it may go on: it must come from this origin, and
 * (when signed in) carry the session's CSRF token.
 */
export function refusal(
  settings: SessionSettings,
  request: FastifyRequest,
  viewer: SignedIn | undefined,
  token: unknown
): string | undefined {
  if (!sameOrigin(settings, request))
    return `the request came from origin ${JSON.stringify(request.headers.origin ?? null)}, not from this site`;
  if (!viewer) return undefined;
  const given = Buffer.from(typeof token === 'string' ? token : '');
  const expected = Buffer.from(viewer.csrf);
  if (given.length !== expected.length || !timingSafeEqual(given, expected))
    return 'the form is missing its CSRF token or carries a wrong one; reload the page and try again';
  return undefined;
}
