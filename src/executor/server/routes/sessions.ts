// The session page behind a run's session_link (HTML that works without JavaScript and escapes
// every piece of run content), and the downloads of that run's artifacts the page links to. The
// token (an HMAC of the run id) is the access check for both, made by the session tree's hook
// (register.ts); a wrong or missing token answers 404, like a run that does not exist, and an
// artifact of another run is not found either. With `server.session_pages: sign-in` the link
// alone is not enough: the browser must also be signed in to the dashboard with a key of the run's
// team (a link posted publicly then shows nothing to strangers).

import type { FastifyReply, FastifyRequest } from 'fastify';
import type { StoredRun } from '../../store/types.js';
import type { ServerContext } from '../context.js';
import { boundedEvents } from '../bounded-events.js';
import { ProblemError } from '../problem.js';
import { renderSession } from '../session-page.js';
import { viewerOf } from '../dashboard/session.js';
import type { EndpointRequest, RouteContext } from './handler.js';

/** The run of a session link whose token the hook checked, or a 404 for an unknown run. */
async function sessionRun(context: Pick<ServerContext, 'stores'>, id: string): Promise<StoredRun> {
  const run = await context.stores.runs.getRunAnyTeam(id);
  if (!run) throw new ProblemError('not_found', 'no session with this id and token');
  return run;
}

/**
 * With session_pages: sign-in, whether the browser is signed in as the run's team: false after
 * answering (a redirect to sign in, or 404 for another team's sign-in, as for a wrong token).
 */
async function admitted(
  context: Pick<ServerContext, 'stores' | 'settings'>,
  request: FastifyRequest,
  reply: FastifyReply,
  run: StoredRun
): Promise<boolean> {
  if (context.settings.sessionPages !== 'sign-in') return true;
  const viewer = await viewerOf(context.stores.accounts, request);
  if (viewer?.team === run.team) return true;
  if (viewer) throw new ProblemError('not_found', 'no session with this id and token');
  await reply
    .code(303)
    .header('location', `/?next=${encodeURIComponent(request.url)}`)
    .header('cache-control', 'no-store')
    .send();
  return false;
}

export async function getSession(
  context: RouteContext,
  request: EndpointRequest<'getSession'>,
  reply: FastifyReply
) {
  const run = await sessionRun(context, request.params.run_id);
  if (!(await admitted(context, request, reply, run))) return reply;
  return sendSessionPage(context, run, String(request.query.token), reply);
}

export async function getSessionArtifact(
  context: RouteContext,
  request: EndpointRequest<'getSessionArtifact'>,
  reply: FastifyReply
) {
  const run = await sessionRun(context, request.params.run_id);
  if (!(await admitted(context, request, reply, run))) return reply;
  return sendSessionArtifact(context, run, request.params.artifact_uid, reply);
}

/** The session page of a run whose link (`token`) was checked. */
export async function sendSessionPage(
  context: Pick<ServerContext, 'stores'>,
  run: StoredRun,
  token: string,
  reply: FastifyReply
): Promise<FastifyReply> {
  const [events, artifacts] = await Promise.all([
    boundedEvents(context.stores.transcript, run.run_id),
    context.stores.artifacts.listArtifacts(run.team, run.run_id)
  ]);
  return reply
    .type('text/html; charset=utf-8')
    .header('content-security-policy', "default-src 'none'; style-src 'unsafe-inline'")
    .header('referrer-policy', 'no-referrer')
    .header('cache-control', 'no-store')
    .send(renderSession(run, events, artifacts, token));
}

/** One artifact of a run whose session link was checked, as an attachment; another run's is not found. */
export async function sendSessionArtifact(
  context: Pick<ServerContext, 'stores'>,
  run: StoredRun,
  uid: string,
  reply: FastifyReply
): Promise<FastifyReply> {
  const artifact = await context.stores.artifacts.getArtifact(run.team, uid);
  const stored =
    artifact?.run_id === run.run_id ? await context.stores.artifacts.readArtifact(uid) : undefined;
  if (!stored)
    throw new ProblemError(
      'artifact_not_found',
      `artifact ${JSON.stringify(uid.slice(0, 100))} does not exist in this session's run`
    );
  const name = stored.artifact.filename;
  return reply
    .type(stored.artifact.mime_type)
    .header(
      'content-disposition',
      `attachment; filename="${name.replace(/[^\x20-\x7e]|["\\]/g, '_')}"; filename*=UTF-8''${encodeURIComponent(name)}`
    )
    .header('content-security-policy', "default-src 'none'; sandbox")
    .header('x-content-type-options', 'nosniff')
    .header('referrer-policy', 'no-referrer')
    .header('cache-control', 'private, no-store')
    .send(stored.data);
}
