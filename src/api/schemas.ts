// JSON schemas of the contract (TypeBox), for the executor's validation and its OpenAPI document.
// The compile-time checks at the bottom keep them in step with the plain types in ./run.ts.

import Type, { type Static } from 'typebox';
import { KNOWN_STATES } from './run.js';
import type { CreateRunRequest, ListRunsResponse, Problem, RunRecord } from './run.js';

const Timestamp = Type.String({ format: 'date-time', description: 'RFC 3339 timestamp' });
const Nullable = <T extends Type.TSchema>(schema: T) => Type.Union([schema, Type.Null()]);

export const RunStateSchema = Type.String({
  description: `Run state. Known values: ${KNOWN_STATES.join(', ')}; clients must accept others.`,
  examples: ['QUEUED', 'INPROGRESS', 'SUCCEEDED', 'FAILED']
});

export const RunConfigSchema = Type.Object(
  { environment_id: Type.String({ minLength: 1, description: 'Environment the run executes in.' }) },
  {
    additionalProperties: true,
    description: 'Run configuration; fields beyond environment_id are kept as sent.'
  }
);

export const CreateRunRequestSchema = Type.Object(
  {
    prompt: Type.String({ description: 'The instruction given to the agent.' }),
    config: RunConfigSchema,
    title: Type.Optional(Type.String({ description: 'Title of the run.' }))
  },
  { additionalProperties: true }
);

export const CreateRunResponseSchema = Type.Object({ run_id: Type.String(), state: RunStateSchema });

export const StatusMessageObjectSchema = Type.Object({
  message: Type.String(),
  error_code: Type.Optional(Type.String()),
  retryable: Type.Optional(Type.Boolean())
});

export const CreatorSchema = Type.Object({
  type: Type.String({ description: '`user` for a personal key, `agent` for an agent key.' }),
  uid: Type.String(),
  display_name: Type.Optional(Type.String())
});

export const RunRecordSchema = Type.Object(
  {
    run_id: Type.String(),
    state: RunStateSchema,
    title: Type.Optional(Nullable(Type.String())),
    prompt: Type.Optional(Type.String()),
    created_at: Type.Optional(Timestamp),
    updated_at: Type.Optional(Timestamp),
    started_at: Type.Optional(Nullable(Timestamp)),
    completed_at: Type.Optional(Nullable(Timestamp)),
    status_message: Type.Optional(Nullable(Type.Union([Type.String(), StatusMessageObjectSchema]))),
    error_code: Type.Optional(Nullable(Type.String({ description: 'See GET /api/v1/errors.' }))),
    session_link: Type.Optional(Nullable(Type.String({ format: 'uri' }))),
    creator: Type.Optional(CreatorSchema),
    agent_config: Type.Optional(RunConfigSchema),
    source: Type.Optional(Type.String())
  },
  { additionalProperties: true }
);

export const ListRunsResponseSchema = Type.Object({
  runs: Type.Array(RunRecordSchema),
  page_info: Type.Object({
    has_next_page: Type.Boolean(),
    next_cursor: Type.Optional(Nullable(Type.String()))
  })
});

export const ProblemSchema = Type.Object(
  {
    type: Type.String(),
    title: Type.String(),
    status: Type.Integer(),
    detail: Type.Optional(Type.String()),
    error_code: Type.Optional(Type.String()),
    retryable: Type.Optional(Type.Boolean()),
    instance: Type.Optional(Type.String()),
    request_id: Type.Optional(Type.String())
  },
  { additionalProperties: true, description: 'RFC 7807 problem details.' }
);

export const TranscriptEventSchema = Type.Object(
  {
    seq: Type.Integer(),
    at: Timestamp,
    kind: Type.String({ description: 'state, message, command, file or setup' })
  },
  { additionalProperties: true }
);

export const TranscriptSchema = Type.Object({
  run_id: Type.String(),
  state: RunStateSchema,
  events: Type.Array(TranscriptEventSchema)
});

// The schemas and the plain types must describe the same shapes.
type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;
type Check<T extends true> = T;
export type SchemaChecks = [
  Check<Same<Static<typeof CreateRunRequestSchema>['prompt'], CreateRunRequest['prompt']>>,
  Check<Same<Static<typeof RunConfigSchema>['environment_id'], CreateRunRequest['config']['environment_id']>>,
  Check<Same<Static<typeof RunRecordSchema>['session_link'], RunRecord['session_link']>>,
  Check<Same<Static<typeof RunRecordSchema>['status_message'], RunRecord['status_message']>>,
  Check<Same<Static<typeof ListRunsResponseSchema>['page_info'], ListRunsResponse['page_info']>>,
  Check<Same<Static<typeof ProblemSchema>['status'], Problem['status']>>
];
