// The Fastify app with its routes, hooks and error handling, and nothing that needs a port or a
// worker: tests may drive it with `app.inject()`, and `startExecutor` (executor.ts) listens and
// adds the worker pool. Every request check a schema can say lives on the route (schemas.ts in
// src/api); every error answer is built by problem.ts.

import Fastify, { type FastifyError, type FastifyInstance, type FastifyReply, LogController } from 'fastify';
import { StoreUnavailableError } from '../store/types.js';
import type { ServerContext, ServerSettings } from './context.js';
import { logStream } from '../telemetry/log-format.js';
import { dashboardRoutes } from './dashboard/routes.js';
import { ProblemError, problemBody, sendProblem, writeClientError } from './problem.js';
import { ENDPOINT_NAMES, ENDPOINTS } from '../../api/endpoints.js';
import { DownloadLinks } from './download-links.js';
import { ReadCache } from './read-cache.js';
import type { RouteContext } from './routes/handler.js';
import { registerEndpoints, stampRequestId } from './routes/register.js';
import { HANDLERS } from './routes/table.js';
import { StreamSlots } from './event-stream.js';
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
  const app = newApp(context.settings, options);
  handleErrors(app, context.settings);
  // The endpoint table's routes (a worker node serves only those that need no key), then the
  // dashboard, which is HTML for people with its own cookie sign-in.
  const role = options.role ?? 'all';
  const { maxStreamsPerKey, maxStreams } = context.settings.limits;
  // The same object, so that what changes on the context later (draining) is what handlers see.
  const routes: RouteContext = Object.assign(context, {
    reads: new ReadCache(context.stores, error =>
      app.log.error({ err: error }, 'a request waiting for the read cache failed')
    ),
    downloads: await DownloadLinks.open(context.stores.accounts),
    slots: new StreamSlots(maxStreamsPerKey, maxStreams),
    publicUrl: options.publicUrl,
    runsWork: role !== 'api'
  });
  const served = ENDPOINT_NAMES.filter(name => role !== 'worker' || ENDPOINTS[name].auth === 'none');
  await registerEndpoints(app, routes, HANDLERS, served);
  if (role !== 'worker')
    await app.register(async dashboard => {
      dashboard.addHook('onRequest', stampRequestId);
      await dashboard.register(dashboardRoutes, { context });
    });
  return app;
}

/** The Fastify instance: its logger, body limit, request ids, validators, parsers and request log. */
function newApp(settings: ServerSettings, options: AppOptions): FastifyInstance {
  let requestCount = 0;
  const app = Fastify({
    logger: { level: settings.logLevel, stream: logStream(settings.logFormat) },
    // Requests are logged by the onResponse hook below, in one line each (and only at info).
    logController: new LogController({ disableRequestLogging: true }),
    bodyLimit: settings.limits.maxBodyBytes,
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
  if (settings.logLevel === 'info' || settings.logLevel === 'debug') {
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
  return app;
}

/** Every error answer as a problem body: the handlers' own, the store's, Fastify's, and the 404 of no route. */
function handleErrors(app: FastifyInstance, settings: ServerSettings): void {
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
            `the body is over the limit of ${settings.limits.maxBodyBytes} bytes`
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
}
