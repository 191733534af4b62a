// Request validation for every route: the route's TypeBox schema is compiled once (TypeBox's own
// compiler, no Ajv: nothing is coerced, dropped or defaulted behind the handler's back) and the
// first failure becomes a problem body that names the field, the bad value and the expected form
// (the schema's `expected`, or its `constraint` when a value of the right type broke a rule).

import type { FastifySchemaCompiler, FastifySchemaValidationError } from 'fastify';
import type { TSchema } from 'typebox';
import { Compile } from 'typebox/compile';
import Format from 'typebox/format';
import { ProblemError } from './problem.js';

// Query times: RFC 3339 (a date-time, or at least a date that parses); empty means "no filter".
Format.Set(
  'timestamp',
  value => value === '' || (/^\d{4}-\d{2}-\d{2}/.test(value) && !Number.isNaN(Date.parse(value)))
);

type Part = 'body' | 'querystring' | 'params' | 'headers';

interface SchemaNode {
  expected?: string;
  constraint?: string;
  properties?: Record<string, SchemaNode>;
  items?: SchemaNode;
  anyOf?: SchemaNode[];
}

/** One failure, with what the problem body needs beyond what the validator reports. */
interface Failure extends FastifySchemaValidationError {
  path: string[];
  value: unknown;
  unknownParameter?: string;
  schema?: SchemaNode;
  accepted: string[];
}

export const validatorCompiler: FastifySchemaCompiler<TSchema> = ({ schema, httpPart }) => {
  const check = Compile(schema);
  const root = schema as SchemaNode & { acceptsNoBody?: boolean };
  // A body schema may allow no body at all (a cancel without a reason).
  const noBodyFine = httpPart === 'body' && root.acceptsNoBody === true;
  return data => {
    if (check.Check(data) || (data === undefined && noBodyFine)) return { value: data };
    return { error: [describe(root, data, check.Errors(data)[0]!)] };
  };
};

function describe(root: SchemaNode, data: unknown, error: FastifySchemaValidationError): Failure {
  const path = error.instancePath
    .split('/')
    .slice(1)
    .map(segment => segment.replace(/~1/g, '/').replace(/~0/g, '~'));
  const accepted = Object.keys(root.properties ?? {});
  const params = error.params as Record<string, unknown>;
  if (error.keyword === 'required') path.push(String((params.requiredProperties as string[])[0]));
  if (error.keyword === 'additionalProperties' || error.schemaPath.endsWith('/additionalProperties')) {
    const name = path.at(-1) ?? String((params.additionalProperties as string[] | undefined)?.[0]);
    return { ...error, path, value: undefined, unknownParameter: name, accepted };
  }
  let value = data;
  let node: SchemaNode | undefined = root;
  let described: SchemaNode | undefined = root;
  for (const segment of path) {
    value =
      value !== null && typeof value === 'object' ? (value as Record<string, unknown>)[segment] : undefined;
    node = child(node, segment);
    if (node?.expected !== undefined) described = node;
  }
  return { ...error, path, value, schema: described, accepted };
}

function child(node: SchemaNode | undefined, segment: string): SchemaNode | undefined {
  if (!node) return undefined;
  if (node.properties?.[segment]) return node.properties[segment];
  if (node.items) return node.items;
  for (const branch of node.anyOf ?? []) {
    const found = child(branch, segment);
    if (found) return found;
  }
  return undefined;
}

/** The schema error handler: a validation failure as a problem (400, or 422 for a body field). */
export function buildSchemaProblem(errors: FastifySchemaValidationError[], part: string): ProblemError {
  const failure = errors[0] as Failure;
  if (failure.unknownParameter !== undefined) {
    const where = part === 'querystring' ? 'parameter' : 'field';
    return new ProblemError(
      'invalid_request',
      `unknown ${where} ${JSON.stringify(failure.unknownParameter)}; expected one of ${failure.accepted.join(', ')}`
    );
  }
  const expected = failure.schema?.expected ?? 'a value of the documented form';
  const constraint =
    failure.keyword !== 'type' && failure.keyword !== 'required' ? failure.schema?.constraint : undefined;
  if ((part as Part) === 'body') {
    if (failure.path.length === 0)
      return new ProblemError(
        'invalid_request',
        `the body must be ${expected}, got ${kindOf(failure.value)}`
      );
    const field = failure.path.join('.');
    return new ProblemError(
      'invalid_field',
      constraint ? `${field}: ${constraint}` : `${field}: expected ${expected}, got ${kindOf(failure.value)}`
    );
  }
  const name = failure.path[0] ?? part;
  return new ProblemError(
    'invalid_request',
    `${name} ${JSON.stringify(failure.value)}: expected ${expected}`
  );
}

/** A bad value in words, short: `nothing`, `number 5`, `the string "abc"`, `an array`. */
export function kindOf(value: unknown): string {
  if (value === undefined) return 'nothing';
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  if (typeof value === 'string')
    return `the string ${JSON.stringify(value.length > 40 ? `${value.slice(0, 40)}…` : value)}`;
  return typeof value === 'object' ? 'an object' : `${typeof value} ${String(value)}`;
}
