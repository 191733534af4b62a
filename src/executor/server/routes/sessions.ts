// The session page behind a run's session_link (HTML that works without JavaScript and escapes
// every piece of run content), and the downloads of that run's artifacts the page links to. The
// token (an HMAC of the run id) is the access check for both; a wrong or missing token answers 404,
// like a run that does not exist, and an artifact of another run is not found either.

import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FastifyInstance, FastifyReply } from 'fastify';
import Type from 'typebox';
import { RunParamsSchema } from '../../../api/schemas.js';
import type { StoredRun } from '../../store/types.js';
import type { ServerContext } from '../context.js';
import { boundedEvents } from '../bounded-events.js';
import { ProblemError } from '../problem.js';
import { renderSession } from '../session-page.js';

/**
 * A shared link may gain parameters on its way (tracking, say): only `token` is read, and any token
 * that is not the right one (a repeated one too) is a 404 like a run that does not exist.
 */
const SessionQuerySchema = Type.Object(
  { token: Type.Optional(Type.Unknown()) },
  { additionalProperties: true }
);

const SessionArtifactParamsSchema = Type.Object({
  id: RunParamsSchema.properties.id,
  uid: Type.String({ description: 'The artifact id.' })
});

export async function sessionRoutes(
  fastify: FastifyInstance,
  { context }: { context: ServerContext }
): Promise<void> {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();
  /** The run of a session link, or a 404 for a wrong token or an unknown run. */
  const sessionRun = async (id: string, token: unknown): Promise<StoredRun> => {
    const run = context.links.verify(id, token) ? await context.store.getRunAnyTeam(id) : undefined;
    if (!run) throw new ProblemError('not_found', 'no session with this id and token');
    return run;
  };
  const schema = { params: RunParamsSchema, querystring: SessionQuerySchema };
  app.get('/sessions/:id', { schema }, async (request, reply) => {
    const { token } = request.query;
    return sendSessionPage(context, await sessionRun(request.params.id, token), String(token), reply);
  });
  const artifactSchema = { params: SessionArtifactParamsSchema, querystring: SessionQuerySchema };
  app.get('/sessions/:id/artifacts/:uid', { schema: artifactSchema }, async (request, reply) => {
    const run = await sessionRun(request.params.id, request.query.token);
    return sendSessionArtifact(context, run, request.params.uid, reply);
  });
}

/** The session page of a run whose link (`token`) was checked. */
export async function sendSessionPage(
  context: ServerContext,
  run: StoredRun,
  token: string,
  reply: FastifyReply
): Promise<FastifyReply> {
  const [events, artifacts] = await Promise.all([
    boundedEvents(context.store, run.run_id),
    context.store.listArtifacts(run.team, run.run_id)
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
  context: ServerContext,
  run: StoredRun,
  uid: string,
  reply: FastifyReply
): Promise<FastifyReply> {
  const artifact = await context.store.getArtifact(run.team, uid);
  const stored = artifact?.run_id === run.run_id ? await context.store.readArtifact(uid) : undefined;
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
