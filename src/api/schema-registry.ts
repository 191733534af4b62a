// Every schema of the contract by its exported name (`RunIdParamsSchema`, …), so that the endpoint
// table (./endpoints.ts) can name an endpoint's schemas without loading the schema library: the
// table stays light enough for the client's bundles, and the executor and the OpenAPI document
// look the names up here (./endpoint-specs.ts). A schema is added to its module as before; its
// name is then usable in the table, and a name that is not a schema is a compile error there.

import type { TSchema } from 'typebox';
import * as runSchemas from './schemas.js';
import * as scheduleSchemas from './schedules.js';
import * as webhookSchemas from './webhooks.js';

type SchemaModules = typeof runSchemas & typeof scheduleSchemas & typeof webhookSchemas;

/** The name of an exported schema of the contract. */
export type SchemaName = {
  [K in keyof SchemaModules]: SchemaModules[K] extends TSchema ? K : never;
}[keyof SchemaModules] &
  string;

/** The schema a name stands for, as a type. */
export type SchemaNamed<N extends SchemaName> = SchemaModules[N];

const SCHEMAS = { ...runSchemas, ...scheduleSchemas, ...webhookSchemas } as unknown as {
  [N in SchemaName]: SchemaModules[N];
};

/** The schema of that name. */
export function schemaNamed<N extends SchemaName>(name: N): SchemaNamed<N> {
  return SCHEMAS[name];
}
