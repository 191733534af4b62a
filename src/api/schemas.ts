// JSON schemas of the contract (TypeBox), for the executor's validation, its compiled response
// serialisation and its OpenAPI document. The compile-time checks at the bottom keep them in step
// with the plain types in ./run.ts. `expected` on a schema is the form a bad value is told to have
// ("limit \"500\": expected a whole number from 1 to 100"); `constraint` says what a value of the
// right type still broke ("prompt: must not be empty").

import Type, { type Static } from 'typebox';
import { EVENT_KINDS } from './events.js';
import { KNOWN_STATES } from './run.js';
import type { CreateRunRequest, ListRunsResponse, Problem, RunRecord } from './run.js';

const Timestamp = Type.String({ format: 'date-time', description: 'RFC 3339 timestamp' });
/** A string or null, as one JSON type list (serialised without trying each branch). */
const NullableString = (options: Type.TStringOptions = {}) =>
  Type.Unsafe<string | null>({ ...options, type: ['string', 'null'] });

/** How many levels of child runs may be below a root run (a root's child is 1). */
export const MAX_RUN_DEPTH = 3;

export const RunStateSchema = Type.String({
  description: `Run state. Known values: ${KNOWN_STATES.join(', ')}; clients must accept others.`,
  examples: ['QUEUED', 'INPROGRESS', 'SUCCEEDED', 'FAILED']
});

export const RunConfigSchema = Type.Object(
  {
    environment_id: Type.String({
      pattern: '\\S',
      description: 'Environment the run executes in.',
      expected: 'a non-empty string'
    }),
    publish: Type.Optional(
      Type.Boolean({
        description:
          "false: the executor does not publish this run's changes (branch, pull request). Where they go is the executor's configuration, never the request's.",
        expected: 'true or false (a request may turn publishing off, never choose where it goes)'
      })
    )
  },
  {
    additionalProperties: true,
    description: 'Run configuration; fields beyond environment_id are kept as sent.',
    expected: 'an object with environment_id'
  }
);

export const CreateRunRequestSchema = Type.Object(
  {
    prompt: Type.String({
      pattern: '\\S',
      description: 'The instruction given to the agent.',
      expected: 'a string',
      constraint: 'must not be empty'
    }),
    config: RunConfigSchema,
    title: Type.Optional(
      Type.Union([Type.String(), Type.Null()], { description: 'Title of the run.', expected: 'a string' })
    ),
    parent_run_id: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 200,
        description: `A run of the same team this run is a child of; at most ${MAX_RUN_DEPTH} levels below a root run. The child takes the parent's metadata keys it does not set, and is cancelled with it.`,
        expected: 'the run id of a run of this team'
      })
    )
  },
  { additionalProperties: true, expected: 'a JSON object with prompt and config' }
);

/** A create request's `metadata`: at most this many string pairs, keys and values this long. */
export const MAX_METADATA_PAIRS = 20;
export const MAX_METADATA_KEY = 64;
export const MAX_METADATA_VALUE = 512;
/** Most bytes of JSON a create's fields beyond prompt, config and title (metadata among them) may take. */
export const MAX_EXTRA_FIELDS_BYTES = 64 * 1024;
/** Most bytes of JSON a run's `config` may take (mcp_servers, base_prompt and fields kept as sent among them). */
export const MAX_CONFIG_BYTES = 64 * 1024;
/** Most `metadata[key]=value` pairs one list request may filter by (the service's limit). */
export const MAX_METADATA_FILTERS = 5;

/** The longest follow-up message, in characters. */
export const MAX_FOLLOWUP_MESSAGE = 100_000;
/**
 * The modes a run or a follow-up may ask for: `orchestrate` gives the run's sandbox a credential
 * that may start and steer child runs of its own.
 */
export { RUN_MODES, type RunMode } from './run.js';

/** `POST /agent/runs/{run_id}/followups`: the next user message of the run's conversation. */
export const FollowupRequestSchema = Type.Object(
  {
    message: Type.String({
      minLength: 1,
      maxLength: MAX_FOLLOWUP_MESSAGE,
      pattern: '\\S',
      description: 'The next user message of the conversation.',
      expected: `a string of 1–${MAX_FOLLOWUP_MESSAGE} characters`,
      constraint: 'must not be empty'
    }),
    mode: Type.Optional(
      Type.String({
        description:
          '`normal` (the default), `plan` (the agent may read the workspace, not change it) or `orchestrate` (the agent may start and steer child runs).',
        expected: 'normal, plan or orchestrate'
      })
    )
  },
  { additionalProperties: true, expected: 'a JSON object with message' }
);
export const FollowupResponseSchema = Type.Object({ run_id: Type.String(), state: RunStateSchema });

