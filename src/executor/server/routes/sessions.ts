// The session page behind a run's session_link: HTML that works without JavaScript and escapes
// every piece of run content. The token (an HMAC of the run id) is the access check; a wrong or
// missing token answers 404, like a run that does not exist.

import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FastifyInstance } from 'fastify';
import Type from 'typebox';
import { RunParamsSchema } from '../../../api/schemas.js';
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

export async function sessionRoutes(
  fastify: FastifyInstance,
  { context }: { context: ServerContext }
): Promise<void> {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();
  const schema = { params: RunParamsSchema, querystring: SessionQuerySchema };
  app.get('/sessions/:id', { schema }, async (request, reply) => {
    const { id } = request.params;
    const { token } = request.query;
    const run = context.links.verify(id, token) ? await context.store.getRunAnyTeam(id) : undefined;
    if (!run) throw new ProblemError('not_found', 'no session with this id and token');
    const events = await boundedEvents(context.store, run.run_id);
    return reply
      .type('text/html; charset=utf-8')
      .header('content-security-policy', "default-src 'none'; style-src 'unsafe-inline'")
      .header('referrer-policy', 'no-referrer')
      .header('cache-control', 'no-store')
      .send(renderSession(run, events));
  });
}
