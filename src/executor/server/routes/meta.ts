// Liveness, readiness, the OpenAPI document and the error reference: no key needed.

import { ERROR_CODES } from '../../../api/index.js';
import { openApiDocument } from '../../../api/openapi.js';
import type { ServerContext } from '../context.js';
import { freeSpaceNote } from '../../sandbox/processes.js';
import type { Handlers } from './register.js';

export function metaHandlers(
  context: ServerContext,
  publicUrl: () => string
): Handlers<'health' | 'ready' | 'getOpenApi' | 'listErrorCodes'> {
  let document: string | undefined;
  return {
    health: async () => ({ status: 'ok' }),

    ready: async (_request, reply) => {
      if (context.draining) return reply.code(503).send({ status: 'shutting_down' });
      try {
        await context.store.ping();
      } catch {
        return reply.code(503).send({ status: 'store_unavailable' });
      }
      const claiming = freeSpaceNote(context.config.dataDir);
      return {
        status: 'ready',
        environments: context.config.environments.map(env => env.id),
        ...(claiming ? { claiming: false, reason: claiming } : {})
      };
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