/** The old params of the run routes (`:id`); the routes now name theirs `run_id` (RunIdParamsSchema). */
export const RunParamsSchema = Type.Object({ id: Type.String({ description: 'The run id.' }) });
export const RunIdParamsSchema = Type.Object({ run_id: Type.String({ description: 'The run id.' }) });
export const ArtifactParamsSchema = Type.Object({
  artifact_uid: Type.String({ description: 'The artifact id.' })
});
export const SessionArtifactParamsSchema = Type.Object({
  run_id: Type.String({ description: 'The run id.' }),
  artifact_uid: Type.String({ description: 'The artifact id.' })
});

/** The longest cancel reason, in characters: the only place this limit is written. */
export const MAX_CANCEL_REASON = 500;

/** A cancel's answer: the run id. */
export const CancelResponseSchema = Type.String();

/**
 * A cancel's optional body, `{"reason": "…"}` (no body, or null, is no reason). `acceptsNoBody`
 * tells the executor's validator that a request without a body is fine.
 */
export const CancelRequestSchema = Type.Unsafe<{ reason?: string; [field: string]: unknown } | null>({
  type: ['object', 'null'],
  properties: {
    reason: Type.String({
      minLength: 1,
      maxLength: MAX_CANCEL_REASON,
      pattern: '\\S',
      description: 'Why; the status message becomes `cancelled by a client: <reason>`.',
      expected: `a string of 1–${MAX_CANCEL_REASON} characters`
    })
  },
  additionalProperties: true,
  acceptsNoBody: true,
  expected: 'no body or a JSON object'
});

const states = `(${KNOWN_STATES.join('|')})`;
const StateFilter = Type.String({
  pattern: `^${states}(,${states})*$`,
  expected: `one of ${KNOWN_STATES.join(', ')}`
});
/** An RFC 3339 time; empty means no filter (`format: timestamp` is checked by the executor). */
const TimeFilter = (description: string) =>
  Type.String({
    format: 'timestamp',
    description,
    expected: 'an RFC 3339 timestamp such as 2026-01-31T12:00:00Z'
  });
const Text = (description: string) => Type.String({ description, expected: 'a single value' });

export const LIST_SORT_KEYS = ['created_at', 'updated_at'] as const;

