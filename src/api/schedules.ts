// Schemas of the scheduled agents and the two catalogue reads (environments, models), in the
// production service's shapes (its official SDK's ScheduledAgentItem, ScheduleCreateParams, …):
// a schedule is a cron expression, a prompt and the config of the runs it starts. What the service
// leaves open and the executor adds is optional here: `time_zone`, `overlap`, `catch_up`.

import Type, { type Static } from 'typebox';

const Timestamp = Type.String({ format: 'date-time', description: 'RFC 3339 timestamp' });
const NullableTimestamp = Type.Unsafe<string | null>({
  type: ['string', 'null'],
  format: 'date-time',
  description: 'RFC 3339 timestamp, or null'
});

export const OVERLAP_POLICIES = ['skip', 'queue', 'cancel_previous'] as const;
export type OverlapPolicy = (typeof OVERLAP_POLICIES)[number];

const ScheduleAgentConfigSchema = Type.Object(
  {
    environment_id: Type.Optional(
      Type.String({
        pattern: '\\S',
        description: 'Environment the runs execute in (required by this executor).',
        expected: 'a non-empty string'
      })
    )
  },
  {
    additionalProperties: true,
    description: "The config of each run the schedule starts (a run's `config`).",
    expected: 'an object with environment_id'
  }
);

const scheduleFields = {
  name: Type.String({
    pattern: '\\S',
    maxLength: 200,
    description: 'Human-readable name; the title of the runs it starts.',
    expected: 'a non-empty string of at most 200 characters'
  }),
  cron_schedule: Type.String({
    pattern: '\\S',
    maxLength: 200,
    description: 'Five-field cron expression (minute hour day month weekday), e.g. "0 9 * * 1-5".',
    expected: 'a cron expression such as "0 9 * * *"'
  }),
  prompt: Type.String({
    pattern: '\\S',
    description: 'The prompt of each run.',
    expected: 'a string',
    constraint: 'must not be empty'
  }),
  agent_config: Type.Optional(ScheduleAgentConfigSchema),
  enabled: Type.Boolean({ description: 'Whether the schedule fires.', expected: 'true or false' }),
  time_zone: Type.Optional(
    Type.String({
      description: 'IANA time zone the cron expression is read in (default UTC).',
      expected: 'an IANA time zone such as "Europe/Berlin"'
    })
  ),
  overlap: Type.Optional(
    Type.Union(
      OVERLAP_POLICIES.map(policy => Type.Literal(policy)),
      {
        description:
          "What a fire does while the schedule's previous run still runs: skip it (default), queue it until that run ends, or cancel_previous.",
        expected: 'skip, queue or cancel_previous'
      }
    )
  ),
  catch_up: Type.Optional(
    Type.Boolean({
      description:
        'Whether a fire time missed while no executor ran starts one run when one comes back (default true).',
      expected: 'true or false'
    })
  )
};

export const CreateScheduleRequestSchema = Type.Object(
  {
    ...scheduleFields,
    enabled: Type.Optional(scheduleFields.enabled),
    team: Type.Optional(
      Type.Boolean({ description: 'Accepted and ignored: schedules belong to the key’s team.' })
    )
  },
  { additionalProperties: false, expected: 'a JSON object with name, cron_schedule and prompt' }
);

export const UpdateScheduleRequestSchema = Type.Object(scheduleFields, {
  additionalProperties: false,
  expected: 'a JSON object with name, cron_schedule, prompt and enabled'
});

export const ScheduleIdParamsSchema = Type.Object({
  schedule_id: Type.String({ description: 'The schedule id.' })
});

const UserProfileSchema = Type.Object(
  {
    type: Type.String(),
    uid: Type.String(),
    display_name: Type.String()
  },
  { additionalProperties: true }
);

export const ScheduleSchema = Type.Object(
  {
    id: Type.String(),
    name: Type.String(),
    cron_schedule: Type.String(),
    prompt: Type.String(),
    enabled: Type.Boolean(),
    agent_config: Type.Optional(Type.Object({}, { additionalProperties: true })),
    time_zone: Type.String(),
    overlap: Type.String(),
    catch_up: Type.Boolean(),
    created_at: Timestamp,
    updated_at: Timestamp,
    created_by: Type.Optional(UserProfileSchema),
    history: Type.Object({ last_ran: NullableTimestamp, next_run: NullableTimestamp }),
    last_spawn_error: Type.Unsafe<string | null>({ type: ['string', 'null'] }),
    last_run_id: Type.Unsafe<string | null>({ type: ['string', 'null'] }),
    scope: Type.Object({ type: Type.String(), uid: Type.String() })
  },
  { additionalProperties: true }
);

export const ListSchedulesResponseSchema = Type.Object({ schedules: Type.Array(ScheduleSchema) });
export const DeleteScheduleResponseSchema = Type.Object({ success: Type.Boolean() });

export const EnvironmentSchema = Type.Object(
  {
    id: Type.String(),
    name: Type.String(),
    source: Type.String({ description: 'The repository or directory runs start from, without credentials.' }),
    setup_commands: Type.Array(Type.String()),
    agent_kind: Type.String(),
    network: Type.Array(Type.String(), { description: 'host:port a run may reach (empty: none).' }),
    docker_image: Type.Optional(
      Type.Unsafe<string | null>({
        type: ['string', 'null'],
        description:
          "The container image whose file system runs see as / (a skopeo reference such as docker://debian:12); null: the executor host's."
      })
    )
  },
  { additionalProperties: true }
);
export const ListEnvironmentsResponseSchema = Type.Object({ environments: Type.Array(EnvironmentSchema) });

export const ModelSchema = Type.Object(
  {
    id: Type.String(),
    provider: Type.String(),
    environment_ids: Type.Array(Type.String())
  },
  { additionalProperties: true }
);
export const ListModelsResponseSchema = Type.Object({
  default_model_id: Type.Unsafe<string | null>({ type: ['string', 'null'] }),
  models: Type.Array(ModelSchema),
  environments: Type.Array(
    Type.Object({
      environment_id: Type.String(),
      agent_kind: Type.String(),
      default_model_id: Type.Unsafe<string | null>({ type: ['string', 'null'] }),
      accepts_model_id: Type.Boolean()
    })
  )
});

export type ScheduleRecord = Static<typeof ScheduleSchema>;
export type CreateScheduleRequest = Static<typeof CreateScheduleRequestSchema>;
export type UpdateScheduleRequest = Static<typeof UpdateScheduleRequestSchema>;
export type EnvironmentRecord = Static<typeof EnvironmentSchema>;
export type ListModelsResponse = Static<typeof ListModelsResponseSchema>;
