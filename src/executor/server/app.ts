// The Fastify app with its routes, hooks and error handling, and nothing that needs a port or a
// worker: tests may drive it with `app.inject()`, and `startExecutor` (executor.ts) listens and
// adds the worker pool. Every request check a schema can say lives on the route (schemas.ts in
// src/api); every error answer is built by problem.ts.

import Fastify, { type FastifyError, type FastifyInstance, type FastifyReply, LogController } from 'fastify';
import { StoreUnavailableError } from '../store/types.js';
import type { ServerContext } from './context.js';
import { logStream } from '../telemetry/log-format.js';
import { dashboardRoutes } from './dashboard/routes.js';
import { ProblemError, problemBody, sendProblem, writeClientError } from './problem.js';
import { ENDPOINT_NAMES, ENDPOINTS } from '../../api/endpoints.js';
import { DownloadLinks } from './download-links.js';
import { ReadCache } from './read-cache.js';
import { metaHandlers } from './routes/meta.js';
import { registerEndpoints, stampRequestId } from './routes/register.js';
import { resultHandlers } from './routes/results.js';
import { runHandlers } from './routes/runs.js';
import { catalogHandlers } from './routes/catalog.js';
import { eventHandlers } from './routes/events.js';
import { StreamSlots } from './event-stream.js';
import { scheduleHandlers } from './routes/schedules.js';
import { sessionHandlers } from './routes/sessions.js';
import { webhookHandlers } from './routes/webhooks.js';
import { buildSchemaProblem, validatorCompiler } from './validation.js';

export type Role = 'all' | 'api' | 'worker';

export interface AppOptions {
  /** `worker` nodes serve only /healthz, /readyz and the API's description. */
  role?: Role;
  /** The URL clients reach this server at (for the OpenAPI document). */
  publicUrl: () => string;
  /** Prefix of request ids: unique per process start, so ids are cheap (no random bytes each). */
  requestPrefix: string;
}

export async function buildApp(context: ServerContext, options: AppOptions): Promise<FastifyInstance> {
  const { config } = context;
  let requestCount = 0;
  const app = Fastify({
    logger: { level: config.logLevel, stream: logStream(config.logFormat) },
    // Requests are logged by the onResponse hook below, in one line each (and only at info).
    logController: new LogController({ disableRequestLogging: true }),
    bodyLimit: config.limits.maxBodyBytes,
    forceCloseConnections: true,
    return503OnClosing: true,
    clientErrorHandler: writeClientError,
    genReqId: () => `${options.requestPrefix}-${(++requestCount).toString(36)}`,
    // Malformed URLs (bad percent-encoding, say) get a problem body like every other error.
    frameworkErrors: (error, request, reply) =>
      void (reply as unknown as FastifyReply)
        .header('x-request-id', request.id)
        .code(400)
        .type('application/problem+json')
        .send(problemBody('invalid_request', error.message, 400, request.url, String(request.id)))
  });
  app.setValidatorCompiler(validatorCompiler);
  app.setSchemaErrorFormatter(buildSchemaProblem);

  app.removeContentTypeParser('text/plain');
  // JSON bodies as usual, except that an empty body (a cancel with Content-Type: json) is no body.
  const parseJson = app.getDefaultJsonParser('error', 'error');
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (request, body, done) => {
    if (body === '') return done(null, undefined);
    parseJson(request, body as string, done);
  });

  // Every answer carries `x-request-id`: the route trees' first hook sets it (register.ts, the
  // dashboard below), and the answers no route gives (a 404, a malformed URL) set it themselves, so
  // no hook of every request is needed for it.
  if (config.logLevel === 'info' || config.logLevel === 'debug') {
    app.addHook('onResponse', (request, reply, done) => {
      request.log.info(
        {
          method: request.method,
          path: request.url.split('?')[0],
          status: reply.statusCode,
          ms: Math.round(reply.elapsedTime)
        },
        'request'
      );
      done();
    });
  }

  app.setErrorHandler((error: FastifyError | ProblemError, request, reply) => {
    if (error instanceof ProblemError) return sendProblem(reply, error);
    if (error instanceof StoreUnavailableError) {
      request.log.warn({ err: error }, 'store unavailable');
      return sendProblem(
        reply,
        new ProblemError('store_unavailable', 'the executor cannot reach its store; retry shortly', {
          'retry-after': '2'
        })
      );
    }
    switch (error.code) {
      case 'FST_ERR_CTP_BODY_TOO_LARGE':
        return sendProblem(
          reply,
          new ProblemError(
            'payload_too_large',
            `the body is over the limit of ${config.limits.maxBodyBytes} bytes`
          )
        );
      case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
        return sendProblem(
          reply,
          new ProblemError(
            'unsupported_media_type',
            `Content-Type ${JSON.stringify(request.headers['content-type'] ?? '')} is not supported; send application/json`
          )
        );
      case 'FST_ERR_CTP_INVALID_CONTENT_LENGTH':
      case 'FST_ERR_CTP_EMPTY_JSON_BODY':
        return sendProblem(reply, new ProblemError('invalid_request', error.message));
    }
    if (error instanceof SyntaxError || error.statusCode === 400) {
      return sendProblem(
        reply,
        new ProblemError('invalid_request', `the body is not valid JSON: ${error.message}`)
      );
    }
    if (error.statusCode !== undefined && error.statusCode >= 400 && error.statusCode < 500) {
      return sendProblem(reply, new ProblemError('invalid_request', error.message, {}, error.statusCode));
    }
    request.log.error({ err: error }, 'request failed');
    return sendProblem(
      reply,
      new ProblemError('internal_error', 'the executor failed while answering; the error is in its log')
    );
  });
  app.setNotFoundHandler((request, reply) =>
    sendProblem(
      reply.header('x-request-id', request.id),
      new ProblemError('route_not_found', `no endpoint ${request.method} ${request.url.split('?')[0]}`)
    )
  );

  // The endpoint table's routes (a worker node serves only those that need no key), then the
  // dashboard, which is HTML for people with its own cookie sign-in.
  const worker = (options.role ?? 'all') === 'worker';
  const reads = new ReadCache(context.store, error =>
    app.log.error({ err: error }, 'a request waiting for the read cache failed')
  );
  const downloads = await DownloadLinks.open(context.store);
  const handlers = {
    ...metaHandlers(context, options.publicUrl, (options.role ?? 'all') !== 'api'),
    ...sessionHandlers(context),
    ...runHandlers(context, reads),
    ...resultHandlers(context, downloads),
    ...scheduleHandlers(context),
    ...webhookHandlers(context),
    ...catalogHandlers(context),
    ...eventHandlers(context, new StreamSlots(config.limits.maxStreamsPerKey, config.limits.maxStreams))
  };
  const served = ENDPOINT_NAMES.filter(name => !worker || ENDPOINTS[name].auth === 'none');
  await registerEndpoints(app, { context, reads, downloads }, handlers, served);
  if (!worker)
    await app.register(async dashboard => {
      dashboard.addHook('onRequest', stampRequestId);
      await dashboard.register(dashboardRoutes, { context });
    });
  return app;
}
