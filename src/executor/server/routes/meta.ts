// Liveness, readiness, the OpenAPI document and the error reference: no key needed.

import type { FastifyInstance } from 'fastify';
import { ERROR_CODES } from '../../../api/index.js';
import { openApiDocument } from '../../../api/openapi.js';
import type { ServerContext } from '../context.js';
import { freeSpaceNote } from '../../sandbox/processes.js';

export async function metaRoutes(
  app: FastifyInstance,
  { context, publicUrl }: { context: ServerContext; publicUrl: () => string }
): Promise<void> {
  app.get('/healthz', async () => ({ status: 'ok' }));

  app.get('/readyz', async (_request, reply) => {
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
  });

  let document: string | undefined;
  app.get('/api/v1/openapi.json', async (_request, reply) => {
    document ??= JSON.stringify(openApiDocument(publicUrl()));
    return reply.type('application/json').send(document);
  });

  app.get('/api/v1/errors', async () => ({
    errors: Object.entries(ERROR_CODES).map(([code, info]) => ({ error_code: code, ...info }))
  }));
}
