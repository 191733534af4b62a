// What a handler is: a module-level function of the route context, the request (typed by its
// endpoint's schemas from src/api/endpoint-specs.ts) and the reply. Each endpoint has one, named in
// routes/table.ts; register.ts gives it its method, path, schemas and access check.

import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Static, TSchema } from 'typebox';
import type { Endpoint } from '../../../api/endpoint-specs.js';
import type { EndpointName } from '../../../api/endpoints.js';
import type { ServerContext } from '../context.js';
import type { DownloadLinks } from '../download-links.js';
import type { StreamSlots } from '../event-stream.js';
import type { ReadCache } from '../read-cache.js';

/** What every handler may use beside its request: the server's context and this app's own parts. */
export interface RouteContext extends ServerContext {
  /** Serialised answers of plain reads, kept while the store is unchanged (read-cache.ts). */
  reads: ReadCache;
  /** Signs and checks artifacts' download links. */
  downloads: DownloadLinks;
  /** The event streams open per key and in all. */
  slots: StreamSlots;
  /** Where this node is reached, as its OpenAPI document names it. */
  publicUrl: () => string;
  /** Whether this node claims runs (not an `api` node): its readiness then needs room on the data dir. */
  runsWork: boolean;
}

type StaticOf<E, K extends string> = E extends { [P in K]: infer S extends TSchema } ? Static<S> : unknown;

/** The request a handler of endpoint N receives: params, query and body typed by N's schemas. */
export type EndpointRequest<N extends EndpointName> = FastifyRequest<{
  Params: StaticOf<Endpoint<N>, 'params'>;
  Querystring: StaticOf<Endpoint<N>, 'querystring'>;
  Body: StaticOf<Endpoint<N>, 'body'>;
}>;

export type Handler<N extends EndpointName> = (
  context: RouteContext,
  request: EndpointRequest<N>,
  reply: FastifyReply
) => Promise<unknown>;

/** One handler for every endpoint of the table: a missing one is a type error. */
export type HandlerTable = { [N in EndpointName]: Handler<N> };
