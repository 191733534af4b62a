// The session page behind a run's session_link: HTML that works without JavaScript and escapes
// every piece of run content. The token (an HMAC of the run id) is the access check, made by the
// session tree's hook (register.ts); a wrong or missing token answers 404, like a run that does not
// exist.

import type { ServerContext } from '../context.js';
import { boundedEvents } from '../bounded-events.js';
import { ProblemError } from '../problem.js';
import { renderSession } from '../session-page.js';
import type { Handlers } from './register.js';

export function sessionHandlers(context: ServerContext): Handlers<'getSession'> {
  return {
    getSession: async (request, reply) => {
      const run = await context.store.getRunAnyTeam(request.params.run_id);
      if (!run) throw new ProblemError('not_found', 'no session with this id and token');
      const events = await boundedEvents(context.store, run.run_id);
      return reply
        .type('text/html; charset=utf-8')
        .header('content-security-policy', "default-src 'none'; style-src 'unsafe-inline'")
        .header('referrer-policy', 'no-referrer')
        .header('cache-control', 'no-store')
        .send(renderSession(run, events));
    }
  };
}
