// The executor as one process: the Fastify API and the worker pool over one store. A node's role
// picks the parts: `all` (both), `api` (the API; it runs nothing), `worker` (runs work; it serves
// only /healthz, /readyz and the API's description).

import { randomBytes } from 'node:crypto';
import Fastify, { type FastifyError, type FastifyInstance, type FastifyReply } from 'fastify';
import type { ExecutorConfig } from '../config.js';
import { type RunStore, StoreUnavailableError } from '../store/types.js';
import { WorkerPool } from '../worker/pool.js';
import { checkSandboxes } from '../sandbox/startup.js';
import { RateLimiter } from './auth.js';
import { ChangeHub } from './changes.js';
import type { ServerContext } from './context.js';
import { ProblemError, sendProblem, writeClientError } from './problem.js';
import { SessionLinks } from './records.js';
import { metaRoutes } from './routes/meta.js';
import { runRoutes } from './routes/runs.js';
import { sessionRoutes } from './routes/sessions.js';

export interface Executor {
  app: FastifyInstance;
  pool: WorkerPool;
  context: ServerContext;
  /** Where the server listens, e.g. http://127.0.0.1:8080 (set once listening). */
  url: string;
  /** Graceful stop: no new runs, running ones get the grace period, then everything closes. */
  stop(graceMs?: number): Promise<void>;
}

export type Role = 'all' | 'api' | 'worker';

export async function startExecutor(
  config: ExecutorConfig,
  store: RunStore,
  role: Role = 'all'
): Promise<Executor> {
  const sandboxWarnings = role === 'api' ? [] : checkSandboxes(config);
  // Request ids: unique per process start, cheap to make (no random bytes per request).
  const requestPrefix = randomBytes(4).toString('hex');
  let requestCount = 0;
  let listening = `http://${config.host}:${config.port}`;
  const publicUrl = () => config.publicUrl ?? listening;
  const secret = await store.getSecret('session-hmac', () => randomBytes(32).toString('base64url'));
  const context: ServerContext = {
    store,
    config,
    links: new SessionLinks(secret, publicUrl),
    hub: new ChangeHub(store),
    limiter: new RateLimiter(config.limits.rateLimitPerMinute),
    draining: false
  };

  const app = Fastify({
    logger: { level: config.logLevel, stream: process.stderr },
    disableRequestLogging: true,
    bodyLimit: config.limits.maxBodyBytes,
    forceCloseConnections: true,
    return503OnClosing: true,
    clientErrorHandler: writeClientError,
    genReqId: () => `${requestPrefix}-${(++requestCount).toString(36)}`,
    // Malformed URLs (bad percent-encoding, say) get a problem body like every other error.
    frameworkErrors: (error, _request, reply) =>
      void (reply as unknown as FastifyReply).code(400).type('application/problem+json').send({
        type: '/api/v1/errors#invalid_request',
        title: 'Bad Request',
        status: 400,
        detail: error.message,
        error_code: 'invalid_request',
        retryable: false
      })
  });

  app.removeContentTypeParser('text/plain');
  // JSON bodies as usual, except that an empty body (a cancel with Content-Type: json) is no body.
  const parseJson = app.getDefaultJsonParser('error', 'error');
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (request, body, done) => {
    if (body === '') return done(null, undefined);
    parseJson(request, body as string, done);
  });

  app.addHook('onSend', async (request, reply) => {
    reply.header('x-request-id', String(request.id));
  });
  const logRequests = config.logLevel === 'info' || config.logLevel === 'debug';
  app.addHook('onResponse', async (request, reply) => {
    if (!logRequests) return;
    request.log.info(
      {
        method: request.method,
        path: request.url.split('?')[0],
        status: reply.statusCode,
        ms: Math.round(reply.elapsedTime)
      },
      'request'
    );
  });

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
      reply,
      new ProblemError('route_not_found', `no endpoint ${request.method} ${request.url.split('?')[0]}`)
    )
  );

  await app.register(metaRoutes, { context, publicUrl });
  if (role !== 'worker') {
    await app.register(sessionRoutes, { context });
    await app.register(runRoutes, { context });
  }

  for (const warning of sandboxWarnings) app.log.warn(warning);
  const pool = new WorkerPool(store, config, app.log, role !== 'api');
  await app.listen({ host: config.host, port: config.port });
  const address = app.server.address();
  if (address && typeof address === 'object') {
    const host = address.family === 'IPv6' ? `[${address.address}]` : address.address;
    listening = `http://${host}:${address.port}`;
  }
  await pool.start();

  let stopping: Promise<void> | undefined;
  return {
    app,
    pool,
    context,
    get url() {
      return listening;
    },
    stop(graceMs = config.shutdownGraceMs) {
      stopping ??= (async () => {
        context.draining = true;
        await pool.stop(graceMs);
        context.hub.close();
        await app.close();
        await store.close();
      })();
      return stopping;
    }
  };
}
