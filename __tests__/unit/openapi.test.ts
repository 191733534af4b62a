// The OpenAPI document is generated from the endpoint table: every endpoint that is not internal
// is in it, under its path and method, with the schemas the executor validates and serialises with
// and every error code it can answer, each under its HTTP status.
import { describe, expect, it } from '@jest/globals';
import { ENDPOINT_SPECS as ENDPOINTS, type EndpointSpec } from '../../src/api/endpoint-specs.js';
import { ENDPOINT_NAMES, errorCodesOf, pathParameters } from '../../src/api/endpoints.js';
import { ERROR_CODES } from '../../src/api/index.js';
import { openApiDocument } from '../../src/api/openapi.js';
import { MAX_CANCEL_REASON } from '../../src/api/schemas.js';

interface Operation {
  operationId: string;
  security?: unknown[];
  'x-auth': string;
  'x-error-codes': string[];
  parameters: { name: string; in: string; schema: unknown }[];
  requestBody?: { required: boolean; content: Record<string, { schema: unknown }> };
  responses: Record<string, { description: string; content?: Record<string, { schema?: unknown }> }>;
}

const doc = JSON.parse(JSON.stringify(openApiDocument('https://agents.example.com'))) as {
  paths: Record<string, Record<string, Operation>>;
  components: { schemas: Record<string, unknown> };
};
/** A schema as the document shows it: a $ref is looked up among the components. */
const resolve = (schema: unknown): unknown => {
  const ref = (schema as { $ref?: string } | undefined)?.$ref;
  return ref ? doc.components.schemas[ref.replace('#/components/schemas/', '')] : schema;
};
const plain = (schema: unknown) => JSON.parse(JSON.stringify(schema)) as unknown;

describe('the OpenAPI document', () => {
  const listed = ENDPOINT_NAMES.filter(name => !(ENDPOINTS[name] as EndpointSpec).internal);

  it.each(listed)('lists %s with its method, path, auth and parameters', name => {
    const endpoint = ENDPOINTS[name] as EndpointSpec;
    const operation = doc.paths[endpoint.path]?.[endpoint.method.toLowerCase()];
    expect(operation?.operationId).toBe(name);
    expect(operation!['x-auth']).toBe(endpoint.auth);
    // Only key endpoints need the bearer scheme; the others say so with an empty security list.
    expect(operation!.security).toEqual(endpoint.auth === 'key' ? undefined : []);
    const inPath = operation!.parameters.filter(p => p.in === 'path').map(p => p.name);
    expect(inPath).toEqual(pathParameters(endpoint.path));
    const query = Object.keys(
      (endpoint.querystring as { properties?: object } | undefined)?.properties ?? {}
    );
    expect(operation!.parameters.filter(p => p.in === 'query').map(p => p.name)).toEqual(query);
    for (const header of endpoint.headers ?? [])
      expect(operation!.parameters).toContainEqual(
        expect.objectContaining({ name: header.name, in: 'header' })
      );
  });

  it.each(listed)('gives %s the schemas of its body and answer', name => {
    const endpoint = ENDPOINTS[name] as EndpointSpec;
    const operation = doc.paths[endpoint.path]![endpoint.method.toLowerCase()]!;
    if (endpoint.body) {
      expect(resolve(operation.requestBody?.content['application/json']?.schema)).toEqual(
        plain(endpoint.body)
      );
    } else {
      expect(operation.requestBody).toBeUndefined();
    }
    const answer = operation.responses['200']!;
    if (endpoint.response.schema)
      expect(resolve(answer.content?.['application/json']?.schema)).toEqual(plain(endpoint.response.schema));
    else expect(Object.keys(answer.content ?? {})).toEqual([endpoint.response.contentType]);
  });

  it.each(listed)('gives %s every error code it can answer, under its status', name => {
    const endpoint = ENDPOINTS[name] as EndpointSpec;
    const operation = doc.paths[endpoint.path]![endpoint.method.toLowerCase()]!;
    const codes = errorCodesOf(endpoint);
    expect(operation['x-error-codes']).toEqual(codes);
    for (const code of endpoint.errors) expect(codes).toContain(code);
    if (endpoint.auth === 'key') expect(codes).toContain('unauthenticated');
    if (endpoint.rateLimited) expect(codes).toContain('rate_limited');
    for (const code of codes) {
      const status = ERROR_CODES[code].status;
      if (status === null) continue;
      expect(operation.responses[String(status)]?.description).toContain(`${code}:`);
    }
  });

  it('leaves out internal endpoints, and documents no path twice', () => {
    for (const name of ENDPOINT_NAMES) {
      const endpoint = ENDPOINTS[name] as EndpointSpec;
      if (endpoint.internal) expect(doc.paths[endpoint.path]).toBeUndefined();
    }
    const routes = ENDPOINT_NAMES.map(name => `${ENDPOINTS[name].method} ${ENDPOINTS[name].path}`);
    expect(new Set(routes).size).toBe(routes.length);
  });

  it("states the cancel reason's limit the executor enforces", () => {
    const cancel = doc.paths['/api/v1/agent/runs/{run_id}/cancel']!.post!;
    expect(cancel.requestBody?.required).toBe(false);
    const schema = cancel.requestBody!.content['application/json']!.schema as {
      properties: { reason: { maxLength: number } };
    };
    expect(schema.properties.reason.maxLength).toBe(MAX_CANCEL_REASON);
  });

  it("declares the run record's server-set fields: parent_run_id and an OIDC token's workload", () => {
    const get = doc.paths['/api/v1/agent/runs/{run_id}']!.get!;
    const record = resolve(get.responses['200']!.content!['application/json']!.schema) as {
      properties: Record<string, unknown>;
    };
    expect(Object.keys(record.properties)).toEqual(expect.arrayContaining(['parent_run_id', 'workload']));
    const workload = resolve(record.properties.workload) as { properties: Record<string, unknown> };
    expect(Object.keys(workload.properties)).toEqual(
      expect.arrayContaining(['issuer', 'repository', 'ref', 'workflow_ref', 'run_id'])
    );
  });
});
