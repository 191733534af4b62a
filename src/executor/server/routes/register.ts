// The executor's routes, registered from the endpoint table (src/api/endpoints.ts, with its schemas looked up in src/api/endpoint-specs.ts): each endpoint
// gets its method, path and schemas from the table and its handler from a map keyed by its name.
// Endpoints are grouped into one route tree per kind of access, and each tree has one hook that
// checks it (an API key and its rate limit, a session token, a download signature), so no handler
// repeats it. A handler missing from the map is a type error, and a table entry left without one
// throws at start-up.

import type { FastifyInstance, FastifyReply, FastifyRequest, onRequestHookHandler } from 'fastify';
import type { Static, TSchema } from 'typebox';
import { ENDPOINT_SPECS, type Endpoint, type EndpointSpec } from '../../../api/endpoint-specs.js';
import { type EndpointAuth, type EndpointName, routePath } from '../../../api/endpoints.js';
import { type Principal, authenticate, authenticateToken, bearerOf, carriesToken } from '../auth.js';
import {
  authenticateRunToken,
  carriesRunToken,
  checkOrchestratorEndpoint,
  checkOrchestratorRequest
} from '../run-token.js';
import type { ServerContext } from '../context.js';
import type { DownloadLinks } from '../download-links.js';
import { ProblemError } from '../problem.js';
import type { ReadCache } from '../read-cache.js';

declare module 'fastify' {
  interface FastifyRequest {
    /** The caller's key, set by the key tree's hook. */
    principal: Principal;
  }
}

type StaticOf<E, K extends string> = E extends { [P in K]: infer S extends TSchema } ? Static<S> : unknown;

/** The request a handler of endpoint N receives: params, query and body typed by N's schemas. */
export type EndpointRequest<N extends EndpointName> = FastifyRequest<{
  Params: StaticOf<Endpoint<N>, 'params'>;
  Querystring: StaticOf<Endpoint<N>, 'querystring'>;
  Body: StaticOf<Endpoint<N>, 'body'>;
}>;

export type Handler<N extends EndpointName> = (
  request: EndpointRequest<N>,
  reply: FastifyReply
) => Promise<unknown>;

export type Handlers<N extends EndpointName> = { [K in N]: Handler<K> };

export interface RouteTrees {
  context: ServerContext;
  reads: ReadCache;
  downloads: DownloadLinks;
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
  { context, reads, downloads }: RouteTrees
): onRequestHookHandler | undefined {
  const { store, config, limiter, links } = context;
  switch (auth) {
    case 'none':
      return undefined;
    case 'key': {
      /** The rate limit, once the principal is known: a 429 problem when the key has no token left. */
      const limit = (request: FastifyRequest): ProblemError | undefined => {
        if (!rateLimited) return undefined;
        const wait = limiter.take(request.principal.keyId);
        if (wait === undefined) return undefined;
        return new ProblemError(
          'rate_limited',
          `this key may send ${config.limits.rateLimitPerMinute} requests a minute; retry in ${wait} s`,
          { 'retry-after': String(wait) }
        );
      };
      const admit = async (request: FastifyRequest, header: string | undefined): Promise<void> => {
        // A token's principal is not remembered: its signature and expiry are checked each time,
        // and a run token's run and proxy secret on every request.
        if (carriesRunToken(header)) {
          const { team, orchestrator } = await authenticateRunToken(
            store,
            config.environments,
            bearerOf(header),
            request
          );
          const id = `run:${orchestrator.runId}`;
          request.principal = { keyId: id, team, kind: 'agent', name: id, orchestrator };
          checkOrchestratorEndpoint(orchestrator, endpointOf(request), request);
        } else
          request.principal = carriesToken(header)
            ? await authenticateToken(context.oidc, request)
            : await reads.principal(header, () => authenticate(store, request));
        const limited = limit(request);
        if (limited) throw limited;
      };
      // A callback hook, so that the common request (a key the read cache knows while the store is
      // unchanged) is admitted without a promise: only a key looked up in the store waits.
      // The stamp is looked at once for all the requests of a turn of the event loop (read-cache.ts).
      return (request, reply, done) => {
        reply.header('x-request-id', request.id);
        let passed = false;
        reads.afterRefresh(
          () => {
            const header = request.headers.authorization;
            const known = reads.knownPrincipal(header);
            passed = true;
            if (known === undefined) {
              admit(request, header).then(() => done(), done);
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
    case 'session_token':
      return async request => {
        const { run_id } = request.params as { run_id: string };
        if (!links.verify(run_id, (request.query as { token?: unknown }).token))
          throw new ProblemError('not_found', 'no session with this id and token');
      };
    case 'signed_download':
      return async request => {
        const { artifact_uid } = request.params as { artifact_uid: string };
        const { expires, signature } = request.query as { expires?: unknown; signature?: unknown };
        if (!downloads.verify(artifact_uid, expires, signature))
          throw new ProblemError(
            'artifact_not_found',
            'this download link is wrong or has expired; ask GET /api/v1/agent/artifacts/{uid} for a new one'
          );
      };
  }
}

/**
 * Registers the named endpoints with their handlers, one route tree per access kind. `names` is
 * every endpoint the handlers serve (a `worker` node serves only those that need no key).
 */
export async function registerEndpoints(
  app: FastifyInstance,
  trees: RouteTrees,
  handlers: Partial<Handlers<EndpointName>>,
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
      const hook = accessHook(auth, limited === 'true', trees);
      if (auth !== 'key') tree.addHook('onRequest', stampRequestId);
      if (hook) tree.addHook('onRequest', hook);
      // An orchestrate run's token acts only below its run: checked once the request is parsed (a
      // callback hook: a key's request, the common one, passes without a promise).
      if (auth === 'key')
        tree.addHook('preHandler', (request, _reply, done) => {
          const { orchestrator, team } = request.principal;
          const endpoint = endpointOf(request);
          if (!orchestrator || !endpoint) return done();
          checkOrchestratorRequest(trees.context.store, team, orchestrator, endpoint, request).then(
            () => done(),
            done
          );
        });
      for (const name of members) {
        const endpoint = ENDPOINT_SPECS[name] as EndpointSpec;
        const handler = handlers[name] as
          ((request: FastifyRequest, reply: FastifyReply) => unknown) | undefined;
        if (!handler) throw new Error(`endpoint ${name} has no handler; add one to its route file's map`);
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
          handler: handler as (request: FastifyRequest, reply: FastifyReply) => Promise<unknown>
        });
      }
    });
  }
}
