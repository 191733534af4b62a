// The endpoint table (./endpoints.ts) with its schemas looked up (./schema-registry.ts): what the
// executor registers its routes from and the OpenAPI document is generated from. Nothing is written
// here per endpoint.

import type { TSchema } from 'typebox';
import { ENDPOINTS, ENDPOINT_NAMES, type EndpointEntry, type EndpointName } from './endpoints.js';
import { type SchemaName, type SchemaNamed, schemaNamed } from './schema-registry.js';

/** An entry whose schemas are the schemas themselves rather than their names. */
export interface EndpointSpec extends Omit<EndpointEntry, 'params' | 'querystring' | 'body' | 'response'> {
  params?: TSchema;
  querystring?: TSchema;
  body?: TSchema;
  response: { description: string; schema?: TSchema; contentType?: string };
}

type Looked<V> = V extends SchemaName ? SchemaNamed<V> : V;
type WithSchemas<E> = {
  [K in keyof E]: K extends 'params' | 'querystring' | 'body'
    ? Looked<E[K]>
    : K extends 'response'
      ? { [R in keyof E[K]]: R extends 'schema' ? Looked<E[K][R]> : E[K][R] }
      : E[K];
};

/** Endpoint N's entry with its schemas, typed by them (a handler's request is typed from it). */
export type Endpoint<N extends EndpointName = EndpointName> = WithSchemas<(typeof ENDPOINTS)[N]>;

function withSchemas(entry: EndpointEntry): EndpointSpec {
  const { params, querystring, body, response, ...rest } = entry;
  const look = (name: SchemaName) => schemaNamed(name) as TSchema;
  return {
    ...rest,
    ...(params ? { params: look(params) } : {}),
    ...(querystring ? { querystring: look(querystring) } : {}),
    ...(body ? { body: look(body) } : {}),
    response: { ...response, ...(response.schema ? { schema: look(response.schema) } : {}) }
  };
}

export const ENDPOINT_SPECS = Object.fromEntries(
  ENDPOINT_NAMES.map(name => [name, withSchemas(ENDPOINTS[name])])
) as unknown as { [N in EndpointName]: Endpoint<N> };
