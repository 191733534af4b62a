// The executor's routes, registered from the endpoint table (src/api/endpoints.ts, with its schemas
// in src/api/endpoint-specs.ts): each endpoint gets its method, path and schemas from the table and
// its handler from routes/table.ts, called with the route context (handler.ts).
// Endpoints are grouped into one route tree per kind of access, and each tree has one hook that
// checks it (an API key and its rate limit, a session token, a download signature), so no handler
// repeats it. A handler missing from the table is a type error.

import type {
  FastifyInstance,
  FastifyReply,
  FastifyRequest,
  onRequestHookHandler,
  preHandlerHookHandler
} from 'fastify';
import { ENDPOINT_SPECS, type EndpointSpec } from '../../../api/endpoint-specs.js';
import { type EndpointAuth, type EndpointName, routePath } from '../../../api/endpoints.js';
import { type Principal, authenticate, authenticateToken, bearerOf, carriesToken } from '../auth.js';
import {
  authenticateRunToken,
  carriesRunToken,
  checkOrchestratorEndpoint,
  checkOrchestratorRequest
} from '../run-token.js';
import { ProblemError } from '../problem.js';
import type { HandlerTable, RouteContext } from './handler.js';

declare module 'fastify' {
  interface FastifyRequest {
    /** The caller's key, set by the key tree's hook. */
    principal: Principal;
  }
}

/** The endpoint a request was routed to (each route's config names it). */
function endpointOf(request: FastifyRequest): EndpointName | undefined {
  return (request.routeOptions.config as { endpoint?: EndpointName }).endpoint;
}

/** Sets the answer's `x-request-id` header (the id Fastify gave the request: app.ts's genReqId). */
export const stampRequestId: onRequestHookHandler = (request, reply, done) => {
  reply.header('x-request-id', request.id);
  done();
};

/** The hook that admits a request to a tree of this access kind (undefined: everyone). */
function accessHook(
  auth: EndpointAuth,
  rateLimited: boolean,
  context: RouteContext
): onRequestHookHandler | undefined {
  switch (auth) {
    case 'none':
      return undefined;
    case 'key':
      return keyHook(context, rateLimited);
    case 'session_token':
      return async request => {
        const { run_id } = request.params as { run_id: string };
        if (!context.links.verify(run_id, (request.query as { token?: unknown }).token))
          throw new ProblemError('not_found', 'no session with this id and token');
      };
    case 'signed_download':
      return async request => {
        const { artifact_uid } = request.params as { artifact_uid: string };
        const { expires, signature } = request.query as { expires?: unknown; signature?: unknown };
        if (!context.downloads.verify(artifact_uid, expires, signature))
          throw new ProblemError(
            'artifact_not_found',
            'this download link is wrong or has expired; ask GET /api/v1/agent/artifacts/{uid} for a new one'
          );
      };
  }
}

/** The rate limit, once the principal is known: a 429 problem when the key has no token left. */
function overLimit(context: RouteContext, request: FastifyRequest): ProblemError | undefined {
  const wait = context.limiter.take(request.principal.keyId);
  if (wait === undefined) return undefined;
  return new ProblemError(
    'rate_limited',
    `this key may send ${context.settings.limits.rateLimitPerMinute} requests a minute; retry in ${wait} s`,
    { 'retry-after': String(wait) }
  );
}

/**
 * Sets the request's principal from its Authorization header: an API key, an OIDC token or a run
 * token (the key tree's hook, and a public endpoint that answers more to a key: redirects.ts).
 */
export async function admit(
  context: RouteContext,
  request: FastifyRequest,
  header: string | undefined
): Promise<void> {
  // A token's principal is not remembered: its signature and expiry are checked each time,
  // and a run token's run and proxy secret on every request.
  if (carriesRunToken(header)) {
    const { team, orchestrator } = await authenticateRunToken(
      context.stores,
      context.settings.environments,
      bearerOf(header),
      request
    );
    const id = `run:${orchestrator.runId}`;
    request.principal = { keyId: id, team, kind: 'agent', name: id, orchestrator };
    checkOrchestratorEndpoint(orchestrator, endpointOf(request), request);
  } else
    request.principal = carriesToken(header)
      ? await authenticateToken(context.oidc, request)
      : await context.reads.principal(header, () => authenticate(context.stores.accounts, request));
}

