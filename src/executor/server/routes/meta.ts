// Liveness, readiness, the OpenAPI document and the error reference: no key needed.

import { ERROR_CODES } from '../../../api/index.js';
import { openApiDocument } from '../../../api/openapi.js';
import type { ServerContext } from '../context.js';
import { freeSpaceProblem } from '../../sandbox/processes.js';
import type { Handlers } from './register.js';

export function metaHandlers(
  context: ServerContext,
  publicUrl: () => string,
  /** Whether this node claims runs (not an `api` node): its readiness then needs room on the data dir. */
  runsWork = true
): Handlers<'health' | 'ready' | 'getOpenApi' | 'listErrorCodes'> {
  let document: string | undefined;
  return {
    health: async () => ({ status: 'ok' }),

    ready: async (request, reply) => {
      if (context.draining) return reply.code(503).send({ status: 'shutting_down' });
      try {
        await context.store.ping();
      } catch {
        return reply.code(503).send({ status: 'store_unavailable' });
      }
      // Looked at now, not when the pool last tried a claim: ready again as soon as room is back.
      const short = runsWork ? freeSpaceProblem(context.config, request.log) : undefined;
      if (short) return reply.code(503).send({ status: 'low_on_space', claiming: false, reason: short });
      return { status: 'ready', environments: context.config.environments.map(env => env.id) };
    },

    getOpenApi: async (_request, reply) => {
      document ??= JSON.stringify(openApiDocument(publicUrl()));
      return reply.type('application/json').send(document);
    },

    listErrorCodes: async () => ({
      errors: Object.entries(ERROR_CODES).map(([code, info]) => ({ error_code: code, ...info }))
    })
  };
}
