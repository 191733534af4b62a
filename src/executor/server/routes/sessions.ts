// The session page behind a run's session_link: HTML that works without JavaScript and escapes
// every piece of run content. The token (an HMAC of the run id) is the access check; a wrong or
// missing token answers 404, like a run that does not exist.

import type { FastifyInstance } from 'fastify';
import type { ServerContext } from '../context.js';
import { ProblemError } from '../problem.js';
import { renderSession } from '../session-page.js';

export async function sessionRoutes(
  app: FastifyInstance,
  { context }: { context: ServerContext }
): Promise<void> {
  app.get('/sessions/:id', async (request, reply) => {
    const { id } = request.params as { id: string };
    const { token } = request.query as { token?: string };
    const run = context.links.verify(id, token) ? await context.store.getRunAnyTeam(id) : undefined;
    if (!run) throw new ProblemError('not_found', 'no session with this id and token');
    const events = await context.store.listEvents(run.run_id);
    return reply
      .type('text/html; charset=utf-8')
      .header('content-security-policy', "default-src 'none'; style-src 'unsafe-inline'")
      .header('referrer-policy', 'no-referrer')
      .header('cache-control', 'no-store')
      .send(renderSession(run, events));
  });
}