/**
 * The key tree's hook. A callback hook, so that the common request (a key the read cache knows
 * while the store is unchanged) is admitted without a promise: only a key looked up in the store
 * waits. The stamp is looked at once for all the requests of a turn of the event loop (read-cache.ts).
 */
function keyHook(context: RouteContext, rateLimited: boolean): onRequestHookHandler {
  const limit = (request: FastifyRequest) => (rateLimited ? overLimit(context, request) : undefined);
  return (request, reply, done) => {
    reply.header('x-request-id', request.id);
    let passed = false;
    context.reads.afterRefresh(
      () => {
        const header = request.headers.authorization;
        const known = context.reads.knownPrincipal(header);
        passed = true;
        if (known === undefined) {
          admit(context, request, header).then(() => done(limit(request)), done);
          return;
        }
        request.principal = known;
        done(limit(request));
      },
      // A fault before the request was passed on answers it (a 500), once.
      error => passed || done(error as Error)
    );
  };
}

/**
 * Registers the named endpoints with their handlers (routes/table.ts), one route tree per access
 * kind. `names` is every endpoint this node serves (a `worker` node serves only those that need no key).
 */
export async function registerEndpoints(
  app: FastifyInstance,
  context: RouteContext,
  handlers: HandlerTable,
  names: readonly EndpointName[]
): Promise<void> {
  if (!app.hasRequestDecorator('principal')) app.decorateRequest('principal', null as unknown as Principal);
  const groups = new Map<string, EndpointName[]>();
  for (const name of names) {
    const { auth, rateLimited } = ENDPOINT_SPECS[name] as EndpointSpec;
    const group = `${auth} ${rateLimited}`;
    groups.set(group, [...(groups.get(group) ?? []), name]);
  }
  for (const [group, members] of groups) {
    const [auth, limited] = group.split(' ') as [EndpointAuth, string];
    await app.register(async tree => {
      // Every answer of a tree carries its request id: the key tree's hook sets it, the others a
      // hook of their own (app.ts sets it on the answers no tree gives: 404s, malformed URLs).
      const hook = accessHook(auth, limited === 'true', context);
      if (auth !== 'key') tree.addHook('onRequest', stampRequestId);
      if (hook) tree.addHook('onRequest', hook);
      if (auth === 'key') tree.addHook('preHandler', orchestratorCheck(context));
      for (const name of members) addRoute(tree, context, name, handlers[name] as AnyHandler);
    });
  }
}

type AnyHandler = (context: RouteContext, request: FastifyRequest, reply: FastifyReply) => Promise<unknown>;

/** The route of one endpoint: its method, path and schemas from the table, its handler given the context. */
function addRoute(
  tree: FastifyInstance,
  context: RouteContext,
  name: EndpointName,
  handler: AnyHandler
): void {
  const endpoint = ENDPOINT_SPECS[name] as EndpointSpec;
  tree.route({
    method: endpoint.method,
    url: routePath(endpoint.path),
    config: { endpoint: name },
    schema: {
      ...(endpoint.params ? { params: endpoint.params } : {}),
      ...(endpoint.querystring ? { querystring: endpoint.querystring } : {}),
      ...(endpoint.body ? { body: endpoint.body } : {}),
      ...(endpoint.response.schema ? { response: { 200: endpoint.response.schema } } : {})
    },
    handler: (request, reply) => handler(context, request, reply)
  });
}

/**
 * An orchestrate run's token acts only below its run: checked once the request is parsed (a
 * callback hook: a key's request, the common one, passes without a promise).
 */
function orchestratorCheck(context: RouteContext): preHandlerHookHandler {
  return (request, _reply, done) => {
    const { orchestrator, team } = request.principal;
    const endpoint = endpointOf(request);
    if (!orchestrator || !endpoint) return done();
    checkOrchestratorRequest(context.stores.runs, team, orchestrator, endpoint, request).then(
      () => done(),
      done
    );
  };
}
