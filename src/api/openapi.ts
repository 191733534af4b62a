// The OpenAPI 3.1 document of the contract (served by the executor at /api/v1/openapi.json),
// generated from the endpoint table (./endpoints.ts) and its schemas: nothing here is written per
// endpoint, so the document cannot drift from what the routes check and answer.

import type { TSchema } from 'typebox';
import { ENDPOINT_SPECS, type EndpointSpec } from './endpoint-specs.js';
import { errorCodesOf, pathParameters } from './endpoints.js';
import { ERROR_CODES, type ErrorCode } from './error-codes.js';
import { KNOWN_STATES } from './run.js';
import { KnownEventSchema } from './event-schemas.js';
import {
  ArtifactDetailsSchema,
  ConversationSchema,
  CreateRunRequestSchema,
  CreateRunResponseSchema,
  ListRunsResponseSchema,
  ProblemSchema,
  RunRecordSchema,
  TranscriptSchema
} from './schemas.js';

/** Schemas shown once under components and referred to by name. */
const COMPONENTS: Record<string, TSchema> = {
  CreateRunRequest: CreateRunRequestSchema,
  CreateRunResponse: CreateRunResponseSchema,
  RunRecord: RunRecordSchema,
  ListRunsResponse: ListRunsResponseSchema,
  Transcript: TranscriptSchema,
  TranscriptEventKinds: KnownEventSchema,
  Conversation: ConversationSchema,
  Artifact: ArtifactDetailsSchema,
  Problem: ProblemSchema
};
const NAMES = new Map<unknown, string>(Object.entries(COMPONENTS).map(([name, schema]) => [schema, name]));

const AUTH_TEXT: Record<EndpointSpec['auth'], string> = {
  none: 'No key needed.',
  key: 'Needs `Authorization: Bearer <API key>`.',
  session_token: "No key: the session link's `token` (an HMAC of the run id) is the access check.",
  signed_download:
    "No key: the URL's `expires` and `signature` (an HMAC of the artifact id and expiry) are the access check."
};

const schemaOrRef = (schema: TSchema) => {
  const name = NAMES.get(schema);
  return name ? { $ref: `#/components/schemas/${name}` } : schema;
};
const problem = (description: string) => ({
  description,
  content: { 'application/problem+json': { schema: { $ref: '#/components/schemas/Problem' } } }
});

interface SchemaShape {
  properties?: Record<string, { description?: string; anyOf?: unknown[] }>;
  required?: string[];
  acceptsNoBody?: boolean;
}

function parameters(endpoint: EndpointSpec): Record<string, unknown>[] {
  const list: Record<string, unknown>[] = [];
  const params = (endpoint.params as SchemaShape | undefined)?.properties ?? {};
  for (const name of pathParameters(endpoint.path)) {
    const schema = (params[name] ?? { type: 'string' }) as { description?: string };
    list.push({ name, in: 'path', required: true, schema, ...described(schema) });
  }
  const query = endpoint.querystring as SchemaShape | undefined;
  for (const [name, schema] of Object.entries(query?.properties ?? {})) {
    list.push({
      name,
      in: 'query',
      ...(query?.required?.includes(name) ? { required: true } : {}),
      ...described(schema),
      schema,
      // A list filter may be repeated (state=A&state=B).
      ...(schema.anyOf?.some(branch => (branch as { type?: string }).type === 'array')
        ? { style: 'form', explode: true }
        : {})
    });
  }
  for (const header of endpoint.headers ?? []) list.push({ ...header, in: 'header' });
  return list;
}

const described = (schema: { description?: string }) =>
  typeof schema.description === 'string' ? { description: schema.description } : {};

/** The error answers, one per HTTP status, each naming the codes it can carry. */
function errorResponses(codes: readonly ErrorCode[]): Record<string, unknown> {
  const byStatus = new Map<number, ErrorCode[]>();
  for (const code of codes) {
    const status = ERROR_CODES[code].status;
    if (status !== null) byStatus.set(status, [...(byStatus.get(status) ?? []), code]);
  }
  return Object.fromEntries(
    [...byStatus.entries()]
      .sort(([a], [b]) => a - b)
      .map(([status, list]) => [
        String(status),
        problem(list.map(code => `${code}: ${ERROR_CODES[code].meaning}`).join(' '))
      ])
  );
}

/** One operation of the document, from one table entry. */
export function operationOf(name: string, endpoint: EndpointSpec): Record<string, unknown> {
  const { response } = endpoint;
  const codes = errorCodesOf(endpoint);
  const body = endpoint.body as (TSchema & SchemaShape) | undefined;
  return {
    operationId: name,
    summary: endpoint.summary,
    description: [endpoint.description, AUTH_TEXT[endpoint.auth]].filter(Boolean).join(' '),
    ...(endpoint.deprecated ? { deprecated: true } : {}),
    ...(endpoint.auth === 'key' ? {} : { security: [] }),
    'x-auth': endpoint.auth,
    'x-rate-limited': endpoint.rateLimited,
    'x-error-codes': codes,
    parameters: parameters(endpoint),
    ...(body
      ? {
          requestBody: {
            required: body.acceptsNoBody !== true,
            content: { 'application/json': { schema: schemaOrRef(body) } }
          }
        }
      : {}),
    responses: {
      '200': {
        description: response.description,
        ...(response.schema
          ? { content: { 'application/json': { schema: schemaOrRef(response.schema) } } }
          : response.contentType
            ? { content: { [response.contentType]: {} } }
            : {})
      },
      ...Object.fromEntries(
        Object.entries(endpoint.otherAnswers ?? {}).map(([status, text]) => [status, { description: text }])
      ),
      ...errorResponses(codes)
    }
  };
}

export function openApiDocument(serverUrl?: string): Record<string, unknown> {
  const paths: Record<string, Record<string, unknown>> = {};
  for (const [name, endpoint] of Object.entries(ENDPOINT_SPECS) as [string, EndpointSpec][]) {
    if (endpoint.internal) continue;
    (paths[endpoint.path] ??= {})[endpoint.method.toLowerCase()] = operationOf(name, endpoint);
  }
  return {
    openapi: '3.1.0',
    info: {
      title: 'Cloud Agent Run API',
      version: '1.0.0',
      description: `Run states: ${KNOWN_STATES.join(', ')}. Error codes: ${Object.keys(ERROR_CODES).join(', ')} (GET /api/v1/errors).`
    },
    servers: serverUrl ? [{ url: serverUrl }] : [],
    security: [{ bearer: [] }],
    paths,
    components: {
      securitySchemes: { bearer: { type: 'http', scheme: 'bearer' } },
      schemas: COMPONENTS
    }
  };
}
