// What every dashboard page answers with: its HTML under the same strict headers, the refusals
// (an HTML page for a browser, problem+json for any other client), the form fields, and the
// redirect to the sign-in page when no one is signed in.

import type { FastifyReply, FastifyRequest } from 'fastify';
import type { AccountStore } from '../../store/types.js';
import type { ServerContext, ServerSettings } from '../context.js';
import { ProblemError } from '../problem.js';
import { localPath } from './html.js';
import { renderProblem } from './list-page.js';
import { type SignedIn, clearCookie, refusal, viewerOf } from './session.js';

/**
 * One dashboard route's handler: the server's context, the request and the reply. Most are
 * async; the static files answer at once, so their handlers may return the reply itself.
 */
export type PageHandler = (context: ServerContext, request: FastifyRequest, reply: FastifyReply) => unknown;

const CSP =
  "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; " +
  "form-action 'self'; base-uri 'none'; frame-ancestors 'none'";

export const HEADERS: Record<string, string> = {
  'content-security-policy': CSP,
  // same-origin, not no-referrer: under no-referrer Chromium sends `Origin: null` with our own forms.
  'referrer-policy': 'same-origin',
  'x-content-type-options': 'nosniff',
  'x-frame-options': 'DENY',
  'cache-control': 'no-store'
};

export function html(reply: FastifyReply, body: string, status = 200): FastifyReply {
  return reply.code(status).headers(HEADERS).type('text/html; charset=utf-8').send(body);
}

/** A field of a submitted form (the plugin parses url-encoded bodies into an object). */
export function field(request: FastifyRequest, name: string): unknown {
  return (request.body as Record<string, unknown> | undefined)?.[name];
}

/** A 303 to `location`: where every form goes once it is done. */
export function seeOther(reply: FastifyReply, location: string): FastifyReply {
  return reply.code(303).header('location', location).send();
}

/**
 * A refusal: an HTML page for a browser (it asks for text/html), and for any other client the
 * problem+json every other error of the executor is.
 */
export function refuse(
  request: FastifyRequest,
  reply: FastifyReply,
  page: string,
  problem: ProblemError
): FastifyReply {
  if (!/\btext\/html\b/.test(request.headers.accept ?? '')) throw problem;
  for (const [name, value] of Object.entries(problem.headers)) void reply.header(name, value);
  return html(reply, page, problem.status);
}

export function forbidden(
  request: FastifyRequest,
  reply: FastifyReply,
  viewer: SignedIn | undefined,
  why: string
): FastifyReply {
  return refuse(
    request,
    reply,
    renderProblem(viewer, 'Request refused', why),
    new ProblemError('invalid_request', why, {}, 403)
  );
}

export function runNotFound(
  request: FastifyRequest,
  reply: FastifyReply,
  viewer: SignedIn | undefined,
  id: string
): FastifyReply {
  return refuse(
    request,
    reply,
    renderProblem(viewer, 'Run not found', `There is no run ${id.slice(0, 100)} in your team.`),
    new ProblemError(
      'not_found',
      `run ${JSON.stringify(id.slice(0, 100))} does not exist or is not visible to this session`
    )
  );
}

/** The viewer, or a redirect to the sign-in page (answered here) when there is none. */
export async function signedIn(
  accounts: AccountStore,
  settings: Pick<ServerSettings, 'publicUrl'>,
  request: FastifyRequest,
  reply: FastifyReply
): Promise<SignedIn | undefined> {
  const viewer = await viewerOf(accounts, request);
  if (!viewer) {
    clearCookie(settings, request, reply);
    // After sign-in the browser comes back to the page it asked for.
    const next = localPath(request.url);
    const back = next && next !== '/' ? `/?next=${encodeURIComponent(next)}` : '/';
    void reply.code(303).header('location', back).send();
  }
  return viewer;
}

/**
 * The checks of a form POST that needs a session: its origin and CSRF token (a 403 when they
 * fail), then the viewer (a 303 to the sign-in page when there is none). Either way the answer is
 * sent and undefined returned; otherwise the viewer, for the form's work.
 */
export async function formViewer(
  accounts: AccountStore,
  settings: Pick<ServerSettings, 'publicUrl'>,
  request: FastifyRequest,
  reply: FastifyReply
): Promise<SignedIn | undefined> {
  const viewer = await viewerOf(accounts, request);
  const refused = refusal(settings, request, viewer, field(request, 'csrf'));
  if (refused) {
    forbidden(request, reply, viewer, refused);
    return undefined;
  }
  if (!viewer) {
    seeOther(reply, '/');
    return undefined;
  }
  return viewer;
}
