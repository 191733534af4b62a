// Signing in to the dashboard with an API key, and signing out. Sign-in is rate-limited per
// address; both forms must come from this site's own origin (sign-out also with its CSRF token).

import type { FastifyReply, FastifyRequest } from 'fastify';
import { KEY_PREFIX } from '../../store/keys.js';
import type { ServerContext } from '../context.js';
import { ProblemError } from '../problem.js';
import { localPath } from './html.js';
import { renderSignIn } from './list-page.js';
import { field, forbidden, refuse, seeOther } from './respond.js';
import { clearCookie, refusal, signIn, viewerOf } from './session.js';

/** POST /sign-in: the sign-in page's form; back to the page asked for once signed in. */
export async function signInForm(context: ServerContext, request: FastifyRequest, reply: FastifyReply) {
  const { stores, settings } = context;
  const refused = refusal(settings, request, undefined, undefined);
  if (refused) return forbidden(request, reply, undefined, refused);
  const next = localPath(field(request, 'next'));
  const wait = context.limiter.take(`sign-in ${request.ip}`);
  if (wait !== undefined) {
    const message = `too many sign-in attempts from this address; try again in ${wait} s`;
    return refuse(
      request,
      reply,
      renderSignIn(message, next),
      new ProblemError('rate_limited', message, { 'retry-after': String(wait) })
    );
  }
  const key = field(request, 'api_key');
  if (typeof key !== 'string' || !(await signIn(stores.accounts, settings, request, reply, key.trim()))) {
    const message = `That API key is malformed, unknown or revoked; paste a whole key of the form ${KEY_PREFIX}…`;
    return refuse(request, reply, renderSignIn(message, next), new ProblemError('unauthenticated', message));
  }
  return seeOther(reply, next ?? '/');
}

/** POST /sign-out: ends the session (when there is one) and clears its cookie. */
export async function signOutForm(context: ServerContext, request: FastifyRequest, reply: FastifyReply) {
  const { stores, settings } = context;
  const viewer = await viewerOf(stores.accounts, request);
  const refused = refusal(settings, request, viewer, field(request, 'csrf'));
  if (refused) return forbidden(request, reply, viewer, refused);
  if (viewer) await stores.accounts.deleteWebSession(viewer.idHash);
  clearCookie(settings, request, reply);
  return seeOther(reply, '/');
}