/** The list's query parameters: any other answers 400. */
export const ListRunsQuerySchema = Type.Object(
  {
    limit: Type.Optional(
      Type.String({
        pattern: '^(100|[1-9][0-9]?)$',
        description: 'Page size, 1–100 (default 20).',
        expected: 'a whole number from 1 to 100'
      })
    ),
    cursor: Type.Optional(Text('The next_cursor of the previous page (same sort).')),
    state: Type.Optional(
      Type.Union([StateFilter, Type.Array(StateFilter)], {
        description: 'Only runs in these states (repeatable, or comma-separated).',
        expected: `one of ${KNOWN_STATES.join(', ')}`
      })
    ),
    environment_id: Type.Optional(Text('Only runs of this environment.')),
    created_after: Type.Optional(TimeFilter('Only runs created after this time.')),
    created_before: Type.Optional(TimeFilter('Only runs created before this time.')),
    updated_after: Type.Optional(TimeFilter('Only runs updated after this time.')),
    creator: Type.Optional(Text("Only runs created by this creator uid (the creator's key id here).")),
    q: Type.Optional(Text('Only runs whose title or prompt contains this text (ASCII letters fold case).')),
    name: Type.Optional(Text('Only runs whose config.name is this.')),
    model_id: Type.Optional(Text('Only runs whose config.model_id is this.')),
    artifact_type: Type.Optional(Text('Only runs that have an artifact of this type.')),
    schedule_id: Type.Optional(Text('Only runs this schedule started.')),
    ancestor_run_id: Type.Optional(
      Text('Only runs below this run: its children, their children and so on (every descendant).')
    ),
    sort_by: Type.Optional(
      Type.Union(
        LIST_SORT_KEYS.map(key => Type.Literal(key)),
        { description: 'Sort key (default created_at).', expected: 'created_at or updated_at' }
      )
    ),
    sort_order: Type.Optional(
      Type.Union([Type.Literal('asc'), Type.Literal('desc')], {
        description: 'Sort order (default desc).',
        expected: 'asc or desc'
      })
    )
  },
  {
    additionalProperties: false,
    // metadata[key]=value, repeatable: only runs whose create request's metadata has each pair.
    patternProperties: {
      [`^metadata\\[[^\\]]{1,${MAX_METADATA_KEY}}\\]$`]: Type.Union(
        [
          Type.String({ maxLength: MAX_METADATA_VALUE }),
          Type.Array(Type.String({ maxLength: MAX_METADATA_VALUE }))
        ],
        {
          description: `Only runs whose metadata has this key with this value (at most ${MAX_METADATA_FILTERS} pairs per request).`,
          expected: 'a string'
        }
      )
    }
  }
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

export const WorkloadSchema = Type.Object(
  {
    issuer: Type.String({ description: 'The OIDC issuer that signed the token.' }),
    repository: Type.Optional(Type.String()),
    ref: Type.Optional(Type.String()),
    workflow_ref: Type.Optional(Type.String()),
    run_id: Type.Optional(Type.String())
  },
  {
    additionalProperties: true,
    description:
      "Set by the server when a workload's OIDC token created the run: the claims it was admitted by."
  }
);

export const RunRecordSchema = Type.Object(
  {
    run_id: Type.String(),
    state: RunStateSchema,
    title: Type.Optional(NullableString()),
    prompt: Type.Optional(Type.String()),
    environment_id: Type.Optional(Type.String()),
    created_at: Type.Optional(Timestamp),
    updated_at: Type.Optional(Timestamp),
    started_at: Type.Optional(NullableString({ format: 'date-time' })),
    completed_at: Type.Optional(NullableString({ format: 'date-time' })),
    status_message: Type.Optional(Type.Union([Type.String(), StatusMessageObjectSchema, Type.Null()])),
    error_code: Type.Optional(NullableString({ description: 'See GET /api/v1/errors.' })),
    session_link: Type.Optional(NullableString({ format: 'uri' })),
    creator: Type.Optional(CreatorSchema),
    agent_config: Type.Optional(RunConfigSchema),
    source: Type.Optional(Type.String()),
    parent_run_id: Type.Optional(
      NullableString({ description: 'The run this one is a child of (absent for a root run).' })
    ),
    workload: Type.Optional(WorkloadSchema)
  },
  { additionalProperties: true }
);

export const ListRunsResponseSchema = Type.Object({
  runs: Type.Array(RunRecordSchema),
  page_info: Type.Object({
    has_next_page: Type.Boolean(),
    next_cursor: Type.Optional(NullableString())
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
    kind: Type.String({
      description: `${EVENT_KINDS.join(', ')}, or a kind a newer version adds (see TranscriptEventKinds for each kind's fields)`
    })
  },
  { additionalProperties: true }
);

export const TranscriptSchema = Type.Object({
  run_id: Type.String(),
  state: RunStateSchema,
  events: Type.Array(TranscriptEventSchema),
  has_more: Type.Boolean({
    description: 'More events follow this page now: read again with after=next_after.'
  }),
  next_after: Type.Integer({
    description: 'The seq of the last event of this page (after itself when empty).'
  })
});

/** The transcript's query: `after` and `limit` (others are ignored). */
export const TranscriptQuerySchema = Type.Object(
  {
    after: Type.Optional(
      Type.String({
        pattern: '^(\\d{1,15})?$',
        description: 'Only events newer than this seq.',
        expected: 'the seq of an event, a whole number such as 12'
      })
    ),
    limit: Type.Optional(
      Type.String({
        pattern: '^((?=\\d{1,4}$)0*([1-9]\\d{0,2}|1000))?$',
        description: 'At most this many events, 1–1000 (default 100).',
        expected: 'a whole number of events from 1 to 1000'
      })
    )
  },
  { additionalProperties: true }
);

/**
 * A signed download URL's query. Not checked by the schema: a wrong or missing signature or expiry
 * answers 404 like an artifact that does not exist, never 400.
 */
export const DownloadQuerySchema = Type.Object(
  {
    expires: Type.Optional(Type.Unsafe<unknown>({ description: 'Expiry, in seconds since 1970 (signed).' })),
    signature: Type.Optional(Type.Unsafe<unknown>({ description: 'HMAC of the artifact id and expiry.' }))
  },
  { additionalProperties: true }
);

/**
 * A session link's query: only `token` is read. A shared link may gain parameters on its way
 * (tracking, say), and any token that is not the right one (a repeated one too) is a 404.
 */
export const SessionQuerySchema = Type.Object(
  { token: Type.Optional(Type.Unsafe<unknown>({ description: "The run's session token (an HMAC)." })) },
  { additionalProperties: true }
);

/** A content block of a conversation message; `type` names it, the other fields depend on it. */
const ConversationBlockSchema = Type.Object(
  { type: Type.String({ description: 'text, action, action_result, event, …; unknown types may appear.' }) },
  {
    additionalProperties: true,
    description:
      'Blocks by `type`: text {text}; action {id, name: run_command, category, input.command}; action_result {action_id, state, output {exit_code, output}}; event {event_type, …} (state_change, file_change, changes, artifact_published, agent_exit, notice, stderr). The last assistant text block is the final answer.'
  }
);

export const ConversationMessageSchema = Type.Object(
  {
    role: Type.String({ description: 'user, assistant, tool or system.' }),
    timestamp: Type.Optional(Timestamp),
    content: Type.Array(ConversationBlockSchema)
  },
  { additionalProperties: true }
);

export const ConversationStepSchema = Type.Object(
  {
    id: Type.Optional(Type.String()),
    description: Type.Optional(Type.String()),
    summary: Type.Optional(Type.String()),
    started_at: Type.Optional(Timestamp),
    completed_at: Type.Optional(Timestamp),
    messages: Type.Array(ConversationMessageSchema),
    steps: Type.Array(
      Type.Object({}, { additionalProperties: true, description: 'A nested step, same shape.' })
    )
  },
  { additionalProperties: true }
);

/** The service's normalized conversation: steps → messages → content blocks. */
export const ConversationSchema = Type.Object(
  { conversation_id: Type.String(), steps: Type.Array(ConversationStepSchema) },
  { additionalProperties: true }
);

/** A redirect's path: a session id (as the conversation redirect answers it) or a conversation (run) id. */
export const SessionRedirectParamsSchema = Type.Object({
  session_id: Type.String({ description: 'The session id, as the conversation redirect answers it.' })
});
export const ConversationRedirectParamsSchema = Type.Object({
  conversation_id: Type.String({ description: "The conversation id: the run's id." })
});
/** Where a shared session goes once its run ended: its conversation; `{}` when nowhere yet. */
export const SessionRedirectSchema = Type.Object(
  { conversation_id: Type.Optional(Type.String()) },
  { additionalProperties: false }
);
/** Where a conversation goes while its run is live: its session; `{}` when nowhere. */
export const ConversationRedirectSchema = Type.Object(
  { session_id: Type.Optional(Type.String()) },
  { additionalProperties: false }
);
export type SessionRedirect = Static<typeof SessionRedirectSchema>;
export type ConversationRedirect = Static<typeof ConversationRedirectSchema>;

export const ArtifactDetailsSchema = Type.Object({
  artifact_uid: Type.String(),
  artifact_type: Type.String({ examples: ['FILE'] }),
  run_id: Type.String(),
  created_at: Timestamp,
  download_url: Type.String({ description: 'Signed; needs no API key; valid until expires_at.' }),
  expires_at: Timestamp,
  data: Type.Object(
    {
      artifact_uid: Type.String(),
      filepath: Type.String(),
      filename: Type.String(),
      mime_type: Type.String({ examples: ['text/x-diff'] }),
      size: Type.Integer(),
      description: Type.Optional(NullableString())
    },
    { additionalProperties: true }
  )
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

/** Run ids the events cursor follows at once, at most. */
export const MAX_EVENT_RUN_IDS = 100;
/** Events one page of the cursor holds at most (the production service's bound). */
export const MAX_EVENTS_LIMIT = 500;

/** The events cursor's query: the runs, where to go on from, and the page size. */
export const EventsQuerySchema = Type.Object(
  {
    run_ids: Type.Union(
      [Type.String({ maxLength: 20_000 }), Type.Array(Type.String({ maxLength: 20_000 }), { maxItems: 100 })],
      {
        description: `The runs to follow: ids separated by commas, or the parameter repeated; 1 to ${MAX_EVENT_RUN_IDS} of this key's team.`,
        expected: `run ids separated by commas, 1 to ${MAX_EVENT_RUN_IDS}`
      }
    ),
    since: Type.Optional(
      Type.String({
        pattern: '^(\\d{1,15})?$',
        description: 'Only events with a larger sequence (the next_since of the previous page; 0 for all).',
        expected: 'the sequence of an event, a whole number such as 12'
      })
    ),
    limit: Type.Optional(
      Type.String({
        pattern: '^((?=\\d{1,3}$)0*([1-9]\\d{0,1}|[1-4]\\d\\d|500))?$',
        description: `At most this many events, 1–${MAX_EVENTS_LIMIT} (default 100).`,
        expected: `a whole number of events from 1 to ${MAX_EVENTS_LIMIT}`
      })
    )
  },
  { additionalProperties: true }
);

/** One change of a run's state on the events cursor. */
export const CursorEventSchema = Type.Object(
  {
    sequence: Type.Integer({ description: "The event's place on the team's cursor." }),
    run_id: Type.String(),
    type: Type.String({
      description:
        'run_in_progress, run_succeeded, run_failed, run_errored, run_blocked or run_cancelled (more may come).'
    }),
    state: RunStateSchema,
    timestamp: Type.String({ description: 'When the run changed state (ISO 8601).' }),
    event_type: Type.String({ description: 'The same as type (the production service names it so).' }),
    occurred_at: Type.String({ description: 'The same as timestamp (the production service names it so).' })
  },
  { additionalProperties: true }
);

export const EventsPageSchema = Type.Object({
  events: Type.Array(CursorEventSchema),
  next_since: Type.Integer({
    description: 'Read again with since=next_since for the events after this page (since itself when empty).'
  })
});
