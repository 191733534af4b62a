export const id = 697;
export const ids = [697];
export const modules = {

/***/ 57697:
/***/ ((__unused_webpack_module, __webpack_exports__, __webpack_require__) => {


// EXPORTS
__webpack_require__.d(__webpack_exports__, {
  main: () => (/* binding */ main)
});

// NAMESPACE OBJECT: ./src/api/webhooks.ts
var webhooks_namespaceObject = {};
__webpack_require__.r(webhooks_namespaceObject);
__webpack_require__.d(webhooks_namespaceObject, {
  CreateWebhookRequestSchema: () => (CreateWebhookRequestSchema),
  DeleteWebhookResponseSchema: () => (DeleteWebhookResponseSchema),
  DeliveryParamsSchema: () => (DeliveryParamsSchema),
  DeliverySchema: () => (DeliverySchema),
  ListDeliveriesResponseSchema: () => (ListDeliveriesResponseSchema),
  ListWebhooksResponseSchema: () => (ListWebhooksResponseSchema),
  STATE_EVENT_TYPES: () => (STATE_EVENT_TYPES),
  WEBHOOK_EVENT_TYPES: () => (WEBHOOK_EVENT_TYPES),
  WebhookEventTypeSchema: () => (WebhookEventTypeSchema),
  WebhookIdParamsSchema: () => (WebhookIdParamsSchema),
  WebhookSchema: () => (WebhookSchema),
  WebhookWithSecretSchema: () => (WebhookWithSecretSchema)
});

// NAMESPACE OBJECT: ./src/api/schemas.ts
var schemas_namespaceObject = {};
__webpack_require__.r(schemas_namespaceObject);
__webpack_require__.d(schemas_namespaceObject, {
  ArtifactDetailsSchema: () => (ArtifactDetailsSchema),
  ArtifactParamsSchema: () => (ArtifactParamsSchema),
  CancelRequestSchema: () => (CancelRequestSchema),
  CancelResponseSchema: () => (CancelResponseSchema),
  ConversationMessageSchema: () => (ConversationMessageSchema),
  ConversationSchema: () => (ConversationSchema),
  ConversationStepSchema: () => (ConversationStepSchema),
  CreateRunRequestSchema: () => (CreateRunRequestSchema),
  CreateRunResponseSchema: () => (CreateRunResponseSchema),
  CreatorSchema: () => (CreatorSchema),
  CursorEventSchema: () => (CursorEventSchema),
  DownloadQuerySchema: () => (DownloadQuerySchema),
  EventsPageSchema: () => (EventsPageSchema),
  EventsQuerySchema: () => (EventsQuerySchema),
  FollowupRequestSchema: () => (FollowupRequestSchema),
  FollowupResponseSchema: () => (FollowupResponseSchema),
  LIST_SORT_KEYS: () => (LIST_SORT_KEYS),
  ListRunsQuerySchema: () => (ListRunsQuerySchema),
  ListRunsResponseSchema: () => (ListRunsResponseSchema),
  MAX_CANCEL_REASON: () => (MAX_CANCEL_REASON),
  MAX_CONFIG_BYTES: () => (MAX_CONFIG_BYTES),
  MAX_EVENTS_LIMIT: () => (MAX_EVENTS_LIMIT),
  MAX_EVENT_RUN_IDS: () => (MAX_EVENT_RUN_IDS),
  MAX_EXTRA_FIELDS_BYTES: () => (MAX_EXTRA_FIELDS_BYTES),
  MAX_FOLLOWUP_MESSAGE: () => (MAX_FOLLOWUP_MESSAGE),
  MAX_METADATA_FILTERS: () => (MAX_METADATA_FILTERS),
  MAX_METADATA_KEY: () => (MAX_METADATA_KEY),
  MAX_METADATA_PAIRS: () => (MAX_METADATA_PAIRS),
  MAX_METADATA_VALUE: () => (MAX_METADATA_VALUE),
  MAX_RUN_DEPTH: () => (MAX_RUN_DEPTH),
  ProblemSchema: () => (ProblemSchema),
  RUN_MODES: () => (RUN_MODES),
  RunConfigSchema: () => (RunConfigSchema),
  RunIdParamsSchema: () => (RunIdParamsSchema),
  RunParamsSchema: () => (RunParamsSchema),
  RunRecordSchema: () => (RunRecordSchema),
  RunStateSchema: () => (RunStateSchema),
  SessionArtifactParamsSchema: () => (SessionArtifactParamsSchema),
  SessionQuerySchema: () => (SessionQuerySchema),
  StatusMessageObjectSchema: () => (StatusMessageObjectSchema),
  TranscriptEventSchema: () => (TranscriptEventSchema),
  TranscriptQuerySchema: () => (TranscriptQuerySchema),
  TranscriptSchema: () => (TranscriptSchema),
  WorkloadSchema: () => (WorkloadSchema)
});

// NAMESPACE OBJECT: ./src/api/schedules.ts
var api_schedules_namespaceObject = {};
__webpack_require__.r(api_schedules_namespaceObject);
__webpack_require__.d(api_schedules_namespaceObject, {
  CreateScheduleRequestSchema: () => (CreateScheduleRequestSchema),
  DeleteScheduleResponseSchema: () => (DeleteScheduleResponseSchema),
  EnvironmentSchema: () => (EnvironmentSchema),
  ListEnvironmentsResponseSchema: () => (ListEnvironmentsResponseSchema),
  ListModelsResponseSchema: () => (ListModelsResponseSchema),
  ListSchedulesResponseSchema: () => (ListSchedulesResponseSchema),
  ModelSchema: () => (ModelSchema),
  OVERLAP_POLICIES: () => (OVERLAP_POLICIES),
  ScheduleIdParamsSchema: () => (ScheduleIdParamsSchema),
  ScheduleSchema: () => (ScheduleSchema),
  UpdateScheduleRequestSchema: () => (UpdateScheduleRequestSchema)
});

// EXTERNAL MODULE: external "node:util"
var external_node_util_ = __webpack_require__(57975);
;// CONCATENATED MODULE: ./src/api/run.ts
// The run contract: the one source of truth for what travels over the wire.
// Plain types and constants only, so the action's bundle carries no schema library;
// the executor's JSON schemas in ./schemas.ts are checked against these types by the compiler.
/** Path prefix of every endpoint; part of the contract (spec section 9). */
const API_PREFIX = '/api/v1';
/** States the contract names. Servers may send others; clients must treat those as not terminal. */
const KNOWN_STATES = [
    'QUEUED',
    'PENDING',
    'CLAIMED',
    'INPROGRESS',
    'BLOCKED',
    'SUCCEEDED',
    'FAILED',
    'ERROR',
    'CANCELLED'
];
/** States after which a run never changes again. */
const TERMINAL_STATES = ['SUCCEEDED', 'FAILED', 'ERROR', 'CANCELLED'];
function run_isTerminalState(state) {
    return TERMINAL_STATES.includes(state);
}
function isKnownState(state) {
    return KNOWN_STATES.includes(state);
}
/** How a run's turn works: see CreateRunRequest.mode. */
const RUN_MODES = ['normal', 'plan', 'orchestrate'];
/** The modes as an error message names them. */
const RUN_MODE_WORDS = 'normal, plan or orchestrate';
const isRunMode = (value) => RUN_MODES.includes(value);

;// CONCATENATED MODULE: ./src/api/error-codes.ts
// The error reference (spec section 7.2): every `error_code` a server of this contract sends,
// with its HTTP status (for request errors) and what it means. The executor serves this list at
// GET /api/v1/errors and the README prints it.
const ERROR_CODES = {
    invalid_request: {
        status: 400,
        retryable: false,
        meaning: 'The request is malformed: the body is not JSON, or a query parameter or header has a bad value.'
    },
    unauthenticated: {
        status: 401,
        retryable: false,
        meaning: 'The Authorization header is missing, is not `Bearer <key>`, or names a key that is unknown or revoked.'
    },
    forbidden: {
        status: 403,
        retryable: false,
        meaning: "The credential may not do this: a run's orchestrate credential asked for something outside its own run's tree of child runs or its environments."
    },
    not_found: {
        status: 404,
        retryable: false,
        meaning: 'No run with this id is visible to the key (it does not exist or belongs to another team).'
    },
    environment_not_found: {
        status: 404,
        retryable: false,
        meaning: 'config.environment_id names no environment that this server serves.'
    },
    artifact_not_found: {
        status: 404,
        retryable: false,
        meaning: 'No artifact with this id is visible to the key (it does not exist or belongs to another team), or its download link is wrong or expired.'
    },
    route_not_found: { status: 404, retryable: false, meaning: 'No endpoint has this method and path.' },
    run_already_finished: {
        status: 409,
        retryable: false,
        meaning: 'The run is already in a terminal state, so it cannot be cancelled.'
    },
    run_not_continuable: {
        status: 409,
        retryable: false,
        meaning: "The run can no longer be continued: its workspace was removed once the executor's workspaces.continue_for passed; `detail` says when."
    },
    operation_not_supported: {
        status: 422,
        retryable: false,
        meaning: 'The executor does not support what the request asks for (mode orchestrate in an environment whose sandbox could not keep the credential of the run inside).'
    },
    schedule_limit_reached: {
        status: 409,
        retryable: false,
        meaning: "The team has as many schedules as the executor's limits.max_schedules_per_team allows; delete one to create another."
    },
    webhook_limit_reached: {
        status: 409,
        retryable: false,
        meaning: "The team has as many webhook endpoints as the executor's webhooks.max_endpoints_per_team allows; delete one to add another."
    },
    webhook_declared_in_config: {
        status: 409,
        retryable: false,
        meaning: "The webhook endpoint was declared by the executor's operator in its configuration file: it is changed or removed there, not through the API."
    },
    idempotency_in_progress: {
        status: 409,
        retryable: true,
        meaning: 'Another request with the same Idempotency-Key is being processed; retry shortly.'
    },
    payload_too_large: { status: 413, retryable: false, meaning: 'The request body is larger than the limit.' },
    unsupported_media_type: {
        status: 415,
        retryable: false,
        meaning: 'The request body is not `application/json`.'
    },
    invalid_field: {
        status: 422,
        retryable: false,
        meaning: 'A field of the body is missing or has the wrong type or value; `detail` names it.'
    },
    prompt_too_large: { status: 422, retryable: false, meaning: 'The prompt is longer than the limit.' },
    idempotency_key_reused: {
        status: 422,
        retryable: false,
        meaning: 'The Idempotency-Key was already used with a different request body.'
    },
    rate_limited: {
        status: 429,
        retryable: true,
        meaning: 'This key sent more requests than its rate limit allows; wait for Retry-After.'
    },
    too_many_streams: {
        status: 429,
        retryable: true,
        meaning: 'This key (limits.max_streams_per_key) or this executor node (limits.max_streams) has as many open event streams as it may; close one, or wait for Retry-After.'
    },
    resource_unavailable: {
        status: 429,
        retryable: true,
        meaning: 'The run queue is full; wait for Retry-After and create the run again.'
    },
    internal_error: { status: 500, retryable: true, meaning: 'The server failed unexpectedly.' },
    store_unavailable: {
        status: 503,
        retryable: true,
        meaning: 'The executor cannot reach its store (PostgreSQL restarting, say); nothing was changed. Retry after Retry-After.'
    },
    shutting_down: {
        status: 503,
        retryable: true,
        meaning: 'The server is stopping and accepts no new work; retry against a running server.'
    },
    agent_failed: {
        status: null,
        retryable: false,
        meaning: 'The agent finished unsuccessfully (it exited non-zero or reported a failure).'
    },
    command_failed: {
        status: null,
        retryable: false,
        meaning: 'A command the agent ran exited non-zero; the status message names it and its exit code.'
    },
    setup_failed: {
        status: null,
        retryable: false,
        meaning: "One of the environment's setup commands failed before the agent started."
    },
    timeout: { status: null, retryable: true, meaning: "The run exceeded its environment's time limit." },
    cancelled: { status: null, retryable: false, meaning: 'The run was cancelled by a client.' },
    executor_restarted: {
        status: null,
        retryable: true,
        meaning: 'The executor stopped while the run was in progress; the run is not re-run automatically because agents have side effects.'
    },
    patch_too_large: {
        status: null,
        retryable: false,
        meaning: "The run's changes as a patch are larger than the executor's limit (workspaces.max_patch), so the run failed rather than return a cut patch."
    },
    workspace_quota_exceeded: {
        status: null,
        retryable: false,
        meaning: "What the run wrote (its workspace, or only its own layer of a copy-on-write workspace, its output folder and, for harness kinds, its HOME) grew past the executor's disk quota (workspaces.quota)."
    },
    workspace_tampered: {
        status: null,
        retryable: false,
        meaning: "After the agent, the executor could not read the run's workspace safely (git refused what the run left there, for example a path it will not record); no patch was kept and nothing was published. The status message names what was found."
    },
    publish_failed: {
        status: null,
        retryable: false,
        meaning: "Publishing the run's changes failed (the commit, the push or the pull request); the status message names the step and why, and the changes stay available as the changes.patch artifact."
    },
    resource_limit_exceeded: {
        status: null,
        retryable: false,
        meaning: "The run's processes went past a limit of their sandbox (sandbox.memory or sandbox.processes); the status message names it."
    },
    agent_auth_failed: {
        status: null,
        retryable: false,
        meaning: "The agent CLI's model provider refused its credentials (a missing, wrong or revoked API key); the status message quotes the CLI."
    },
    agent_rate_limited: {
        status: null,
        retryable: true,
        meaning: "The agent CLI's model provider rate-limited it or was overloaded; the status message quotes the CLI."
    },
    agent_model_not_found: {
        status: null,
        retryable: false,
        meaning: "The model the run asked for (config.model_id or the environment's agent.model) does not exist for the agent CLI's provider."
    },
    agent_crashed: {
        status: null,
        retryable: false,
        meaning: 'The agent CLI ended with an error of its own (or without a final answer); the status message quotes its last words.'
    },
    budget_exceeded: {
        status: null,
        retryable: false,
        meaning: "The run's model usage cost more than its environment's max_cost_usd; the agent was stopped."
    }
};

;// CONCATENATED MODULE: ./src/api/values.ts
// Rules about values that the client, the action and the executor must agree on: what a valid
// Idempotency-Key is, and how an error message shows a value it refuses: safely (never a long
// value in full, so a secret pasted into the wrong field is not echoed), bounded and quoted.
/** A valid `Idempotency-Key`: 1–255 printable ASCII characters, no spaces. */
const IDEMPOTENCY_KEY_PATTERN = /^[\x21-\x7e]{1,255}$/;
/** The form of a valid key, for error messages. */
const IDEMPOTENCY_KEY_FORM = '1–255 printable ASCII characters without spaces';
function isValidIdempotencyKey(value) {
    return typeof value === 'string' && IDEMPOTENCY_KEY_PATTERN.test(value);
}
/**
 * A value as it appears inline in a message (`timeout "forever": expected …`): its JSON text,
 * cut to `max` characters with an ellipsis; `nothing` when there is none.
 */
function showValue(value, max = 60) {
    if (value === undefined)
        return 'nothing';
    if (typeof value === 'string')
        return JSON.stringify(value.length > max ? `${value.slice(0, max)}…` : value);
    let text;
    try {
        text = JSON.stringify(value) ?? String(value);
    }
    catch {
        text = String(value);
    }
    return text.length > max ? `${text.slice(0, max)}…` : text;
}
/**
 * A value as the end of a sentence (`expected a string, got …`): its kind, and for strings and
 * scalars the value itself: `nothing`, `null`, `an array`, `an object`, `number 5`, `the string "x"`.
 */
function describeValue(value, max = 60) {
    if (value === undefined)
        return 'nothing';
    if (value === null)
        return 'null';
    if (Array.isArray(value))
        return 'an array';
    if (typeof value === 'string')
        return `the string ${showValue(value, max)}`;
    return typeof value === 'object' ? 'an object' : `${typeof value} ${String(value)}`;
}
/** A run id or artifact uid as one URL path segment: letters, digits and `-_.:~`, not only dots. */
const ID_SEGMENT_PATTERN = /^(?!\.+$)[A-Za-z0-9._:~-]{1,200}$/;
/** The form of an id, for error messages. */
const ID_SEGMENT_FORM = '1–200 letters, digits or -_.:~ (not . or ..)';
function isIdSegment(value) {
    return typeof value === 'string' && ID_SEGMENT_PATTERN.test(value);
}

;// CONCATENATED MODULE: ./src/api/events.ts
// The kinds of event a run's transcript holds, each with its fields, as one closed union. The
// executor writes them, and its pages, its conversation builder and the client's progress items read
// them. Every reader switches on `kind` and ends in `otherKind(event)`, which only compiles once every
// kind above it has its case: adding a kind is one line in `EventFields` (and its schema in
// schemas.ts), and the compiler then names every reader that must learn it. The client reads a service
// it does not control, so a kind it has never seen is still shown, generically.
/** Every kind, at run time (the same list as `EventFields`: the check below fails otherwise). */
const EVENT_KINDS = [
    'state',
    'message',
    'output',
    'command',
    'setup',
    'file',
    'diff',
    'exit',
    'result',
    'notice',
    'warning',
    'truncated',
    'omitted',
    'artifact',
    'publish',
    'action',
    'action_result',
    'agent_session',
    'followup',
    'turn'
];
const listed = true;
void listed;
function isEventKind(kind) {
    return EVENT_KINDS.includes(kind);
}
/**
 * The event a reader's switch did not handle. It takes `never`, so it compiles only in a switch that
 * has a case for every kind; at run time it hands back the event (a kind from a newer writer) so the
 * reader can show it generically.
 */
function otherKind(event) {
    return event;
}
/** Narrows an event read from a store or a service to the union (the switch's default handles the rest). */
function known(event) {
    return event;
}

;// CONCATENATED MODULE: ./src/api/endpoints.ts
// Every endpoint of the contract in one table: its method and path, the schemas of its path
// parameters, query, body and answer, who may call it, whether it counts against the key's rate
// limit, and the error codes it can answer. The executor registers its routes from this table, the
// OpenAPI document is generated from it, the client builds its paths from it and the contract test
// server routes by it: a new endpoint is one entry here plus its handler.
/** The longest `Prefer: wait=N` held answer, in seconds. */
const MAX_WAIT_SECONDS = 60;
const prefer = {
    name: 'Prefer',
    description: `wait=N (N ≤ ${MAX_WAIT_SECONDS}): hold the answer until there is something new.`,
    schema: { type: 'string', examples: ['wait=30'] }
};
const ifNoneMatch = {
    name: 'If-None-Match',
    description: 'The ETag of the record you have.',
    schema: { type: 'string' }
};
const acceptStream = {
    name: 'Accept',
    description: 'text/event-stream: answer as a server-sent event stream that stays open (see the description).',
    schema: { type: 'string', examples: ['text/event-stream'] }
};
const lastEventId = {
    name: 'Last-Event-ID',
    description: 'On a stream: resume after the event with this id (an EventSource sends it when it reconnects).',
    schema: { type: 'string', examples: ['42'] }
};
const idempotencyKey = {
    name: 'Idempotency-Key',
    description: 'Makes retries safe: the same key and body return the same run.',
    schema: { type: 'string', maxLength: 255 }
};
/** Most endpoints: an API key, each call taking a token from the key's bucket. */
const byKey = { auth: 'key', rateLimited: true };
/** The two endpoints that answer an event stream: streams are bounded per key and node (too_many_streams). */
const streamed = { ...byKey, errors: ['invalid_request', 'not_found', 'too_many_streams'] };
const create = {
    method: 'POST',
    summary: 'Create a run',
    description: 'Starts an agent run asynchronously. Send Idempotency-Key to make retries safe.',
    ...byKey,
    body: 'CreateRunRequestSchema',
    headers: [idempotencyKey],
    response: {
        description: 'The run was queued (or the same request was replayed).',
        schema: 'CreateRunResponseSchema'
    },
    errors: [
        'invalid_request',
        'not_found',
        'environment_not_found',
        'payload_too_large',
        'unsupported_media_type',
        'invalid_field',
        'prompt_too_large',
        'idempotency_key_reused',
        'operation_not_supported',
        'run_not_continuable',
        'resource_unavailable',
        'shutting_down'
    ]
};
const ENDPOINTS = {
    createRun: { ...create, path: '/api/v1/agent/runs' },
    createRunLegacy: { ...create, path: '/api/v1/agent/run', deprecated: true },
    listRuns: {
        method: 'GET',
        path: '/api/v1/agent/runs',
        summary: 'List runs, newest created first unless sort_by/sort_order say otherwise',
        description: 'Any query parameter not listed here is answered 400.',
        ...byKey,
        querystring: 'ListRunsQuerySchema',
        response: { description: 'A page of runs.', schema: 'ListRunsResponseSchema' },
        errors: ['invalid_request']
    },
    getRun: {
        method: 'GET',
        path: '/api/v1/agent/runs/{run_id}',
        summary: 'Read a run',
        description: `With If-None-Match and Prefer: wait=N (max ${MAX_WAIT_SECONDS}), the answer is held while the run is unchanged.`,
        ...byKey,
        params: 'RunIdParamsSchema',
        headers: [ifNoneMatch, prefer],
        response: { description: 'The run.', schema: 'RunRecordSchema' },
        otherAnswers: { '304': 'Unchanged.' },
        errors: ['not_found']
    },
    cancelRun: {
        method: 'POST',
        path: '/api/v1/agent/runs/{run_id}/cancel',
        summary: 'Cancel a run',
        description: 'Optional body; the status message becomes `cancelled by a client: <reason>`.',
        ...byKey,
        params: 'RunIdParamsSchema',
        body: 'CancelRequestSchema',
        response: { description: 'The run id.', schema: 'CancelResponseSchema' },
        errors: ['invalid_request', 'not_found', 'run_already_finished', 'invalid_field']
    },
    submitFollowup: {
        method: 'POST',
        path: '/api/v1/agent/runs/{run_id}/followups',
        summary: "Continue a run's conversation",
        description: 'The message is the next user turn of the same run. Queued: it joins the prompt. Running: the run goes on with it after the current turn. Ended: the run is QUEUED again and continues in the same workspace, while that workspace is kept (workspaces.continue_for); after that, 409 run_not_continuable; like a create, it takes a place in the queue (429 resource_unavailable when the node queue or the team queue is at its limit). The answer carries the state the run is in already (never the old terminal one).',
        ...byKey,
        params: 'RunIdParamsSchema',
        body: 'FollowupRequestSchema',
        response: { description: 'The run and its (active) state.', schema: 'FollowupResponseSchema' },
        errors: [
            'invalid_request',
            'not_found',
            'payload_too_large',
            'unsupported_media_type',
            'invalid_field',
            'operation_not_supported',
            'run_not_continuable',
            'resource_unavailable',
            'shutting_down'
        ]
    },
    getTranscript: {
        method: 'GET',
        path: '/api/v1/agent/runs/{run_id}/transcript',
        summary: "A run's transcript",
        description: "One page of events: with after=<seq>, only events newer than that one; at most limit events (default 100, max 1000) and about 512 KiB of them; has_more says more follow (read again with after=next_after). With Prefer: wait=N (max 60) as well, an empty answer is held until there is an event (or the run ended, or N seconds passed). A run whose output passed the executor's limits.transcript has a truncated event between the head and the tail of its output, saying how many bytes were dropped.",
        ...byKey,
        params: 'RunIdParamsSchema',
        querystring: 'TranscriptQuerySchema',
        headers: [prefer],
        response: { description: 'Transcript events.', schema: 'TranscriptSchema' },
        errors: ['invalid_request', 'not_found']
    },
    getConversation: {
        method: 'GET',
        path: '/api/v1/agent/runs/{run_id}/conversation',
        summary: "A run's conversation, normalized",
        description: 'Built from the transcript: the prompt as the user message, agent text and command output as assistant text, each command as an action with its action_result, everything else as events; the final answer is the last assistant text block.',
        ...byKey,
        params: 'RunIdParamsSchema',
        response: { description: 'The conversation.', schema: 'ConversationSchema' },
        errors: ['not_found']
    },
    getRunEvents: {
        method: 'GET',
        path: '/api/v1/agent/runs/{run_id}/events',
        summary: "A run's events as they happen (a resumable event stream)",
        description: "With Accept: text/event-stream: a server-sent event stream of every transcript event after `after` (or the Last-Event-ID header), then each new one as it is written, state changes included: `id:` is the event's seq, `event:` its kind, `data:` the event as JSON (a `state` event carries the run's record as `run` when the record is in that state). A comment line is sent after each limits.stream_heartbeat (15 s) of silence. Once the run is terminal and its events are sent, an `event: done` message (data: run_id, state, last_seq, run) ends the stream. A reader too slow for limits.stream_buffer is cut between two messages; it resumes with Last-Event-ID. Streams are bounded per key (limits.max_streams_per_key) and per node (limits.max_streams): beyond, 429 too_many_streams with Retry-After. Without that Accept header: one JSON page, as the transcript answers it (after, limit, Prefer: wait).",
        ...streamed,
        params: 'RunIdParamsSchema',
        querystring: 'TranscriptQuerySchema',
        headers: [acceptStream, lastEventId, prefer],
        response: { description: 'Transcript events (a JSON page, or the stream).', schema: 'TranscriptSchema' }
    },
    listEvents: {
        method: 'GET',
        path: '/api/v1/agent/events',
        summary: 'Changes of state of several runs of the team, on one cursor',
        description: "run_ids (comma-separated or repeated, 1–100 runs of this key's team; another team's run is 404 like a run that does not exist), since (the next_since of the previous page, 0 for all) and limit (1–500, default 100). Each event: sequence (the team's cursor), run_id, type (run_in_progress, run_succeeded, run_failed, run_errored, run_blocked, run_cancelled), state and timestamp; event_type and occurred_at repeat type and timestamp under the production service's names. With Accept: text/event-stream: the same events as a stream (`id:` the sequence, `event:` the type, resumable with Last-Event-ID), ending with `event: done` once every run is terminal and its events are sent; streams are bounded as for a run's events.",
        ...streamed,
        querystring: 'EventsQuerySchema',
        headers: [acceptStream, lastEventId],
        response: { description: 'A page of events.', schema: 'EventsPageSchema' }
    },
    getArtifact: {
        method: 'GET',
        path: '/api/v1/agent/artifacts/{artifact_uid}',
        summary: "An artifact's details and a time-limited download URL",
        ...byKey,
        params: 'ArtifactParamsSchema',
        response: { description: 'The artifact.', schema: 'ArtifactDetailsSchema' },
        errors: ['artifact_not_found']
    },
    downloadArtifact: {
        method: 'GET',
        path: '/api/v1/agent/artifacts/{artifact_uid}/download',
        summary: "An artifact's bytes, by the signed download URL",
        auth: 'signed_download',
        rateLimited: false,
        params: 'ArtifactParamsSchema',
        querystring: 'DownloadQuerySchema',
        response: {
            description: "The bytes, in the artifact's mime_type, as an attachment.",
            contentType: 'application/octet-stream'
        },
        errors: ['artifact_not_found']
    },
    getSession: {
        method: 'GET',
        path: '/sessions/{run_id}',
        summary: "A run's session page (HTML), by its session link",
        auth: 'session_token',
        rateLimited: false,
        params: 'RunIdParamsSchema',
        querystring: 'SessionQuerySchema',
        response: { description: 'The session page.', contentType: 'text/html' },
        errors: ['not_found']
    },
    getSessionArtifact: {
        method: 'GET',
        path: '/sessions/{run_id}/artifacts/{artifact_uid}',
        summary: "An artifact of a run (its bytes, as an attachment), by the run's session link",
        auth: 'session_token',
        rateLimited: false,
        params: 'SessionArtifactParamsSchema',
        querystring: 'SessionQuerySchema',
        response: {
            description: "The artifact's bytes, in its mime_type.",
            contentType: 'application/octet-stream'
        },
        errors: ['not_found', 'artifact_not_found']
    },
    createSchedule: {
        method: 'POST',
        path: '/api/v1/agent/schedules',
        summary: 'Create a scheduled agent',
        description: 'A cron expression (read in time_zone, default UTC), a prompt and the config of the runs it starts; it fires at each due time exactly once across the executor nodes.',
        ...byKey,
        body: 'CreateScheduleRequestSchema',
        response: { description: 'The schedule.', schema: 'ScheduleSchema' },
        errors: [
            'invalid_request',
            'invalid_field',
            'schedule_limit_reached',
            'unsupported_media_type',
            'payload_too_large'
        ]
    },
    listSchedules: {
        method: 'GET',
        path: '/api/v1/agent/schedules',
        summary: "The team's scheduled agents, by name",
        ...byKey,
        response: { description: 'The schedules.', schema: 'ListSchedulesResponseSchema' },
        errors: []
    },
    getSchedule: {
        method: 'GET',
        path: '/api/v1/agent/schedules/{schedule_id}',
        summary: 'Read a scheduled agent',
        ...byKey,
        params: 'ScheduleIdParamsSchema',
        response: { description: 'The schedule.', schema: 'ScheduleSchema' },
        errors: ['not_found']
    },
    updateSchedule: {
        method: 'PUT',
        path: '/api/v1/agent/schedules/{schedule_id}',
        summary: 'Replace a scheduled agent’s settings',
        description: 'All fields except agent_config, time_zone, overlap and catch_up are required; next_run is computed anew.',
        ...byKey,
        params: 'ScheduleIdParamsSchema',
        body: 'UpdateScheduleRequestSchema',
        response: { description: 'The schedule.', schema: 'ScheduleSchema' },
        errors: ['invalid_request', 'invalid_field', 'not_found', 'unsupported_media_type', 'payload_too_large']
    },
    deleteSchedule: {
        method: 'DELETE',
        path: '/api/v1/agent/schedules/{schedule_id}',
        summary: 'Delete a scheduled agent (the runs it started stay)',
        ...byKey,
        params: 'ScheduleIdParamsSchema',
        response: { description: 'Deleted.', schema: 'DeleteScheduleResponseSchema' },
        errors: ['not_found']
    },
    pauseSchedule: {
        method: 'POST',
        path: '/api/v1/agent/schedules/{schedule_id}/pause',
        summary: 'Pause a scheduled agent: it fires no more until resumed',
        ...byKey,
        params: 'ScheduleIdParamsSchema',
        response: { description: 'The schedule.', schema: 'ScheduleSchema' },
        errors: ['not_found']
    },
    resumeSchedule: {
        method: 'POST',
        path: '/api/v1/agent/schedules/{schedule_id}/resume',
        summary: 'Resume a paused scheduled agent from its next due time',
        ...byKey,
        params: 'ScheduleIdParamsSchema',
        response: { description: 'The schedule.', schema: 'ScheduleSchema' },
        errors: ['not_found']
    },
    createWebhook: {
        method: 'POST',
        path: '/api/v1/agent/webhooks',
        summary: 'Add a webhook endpoint: signed events of the team’s runs are sent to it',
        description: 'Events follow the Standard Webhooks specification (webhook-id, webhook-timestamp, webhook-signature). The answer holds the signing secret; it is shown only here and on rotation.',
        ...byKey,
        body: 'CreateWebhookRequestSchema',
        response: { description: 'The endpoint, with its secret.', schema: 'WebhookWithSecretSchema' },
        errors: [
            'invalid_request',
            'invalid_field',
            'webhook_limit_reached',
            'unsupported_media_type',
            'payload_too_large'
        ]
    },
    listWebhooks: {
        method: 'GET',
        path: '/api/v1/agent/webhooks',
        summary: "The team's webhook endpoints (without secrets)",
        ...byKey,
        response: { description: 'The endpoints.', schema: 'ListWebhooksResponseSchema' },
        errors: []
    },
    getWebhook: {
        method: 'GET',
        path: '/api/v1/agent/webhooks/{webhook_id}',
        summary: 'Read a webhook endpoint (without its secret)',
        ...byKey,
        params: 'WebhookIdParamsSchema',
        response: { description: 'The endpoint.', schema: 'WebhookSchema' },
        errors: ['not_found']
    },
    deleteWebhook: {
        method: 'DELETE',
        path: '/api/v1/agent/webhooks/{webhook_id}',
        summary: 'Delete a webhook endpoint and its delivery log',
        ...byKey,
        params: 'WebhookIdParamsSchema',
        response: { description: 'Deleted.', schema: 'DeleteWebhookResponseSchema' },
        errors: ['not_found', 'webhook_declared_in_config']
    },
    rotateWebhookSecret: {
        method: 'POST',
        path: '/api/v1/agent/webhooks/{webhook_id}/rotate',
        summary: 'A new signing secret; the old one still signs for the grace period',
        description: 'During webhooks.rotation_grace (default 24 h) every request carries two signatures, by the new and the old secret.',
        ...byKey,
        params: 'WebhookIdParamsSchema',
        response: { description: 'The endpoint, with its new secret.', schema: 'WebhookWithSecretSchema' },
        errors: ['not_found', 'webhook_declared_in_config']
    },
    listWebhookDeliveries: {
        method: 'GET',
        path: '/api/v1/agent/webhooks/{webhook_id}/deliveries',
        summary: "The endpoint's deliveries, newest first",
        ...byKey,
        params: 'WebhookIdParamsSchema',
        response: { description: 'The deliveries.', schema: 'ListDeliveriesResponseSchema' },
        errors: ['not_found']
    },
    retryWebhookDelivery: {
        method: 'POST',
        path: '/api/v1/agent/webhooks/{webhook_id}/deliveries/{delivery_id}/retry',
        summary: 'Attempt a delivery once more, now (a disabled endpoint is enabled again)',
        ...byKey,
        params: 'DeliveryParamsSchema',
        response: { description: 'The delivery.', schema: 'DeliverySchema' },
        errors: ['not_found']
    },
    listEnvironments: {
        method: 'GET',
        path: '/api/v1/agent/environments',
        summary: 'The environments this executor serves (never their variables or secrets)',
        ...byKey,
        response: { description: 'The environments.', schema: 'ListEnvironmentsResponseSchema' },
        errors: []
    },
    listModels: {
        method: 'GET',
        path: '/api/v1/agent/models',
        summary: 'The models the configured agents accept, per environment, with the defaults',
        ...byKey,
        response: { description: 'The models.', schema: 'ListModelsResponseSchema' },
        errors: []
    },
    getOpenApi: {
        method: 'GET',
        path: '/api/v1/openapi.json',
        summary: 'This document',
        auth: 'none',
        rateLimited: false,
        response: { description: 'The OpenAPI 3.1 document.', contentType: 'application/json' },
        errors: []
    },
    listErrorCodes: {
        method: 'GET',
        path: '/api/v1/errors',
        summary: 'The error reference: every error_code, its status and meaning',
        auth: 'none',
        rateLimited: false,
        response: { description: 'The error codes.', contentType: 'application/json' },
        errors: []
    },
    health: {
        method: 'GET',
        path: '/healthz',
        summary: 'Liveness',
        auth: 'none',
        rateLimited: false,
        response: { description: 'The process answers.', contentType: 'application/json' },
        errors: [],
        internal: true
    },
    ready: {
        method: 'GET',
        path: '/readyz',
        summary: 'Readiness: 503 while stopping, without the store, or short of disk space or inodes',
        auth: 'none',
        rateLimited: false,
        response: { description: 'Ready.', contentType: 'application/json' },
        otherAnswers: {
            '503': "Shutting down, the store does not answer, or (on a node that runs work) the data dir's file system has less free space than workspaces.min_free or fewer free inodes than workspaces.min_free_inodes."
        },
        errors: [],
        internal: true
    }
};
/** @deprecated The table itself: each entry has its `method` and `path`. */
const ROUTES = (/* unused pure expression or super */ null && (ENDPOINTS));
const ENDPOINT_NAMES = Object.keys(ENDPOINTS);
/** Every error code an endpoint can answer: its own, then those of its auth, limit and any request. */
function errorCodesOf(endpoint) {
    const codes = new Set(endpoint.errors);
    // A key-checked endpoint may meet an orchestrate run's credential, refused what it may not do.
    if (endpoint.auth === 'key')
        codes.add('unauthenticated').add('forbidden');
    if (endpoint.rateLimited)
        codes.add('rate_limited');
    if (endpoint.auth !== 'none')
        codes.add('store_unavailable');
    codes.add('internal_error');
    return [...codes];
}
/** The names of a path's parameters, in order: `/runs/{run_id}/cancel` → ['run_id']. */
function pathParameters(path) {
    return [...path.matchAll(/\{([a-z_]+)\}/g)].map(match => match[1]);
}
/**
 * The endpoint's path with its parameters filled in (each percent-encoded as one segment). A
 * missing parameter is a programming error and throws, naming it.
 */
function endpointPath(name, params = {}) {
    return ENDPOINTS[name].path.replace(/\{([a-z_]+)\}/g, (_match, param) => {
        const value = params[param];
        if (value === undefined)
            throw new TypeError(`endpoint ${name}: missing path parameter ${param}; expected a string`);
        return encodeURIComponent(value);
    });
}
/** The path in Fastify's (and find-my-way's) form: `/api/v1/agent/runs/:run_id`. */
function routePath(path) {
    return path.replace(/\{([a-z_]+)\}/g, ':$1');
}

;// CONCATENATED MODULE: ./src/api/suggest.ts
// "Did you mean": the known word nearest to a mistyped one, for the messages that refuse an unknown
// option, configuration key or value. Near means a few edits (a letter left out, swapped or extra).
/** Edits (insert, delete, replace, swap two neighbours) that turn `a` into `b`. */
function distance(a, b) {
    const rows = [];
    for (let i = 0; i <= a.length; i++)
        rows.push([i, ...new Array(b.length).fill(0)]);
    for (let j = 1; j <= b.length; j++)
        rows[0][j] = j;
    for (let i = 1; i <= a.length; i++) {
        for (let j = 1; j <= b.length; j++) {
            const cost = a[i - 1] === b[j - 1] ? 0 : 1;
            let best = Math.min(rows[i - 1][j] + 1, rows[i][j - 1] + 1, rows[i - 1][j - 1] + cost);
            if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1])
                best = Math.min(best, rows[i - 2][j - 2] + 1);
            rows[i][j] = best;
        }
    }
    return rows[a.length][b.length];
}
/** The candidate nearest to `word` when it is near enough to be a typing slip, else undefined. */
function closestWord(word, candidates) {
    // Words are short; a long one (a pasted value) is no slip, and its cost stays bounded.
    if (word.length === 0 || word.length > 64)
        return undefined;
    const lower = word.toLowerCase();
    let best;
    let bestDistance = Infinity;
    for (const candidate of candidates) {
        const d = distance(lower, candidate.toLowerCase());
        if (d < bestDistance)
            [best, bestDistance] = [candidate, d];
    }
    const allowed = Math.max(1, Math.floor(Math.max(word.length, 3) / 4));
    return best !== undefined && best !== word && bestDistance <= allowed ? best : undefined;
}
/** `; did you mean X?` for a near candidate, else the empty string. */
function didYouMean(word, candidates) {
    const near = closestWord(word, candidates);
    return near === undefined ? '' : `; did you mean ${near}?`;
}

;// CONCATENATED MODULE: ./src/api/index.ts









;// CONCATENATED MODULE: ./src/common/duration.ts
// Durations as people write them in workflows: `90s`, `45m`, `1h30m`, `2h`.
const UNIT_MS = { h: 3_600_000, m: 60_000, s: 1000 };
/** Parses `1h30m`-style durations into milliseconds; returns undefined when the text is not one. */
function parseDuration(text) {
    const value = text.trim().toLowerCase();
    if (!/^(\d+h)?(\d+m)?(\d+s)?$/.test(value) || value === '')
        return undefined;
    let total = 0;
    for (const [, amount, unit] of value.matchAll(/(\d+)([hms])/g)) {
        total += Number(amount) * UNIT_MS[unit];
    }
    return total;
}
/** `3725000` → `1h2m5s`; `65000` → `1m5s`; `900` → `0s`. */
function formatDuration(ms) {
    let seconds = Math.max(0, Math.round(ms / 1000));
    const hours = Math.floor(seconds / 3600);
    seconds -= hours * 3600;
    const minutes = Math.floor(seconds / 60);
    seconds -= minutes * 60;
    let text = '';
    if (hours)
        text += `${hours}h`;
    if (minutes)
        text += `${minutes}m`;
    if (seconds || text === '')
        text += `${seconds}s`;
    return text;
}

;// CONCATENATED MODULE: ./src/common/table.ts
// Plain text tables for both command lines (`agent-run list`, `agent-executor environments list`):
// one helper so both line up the same way, without tabs that wrap unevenly in a terminal.
/** A plain text table: columns padded to their widest cell, two spaces apart, no trailing blanks. */
function table(header, rows) {
    const widths = header.map((cell, i) => Math.max(cell.length, ...rows.map(row => (row[i] ?? '').length)));
    const format = (row) => row
        .map((cell, i) => (i === row.length - 1 ? cell : cell.padEnd(widths[i])))
        .join('  ')
        .trimEnd();
    return [format(header), ...rows.map(format)].join('\n');
}

// EXTERNAL MODULE: external "node:fs"
var external_node_fs_ = __webpack_require__(73024);
// EXTERNAL MODULE: external "node:string_decoder"
var external_node_string_decoder_ = __webpack_require__(46193);
// EXTERNAL MODULE: external "node:path"
var external_node_path_ = __webpack_require__(76760);
;// CONCATENATED MODULE: ./src/executor/values/config-reader.ts
// Typed reads of a parsed YAML config that record a problem (key, value, expected form) instead of
// throwing, so that one start-up names every mistake at once. Its own module because the agent
// kinds read their own keys of `agent:` with it, and config.ts reads the agent kinds.


const MAX_TIMER_MS = 2 ** 31 - 1;
/** Units a size may carry: binary ones (KiB = 1024 B), as disks and `du` count. */
const SIZE_UNITS = {
    b: 1,
    kib: 1024,
    mib: 1024 ** 2,
    gib: 1024 ** 3,
    tib: 1024 ** 4
};
/** A value as it appears in a message (the one describer of src/api). */
const show = showValue;
class ConfigReader {
    problems;
    constructor(problems) {
        this.problems = problems;
    }
    object(value, at) {
        if (value === undefined || value === null)
            return {};
        if (typeof value === 'object' && !Array.isArray(value))
            return value;
        this.problems.push(`${at || 'the file'} ${show(value)}: expected a mapping of keys to values`);
        return {};
    }
    known(object, at, keys) {
        for (const key of Object.keys(object)) {
            if (!keys.includes(key)) {
                this.problems.push(`${at ? `${at}.` : ''}${key}: unknown key; expected one of ${keys.join(', ')}${didYouMean(key, keys)}`);
            }
        }
    }
    string(value, at, fallback) {
        if (value === undefined || value === null) {
            if (fallback === '')
                this.problems.push(`${at}: required, expected a string`);
            return fallback;
        }
        if (typeof value === 'string' && value.trim() !== '')
            return value.trim();
        if (typeof value === 'number')
            return String(value);
        this.problems.push(`${at} ${show(value)}: expected a non-empty string`);
        return fallback;
    }
    strings(value, at) {
        if (value === undefined || value === null)
            return [];
        if (Array.isArray(value) && value.every(item => typeof item === 'string' || typeof item === 'number')) {
            return value.map(String);
        }
        this.problems.push(`${at} ${show(value)}: expected a list of strings`);
        return [];
    }
    int(value, at, fallback, min, max) {
        if (value === undefined || value === null)
            return fallback;
        if (typeof value === 'number' && Number.isInteger(value) && value >= min && value <= max)
            return value;
        this.problems.push(`${at} ${show(value)}: expected a whole number from ${min} to ${max}`);
        return fallback;
    }
    duration(value, at, fallback, zeroAllowed = false) {
        if (value === undefined || value === null)
            return fallback;
        const ms = String(value).trim() === '0' ? 0 : parseDuration(String(value));
        // Node timers hold at most 2^31-1 ms (about 24.8 days).
        if (ms !== undefined && (ms > 0 || zeroAllowed) && ms <= MAX_TIMER_MS)
            return ms;
        this.problems.push(`${at} ${show(value)}: expected a duration such as 90s, 30m or 1h30m, at most 24 days`);
        return fallback;
    }
    /**
     * A size in binary units. Decimal ones (KB, MB, GB, TB) are refused rather than guessed: `2GB`
     * means 2·10⁹ bytes to some readers and 2 GiB to others, and a quota should not be a guess.
     */
    size(value, at, fallback) {
        if (value === undefined || value === null)
            return fallback;
        const match = /^(\d+(?:\.\d+)?)\s*([A-Za-z]*)$/.exec(String(value).trim());
        const unit = (match?.[2] || 'B').toLowerCase();
        const decimal = /^([kmgt])b$/.exec(unit);
        if (match && decimal) {
            const binary = `${decimal[1].toUpperCase()}iB`;
            this.problems.push(`${at} ${show(value)}: ${match[2]} is a decimal unit, which sizes here do not take; ` +
                `write ${match[1]}${binary} (binary units: KiB, MiB, GiB, TiB)`);
            return fallback;
        }
        if (match && SIZE_UNITS[unit] !== undefined) {
            const bytes = Math.round(Number(match[1]) * SIZE_UNITS[unit]);
            if (bytes > 0)
                return bytes;
        }
        this.problems.push(`${at} ${show(value)}: expected a size such as 500MiB or 2GiB`);
        return fallback;
    }
    oneOf(value, at, options, fallback) {
        if (value === undefined || value === null)
            return fallback;
        if (options.includes(value))
            return value;
        this.problems.push(`${at} ${show(value)}: expected one of ${options.join(', ')}${typeof value === 'string' ? didYouMean(value, options) : ''}`);
        return fallback;
    }
    url(value, at) {
        if (value === undefined || value === null)
            return undefined;
        try {
            const url = new URL(String(value));
            if (url.protocol === 'http:' || url.protocol === 'https:')
                return url.href.replace(/\/+$/, '');
        }
        catch {
            // reported below
        }
        this.problems.push(`${at} ${show(value)}: expected an http(s) URL such as https://agents.example.com`);
        return undefined;
    }
}

;// CONCATENATED MODULE: ./src/executor/agents/types.ts
// What an agent kind is: how it reads its settings from an environment's `agent:` mapping, what it
// checks at start-up, how the CLI shows it, and how it runs. The worker owns the run's lifecycle;
// a kind only does the work in the workspace and records what happened. A kind starts processes
// only through its context's `processes`, which confines each one in the run's sandbox (the lint
// forbids node:child_process in this folder).
/** Erases a kind's settings type so that kinds of different settings share one registry. */
function agentKind(kind) {
    return kind;
}

;// CONCATENATED MODULE: ./src/executor/runs/outcomes.ts
// How a run ends, decided in one place. Every way a run can end is a named constructor below (its
// state, error code and status message), and one precedence function, `decideOutcome`, reads what
// happened during the run (a record the worker fills in as it goes) and answers which outcome wins,
// with the rule that chose it. The worker, the agent kinds and the workspace code build outcomes
// only through these constructors; the error codes themselves are the contract's (src/api).
//
// The precedence, first rule that applies wins:
//   cancel        a client cancelled: the store already ended the run CANCELLED
//   lease_lost    the worker lost its lease: the run is no longer this worker's to end
//   limit         a sandbox limit (memory, processes) was hit: the cause of whatever followed
//   timeout, quota, shutdown   the worker stopped the run (its time limit, its disk quota, the
//                 executor stopping), whatever the agent answered after being stopped
//   failed        the run's own steps failed (setup, the agent, a failure to start them)
//   tampered, patch, publish   what comes after a successful agent, in the order it is tried;
//                 each only ever turns a success into a failure, never the other way
//   succeeded     nothing above applied
function failed(error_code, status_message) {
    return { state: 'FAILED', error_code, status_message };
}
function describeBytes(bytes) {
    return bytes >= 1024 ** 2 ? `${Math.round(bytes / 1024 ** 2)} MiB` : `${Math.round(bytes / 1024)} KiB`;
}
/** The run's steps all succeeded. */
function succeeded() {
    return { state: 'SUCCEEDED' };
}
// The agent and its steps.
/** The agent reported a failure, or a kind's own rule failed the run; `message` says which. */
function agentFailed(message) {
    return failed('agent_failed', message);
}
/** An agent process ended other than with exit code 0 (`exitCode` null: killed by `signal`). */
function agentExited(exitCode, signal, stderrTail = '') {
    const how = exitCode === null ? `was stopped by ${signal}` : `exited with code ${exitCode}`;
    return agentFailed(`agent ${how}${stderrTail ? `; last lines of stderr:\n${stderrTail}` : ''}`);
}
/** An agent's program could not be started at all. */
function agentCouldNotStart(program, why) {
    return agentFailed(`agent command ${JSON.stringify(program)} could not start: ${why}`);
}
/** The worker could not start the agent (no such kind here, no sandbox, no workspace). */
function agentCouldNotRun(why) {
    return agentFailed(`the agent could not run: ${why}`);
}
/** An agent noticed the run was stopped and gave up (the stop's own outcome wins over this). */
function agentStopped() {
    return failed('cancelled', 'stopped');
}
/** A command the agent ran ended other than with exit code 0 (`exitCode` null: killed by `signal`). */
function commandFailed(command, exitCode, signal) {
    const how = exitCode === null ? `was killed by ${signal}` : `exited with code ${exitCode}`;
    return failed('command_failed', `command \`${command}\` ${how}`);
}
/** One of the environment's setup commands exited non-zero. */
function setupFailed(command, exitCode, mode = 'normal') {
    // A plan run's setup is not read-only (only its agent's turn is): the message says which it was.
    const plan = mode === 'plan'
        ? ' in a plan-mode run (setup runs with the workspace writable; only the agent is read-only)'
        : '';
    return failed('setup_failed', `setup command \`${command}\` exited with code ${exitCode}${plan}`);
}
/** The run's environment was removed from the configuration while the run waited. */
function environmentGone(environmentId) {
    return failed('environment_not_found', `environment ${environmentId} is no longer configured`);
}
// Stops: the worker ends the run early.
/**
 * A client cancelled the run, with its reason if it gave one. The store's cancel writes it; the
 * worker, which learns of it afterwards (and without the reason), has its own finish refused.
 */
function cancelledByClient(reason) {
    const status_message = reason === undefined ? 'cancelled by a client' : `cancelled by a client: ${reason}`;
    return { state: 'CANCELLED', error_code: 'cancelled', status_message };
}
/** A run of the tree below `ancestorRunId` when that run was cancelled (the cancel cascades). */
function cancelledWithAncestor(ancestorRunId) {
    return {
        state: 'CANCELLED',
        error_code: 'cancelled',
        status_message: `cancelled because its ancestor run ${ancestorRunId} was cancelled`
    };
}
/** The run outlived its environment's time limit. */
function timedOut(timeoutMs) {
    return failed('timeout', `the run exceeded its time limit of ${Math.round(timeoutMs / 1000)} s`);
}
/**
 * The run's workspace and output folder grew past the disk quota while it ran; `why` says so when
 * it was not their bytes (the count of their files, a part the quota could not read).
 */
function quotaExceeded(quotaBytes, why) {
    return failed('workspace_quota_exceeded', why ? `the workspace ${why}` : `the workspace grew past its disk quota of ${describeBytes(quotaBytes)}`);
}
/** The source was larger than the disk quota, so its copy into the workspace stopped. */
function sourceOverQuota(quotaBytes) {
    return failed('workspace_quota_exceeded', `the source is larger than the workspace disk quota of ${describeBytes(quotaBytes)}; the copy stopped there`);
}
/** The executor shut down (past its grace period) while the run was in progress. */
function executorShutDown() {
    return failed('executor_restarted', 'the executor shut down before the run finished');
}
/** Status message of a run found in progress when its executor started again. */
const RESTARTED_MESSAGE = 'the executor restarted while this run was in progress; it was not re-run';
/** Status message of a run whose worker stopped renewing its lease. */
const LEASE_EXPIRED_MESSAGE = 'the worker running this run stopped renewing its lease; it was not re-run';
/** A run left in progress by a worker that stopped (`message`: one of the two above). */
function abandoned(message) {
    return failed('executor_restarted', message);
}
/** The worker lost the run's lease: it was failed as abandoned (the worker's finish is refused). */
function leaseLost() {
    return abandoned(LEASE_EXPIRED_MESSAGE);
}
/** The run's processes went past a sandbox limit; `limit` is the sandbox's message naming it. */
function resourceLimit(limit) {
    return failed('resource_limit_exceeded', limit);
}
// After the agent.
/** The workspace could not be read safely after the run. */
function workspaceTampered(why) {
    return failed('workspace_tampered', `the run's workspace could not be read safely, so no patch was kept and nothing was published: ${why}`);
}
/** The run's changes make a patch over the limit. */
function patchTooLarge(bytes, maxBytes) {
    return failed('patch_too_large', `the run's changes make a patch of ${bytes} bytes, over the limit of ${maxBytes} bytes (workspaces.max_patch); the changes were not kept`);
}
/** Publishing failed at `step`; `redact` hides secrets and URL credentials in the whole message. */
function publishFailed(step, why, redact) {
    return failed('publish_failed', redact(`publishing the changes failed at the ${step}: ${why}; the changes are kept as the changes.patch artifact`));
}
const RULES = [
    ['cancel', run => (run.stop === 'cancelled' ? cancelledByClient() : undefined)],
    ['lease_lost', run => (run.stop === 'lease_lost' ? leaseLost() : undefined)],
    ['limit', run => (run.limit ? resourceLimit(run.limit) : undefined)],
    ['timeout', run => (run.stop === 'timeout' ? timedOut(run.timeoutMs) : undefined)],
    ['quota', run => (run.stop === 'quota' ? quotaExceeded(run.quotaBytes, run.quotaWhy) : undefined)],
    // Any other reason a controller was aborted with is the executor stopping.
    ['shutdown', run => (run.stop !== undefined ? executorShutDown() : undefined)],
    ['failed', run => (run.ended.state !== 'SUCCEEDED' ? run.ended : undefined)],
    ['tampered', run => (run.unreadable !== undefined ? workspaceTampered(run.unreadable) : undefined)],
    ['outputs', run => (run.outputs?.state === 'FAILED' ? run.outputs : undefined)],
    ['publish', run => (run.publish?.state === 'FAILED' ? run.publish : undefined)]
];
/** Which outcome ends the run, and the rule that chose it (see the precedence at the top). */
function decideOutcome(run) {
    for (const [rule, answer] of RULES) {
        const outcome = answer(run);
        if (outcome)
            return { outcome, rule };
    }
    return { outcome: run.ended, rule: 'succeeded' };
}

;// CONCATENATED MODULE: ./src/executor/agents/command.ts
// The command agent: runs any agent CLI (`claude -p`, `codex exec`, `aider --message`, a script)
// in the workspace. The prompt goes on stdin or replaces `{prompt}` in the arguments; stdout and
// stderr stream into the transcript as they arrive; exit code 0 is success. Cancel and timeout
// stop the whole process group: SIGTERM, then SIGKILL after a grace period. At start-up the
// program is looked up on the PATH runs will get, so a misspelt name fails start-up, not each run.






const FLUSH_MS = 200;
const FLUSH_BYTES = 16 * 1024;
const STDERR_TAIL_LINES = 10;
/** Characters of one stderr line kept for the status message, and of the stream's end kept for them. */
const MAX_LINE_KEPT = 2000;
const KEPT_END_CHARS = 32 * 1024;
/** Output read but not yet stored, past which the child's pipe is paused. */
const MAX_QUEUED_BYTES = 1024 * 1024;
/** Variables every CLI needs to find itself and its home; the environment's `env` adds more. */
const BASE_VARIABLES = ['PATH', 'HOME', 'LANG', 'TMPDIR', 'TERM'];
/** The variables a run's program starts with: the base ones from the executor, then the listed ones. */
function runVariables(processEnv, listed) {
    const env = {};
    for (const name of BASE_VARIABLES)
        if (processEnv[name] !== undefined)
            env[name] = processEnv[name];
    return Object.assign(env, listed);
}
function isExecutableFile(path) {
    try {
        (0,external_node_fs_.accessSync)(path, external_node_fs_.constants.X_OK);
        return (0,external_node_fs_.statSync)(path).isFile();
    }
    catch {
        return false;
    }
}
/** Why `program` would not start in a run of this environment, or undefined when it would. */
function programProblem(environment, processEnv, program) {
    if (program.includes('{prompt}'))
        return undefined;
    if (program.includes('/')) {
        // A relative path is found in the workspace, which is made from the source: unknowable for a URL.
        if (!(0,external_node_path_.isAbsolute)(program) && environment.remoteSource)
            return undefined;
        const path = (0,external_node_path_.resolve)(environment.source, program);
        if (isExecutableFile(path))
            return undefined;
        return `no executable file at ${path}; expected the path of an executable program`;
    }
    const listed = Object.fromEntries(environment.env.filter(name => processEnv[name] !== undefined).map(name => [name, processEnv[name]]));
    const path = runVariables(processEnv, listed).PATH ?? '';
    // A relative directory on the PATH is found from the workspace, as for a relative program path.
    const base = environment.remoteSource ? '/' : environment.source;
    const dirs = path.split(external_node_path_.delimiter).filter(dir => dir !== '');
    if (dirs.some(dir => isExecutableFile((0,external_node_path_.resolve)(base, dir, program))))
        return undefined;
    return `not found on the PATH runs get (${path || 'empty'}); expected a program on that PATH or an absolute path`;
}
const commandAgent = agentKind({
    kind: 'command',
    summary: 'runs an agent CLI (e.g. claude -p) in the workspace; exit code 0 is success',
    keys: ['command', 'prompt'],
    parse(agent, at, read) {
        const command = read.strings(agent.command, `${at}.command`);
        if (command.length === 0) {
            read.problems.push(`${at}.command: expected the program and its arguments, e.g. [claude, -p]`);
        }
        const prompt = read.oneOf(agent.prompt, `${at}.prompt`, ['stdin', 'arg'], 'stdin');
        return { kind: 'command', command, prompt };
    },
    describe: agent => `command: ${agent.command.join(' ')}`,
    check(environment, at, processEnv) {
        const program = environment.agent.command[0];
        if (program === undefined)
            return [];
        const problem = programProblem(environment, processEnv, program);
        return problem ? [`${at}.command ${show(program)}: ${problem}`] : [];
    },
    async run(context) {
        const { command, prompt: mode } = context.agent;
        const args = command.map(arg => (mode === 'arg' ? arg.replaceAll('{prompt}', context.prompt) : arg));
        if (mode === 'arg' && !command.some(arg => arg.includes('{prompt}')))
            args.push(context.prompt);
        const [program, ...rest] = args;
        // AGENT_MODE: `plan` in a plan-mode turn (answer with a plan, change nothing), `orchestrate` in a
        // turn that may start child runs (its env holds AGENT_RUN_BASE_URL and AGENT_RUN_API_KEY), else `normal`.
        const env = {
            AGENT_RUN_ID: context.runId,
            ...runVariables(process.env, context.env),
            AGENT_MODE: context.mode ?? 'normal'
        };
        const streams = {
            stdout: new StreamRecorder('stdout', context),
            stderr: new StreamRecorder('stderr', context)
        };
        const result = await context.processes.run(program, rest, {
            env,
            stdin: mode === 'stdin' ? context.prompt : undefined,
            onStdout: chunk => streams.stdout.push(chunk),
            onStderr: chunk => streams.stderr.push(chunk)
        });
        await Promise.all([streams.stdout.finish(), streams.stderr.finish()]);
        if (result.spawnError) {
            const why = result.spawnError.code === 'ENOENT' ? 'not found on PATH' : result.spawnError.message;
            return agentCouldNotStart(program, why);
        }
        await context.record('exit', { exit_code: result.exitCode, signal: result.signal });
        if (result.exitCode === 0)
            return succeeded();
        return agentExited(result.exitCode, result.signal, streams.stderr.tail());
    }
});
/**
 * Batches a stream's chunks into transcript events and keeps its last lines. While more than
 * MAX_QUEUED_BYTES wait to be written, push() answers a promise and the child's pipe is paused
 * until the writes catch up: a fast printer waits for the store instead of filling memory.
 */
class StreamRecorder {
    stream;
    context;
    pending = '';
    timer;
    last = '';
    writing = Promise.resolve();
    queued = 0;
    decoder = new external_node_string_decoder_.StringDecoder('utf8');
    constructor(stream, context) {
        this.stream = stream;
        this.context = context;
    }
    push(chunk) {
        // The decoder keeps a character split between two chunks whole.
        const text = this.decoder.write(chunk);
        this.pending += text;
        // The end of the stream is all the status message needs: no line array per chunk.
        this.last = (this.last + text).slice(-KEPT_END_CHARS);
        if (this.pending.length >= FLUSH_BYTES)
            void this.flush();
        else
            this.timer ??= setTimeout(() => void this.flush(), FLUSH_MS);
        return this.queued > MAX_QUEUED_BYTES ? this.writing : undefined;
    }
    flush() {
        clearTimeout(this.timer);
        this.timer = undefined;
        if (this.pending !== '') {
            const text = this.pending;
            this.pending = '';
            this.queued += text.length;
            this.writing = this.writing
                .then(() => this.context.record('output', { stream: this.stream, text }))
                .finally(() => (this.queued -= text.length));
        }
        return this.writing;
    }
    /** The stream ended: what the decoder still holds, then everything pending. */
    finish() {
        this.pending += this.decoder.end();
        return this.flush();
    }
    tail() {
        return this.last
            .trim()
            .split('\n')
            .slice(-STDERR_TAIL_LINES)
            .map(line => (line.length > MAX_LINE_KEPT ? line.slice(-MAX_LINE_KEPT) : line))
            .join('\n');
    }
}

;// CONCATENATED MODULE: ./src/executor/agents/harness/memory.ts
// What a CLI's translator remembers from one line to the next, bounded. The stream is the CLI's
// stdout, and anything that runs in the run's sandbox can write lines to it (a tool's process opens
// /proc/<the CLI>/fd/1), so the translator must not grow with what it is sent: Gemini's streamed
// text joined without limit, and the tool calls each translator remembered (their ids and the
// files they edit) were never forgotten, so a forged stream of 1 MiB lines grew the executor's
// heap until it crashed, with every run of the node. Text is kept up to a size (what is left out
// is counted, for the note that says so); calls past a size are not remembered (a call then loses
// its `file` event, or is shown twice), and a call is forgotten once its result came.
/** Characters of the final answer kept (as AGENT_RESULT_FILE's 1 MiB). */
const MAX_RESULT_CHARS = 1024 * 1024;
/** Characters of one message of streamed text: a longer one is given out in parts. */
const MAX_MESSAGE_PART_CHARS = 64 * 1024;
/** Characters of remembered call ids and paths, all together; a longer id or path is never kept. */
const MAX_REMEMBERED_CHARS = 1024 * 1024;
const MAX_ID_OR_PATH_CHARS = 4096;
/** Tool calls remembered by id until their result comes (at most MAX_REMEMBERED_CHARS of them). */
class CallMemory {
    calls = new Map();
    chars = 0;
    static size(id, value) {
        return id.length + (value === true ? 0 : value.length);
    }
    /** Remembers `value` for `id` when both are short and there is room; answers whether it did. */
    set(id, value) {
        const size = CallMemory.size(id, value);
        if (value !== true && value.length > MAX_ID_OR_PATH_CHARS)
            return false;
        if (id.length > MAX_ID_OR_PATH_CHARS || this.chars + size > MAX_REMEMBERED_CHARS)
            return false;
        this.forget(id);
        this.calls.set(id, value);
        this.chars += size;
        return true;
    }
    get(id) {
        return this.calls.get(id);
    }
    has(id) {
        return this.calls.has(id);
    }
    forget(id) {
        const value = this.calls.get(id);
        if (value === undefined)
            return;
        this.calls.delete(id);
        this.chars -= CallMemory.size(id, value);
    }
}
/** Text gathered from parts, kept up to `max` characters; the rest only counted. */
class BoundedText {
    max;
    kept = '';
    more = 0;
    constructor(max) {
        this.max = max;
    }
    add(part) {
        const room = this.max - this.kept.length;
        if (part.length <= room)
            this.kept += part;
        else {
            this.kept += part.slice(0, Math.max(0, room));
            this.more += part.length - Math.max(0, room);
        }
    }
    set(text) {
        this.clear();
        this.add(text);
    }
    clear() {
        this.kept = '';
        this.more = 0;
    }
    get length() {
        return this.kept.length;
    }
    /** The text kept, and how many characters past it were left out (`dropped`, when any were). */
    get value() {
        return this.more > 0 ? { text: this.kept, dropped: this.more } : { text: this.kept };
    }
}

;// CONCATENATED MODULE: ./src/executor/agents/harness/claude.ts
// Claude Code (checked with 2.1.331) in the harness: `claude -p` with the prompt on stdin, its
// stream as `--output-format stream-json --verbose` (one JSON object per line: `system` init with
// the session id, `assistant` messages with text and tool_use blocks, `user` messages with the
// tool results, one `result` with the answer, the usage and the cost), acting without prompting
// (`--permission-mode bypassPermissions`: the sandbox is the boundary). The model, the base prompt
// (`--append-system-prompt`) and MCP servers (`--mcp-config` in the run's HOME) come from the run.
// Claude Code retries a 401 for minutes unless the answer says not to: its `api_retry` lines name
// the status, so a refused key ends the run at the first one.

/** Where the run's MCP servers are written, relative to its HOME. */
const MCP_FILE = '.claude/agent-run-mcp.json';
/** Tools of Claude Code that write a file named by `file_path` (or `notebook_path`). */
const EDIT_TOOLS = new Set(['Write', 'Edit', 'MultiEdit', 'NotebookEdit']);
function isObject(value) {
    return value !== null && typeof value === 'object' && !Array.isArray(value);
}
function mcpEntry(server) {
    if (server.command)
        return { type: 'stdio', command: server.command, args: server.args ?? [], env: server.env ?? {} };
    return { type: 'http', url: server.url, headers: server.headers ?? {} };
}
/** A tool result's content as text: a string, or the text of its blocks. */
function resultText(content) {
    if (typeof content === 'string')
        return content;
    if (!Array.isArray(content))
        return content === undefined ? '' : JSON.stringify(content);
    return content
        .map(block => (isObject(block) && typeof block.text === 'string' ? block.text : JSON.stringify(block)))
        .join('\n');
}
/** The failure an HTTP status of the model API means. */
function byStatus(status, words) {
    if (status === 401 || status === 403)
        return { code: 'agent_auth_failed', message: words };
    if (status === 429 || status === 529)
        return { code: 'agent_rate_limited', message: words };
    if (status === 404)
        return { code: 'agent_model_not_found', message: words };
    return { code: 'agent_crashed', message: words };
}
class ClaudeTranslator {
    failure;
    early;
    result = false;
    /** Files an edit tool call names, by call id, reported once the call succeeded. */
    edits = new CallMemory();
    line(value) {
        if (!isObject(value))
            return [];
        switch (value.type) {
            case 'system':
                return this.system(value);
            case 'assistant':
                return this.assistant(value);
            case 'user':
                return this.user(value);
            case 'result':
                return this.resultLine(value);
            default:
                return [];
        }
    }
    system(value) {
        if (value.subtype === 'init' && typeof value.session_id === 'string')
            return [{ type: 'session', id: value.session_id }];
        if (value.subtype === 'api_retry' && typeof value.error_status === 'number') {
            const status = value.error_status;
            // A refused key or an unknown model does not get better by waiting; a rate limit may.
            if (status === 401 || status === 403 || status === 404)
                this.early = byStatus(status, `Claude Code: the model API answered ${status} (${String(value.error ?? 'error')}); stopped instead of retrying`);
        }
        return [];
    }
    assistant(value) {
        const message = isObject(value.message) ? value.message : {};
        const content = Array.isArray(message.content) ? message.content : [];
        if (value.is_api_error_message === true || typeof value.error === 'string') {
            const words = content
                .map(block => (isObject(block) && typeof block.text === 'string' ? block.text : ''))
                .join(' ')
                .trim();
            const status = typeof value.api_error_status === 'number' ? value.api_error_status : 0;
            this.failure = byStatus(status, `Claude Code: ${words || String(value.error)}`);
            return [];
        }
        const events = [];
        for (const block of content) {
            if (!isObject(block))
                continue;
            if (block.type === 'text' && typeof block.text === 'string')
                events.push({ type: 'text', text: block.text });
            if (block.type === 'tool_use' && typeof block.id === 'string') {
                const name = typeof block.name === 'string' ? block.name : 'tool';
                events.push({ type: 'action', id: block.id, name, input: block.input });
                const input = isObject(block.input) ? block.input : {};
                const path = input.file_path ?? input.notebook_path;
                if (EDIT_TOOLS.has(name) && typeof path === 'string')
                    this.edits.set(block.id, path);
            }
        }
        return events;
    }
    user(value) {
        const message = isObject(value.message) ? value.message : {};
        const content = Array.isArray(message.content) ? message.content : [];
        const events = [];
        for (const block of content) {
            if (!isObject(block) || block.type !== 'tool_result' || typeof block.tool_use_id !== 'string')
                continue;
            const ok = block.is_error !== true;
            events.push({ type: 'action_result', id: block.tool_use_id, ok, output: resultText(block.content) });
            const path = this.edits.get(block.tool_use_id);
            this.edits.forget(block.tool_use_id);
            if (ok && path !== undefined)
                events.push({ type: 'file_edit', path });
        }
        return events;
    }
    resultLine(value) {
        this.result = true;
        const events = [];
        const usage = isObject(value.usage) ? value.usage : {};
        const count = (name) => (typeof usage[name] === 'number' ? usage[name] : 0);
        events.push({
            type: 'usage',
            input_tokens: count('input_tokens'),
            output_tokens: count('output_tokens'),
            cache_read_tokens: count('cache_read_input_tokens'),
            cache_write_tokens: count('cache_creation_input_tokens'),
            cost_usd: typeof value.total_cost_usd === 'number' ? value.total_cost_usd : undefined
        });
        const text = typeof value.result === 'string' ? value.result : '';
        const subtype = String(value.subtype ?? '');
        if (subtype === 'error_max_budget_usd') {
            this.failure = {
                code: 'budget_exceeded',
                message: `Claude Code stopped at its budget: ${text || subtype}`
            };
        }
        else if (value.is_error === true || subtype.startsWith('error')) {
            const status = typeof value.api_error_status === 'number' ? value.api_error_status : 0;
            const errors = Array.isArray(value.errors) ? value.errors.map(String).join('; ') : '';
            this.failure ??= byStatus(status, `Claude Code: ${text || errors || subtype}`);
        }
        else
            events.push({ type: 'final', text });
        return events;
    }
    stopWith() {
        return this.early;
    }
    finish(exitCode, stderrTail) {
        if (this.early)
            return this.early;
        if (this.failure)
            return this.failure;
        const tail = stderrTail.trim().split('\n').slice(-5).join('\n');
        if (!this.result)
            return {
                code: 'agent_crashed',
                message: `Claude Code ended (exit code ${exitCode ?? 'none'}) without a result${tail ? `: ${tail}` : ''}`
            };
        return undefined;
    }
}
const claudeCode = {
    kind: 'claude-code',
    harnessType: 'claude',
    defaultProgram: 'claude',
    install: 'npm install -g @anthropic-ai/claude-code@2.1.331',
    keyVariables: ['ANTHROPIC_API_KEY'],
    args(input) {
        const args = [
            '-p',
            '--output-format',
            'stream-json',
            '--verbose',
            '--permission-mode',
            'bypassPermissions'
        ];
        if (input.model)
            args.push('--model', input.model);
        if (input.basePrompt)
            args.push('--append-system-prompt', input.basePrompt);
        if (input.mcpServers)
            args.push('--mcp-config', `${input.home}/${MCP_FILE}`, '--strict-mcp-config');
        if (input.maxCostUsd !== undefined)
            args.push('--max-budget-usd', String(input.maxCostUsd));
        if (input.resumeSession)
            args.push('--resume', input.resumeSession);
        return [...args, ...input.extraArgs];
    },
    stdin: input => input.prompt,
    homeFiles(input) {
        if (!input.mcpServers)
            return {};
        const servers = Object.fromEntries(Object.entries(input.mcpServers).map(([name, s]) => [name, mcpEntry(s)]));
        return { [MCP_FILE]: JSON.stringify({ mcpServers: servers }, null, 2) };
    },
    env(_input, listed) {
        return {
            ...listed,
            // The sandbox is the boundary (and lets a root-started CLI act); no updater, telemetry or
            // other traffic beyond the model API, so the network list needs only the API's host.
            IS_SANDBOX: '1',
            DISABLE_AUTOUPDATER: '1',
            CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1'
        };
    },
    translator: () => new ClaudeTranslator()
};

;// CONCATENATED MODULE: ./src/executor/agents/harness/failure-words.ts
// Which of our error codes a CLI's own error message means. The Codex and Gemini CLIs report a failed
// model request as text that quotes the HTTP status and the provider's error (e.g. "unexpected
// status 401 Unauthorized: Incorrect API key provided", "[API Error: {"error":{"code":429,…}}]"),
// so the words decide: an authentication failure, a rate limit, an unknown model, else a crash.
const AUTH = [
    /\b401\b/,
    /\b403\b/,
    /unauthori[sz]ed/i,
    /unauthenticated/i,
    /permission[_ ]denied/i,
    /invalid[_ ]api[_ ]key/i,
    /incorrect api key/i,
    /api key not valid/i,
    /missing (?:an )?api key/i,
    /authentication (?:failed|error|required)/i
];
/** What a CLI says when it has no key at all: Claude Code asks for a login, Gemini for an auth method. */
const NO_KEY = [
    /not logged in/i,
    /please run \/login/i,
    /(?:api[_ ]key|auth method)\b[^\n]{0,80}\b(?:not (?:set|found|provided)|missing|required)/i,
    /please set an auth method/i,
    /must (?:specify|set|provide)\b[^\n]{0,60}API[_ ]?KEY\b/i,
    /(?:didn't|did not) provide an api key/i
];
const RATE = [
    /\b429\b/,
    /rate[_ -]?limit/i,
    /too many requests/i,
    /resource[_ ]exhausted/i,
    /quota (?:exceeded|exhausted)/i,
    /usage limit/i
];
const MODEL = [
    /model[_ ]not[_ ]found/i,
    /model\b[^\n]{0,120}\b(?:does not exist|not found|is not supported|not supported|unknown)/i,
    /unknown model/i,
    /invalid model/i,
    /models\/[^\s:]{1,200} is not found/i
];
/**
 * Characters of a message the words are looked for in (what a failed run's status message shows).
 * The message is as long as a stream line (8 MiB), any process in the sandbox can write that line
 * to the CLI's stdout, and the patterns run in the executor's event loop: over a whole line,
 * `models/` repeated made `models\/[^\s:]+` backtrack for hours (140 s a MiB, growing quadratically).
 */
const CLASSIFIED_CHARS = 8 * 1024;
/** Whether a CLI's message says it has no key (a missing key, not a crash). */
function saysNoKey(message) {
    const text = message.length > CLASSIFIED_CHARS ? message.slice(0, CLASSIFIED_CHARS) : message;
    return NO_KEY.some(pattern => pattern.test(text));
}
/** The error code for a CLI's error message. */
function classifyFailure(message) {
    const text = message.length > CLASSIFIED_CHARS ? message.slice(0, CLASSIFIED_CHARS) : message;
    if (MODEL.some(pattern => pattern.test(text)))
        return 'agent_model_not_found';
    if (AUTH.some(pattern => pattern.test(text)) || saysNoKey(text))
        return 'agent_auth_failed';
    if (RATE.some(pattern => pattern.test(text)))
        return 'agent_rate_limited';
    return 'agent_crashed';
}
/**
 * A missing or refused key's failure, with the variable to set: the CLI's own words say only that
 * it is not logged in, or that the provider refused a key, never which of the environment's
 * variables it read. `listed` are the variables the environment passes to the run.
 */
function withKeyHint(failure, keyVariables, listed) {
    if (failure.code !== 'agent_auth_failed' || keyVariables.length === 0)
        return failure;
    const given = keyVariables.filter(name => listed[name] !== undefined);
    const names = keyVariables.join(' or ');
    const hint = given.length > 0
        ? `the model API refused the key in ${given.join(' and ')}; check its value where the executor runs`
        : `no model key reached the CLI: set ${names} where the executor runs and list it under the environment's \`env\``;
    return { code: failure.code, message: `${failure.message} (${hint})` };
}
/** The last non-empty lines of a stderr tail, at most `max` characters, for a crash with no message. */
function tailLines(text, max = 1000) {
    const trimmed = text.trim();
    return trimmed.length <= max ? trimmed : `…${trimmed.slice(trimmed.length - max)}`;
}
/**
 * A failure from what the CLI said: its own message when it gave one, else its stderr, else its exit
 * code. `undefined` when it exited 0 without reporting an error.
 */
function failureFrom(program, exitCode, reported, stderrTail) {
    if (reported === undefined && exitCode === 0)
        return undefined;
    const stderr = tailLines(stderrTail);
    const message = reported ??
        (stderr
            ? `${program} exited with ${exitCode === null ? 'a signal' : `code ${exitCode}`}: ${stderr}`
            : `${program} exited with ${exitCode === null ? 'a signal' : `code ${exitCode}`} and said nothing`);
    return { code: classifyFailure(message), message };
}

;// CONCATENATED MODULE: ./src/executor/agents/harness/codex.ts
// The Codex CLI (`@openai/codex`, checked with 0.169.0) as a harness: how to start `codex exec` so that
// it acts without prompting and streams JSON, where model, base prompt, MCP servers and credentials
// go, and how its `--json` event stream becomes our events.
//
// Facts of 0.169 this relies on: `codex exec --json` prints one event a line (`thread.started`,
// `item.started|completed` with command_execution / file_change / mcp_tool_call / agent_message
// items, `turn.completed` with usage, `turn.failed`, `error`); the prompt comes from stdin when the
// prompt argument is `-`; its built-in OpenAI provider reads its key from CODEX_API_KEY and its base
// URL only from the `openai_base_url` setting (OPENAI_API_KEY and OPENAI_BASE_URL are ignored), so the
// conventional variables a user lists are mapped here. `--dangerously-bypass-approvals-and-sandbox`
// turns off both its approvals and its own Landlock/bubblewrap sandbox: our sandbox is the boundary,
// and a nested sandbox cannot be set up inside it.


/** A TOML basic string (JSON's escapes are TOML's, except that TOML also wants DEL escaped). */
function tomlString(value) {
    return JSON.stringify(value).replace(/\u007f/g, '\\u007f');
}
function tomlTable(values) {
    return `{ ${Object.entries(values)
        .map(([key, value]) => `${tomlString(key)} = ${tomlString(value)}`)
        .join(', ')} }`;
}
function mcpSection(name, server) {
    const lines = [`[mcp_servers.${tomlString(name)}]`];
    if (server.command !== undefined) {
        lines.push(`command = ${tomlString(server.command)}`);
        lines.push(`args = [${(server.args ?? []).map(tomlString).join(', ')}]`);
        if (server.env && Object.keys(server.env).length > 0)
            lines.push(`env = ${tomlTable(server.env)}`);
    }
    else if (server.url !== undefined) {
        lines.push(`url = ${tomlString(server.url)}`);
        if (server.headers && Object.keys(server.headers).length > 0) {
            lines.push(`http_headers = ${tomlTable(server.headers)}`);
        }
    }
    return lines.join('\n');
}
/**
 * `~/.codex/config.toml`: the base prompt and the MCP servers, kept out of the command line (they may
 * be long, and MCP env values and headers may be secrets). Analytics and the plugin marketplace are
 * off: otherwise every run also calls github.com, api.github.com, chatgpt.com and ab.chatgpt.com,
 * destinations a sandbox's network list should not need.
 */
function codexConfig(input) {
    const parts = ['# Written by agent-executor for this run.'];
    if (input.basePrompt)
        parts.push(`developer_instructions = ${tomlString(input.basePrompt)}`);
    parts.push('[analytics]\nenabled = false', '[features]\nplugins = false');
    for (const [name, server] of Object.entries(input.mcpServers ?? {}))
        parts.push(mcpSection(name, server));
    return `${parts.join('\n\n')}\n`;
}
function mcpOutput(item) {
    if (item.error?.message)
        return item.error.message;
    const content = item.result?.content ?? [];
    const text = content.map(part => part.text ?? '').join('\n');
    if (text)
        return text;
    return item.result?.structured_content === undefined ? '' : JSON.stringify(item.result.structured_content);
}
/** What a tool item is called and takes, as an action; undefined for items that are not tool calls. */
function actionOf(item) {
    switch (item.type) {
        case 'command_execution':
            return { name: 'shell', input: { command: item.command ?? '' } };
        case 'file_change':
            return { name: 'apply_patch', input: { changes: item.changes ?? [] } };
        case 'mcp_tool_call':
            return { name: `${item.server ?? 'mcp'}.${item.tool ?? '?'}`, input: item.arguments ?? {} };
        case 'web_search':
            return { name: 'web_search', input: { query: item.query ?? '' } };
        default:
            return undefined;
    }
}
function resultOf(item) {
    switch (item.type) {
        case 'command_execution':
            return {
                ok: item.status === 'completed' && item.exit_code === 0,
                output: item.aggregated_output ?? ''
            };
        case 'file_change':
            return {
                ok: item.status === 'completed',
                output: (item.changes ?? [])
                    .map(change => `${change.kind ?? 'update'} ${change.path ?? ''}`)
                    .join('\n')
            };
        case 'mcp_tool_call':
            return { ok: item.status === 'completed' && !item.error, output: mcpOutput(item) };
        default:
            return { ok: item.status !== 'failed', output: '' };
    }
}
function codexTranslator() {
    const started = new CallMemory(); // calls already shown as started
    let lastMessage;
    let failure;
    let lastError;
    let certain;
    function item(event, done) {
        const it = event.item ?? {};
        const id = it.id ?? '';
        if (it.type === 'agent_message') {
            if (!done || !it.text)
                return [];
            lastMessage = it.text;
            return [{ type: 'text', text: it.text }];
        }
        const action = actionOf(it);
        if (!action)
            return []; // reasoning, todo lists, and Codex's own warnings (`error` items)
        const events = [];
        if (!started.has(id)) {
            if (!done)
                started.set(id, true);
            events.push({ type: 'action', id, ...action });
        }
        if (done) {
            started.forget(id);
            events.push({ type: 'action_result', id, ...resultOf(it) });
            if (it.type === 'file_change' && it.status === 'completed') {
                for (const change of it.changes ?? [])
                    if (change.path)
                        events.push({ type: 'file_edit', path: change.path });
            }
        }
        return events;
    }
    return {
        line(value) {
            const event = (value ?? {});
            switch (event.type) {
                case 'thread.started':
                    return event.thread_id ? [{ type: 'session', id: event.thread_id }] : [];
                case 'item.started':
                    return item(event, false);
                case 'item.completed':
                    return item(event, true);
                case 'turn.completed': {
                    const usage = event.usage ?? {};
                    const events = [];
                    if (lastMessage !== undefined)
                        events.push({ type: 'final', text: lastMessage });
                    events.push({
                        type: 'usage',
                        input_tokens: usage.input_tokens ?? 0,
                        output_tokens: usage.output_tokens ?? 0,
                        cache_read_tokens: usage.cached_input_tokens ?? 0,
                        cache_write_tokens: usage.cache_write_input_tokens ?? 0
                    });
                    return events;
                }
                case 'turn.failed':
                    failure = event.error?.message ?? lastError ?? 'the turn failed';
                    return [];
                case 'error':
                    // "Reconnecting... n/5 (…)" while it retries; the last one is kept in case no turn.failed follows.
                    if (event.message) {
                        lastError = event.message;
                        const cause = /^Reconnecting\.\.\. \d+\/\d+ \((.*)\)$/s.exec(event.message)?.[1] ?? event.message;
                        const code = classifyFailure(cause);
                        // A refused key or an unknown model does not get better by retrying (Codex retries a 401 ten times).
                        if (code === 'agent_auth_failed' || code === 'agent_model_not_found')
                            certain ??= { code, message: cause };
                    }
                    return [];
                default:
                    return [];
            }
        },
        stopWith: () => certain,
        finish(exitCode, stderrTail) {
            if (certain)
                return certain;
            return failureFrom('codex', exitCode, failure ?? (exitCode === 0 ? undefined : lastError), stderrTail);
        }
    };
}
const codexHarness = {
    kind: 'codex',
    harnessType: 'codex',
    defaultProgram: 'codex',
    install: 'npm install -g @openai/codex@0.169.0',
    keyVariables: ['OPENAI_API_KEY', 'CODEX_API_KEY'],
    args(input) {
        const args = ['exec', '--json', '--skip-git-repo-check', '--dangerously-bypass-approvals-and-sandbox'];
        if (input.model)
            args.push('-m', input.model);
        const baseUrl = input.listed?.OPENAI_BASE_URL;
        if (baseUrl)
            args.push('-c', `openai_base_url=${tomlString(baseUrl)}`);
        args.push(...input.extraArgs);
        // A follow-up continues the CLI's own session (its thread id), which lives in the run's HOME.
        if (input.resumeSession)
            args.push('resume', input.resumeSession);
        args.push('-');
        return args;
    },
    stdin: input => input.prompt,
    homeFiles: input => ({ '.codex/config.toml': codexConfig(input) }),
    env(_input, listed) {
        const env = { ...listed };
        const key = listed.CODEX_API_KEY ?? listed.OPENAI_API_KEY;
        if (key !== undefined)
            env.CODEX_API_KEY = key;
        return env;
    },
    translator: codexTranslator
};

;// CONCATENATED MODULE: ./src/executor/agents/harness/gemini.ts
// Gemini CLI (`@google/gemini-cli`, checked with 0.61.0) as a harness: how to start it headless so
// that it acts without prompting and streams JSON, where model, base prompt, MCP servers and
// credentials go, and how its `stream-json` output becomes our events.
//
// Facts of 0.61 this relies on: `gemini -p '' --output-format stream-json`, the prompt on stdin, prints one event a
// line (`init` with the session id, `message` (assistant text comes in `delta` chunks, joined here into
// one message up to the next tool call), `tool_use`,
// `tool_result`, `error`, and a closing `result` with the run's token totals); `--approval-mode yolo`
// approves every tool call but is overridden to "default" in a folder it does not trust, so
// `--skip-trust`; it reads GEMINI_API_KEY, and honours GOOGLE_GEMINI_BASE_URL only when
// `~/.gemini/settings.json` selects the API-key auth type; MCP servers are configured in that file
// too, and `~/.gemini/GEMINI.md` becomes part of its system instruction.


/** Tools of Gemini CLI that write the file named by their `file_path` parameter. */
const WRITING_TOOLS = new Set(['write_file', 'replace', 'edit']);
function gemini_mcpEntry(server) {
    if (server.command !== undefined) {
        return { command: server.command, args: server.args ?? [], ...(server.env ? { env: server.env } : {}) };
    }
    // Gemini CLI speaks streamable HTTP to `httpUrl` (its `url` key means the older SSE transport).
    return { httpUrl: server.url, ...(server.headers ? { headers: server.headers } : {}) };
}
/** `~/.gemini/settings.json`: API-key auth (so a base URL is honoured), no update checks or usage pings, MCP servers. */
function geminiSettings(input) {
    const settings = {
        security: { auth: { selectedType: 'gemini-api-key' } },
        general: { enableAutoUpdate: false, enableAutoUpdateNotification: false },
        privacy: { usageStatisticsEnabled: false }
    };
    const servers = Object.entries(input.mcpServers ?? {});
    if (servers.length > 0) {
        settings.mcpServers = Object.fromEntries(servers.map(([name, server]) => [name, gemini_mcpEntry(server)]));
    }
    return settings;
}
function geminiTranslator() {
    const writes = new CallMemory(); // tool id → the file it writes
    let pending = ''; // assistant text not yet given out: its chunks are joined into one message
    const answer = new BoundedText(MAX_RESULT_CHARS); // assistant text since the last tool call: the final answer
    let failure;
    let lastError;
    /** The assistant text gathered so far, as one message (before a tool call, an error or the end). */
    function flush() {
        const text = pending;
        pending = '';
        return text ? [{ type: 'text', text }] : [];
    }
    return {
        line(value) {
            const event = (value ?? {});
            switch (event.type) {
                case 'init':
                    return event.session_id ? [{ type: 'session', id: event.session_id }] : [];
                case 'message':
                    if (event.role !== 'assistant' || !event.content)
                        return [];
                    if (event.delta) {
                        pending += event.content;
                        answer.add(event.content);
                        // A message longer than a part is given out in parts: nothing joins without limit.
                        return pending.length >= MAX_MESSAGE_PART_CHARS ? flush() : [];
                    }
                    pending = '';
                    answer.set(event.content);
                    return [{ type: 'text', text: event.content }];
                case 'tool_use': {
                    const id = event.tool_id ?? '';
                    const name = event.tool_name ?? '?';
                    const path = event.parameters?.file_path;
                    if (WRITING_TOOLS.has(name) && typeof path === 'string')
                        writes.set(id, path);
                    answer.clear();
                    return [...flush(), { type: 'action', id, name, input: event.parameters ?? {} }];
                }
                case 'tool_result': {
                    const id = event.tool_id ?? '';
                    const ok = event.status === 'success';
                    const events = [
                        ...flush(),
                        { type: 'action_result', id, ok, output: event.output ?? event.error?.message ?? '' }
                    ];
                    const path = writes.get(id);
                    if (ok && path !== undefined)
                        events.push({ type: 'file_edit', path });
                    writes.forget(id);
                    return events;
                }
                case 'error':
                    if (event.message)
                        lastError = event.message;
                    return flush();
                case 'result': {
                    const events = flush();
                    if (event.status === 'success') {
                        if (answer.length > 0)
                            events.push({ type: 'final', ...answer.value });
                    }
                    else {
                        failure = event.error?.message ?? lastError ?? `the run ended with status ${event.status ?? '?'}`;
                    }
                    const stats = event.stats ?? {};
                    events.push({
                        type: 'usage',
                        input_tokens: stats.input_tokens ?? 0,
                        output_tokens: stats.output_tokens ?? 0,
                        cache_read_tokens: stats.cached ?? 0
                    });
                    return events;
                }
                default:
                    return [];
            }
        },
        finish(exitCode, stderrTail) {
            return failureFrom('gemini', exitCode, failure ?? (exitCode === 0 ? undefined : lastError), stderrTail);
        }
    };
}
const geminiHarness = {
    kind: 'gemini',
    harnessType: 'gemini',
    defaultProgram: 'gemini',
    install: 'npm install -g @google/gemini-cli@0.61.0',
    keyVariables: ['GEMINI_API_KEY', 'GOOGLE_API_KEY'],
    args(input) {
        // `-p ''` runs it headless; the prompt comes on stdin (which it reads whole when stdin is not a
        // terminal), so a long prompt meets no argument-length limit and stays out of the process list.
        const args = ['-p', '', '--output-format', 'stream-json', '--approval-mode', 'yolo', '--skip-trust'];
        if (input.model)
            args.push('-m', input.model);
        // A follow-up continues the CLI's own session (kept under the run's HOME), by its session id.
        if (input.resumeSession)
            args.push('--resume', input.resumeSession);
        args.push(...input.extraArgs);
        return args;
    },
    stdin: input => input.prompt,
    homeFiles(input) {
        const files = {
            '.gemini/settings.json': `${JSON.stringify(geminiSettings(input), null, 2)}\n`
        };
        if (input.basePrompt)
            files['.gemini/GEMINI.md'] = `${input.basePrompt}\n`;
        return files;
    },
    env(_input, listed) {
        // Without GEMINI_CLI_NO_RELAUNCH the CLI starts a second node of itself with a heap of half the
        // machine's memory: a second start-up (about a third of its start-up time here) and a heap size
        // that ignores the run's memory limit.
        const env = { GEMINI_CLI_NO_RELAUNCH: 'true', ...listed };
        const key = listed.GEMINI_API_KEY ?? listed.GOOGLE_API_KEY;
        if (key !== undefined)
            env.GEMINI_API_KEY = key;
        return env;
    },
    translator: geminiTranslator
};

;// CONCATENATED MODULE: ./src/executor/agents/harness/input.ts
// What a harness run is given, read from the run's create config and the environment: the model
// (config.model_id, then config.harness.model_id, then the environment's agent.model), the base
// prompt, the MCP servers (the service's shape, checked here), and which program runs the CLI.


function input_text(value) {
    return typeof value === 'string' && value.trim() !== '' ? value : undefined;
}
function stringMap(value) {
    if (value === null || typeof value !== 'object' || Array.isArray(value))
        return undefined;
    const entries = Object.entries(value).filter(([, v]) => typeof v === 'string');
    return Object.fromEntries(entries);
}
/** config.mcp_servers as the harness passes them on: stdio `{command, args, env}` or remote `{url, headers}`. */
function mcpServersOf(value) {
    if (value === null || typeof value !== 'object' || Array.isArray(value))
        return undefined;
    const servers = {};
    for (const [name, raw] of Object.entries(value)) {
        if (raw === null || typeof raw !== 'object' || Array.isArray(raw))
            continue;
        const server = raw;
        const command = input_text(server.command);
        const url = input_text(server.url);
        if (command) {
            const args = Array.isArray(server.args) ? server.args.filter(a => typeof a === 'string') : [];
            servers[name] = { command, args, env: stringMap(server.env) ?? {} };
        }
        else if (url)
            servers[name] = { url, headers: stringMap(server.headers) ?? {} };
    }
    return Object.keys(servers).length > 0 ? servers : undefined;
}
/** Most MCP servers a run's config may name. */
const MAX_MCP_SERVERS = 20;
/** Most `env` entries, and most `headers` entries, of one MCP server. */
const MAX_MCP_ENTRIES = 64;
/** Most bytes of JSON `config.mcp_servers` may take in all. */
const MAX_MCP_BYTES = 64 * 1024;
/**
 * Why config.mcp_servers is over its bounds, naming the limit and the server, or undefined. Every
 * env value and header is a secret the harness removes from everything the CLI prints, so their
 * number and size are a cost paid on each line of a run's output (and the config is in every record).
 */
function mcpServersProblem(value) {
    if (value === null || typeof value !== 'object' || Array.isArray(value))
        return undefined;
    const servers = Object.entries(value);
    if (servers.length > MAX_MCP_SERVERS)
        return `config.mcp_servers: ${servers.length} servers; at most ${MAX_MCP_SERVERS} are allowed`;
    for (const [name, server] of servers) {
        if (server === null || typeof server !== 'object')
            continue;
        for (const field of ['env', 'headers']) {
            const map = server[field];
            const count = map !== null && typeof map === 'object' ? Object.keys(map).length : 0;
            if (count > MAX_MCP_ENTRIES)
                return `config.mcp_servers.${name.slice(0, 100)}.${field}: ${count} entries; at most ${MAX_MCP_ENTRIES} per server are allowed`;
        }
    }
    const bytes = Buffer.byteLength(JSON.stringify(value));
    if (bytes > MAX_MCP_BYTES) {
        const sizes = servers.map(([name, server]) => [name, Buffer.byteLength(JSON.stringify(server) ?? '')]);
        const [largest, size] = sizes.reduce((a, b) => (b[1] > a[1] ? b : a));
        return `config.mcp_servers: ${bytes} bytes of JSON, over the limit of ${MAX_MCP_BYTES} (64 KiB); the largest server is ${largest.slice(0, 100)} (${size} bytes)`;
    }
    return undefined;
}
/**
 * A CLI session id to resume, as the CLIs write them (UUIDs and the like). It comes from the CLI's
 * own stream, which the run can influence, and it goes on the CLI's command line: anything else
 * (an option such as `--mcp-config=…`, a path, spaces) is not resumed, and the turn starts a new
 * session instead.
 */
function resumableSession(id) {
    return id !== undefined && /^[A-Za-z0-9][A-Za-z0-9._:-]{0,199}$/.test(id) ? id : undefined;
}
/**
 * How a model id looks (`claude-sonnet-4-5`, `gpt-5.1-codex`, `models/gemini-2.5-pro`,
 * `us.anthropic.claude-3-7-sonnet-20250219-v1:0`, `claude-opus-4-1@20250805`): it goes on the CLI's
 * command line after `-m`/`--model`, where a value starting with `-` would be read by some CLIs
 * (Gemini CLI's parser) as an option of its own.
 */
const MODEL_ID_FORM = /^[A-Za-z0-9][A-Za-z0-9._:/@+-]{0,199}$/;
/** Why `value` (at `field`) cannot be a model id, or undefined when it can (or is not given). */
function modelIdProblem(value, field) {
    if (value === undefined || value === null)
        return undefined;
    if (typeof value === 'string' && MODEL_ID_FORM.test(value))
        return undefined;
    const shown = typeof value === 'string' ? JSON.stringify(value.slice(0, 100)) : typeof value;
    return `${field} ${shown}: expected a model id (a letter or digit, then letters, digits and . _ : / @ + -, at most 200 characters), e.g. claude-sonnet-4-5`;
}
/** The harness input of a run; `home` is the path the CLI sees as HOME. */
function harnessInput(context, home) {
    const config = context.runConfig ?? {};
    const harness = (config.harness ?? {});
    return {
        prompt: context.prompt,
        model: input_text(config.model_id) ?? input_text(harness.model_id) ?? context.agent.model,
        basePrompt: input_text(config.base_prompt),
        mcpServers: mcpServersOf(config.mcp_servers),
        home,
        workspace: context.workspace,
        resumeSession: resumableSession(context.resumeSession),
        extraArgs: context.agent.args,
        maxCostUsd: context.agent.max_cost_usd,
        listed: { ...context.env }
    };
}
/** Whether `file` is a script run by node (`#!/usr/bin/env node`, `#!/usr/bin/node`). */
function isNodeScript(file) {
    try {
        const fd = (0,external_node_fs_.openSync)(file, 'r');
        try {
            const head = Buffer.alloc(128);
            const bytes = (0,external_node_fs_.readSync)(fd, head, 0, head.length, 0);
            const line = head.subarray(0, bytes).toString('utf8').split('\n')[0];
            return line.startsWith('#!') && /\bnode\b/.test(line);
        }
        finally {
            (0,external_node_fs_.closeSync)(fd);
        }
    }
    catch {
        return false;
    }
}
/** `program` on `path` (or itself when it names a path), or undefined. */
function findOnPath(program, path) {
    if (program.includes('/'))
        return program;
    for (const dir of path.split(external_node_path_.delimiter)) {
        if (!(0,external_node_path_.isAbsolute)(dir))
            continue;
        const file = (0,external_node_path_.join)(dir, program);
        try {
            (0,external_node_fs_.closeSync)((0,external_node_fs_.openSync)(file, 'r'));
            return file;
        }
        catch {
            // not here
        }
    }
    return undefined;
}
/**
 * The program that runs the CLI and the arguments before the spec's: agent.command, else the
 * spec's usual name. A CLI that is a node script runs on the executor's own node (Node 24; the
 * machine's may be too old for it).
 */
function programOf(agent, spec) {
    const [program = spec.defaultProgram, ...prefix] = agent.command;
    const found = findOnPath(program, process.env.PATH ?? '');
    if (found && isNodeScript(found))
        return { program: process.execPath, prefix: [found, ...prefix] };
    return { program, prefix };
}

;// CONCATENATED MODULE: ./src/executor/agents/harness/redact.ts
// Removing a run's secrets from what its CLI prints, in one pass over each string whatever their
// number: the secrets (listed variables, MCP env values and headers) become one Aho–Corasick matcher
// when the run starts, and each string is read once, each character looked up once (amortised).
// A split/join per secret per line cost the whole API its event loop once a run had thousands.
// Every character that lies inside any occurrence of any secret is hidden: where occurrences
// overlap or one lies within another, their union becomes one `[redacted]`, so a longer secret goes
// whole and no piece of one is left beside another's mark.
const REDACTED = '[redacted]';
/** A function hiding every occurrence of `secrets` in a string; built once, used for every line. */
function secretRedactor(secrets) {
    const patterns = [...new Set(secrets)].filter(secret => secret.length > 0);
    if (patterns.length === 0)
        return text => text;
    // The trie: one map of edges keyed by (node, UTF-16 code unit) for all nodes, far smaller than
    // a map per node when most nodes have one child, as secrets' tails do.
    const edges = new Map();
    const key = (node, unit) => node * 0x10000 + unit;
    const depth = [0];
    const terminal = [false];
    const children = [[]];
    for (const pattern of patterns) {
        let node = 0;
        for (let i = 0; i < pattern.length; i++) {
            const unit = pattern.charCodeAt(i);
            let next = edges.get(key(node, unit));
            if (next === undefined) {
                next = depth.length;
                edges.set(key(node, unit), next);
                depth.push(depth[node] + 1);
                terminal.push(false);
                children.push([]);
                children[node].push(unit);
            }
            node = next;
        }
        terminal[node] = true;
    }
    // Failure links, breadth first; `longest[node]`: the longest secret that ends the text matched
    // so far at this node (the node's own, else its failure node's), 0 for none.
    const count = depth.length;
    const fail = new Int32Array(count);
    const longest = new Int32Array(count);
    const queue = [0];
    for (let head = 0; head < queue.length; head++) {
        const node = queue[head];
        for (const unit of children[node]) {
            const child = edges.get(key(node, unit));
            let link = 0;
            if (node !== 0) {
                let back = fail[node];
                while (back !== 0 && !edges.has(key(back, unit)))
                    back = fail[back];
                link = edges.get(key(back, unit)) ?? 0;
            }
            fail[child] = link;
            longest[child] = terminal[child] ? depth[child] : longest[link];
            queue.push(child);
        }
    }
    return text => {
        // Spans to hide, [start, end), ordered and never overlapping (touching ones stay two).
        const starts = [];
        const ends = [];
        let node = 0;
        for (let i = 0; i < text.length; i++) {
            const unit = text.charCodeAt(i);
            let next = edges.get(key(node, unit));
            while (next === undefined && node !== 0) {
                node = fail[node];
                next = edges.get(key(node, unit));
            }
            node = next ?? 0;
            const length = longest[node];
            if (length === 0)
                continue;
            const start = i + 1 - length;
            // A span this one covers goes; one it overlaps grows to its end.
            while (starts.length > 0 && start <= starts.at(-1)) {
                starts.pop();
                ends.pop();
            }
            if (starts.length > 0 && start < ends.at(-1))
                ends[ends.length - 1] = i + 1;
            else {
                starts.push(start);
                ends.push(i + 1);
            }
        }
        if (starts.length === 0)
            return text;
        let out = '';
        let from = 0;
        for (let k = 0; k < starts.length; k++) {
            out += text.slice(from, starts[k]) + REDACTED;
            from = ends[k];
        }
        return out + text.slice(from);
    };
}

;// CONCATENATED MODULE: ./src/executor/agents/harness/harness.ts
// The generic harness: runs one agent CLI (described by its HarnessSpec) for a run, in the run's
// sandbox and workspace, and turns its structured stream into the run's transcript as it arrives:
// assistant text, each tool call as an `action` with its `action_result`, file edits, the final
// answer. It writes the CLI's home files as the run's own user (never as the executor through a
// folder the run controls), adds up the usage the CLI reports into the run's request_usage, stops
// the CLI when its cost passes max_cost_usd or when its translator already knows the run failed,
// and ends a failed run with the CLI's own words and a distinct error code, secrets removed.





/** Characters of a tool's input or output kept in the transcript. */
const MAX_ACTION_CHARS = 16 * 1024;
/** Characters of a failed run's status message (the CLI's words can be as long as a stream line). */
const MAX_MESSAGE_CHARS = 8 * 1024;
/** Characters of the CLI's stderr end kept for a failure's message. */
const STDERR_TAIL_CHARS = 4 * 1024;
/** Longest stdout line read as one JSON value; a longer one is cut and skipped. */
const MAX_LINE_CHARS = 8 * 1024 * 1024;
/** Recorded events not yet stored, past which the CLI's pipe waits (backpressure). */
const MAX_PENDING = 64;
/** Variables every CLI needs besides those the environment lists. */
const harness_BASE_VARIABLES = ['PATH', 'LANG', 'TERM', 'TZ'];
/**
 * Every string in an event, secrets replaced: the CLI chooses ids, names, paths and session ids as
 * freely as its text, so none of them may carry a secret into the transcript either.
 */
function redactAll(value, redact) {
    if (typeof value === 'string')
        return redact(value);
    if (Array.isArray(value))
        return value.map(item => redactAll(item, redact));
    if (value !== null && typeof value === 'object')
        return Object.fromEntries(Object.entries(value).map(([k, v]) => [redact(k), redactAll(v, redact)]));
    return value;
}
/** `text` cut to `max` characters; `more` counts characters left out before it came here. */
function bound(text, max = MAX_ACTION_CHARS, more = 0) {
    if (text.length <= max && more === 0)
        return text;
    return `${text.slice(0, max)}\n… (${Math.max(0, text.length - max) + more} more characters)`;
}
/** The service's request_usage fields, extended with the token counts. */
function requestUsage(usage) {
    const total = usage.input_tokens + usage.output_tokens + usage.cache_read_tokens + usage.cache_write_tokens;
    const out = {
        total_tokens: total,
        input_tokens: usage.input_tokens,
        output_tokens: usage.output_tokens,
        cache_read_tokens: usage.cache_read_tokens,
        cache_write_tokens: usage.cache_write_tokens
    };
    if (usage.cost_usd !== undefined)
        out.inference_cost_usd = Number(usage.cost_usd.toFixed(6));
    return out;
}
/** Runs the CLI of `spec` for one run. */
async function runHarness(spec, context) {
    // The CLI sees its HOME at the sandbox's path; without a sandbox, at the run's host folder.
    const home = context.processes.home ?? context.home ?? context.workspace;
    const input = harnessInput(context, home);
    // The model goes on the command line: one that could be read as an option never starts the CLI.
    const modelProblem = modelIdProblem(input.model, 'model');
    if (modelProblem)
        return harness_failed('agent_model_not_found', modelProblem);
    const listed = { ...context.env };
    const cliEnv = spec.env(input, listed);
    const base = {};
    for (const name of harness_BASE_VARIABLES)
        if (process.env[name] !== undefined)
            base[name] = process.env[name];
    const env = { ...base, ...cliEnv, HOME: home };
    // Without a sandbox (whose /tmp is a tmpfs of the run's), the CLI's temporary files (Claude Code's
    // session folders and sockets) go in the turn's own folder, never in the machine's /tmp.
    if (context.tmp && context.processes.home === undefined)
        env.TMPDIR = context.tmp;
    const secrets = secretsOf(listed, cliEnv, input.mcpServers);
    // Built once for the run: each string is then read once, however many secrets there are.
    const redact = secretRedactor(secrets);
    // The stderr kept is this much longer than what is shown, so a secret cut at its start is whole
    // when redacted, and only then is the tail cut to size.
    const stderrKept = STDERR_TAIL_CHARS + (secrets[0]?.length ?? 0);
    const files = spec.homeFiles(input);
    for (const [path, content] of Object.entries(files)) {
        const failure = await writeHomeFile(context, env, `${home}/${path}`, content);
        if (failure)
            return harness_failed('agent_crashed', redact(failure));
    }
    // In an image the CLI is the image's, as named (the host's node and scripts are not there).
    const [named = spec.defaultProgram, ...rest] = context.agent.command;
    const { program, prefix } = context.image
        ? { program: named, prefix: rest }
        : programOf(context.agent, spec);
    const translator = spec.translator();
    const stopper = new AbortController();
    let early;
    const usage = {
        input_tokens: 0,
        output_tokens: 0,
        cache_read_tokens: 0,
        cache_write_tokens: 0
    };
    let costSeen = false;
    let answered = false;
    let stderrTail = '';
    let pending = 0;
    let writing = Promise.resolve();
    const store = (kind, data) => {
        pending++;
        const clean = redactAll(data, redact);
        writing = writing.then(() => context.record(kind, clean)).finally(() => pending--);
    };
    const take = (event) => {
        switch (event.type) {
            case 'text':
                if (event.text.trim() !== '')
                    store('message', { text: redact(event.text) });
                break;
            case 'action':
                store('action', {
                    id: event.id,
                    name: event.name,
                    // Redacted before it is JSON: a secret with a quote or a backslash is escaped there.
                    input: bound(JSON.stringify(redactAll(event.input ?? null, redact)))
                });
                break;
            case 'action_result':
                store('action_result', { id: event.id, ok: event.ok, output: bound(redact(event.output)) });
                break;
            case 'file_edit':
                store('file', {
                    path: relativePath(event.path, context.workspace),
                    change: 'modified',
                    source: 'agent'
                });
                break;
            case 'final':
                // One answer per run (the stream's first), no longer than a result file's.
                if (answered)
                    break;
                answered = true;
                store('result', {
                    text: bound(redact(event.text), MAX_RESULT_CHARS, event.dropped),
                    source: spec.kind
                });
                break;
            case 'usage':
                usage.input_tokens += event.input_tokens;
                usage.output_tokens += event.output_tokens;
                usage.cache_read_tokens += event.cache_read_tokens ?? 0;
                usage.cache_write_tokens += event.cache_write_tokens ?? 0;
                if (event.cost_usd !== undefined) {
                    costSeen = true;
                    usage.cost_usd = (usage.cost_usd ?? 0) + event.cost_usd;
                }
                break;
            case 'session':
                store('agent_session', { harness: spec.kind, session_id: event.id });
                break;
        }
    };
    const stop = (failure) => {
        early ??= failure;
        stopper.abort();
    };
    let skippedLine = false;
    const onLine = (line) => {
        if (line.trim() === '')
            return;
        let value;
        try {
            value = JSON.parse(line);
        }
        catch {
            // Not part of the stream (a warning printed to stdout): kept as the CLI's output.
            store('output', { stream: 'stdout', text: bound(redact(line)) + '\n' });
            return;
        }
        try {
            for (const event of translator.line(value))
                take(event);
        }
        catch (error) {
            // A line nested thousands deep overflows the stack of whatever walks it (the translator, the
            // secret removal, JSON.stringify). Thrown from the stdout handler it would end the executor
            // with every run; it is skipped instead, the first one with a note.
            if (!skippedLine)
                store('notice', {
                    text: `a line of the ${spec.kind} CLI's stream could not be read and was skipped (${error.message}); later ones are skipped without a note`
                });
            skippedLine = true;
            return;
        }
        const max = context.agent.max_cost_usd;
        if (max !== undefined && (usage.cost_usd ?? 0) > max)
            stop({
                code: 'budget_exceeded',
                message: `the run's model usage cost $${usage.cost_usd.toFixed(4)}, over max_cost_usd $${max}`
            });
        const known = translator.stopWith?.();
        if (known)
            stop(known);
    };
    const decoder = new external_node_string_decoder_.StringDecoder('utf8');
    let partial = '';
    const onStdout = (chunk) => {
        partial += decoder.write(chunk);
        let newline = partial.indexOf('\n');
        while (newline >= 0) {
            onLine(partial.slice(0, newline));
            partial = partial.slice(newline + 1);
            newline = partial.indexOf('\n');
        }
        if (partial.length > MAX_LINE_CHARS)
            partial = '';
        return pending > MAX_PENDING ? writing : undefined;
    };
    const errDecoder = new external_node_string_decoder_.StringDecoder('utf8');
    const onStderr = (chunk) => {
        stderrTail = (stderrTail + errDecoder.write(chunk)).slice(-stderrKept);
    };
    const result = await context.processes.run(program, [...prefix, ...spec.args(input)], {
        env,
        signal: stopper.signal,
        stdin: spec.stdin(input),
        onStdout,
        onStderr
    });
    onLine(partial + decoder.end());
    await writing;
    const measured = usage.input_tokens + usage.output_tokens > 0 || costSeen ? requestUsage(usage) : undefined;
    const withUsage = (outcome) => measured ? { ...outcome, request_usage: measured } : outcome;
    if (result.spawnError) {
        const why = result.spawnError.code === 'ENOENT' ? 'not found' : result.spawnError.message;
        return harness_failed('agent_crashed', `${spec.kind} CLI ${JSON.stringify(program)} could not start: ${why}; install it with \`${spec.install}\` or set agent.command`);
    }
    if (context.signal.aborted)
        return { state: 'FAILED', error_code: 'cancelled', status_message: 'stopped' };
    const shownTail = redact(stderrTail).slice(-STDERR_TAIL_CHARS);
    let failure = early ?? translator.finish(result.exitCode, shownTail);
    if (!failure && result.exitCode !== 0) {
        const how = result.exitCode === null ? `was stopped by ${result.signal}` : `exited with code ${result.exitCode}`;
        const tail = shownTail.trim();
        const message = `${spec.kind} ${how}${tail ? `: ${tail}` : ''}`;
        failure = { code: 'agent_crashed', message };
    }
    // A CLI with no key says it is not logged in (Claude Code): that is a key problem, not a crash.
    if (failure?.code === 'agent_crashed' && saysNoKey(failure.message))
        failure = { code: 'agent_auth_failed', message: failure.message };
    if (failure) {
        const hinted = withKeyHint(failure, spec.keyVariables, listed);
        return withUsage(harness_failed(hinted.code, redact(hinted.message)));
    }
    if (!answered)
        return withUsage(harness_failed('agent_crashed', `${spec.kind} ended without a final answer`));
    return withUsage({ state: 'SUCCEEDED' });
}
/** A failure; its message (the CLI's own words, secrets already removed) is cut to a status's size. */
function harness_failed(code, message) {
    return { state: 'FAILED', error_code: code, status_message: bound(message, MAX_MESSAGE_CHARS) };
}
/** The values no event, log or message may show: listed variables, the CLI's, MCP servers' env and headers. */
function secretsOf(listed, cliEnv, mcp) {
    // An orchestrate turn's environment id is a name, not a secret (its AGENT_RUN_API_KEY is one).
    const values = [
        ...Object.entries(listed)
            .filter(([name]) => name !== 'AGENT_RUN_ENVIRONMENT')
            .map(([, value]) => value),
        ...Object.values(cliEnv)
    ];
    for (const server of Object.values(mcp ?? {}))
        values.push(...Object.values(server.env ?? {}), ...Object.values(server.headers ?? {}));
    // Short values (a port, `1`) are settings, not secrets, and would blank out ordinary text.
    const secrets = values.filter(value => value.length >= 8 && !/^(https?:\/\/|\/)/.test(value));
    return [...new Set(secrets)].sort((a, b) => b.length - a.length);
}
function relativePath(path, workspace) {
    const prefix = workspace.endsWith('/') ? workspace : `${workspace}/`;
    return path.startsWith(prefix) ? path.slice(prefix.length) : path;
}
/**
 * Writes one file of the CLI's home as the run's own user, inside its sandbox: a link the run left
 * in its home can then reach nothing the run could not write anyway. The content goes on stdin.
 */
async function writeHomeFile(context, env, path, content) {
    let errors = '';
    const script = 'umask 077 && mkdir -p -- "$(dirname -- "$1")" && cat > "$1"';
    const result = await context.processes.run('/bin/sh', ['-c', script, 'sh', path], {
        env,
        stdin: content,
        onStderr: chunk => void (errors += chunk.toString('utf8'))
    });
    if (result.exitCode === 0)
        return undefined;
    return `could not write ${path} in the run's home: ${errors.trim() || result.spawnError?.message || `exit ${result.exitCode}`}`;
}

;// CONCATENATED MODULE: ./src/executor/agents/harness/kind.ts
// A harness as an agent kind of the registry: its `agent:` settings (command, model, args,
// max_cost_usd), its start-up look for the CLI's program, and its run (harness.ts). One kind per
// HarnessSpec, so Claude Code, Codex and Gemini CLI differ only in their spec file.
//
//   agent:
//     kind: claude-code
//     command: [/opt/tools/claude]   # optional; default: the CLI's usual name on the run's PATH
//     model: claude-sonnet-4-5       # optional; a run's config.model_id overrides it
//     args: []                       # optional extra arguments
//     max_cost_usd: 2.5              # optional; a run that costs more is stopped (budget_exceeded)





function executable(path) {
    try {
        (0,external_node_fs_.accessSync)(path, external_node_fs_.constants.X_OK);
        return (0,external_node_fs_.statSync)(path).isFile();
    }
    catch {
        return false;
    }
}
/** The agent kind that runs `spec`'s CLI. */
function harnessKind(spec) {
    return agentKind({
        kind: spec.kind,
        summary: `runs the ${spec.defaultProgram} CLI natively: its tool calls, usage and session in the run`,
        keys: ['command', 'model', 'args', 'max_cost_usd'],
        harnessType: spec.harnessType,
        parse(agent, at, read) {
            const command = typeof agent.command === 'string' ? [agent.command] : read.strings(agent.command, `${at}.command`);
            const model = agent.model === undefined ? undefined : read.string(agent.model, `${at}.model`, '');
            const args = read.strings(agent.args, `${at}.args`);
            let max;
            if (agent.max_cost_usd !== undefined) {
                if (typeof agent.max_cost_usd === 'number' && agent.max_cost_usd > 0)
                    max = agent.max_cost_usd;
                else
                    read.problems.push(`${at}.max_cost_usd ${show(agent.max_cost_usd)}: expected a number of US dollars above 0, e.g. 2.5`);
            }
            return { kind: spec.kind, command, model, args, max_cost_usd: max };
        },
        describe: agent => [spec.kind, agent.command[0] ?? spec.defaultProgram, agent.model ? `model ${agent.model}` : '']
            .filter(Boolean)
            .join(' '),
        check(environment, at, processEnv) {
            const program = environment.agent.command[0] ?? spec.defaultProgram;
            const found = findOnPath(program, processEnv.PATH ?? '');
            if (found && executable(found))
                return [];
            const where = program.includes('/')
                ? `no executable file at ${program}`
                : `${program} is not on the PATH runs get (${processEnv.PATH ?? 'empty'})`;
            return [
                `${at}.command ${show(program)}: ${where}; install it with \`${spec.install}\`, or set ${at}.command to its path`
            ];
        },
        run: context => runHarness(spec, context)
    });
}

;// CONCATENATED MODULE: ./src/executor/agents/simulated.ts
// The simulated agent: deterministic, for testing workflows. Lines of the prompt that start with
// `@sim` are directives, run in order; everything else is the instruction, echoed as the answer.
//
//   @sim sleep <seconds>       wait (cancellable)
//   @sim say <text>            agent output
//   @sim run <shell command>   run it in the workspace; non-zero exit fails the run
//   @sim write <path> <text>   write a file in the workspace (`\n` in the text is a line break)
//   @sim fail <message>        end FAILED with that status message
//   @sim result <text>         the final answer (`\n` in the text is a line break)
//   @sim json <object>         end the final answer with that JSON object (in a json fence)
//   @sim child <prompt>        (orchestrate turns) start a child run below this run, in the same
//                              environment, with that prompt (`\n` is a line break)
//   @sim gather                wait for every child this turn started to end; the final answer
//                              lists each one's state and answer
//
// The final answer (a `result` event) is the `@sim result` text, else the last `@sim say` text,
// else the echo of the instruction. `@sim child` and `@sim gather` talk to the executor as an
// orchestrating agent would: from a process inside the run's sandbox, with the turn's
// AGENT_RUN_BASE_URL and AGENT_RUN_API_KEY, through the run's proxy.



const DIRECTIVE = /^@sim(?:\s+(\S+))?\s*(.*)$/;
/**
 * `@sim write` as a process of the run: each missing directory of the path made, one that is not
 * a directory (a link included) refused, a link in the file's place refused, then the text from
 * standard input. It says `added` or `modified` first (or why it refused).
 */
const WRITE_SCRIPT = [
    'p=$1; dirs=${p%/*}; [ "$dirs" = "$p" ] && dirs=',
    'cur=; IFS=/; set -f',
    'for part in $dirs; do',
    '  [ -z "$part" ] && continue',
    '  cur=${cur:+$cur/}$part',
    '  if [ -L "$cur" ] || { [ -e "$cur" ] && [ ! -d "$cur" ]; }; then printf "notdir %s\\n" "$cur"; exit 3; fi',
    '  [ -d "$cur" ] || mkdir -- "$cur" || exit 5',
    'done',
    'if [ -L "$p" ]; then echo link; exit 4; fi',
    'if [ -e "$p" ]; then echo modified; else echo added; fi',
    'exec cat > "$p"'
].join('\n');
const DEFAULT_PAUSE_MS = 300;
/**
 * The client of `@sim child` and `@sim gather`, run with the executor's own node inside the run's
 * sandbox: it reads a request from standard input and talks to AGENT_RUN_BASE_URL through the
 * run's proxy (HTTP_PROXY), as any HTTP client there would. `create` prints the new run's id;
 * `gather` waits for each run to end (held reads) and prints [{run_id, state, result}].
 */
const CHILD_CLIENT = `
const http = require('node:http');
const env = process.env;
const proxy = new URL(env.HTTP_PROXY);
function call(method, path, body, headers = {}) {
  return new Promise((resolve, reject) => {
    const req = http.request({
      host: proxy.hostname, port: proxy.port, method, path: env.AGENT_RUN_BASE_URL + path,
      headers: { authorization: 'Bearer ' + env.AGENT_RUN_API_KEY, 'content-type': 'application/json', ...headers }
    }, res => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', chunk => (text += chunk));
      res.on('end', () => {
        let json;
        try { json = JSON.parse(text); } catch { json = undefined; }
        if (res.statusCode >= 300) reject(new Error(res.statusCode + ' ' + (json && json.detail ? json.detail : text.slice(0, 300))));
        else resolve(json);
      });
    });
    req.on('error', reject);
    req.end(body === undefined ? undefined : JSON.stringify(body));
  });
}
const ended = s => ['SUCCEEDED', 'FAILED', 'ERROR', 'BLOCKED', 'CANCELLED'].includes(s);
async function main() {
  let input = '';
  for await (const chunk of process.stdin) input += chunk;
  const ask = JSON.parse(input);
  if (ask.action === 'create') {
    const made = await call('POST', '/api/v1/agent/runs', { prompt: ask.prompt, config: { environment_id: ask.environment } });
    process.stdout.write(JSON.stringify({ run_id: made.run_id }));
    return;
  }
  const out = [];
  for (const id of ask.ids) {
    let run = await call('GET', '/api/v1/agent/runs/' + id);
    while (!ended(run.state)) run = await call('GET', '/api/v1/agent/runs/' + id, undefined, { prefer: 'wait=30' }) || run;
    const transcript = await call('GET', '/api/v1/agent/runs/' + id + '/transcript');
    const result = (transcript.events || []).filter(e => e.kind === 'result').pop();
    out.push({ run_id: id, state: run.state, result: result ? result.text : run.status_message || '' });
  }
  process.stdout.write(JSON.stringify(out));
}
main().catch(error => { process.stderr.write(error.message + '\\n'); process.exit(1); });
`;
/** Most characters of the child client's output kept. */
const MAX_CLIENT_OUTPUT = 1024 * 1024;
const simulatedAgent = agentKind({
    kind: 'simulated',
    summary: 'deterministic, for testing workflows: @sim directives in the prompt choose what happens',
    keys: [],
    parse: () => ({ kind: 'simulated' }),
    describe: () => 'simulated',
    async run(context) {
        const instruction = [];
        const answer = {};
        let directives = 0;
        for (const line of context.prompt.split(/\r?\n/)) {
            if (context.signal.aborted)
                return agentStopped();
            const match = DIRECTIVE.exec(line.trim());
            if (!match) {
                instruction.push(line);
                continue;
            }
            directives++;
            const [, verb = '', rest = ''] = match;
            const failure = await directive(context, verb, rest.trim(), answer);
            if (failure) {
                if (!context.signal.aborted)
                    await recordAnswer(context, answer, undefined);
                return failure;
            }
        }
        if (directives === 0)
            await sleep(DEFAULT_PAUSE_MS, context.signal);
        if (context.signal.aborted)
            return agentStopped();
        const text = instruction.join('\n').trim();
        const echo = text === '' ? undefined : `Simulated agent received the instruction:\n${text}`;
        if (echo !== undefined)
            await context.record('message', { text: echo });
        await recordAnswer(context, answer, echo);
        return succeeded();
    }
});
async function recordAnswer(context, answer, echo) {
    const text = answer.result ?? answer.said ?? echo;
    if (text === undefined && answer.json === undefined)
        return;
    const parts = [text, answer.json === undefined ? undefined : `\`\`\`json\n${answer.json}\n\`\`\``];
    await context.record('result', { text: parts.filter(part => part !== undefined).join('\n\n') });
}
async function directive(context, verb, rest, answer) {
    switch (verb) {
        case 'sleep': {
            const seconds = Number(rest);
            if (rest === '' || !Number.isFinite(seconds) || seconds < 0) {
                return invalid(`@sim sleep ${rest}`, 'expected a number of seconds, e.g. @sim sleep 2.5');
            }
            await sleep(seconds * 1000, context.signal);
            return undefined;
        }
        case 'say':
            await context.record('message', { text: rest });
            answer.said = rest;
            return undefined;
        case 'result':
            answer.result = rest.replace(/\\n/g, '\n');
            return undefined;
        case 'json': {
            let value;
            try {
                value = JSON.parse(rest);
            }
            catch {
                value = undefined;
            }
            if (value === null || typeof value !== 'object' || Array.isArray(value))
                return invalid(`@sim json ${rest.slice(0, 40)}`, 'expected a JSON object, e.g. @sim json {"ok": true}');
            answer.json = JSON.stringify(value, null, 2);
            return undefined;
        }
        case 'run': {
            if (rest === '')
                return invalid('@sim run', 'expected a shell command, e.g. @sim run npm test');
            const result = await context.processes.shell(rest, { env: context.env });
            await context.record('command', {
                command: rest,
                exit_code: result.exitCode,
                output: result.output,
                duration_ms: result.durationMs
            });
            if (result.exitCode === 0 || context.signal.aborted)
                return undefined;
            return commandFailed(rest, result.exitCode, result.signal);
        }
        case 'write': {
            const space = rest.search(/\s/);
            const path = space < 0 ? rest : rest.slice(0, space);
            const text = space < 0 ? '' : rest.slice(space + 1).replace(/\\n/g, '\n');
            const target = (0,external_node_path_.resolve)(context.workspace, path);
            const inside = (0,external_node_path_.relative)(context.workspace, target);
            if (path === '' || inside.startsWith('..') || inside === '') {
                return invalid(`@sim write ${path}`, 'expected a file path inside the workspace, e.g. @sim write notes/a.md Hello');
            }
            // Refused before any process starts, as a sandboxed write would be refused.
            if (context.mode === 'plan')
                return agentFailed(`@sim write ${path}: the workspace is read-only in plan mode`);
            // Written by a process of the run, in its sandbox, as the run's user: the executor itself
            // never opens a path the run could have turned into a link.
            let said = '';
            const wrote = await context.processes.run('/bin/sh', ['-c', WRITE_SCRIPT, 'sh', inside], {
                env: { PATH: '/usr/bin:/bin' },
                stdin: text,
                onStdout: chunk => void (said = (said + chunk.toString('utf8')).slice(0, 4096))
            });
            const verdict = said.split('\n')[0] ?? '';
            if (wrote.exitCode !== 0) {
                const why = verdict.startsWith('notdir ')
                    ? `${verdict.slice(7)} is not a directory (a link is never followed)`
                    : verdict === 'link'
                        ? 'is a symbolic link; the executor never writes through one'
                        : `could not be written (exit code ${wrote.exitCode ?? wrote.signal})`;
                return invalid(`@sim write ${path}`, `${path}: ${why}`);
            }
            await context.record('file', {
                path: inside,
                change: verdict === 'modified' ? 'modified' : 'added',
                bytes: Buffer.byteLength(text)
            });
            return undefined;
        }
        case 'fail':
            return agentFailed(rest || 'the simulated agent was told to fail');
        case 'child': {
            if (rest === '')
                return invalid('@sim child', "expected the child run's prompt, e.g. @sim child Review the tests");
            const called = await childClient(context, '@sim child', {
                action: 'create',
                prompt: rest.replace(/\\n/g, '\n'),
                environment: context.environmentId
            });
            if ('failure' in called)
                return called.failure;
            const id = String(called.answer?.run_id);
            (answer.children ??= []).push(id);
            await context.record('message', { text: `started child run ${id}` });
            return undefined;
        }
        case 'gather': {
            const ids = answer.children ?? [];
            if (ids.length === 0)
                return invalid('@sim gather', 'no @sim child came before it in this turn');
            const called = await childClient(context, '@sim gather', { action: 'gather', ids });
            if ('failure' in called)
                return called.failure;
            const lines = called.answer.map((child, index) => `- child ${index + 1} (${child.run_id}) ${child.state}: ${child.result}`);
            answer.result = `Gathered ${lines.length} child runs:\n${lines.join('\n')}`;
            await context.record('message', { text: answer.result });
            return undefined;
        }
        default:
            return invalid(`@sim ${verb}`, 'expected one of sleep, say, run, write, fail, result, json, child, gather');
    }
}
/**
 * Runs the child client inside the run's sandbox with `ask` on its standard input; answers what it
 * printed (parsed), or the failed outcome saying why.
 */
async function childClient(context, what, ask) {
    if (context.mode !== 'orchestrate' || !context.env.AGENT_RUN_API_KEY)
        return {
            failure: invalid(what, 'this turn is not in mode orchestrate, so it has no credential to start child runs with')
        };
    let out = '';
    let err = '';
    const ran = await context.processes.run(process.execPath, ['-e', CHILD_CLIENT], {
        env: { PATH: '/usr/bin:/bin', ...context.env },
        stdin: JSON.stringify(ask),
        onStdout: chunk => void (out = (out + chunk.toString('utf8')).slice(0, MAX_CLIENT_OUTPUT)),
        onStderr: chunk => void (err = (err + chunk.toString('utf8')).slice(-4096))
    });
    if (context.signal.aborted)
        return { failure: agentStopped() };
    if (ran.exitCode !== 0)
        return {
            failure: agentFailed(`${what}: the executor refused or could not be reached: ${err.trim() || `exit code ${ran.exitCode ?? ran.signal}`}`)
        };
    try {
        return { answer: JSON.parse(out) };
    }
    catch {
        return { failure: agentFailed(`${what}: the child client's answer was not JSON`) };
    }
}
function invalid(what, expected) {
    return agentFailed(`invalid directive ${what}: ${expected}`);
}
function sleep(ms, signal) {
    return new Promise(resolvePromise => {
        if (signal.aborted)
            return resolvePromise();
        // setTimeout overflows past 2^31-1 ms (about 24.8 days); no run lives that long anyway.
        const timer = setTimeout(done, Math.min(ms, 2 ** 31 - 1));
        function done() {
            clearTimeout(timer);
            signal.removeEventListener('abort', done);
            resolvePromise();
        }
        signal.addEventListener('abort', done, { once: true });
    });
}

;// CONCATENATED MODULE: ./src/executor/agents/index.ts
// The registry of agent kinds: the one place the config, the worker and the CLI look a kind up.
// Adding a kind is its own file in this folder plus one line below.






const AGENT_KINDS = new Map([
    simulatedAgent,
    commandAgent,
    harnessKind(claudeCode),
    harnessKind(codexHarness),
    harnessKind(geminiHarness)
].map(kind => [kind.kind, kind]));
/** The kind an environment's `agent.kind` names; undefined for a kind this executor lacks. */
function agentKindOf(kind) {
    return AGENT_KINDS.get(kind);
}

;// CONCATENATED MODULE: ./src/executor/node/cli-usage.ts
// agent-executor's usage texts (the whole one, and one per command) and how its arguments split
// into the command and the rest, so global options may come before the command or after it.

/** The package version this bundle was built from (a test compares it with package.json). */
const VERSION = '0.1.0';
const HELP = {
    serve: `  serve [--host HOST] [--port PORT] [--role all|api|worker]
      Serve the run API and run agents. Defaults: 127.0.0.1, port 8080, data dir .agent-executor,
      config agent-executor.yaml when present. --port 0 picks a free port. Prints
      "listening on http://HOST:PORT" when ready, and "stopped" after a graceful stop (SIGINT or
      SIGTERM; a second signal exits at once). --role api serves the API and runs nothing;
      --role worker runs work and serves only /healthz and /readyz. One data dir takes one --role all,
      or one api and one worker process (SQLite on this machine, or a postgres:// store shared by nodes).`,
    keys: `  keys create --kind personal|agent --name NAME [--team TEAM]
      Create an API key (team "default" unless given). The raw key is printed once, alone on the
      last line of stdout.
  keys list
      List keys (id, team, kind, name, first characters, created, status), under a header row.
      Never shows raw keys.
  keys revoke ID
      Revoke a key at once.`,
    environments: `  environments list
      List the configured environments (id, name, source, agent, timeout, concurrency), under a
      header row.`
};
const GLOBAL_OPTIONS = `Global options (before or after the command):
  --config FILE    the configuration file (default agent-executor.yaml in the current directory)
  --data-dir DIR   where the store and workspaces live (default .agent-executor)
  --store STORE    a path or sqlite:PATH (SQLite; default DATA_DIR/executor.db) or
                   postgres://USER:PASSWORD@HOST:PORT/DB (shared by several nodes);
                   AGENT_EXECUTOR_STORE sets it too, and the config file's store: key
  -h, --help       this help; after a command, that command's help
  -V, --version    print the version`;
const USAGE = `Usage: agent-executor [global options] <command> [options]

Commands:
${HELP.serve}
${HELP.keys}
${HELP.environments}

Agent kinds (an environment's agent.kind):
${[...AGENT_KINDS.values()].map(kind => `  ${kind.kind.padEnd(10)} ${kind.summary}`).join('\n')}

${GLOBAL_OPTIONS}`;
function commandHelp(command) {
    return `Usage: agent-executor ${command} [options]\n\n${HELP[command]}\n\n${GLOBAL_OPTIONS}`;
}
/** Options every command takes; they may come before the command as well as after it. */
const GLOBAL_WITH_VALUE = new Set(['--config', '--data-dir', '--store']);
const COMMANDS = ['serve', 'keys', 'environments'];
/**
 * The command is the first argument that is neither a global option nor its value; the other
 * arguments keep their order, so `--data-dir X keys list` and `keys list --data-dir X` agree.
 */
function splitCommand(argv) {
    for (let i = 0; i < argv.length; i++) {
        const arg = argv[i];
        if (GLOBAL_WITH_VALUE.has(arg)) {
            i++;
            continue;
        }
        if (arg.startsWith('-'))
            continue;
        return { command: arg, args: [...argv.slice(0, i), ...argv.slice(i + 1)] };
    }
    return { args: argv };
}

// EXTERNAL MODULE: ./node_modules/yaml/dist/index.js
var dist = __webpack_require__(38815);
// EXTERNAL MODULE: external "node:url"
var external_node_url_ = __webpack_require__(73136);
;// CONCATENATED MODULE: ./src/executor/store/location.ts
// Which store a node uses: a path or sqlite: URL for SQLite (the default, in the data dir), a
// postgres:// URL for PostgreSQL shared by several nodes. Parsing only: opening is open.ts, so the
// config can name a store without loading a database driver.


class StoreSpecError extends Error {
}
/**
 * Reads a store setting. Undefined means SQLite in the data dir; relative paths are from `base`.
 * Throws StoreSpecError naming the value (password hidden) and the expected forms.
 */
function parseStoreSpec(value, dataDir, base) {
    const text = value?.trim() ?? '';
    if (text === '')
        return { kind: 'sqlite', path: (0,external_node_path_.join)(dataDir, 'executor.db') };
    if (/^postgres(ql)?:\/\//i.test(text)) {
        try {
            const url = new URL(text);
            if (url.hostname === '' && !url.searchParams.has('host'))
                throw new Error('no host');
        }
        catch {
            throw new StoreSpecError(`${JSON.stringify(redactUrl(text))}: not a valid PostgreSQL URL; expected postgres://USER:PASSWORD@HOST:PORT/DATABASE`);
        }
        return { kind: 'postgres', url: text };
    }
    if (/^sqlite:/i.test(text)) {
        const rest = text.slice('sqlite:'.length);
        const path = rest.startsWith('//') ? (0,external_node_url_.fileURLToPath)(`file:${rest}`) : rest;
        if (path === '')
            throw new StoreSpecError(`${JSON.stringify(text)}: expected sqlite:PATH, e.g. sqlite:/var/lib/agent-executor/executor.db`);
        return { kind: 'sqlite', path: (0,external_node_path_.isAbsolute)(path) ? path : (0,external_node_path_.resolve)(base, path) };
    }
    if (/^[a-z][a-z0-9+.-]*:\/\//i.test(text)) {
        throw new StoreSpecError(`${JSON.stringify(redactUrl(text))}: unsupported store; expected a path or sqlite:PATH for SQLite, or postgres://USER:PASSWORD@HOST:PORT/DATABASE`);
    }
    return { kind: 'sqlite', path: (0,external_node_path_.resolve)(base, text) };
}
/** The store named by the spec, with password hidden, for logs. */
function describeStore(spec) {
    return spec.kind === 'sqlite' ? `sqlite:${spec.path}` : redactUrl(spec.url);
}
/** postgres://user:***@host:port/db: the address with any password taken out, for logs and errors. */
function redactUrl(url) {
    try {
        const parsed = new URL(url);
        if (parsed.password)
            parsed.password = '***';
        for (const name of [...parsed.searchParams.keys()])
            if (/pass|secret|key/i.test(name))
                parsed.searchParams.set(name, '***');
        return parsed.href;
    }
    catch {
        // Not a URL the parser takes: hide everything between :// and the last @ (a password may hold
        // / and @ of its own).
        return url.replace(/^([a-z][a-z0-9+.-]*:\/\/).*@/i, '$1***@');
    }
}

// EXTERNAL MODULE: external "node:child_process"
var external_node_child_process_ = __webpack_require__(31421);
;// CONCATENATED MODULE: ./src/executor/sandbox/user.ts
// The host user a run's processes are, when the executor itself is root (as on CI runners and in
// containers). Root inside a sandbox still holds the owner's read bit on every root-only file the
// sandbox shows (keys under /etc/ssl/private, a 0600 file under /etc): so a run never keeps uid 0.
// The environment's `sandbox.user` names the user (a name, or a numeric uid[:gid]); by default the
// system user `agent-run`, created here with `useradd --system` when the machine lacks it, so the
// run's files have a name in `ls` and tools that look the user up (git, ssh) find one. Where no user
// can be created (no useradd, a read-only /etc), a fixed high uid with no passwd entry stands in.
// When the executor is not root it cannot switch users: runs are the executor's own user.




const exec = (0,external_node_util_.promisify)(external_node_child_process_.execFile);
/** The user made (or looked up) when an environment does not name one. */
const DEFAULT_USER = 'agent-run';
/** Used when `agent-run` can neither be found nor created: above every range useradd allocates. */
const FALLBACK_ID = 2_000_000_000;
const NAME = /^[a-z_][a-z0-9_-]{0,31}\$?$/i;
const NUMERIC = /^(\d{1,10})(?::(\d{1,10}))?$/;
const USER_FORMS = 'expected a user name such as agent-run, or a numeric uid[:gid] such as 2000:2000';
/** Whether `value` has the form of a `sandbox.user` (checked when the config is read). */
function userSpecProblem(value) {
    const text = typeof value === 'number' ? String(value) : value;
    if (typeof text !== 'string' || !(NAME.test(text) || NUMERIC.test(text)))
        return USER_FORMS;
    return undefined;
}
/**
 * The passwd entry of a name or a uid: [uid, gid], or undefined when there is none. getent asks
 * every user database the machine has (LDAP, systemd); without getent, /etc/passwd is read.
 */
function passwd(key) {
    const result = (0,external_node_child_process_.spawnSync)('getent', ['passwd', key], { encoding: 'utf8' });
    let line = result.status === 0 ? result.stdout.split('\n')[0] : '';
    if (result.error) {
        const lines = (0,external_node_fs_.existsSync)('/etc/passwd') ? (0,external_node_fs_.readFileSync)('/etc/passwd', 'utf8').split('\n') : [];
        line = lines.find(entry => entry.split(':')[0] === key || entry.split(':')[2] === key) ?? '';
    }
    const fields = line.split(':');
    if (fields.length < 4)
        return undefined;
    return [Number(fields[2]), Number(fields[3])];
}
/** Thrown at start-up for a `sandbox.user` that cannot be used; its message names the value. */
class RunUserError extends Error {
}
const resolved = new Map();
/**
 * The identity of runs for `spec` (an environment's `sandbox.user`, or undefined for the default);
 * undefined when the executor is not root (nothing to switch from). Looked up once per spec.
 */
function runUser(spec) {
    if (process.getuid?.() !== 0)
        return undefined;
    const key = spec ?? '';
    let user = resolved.get(key);
    if (!user) {
        user = spec === undefined ? defaultUser() : namedUser(spec);
        if (user.uid === 0 || user.gid === 0)
            throw new RunUserError(`sandbox.user ${JSON.stringify(spec)} is ${user.uid === 0 ? 'uid' : 'gid'} 0 (root): a run must not be root on the host; ${USER_FORMS} other than 0`);
        resolved.set(key, user);
    }
    return user;
}
function namedUser(spec) {
    const numeric = NUMERIC.exec(spec);
    if (numeric) {
        const uid = Number(numeric[1]);
        const entry = passwd(String(uid));
        const gid = numeric[2] !== undefined ? Number(numeric[2]) : (entry?.[1] ?? uid);
        if (uid > 4_294_967_294 || gid > 4_294_967_294)
            throw new RunUserError(`sandbox.user ${JSON.stringify(spec)}: an id above 4294967294; ${USER_FORMS}`);
        return { uid, gid, label: `uid ${uid}, gid ${gid}` };
    }
    const entry = passwd(spec);
    if (!entry)
        throw new RunUserError(`sandbox.user ${JSON.stringify(spec)}: no such user on this machine; ${USER_FORMS} (create it with \`useradd --system ${spec}\`)`);
    return { uid: entry[0], gid: entry[1], label: `${spec} (uid ${entry[0]}, gid ${entry[1]})` };
}
function defaultUser() {
    return systemUser(DEFAULT_USER, FALLBACK_ID);
}
/**
 * The system user `name` (made with `useradd --system` when the machine lacks it); where none can
 * be made, `fallback` (uid and gid) with no passwd entry. The run's user is one (agent-run); the
 * user that unpacks container images is another (images/cache.ts), so no run owns an image's files.
 */
function systemUser(name, fallback) {
    let entry = passwd(name);
    let how = '';
    if (!entry) {
        const made = (0,external_node_child_process_.spawnSync)('useradd', [
            '--system',
            '--user-group',
            '--no-create-home',
            '--home-dir',
            '/nonexistent',
            '--shell',
            '/usr/sbin/nologin'
        ].concat(name), { encoding: 'utf8' });
        // Another executor starting at the same moment may have made it first: look again either way.
        entry = passwd(name);
        if (entry && made.status === 0)
            how = ', created now';
    }
    if (entry)
        return { uid: entry[0], gid: entry[1], label: `${name} (uid ${entry[0]}, gid ${entry[1]}${how})` };
    return {
        uid: fallback,
        gid: fallback,
        label: `uid ${fallback}, gid ${fallback} (no user ${name} here and useradd could not make one)`
    };
}
/**
 * Gives a workspace root the executor just made (a full checkout, a copy of the source: nothing of
 * the run has been in it yet) to the run's user. Symbolic links are changed themselves, never
 * followed (a checkout may hold a link to any file of the host).
 */
async function giveTo(user, paths) {
    if (!user || paths.length === 0)
        return;
    await exec(systemProgram('chown'), ['-R', '-h', '-P', `${user.uid}:${user.gid}`, '--', ...paths]);
}
/**
 * A program of the system directories the sandbox shows, by absolute path: run as root inside the
 * sandbox, it must never be looked up on the run's PATH (which may name the workspace). The
 * executor's git that writes a shared checkout as the run's user finds `setpriv` the same way.
 */
function systemProgram(name) {
    for (const dir of ['/usr/bin', '/bin', '/usr/sbin', '/sbin']) {
        const file = (0,external_node_path_.join)(dir, name);
        if ((0,external_node_fs_.existsSync)(file))
            return file;
    }
    return `/usr/bin/${name}`;
}
/**
 * The command that, inside a sandbox bubblewrap made as root, gives the run its own HOME and then
 * becomes the run's user for good (no groups, no capabilities, none regained through setuid files)
 * before it execs the run's program (appended after it).
 */
function dropTo(user, home) {
    const id = `${user.uid}:${user.gid}`;
    const script = `${systemProgram('chown')} ${id} ${home} || exit 125; ` +
        `exec ${systemProgram('setpriv')} --reuid=${user.uid} --regid=${user.gid} ` +
        '--clear-groups --inh-caps=-all --bounding-set=-all --no-new-privs -- "$@"';
    return ['/bin/sh', '-c', script, 'sh'];
}

;// CONCATENATED MODULE: ./src/executor/sandbox/config.ts
// The `sandbox:` key of an environment, parsed on its own so config.ts only calls it: how a run's
// processes are confined (network, extra paths, memory and process limits), or `sandbox: off`.
// Also the start-up rule on its extra paths: none may show a run the executor's data dir.




const DEFAULT_SANDBOX = {
    enabled: true,
    network: 'none',
    read: [],
    write: [],
    memoryBytes: 4 * 1024 ** 3,
    processes: 512,
    requireLimits: false
};
const config_SIZE_UNITS = {
    b: 1,
    kb: 1e3,
    mb: 1e6,
    gb: 1e9,
    kib: 1024,
    mib: 1024 ** 2,
    gib: 1024 ** 3
};
/** Bytes of a size such as 512MiB or 4GiB; undefined when the text is not one. */
function parseSize(value) {
    const match = /^(\d+(?:\.\d+)?)\s*(B|KB|MB|GB|KiB|MiB|GiB)?$/i.exec(String(value).trim());
    if (!match)
        return undefined;
    const bytes = Math.round(Number(match[1]) * config_SIZE_UNITS[(match[2] ?? 'b').toLowerCase()]);
    return bytes > 0 ? bytes : undefined;
}
function config_show(value) {
    const text = JSON.stringify(value) ?? String(value);
    return text.length > 60 ? `${text.slice(0, 60)}…` : text;
}
/** Reads `<at>` (an environment's `sandbox:`), pushing each problem with the key, value and expected form. */
function parseSandbox(raw, at, problems) {
    if (raw === undefined || raw === null)
        return { ...DEFAULT_SANDBOX };
    // YAML 1.2 reads `off` as a string; `false` is accepted as the same thing.
    if (raw === 'off' || raw === false)
        return { ...DEFAULT_SANDBOX, enabled: false };
    if (typeof raw !== 'object' || Array.isArray(raw)) {
        problems.push(`${at} ${config_show(raw)}: expected off or a mapping (network, read, write, memory, processes, user)`);
        return { ...DEFAULT_SANDBOX };
    }
    const object = raw;
    const keys = ['network', 'read', 'write', 'memory', 'processes', 'require_limits', 'user'];
    for (const key of Object.keys(object))
        if (!keys.includes(key))
            problems.push(`${at}.${key}: unknown key; expected one of ${keys.join(', ')}${didYouMean(key, keys)}`);
    const config = { ...DEFAULT_SANDBOX };
    config.network = parseNetwork(object.network, `${at}.network`, problems);
    config.read = paths(object.read, `${at}.read`, problems);
    config.write = paths(object.write, `${at}.write`, problems);
    if (object.memory !== undefined && object.memory !== null) {
        const bytes = parseSize(object.memory);
        if (bytes === undefined || bytes < 16 * 1024 ** 2)
            problems.push(`${at}.memory ${config_show(object.memory)}: expected a size of at least 16MiB, e.g. 4GiB`);
        else
            config.memoryBytes = bytes;
    }
    if (object.processes !== undefined && object.processes !== null) {
        const n = object.processes;
        if (typeof n !== 'number' || !Number.isInteger(n) || n < 8 || n > 1_000_000)
            problems.push(`${at}.processes ${config_show(n)}: expected a whole number from 8 to 1000000`);
        else
            config.processes = n;
    }
    if (object.require_limits !== undefined && object.require_limits !== null) {
        if (typeof object.require_limits !== 'boolean')
            problems.push(`${at}.require_limits ${config_show(object.require_limits)}: expected true or false`);
        else
            config.requireLimits = object.require_limits;
    }
    if (object.user !== undefined && object.user !== null) {
        const problem = userSpecProblem(object.user);
        if (problem)
            problems.push(`${at}.user ${config_show(object.user)}: ${problem}`);
        else
            config.user = String(object.user);
    }
    return config;
}
function parseNetwork(value, at, problems) {
    if (value === undefined || value === null || value === 'none')
        return 'none';
    if (value === 'host')
        return 'host';
    const expected = 'expected none, host or a list of host:port such as [api.anthropic.com:443]';
    if (!Array.isArray(value)) {
        problems.push(`${at} ${config_show(value)}: ${expected}`);
        return 'none';
    }
    const targets = [];
    for (const item of value) {
        const match = /^(\[[0-9a-f:.]+\]|[A-Za-z0-9.-]+):(\d{1,5})$/.exec(String(item).trim());
        const port = Number(match?.[2]);
        if (!match || port < 1 || port > 65535) {
            problems.push(`${at} ${config_show(item)}: ${expected}`);
            continue;
        }
        targets.push({ host: match[1].replace(/^\[|\]$/g, '').toLowerCase(), port });
    }
    return targets;
}
function paths(value, at, problems) {
    if (value === undefined || value === null)
        return [];
    if (!Array.isArray(value) || !value.every(item => typeof item === 'string' && (0,external_node_path_.isAbsolute)(item))) {
        problems.push(`${at} ${config_show(value)}: expected a list of absolute paths such as [/opt/tools]`);
        return [];
    }
    return value;
}
/**
 * `path` with every symbolic link resolved, also in a part that does not exist yet (a dangling link
 * is followed to where it leads); beyond 40 links, the path as it is.
 */
function realPath(path, links = 0) {
    let existing = (0,external_node_path_.resolve)(path);
    const rest = [];
    while (!(0,external_node_fs_.existsSync)(existing) && (0,external_node_path_.dirname)(existing) !== existing) {
        let target;
        try {
            target = (0,external_node_fs_.readlinkSync)(existing);
        }
        catch {
            // not a link: a part yet to be made
        }
        if (target !== undefined && links < 40)
            return realPath((0,external_node_path_.join)((0,external_node_path_.resolve)((0,external_node_path_.dirname)(existing), target), ...rest), links + 1);
        rest.unshift((0,external_node_path_.basename)(existing));
        existing = (0,external_node_path_.dirname)(existing);
    }
    try {
        return (0,external_node_path_.join)((0,external_node_fs_.realpathSync)(existing), ...rest);
    }
    catch {
        return (0,external_node_path_.resolve)(path);
    }
}
function within(path, dir) {
    return path === dir || path.startsWith(dir.endsWith(external_node_path_.sep) ? dir : dir + external_node_path_.sep);
}
/**
 * Every `sandbox.read` or `sandbox.write` path that would show a run the data dir (its database
 * holds every team's prompts and the link secrets): one that contains the data dir or lies inside
 * it, compared as real paths. A writable path is bound after the data dir is hidden, so it would
 * uncover the data dir; a read-only path inside it is bound again over the hiding. A writable path
 * that contains the config file, or any path that is the config file, is refused the same way.
 */
function sandboxPathProblems(environments, dataDir, configFile) {
    const data = realPath(dataDir);
    const config = configFile === undefined ? undefined : realPath(configFile);
    const problems = [];
    for (const env of environments) {
        if (!env.sandbox.enabled)
            continue;
        for (const key of ['read', 'write']) {
            for (const path of env.sandbox[key]) {
                const real = realPath(path);
                const at = `environment ${JSON.stringify(env.id)}: sandbox.${key} ${JSON.stringify(path)}${real === (0,external_node_path_.resolve)(path) ? '' : ` (${real})`}`;
                const rule = 'a run must never see the data dir; expected a path that neither contains the data dir nor lies inside it';
                if (within(data, real))
                    problems.push(`${at}: contains the data dir ${data}, whose database holds every prompt and the link secrets; ${rule}`);
                else if (within(real, data))
                    problems.push(`${at}: lies inside the data dir ${data}; ${rule}`);
                else if (config !== undefined && (real === config || (key === 'write' && within(config, real))))
                    problems.push(`${at}: ${real === config ? 'is' : 'contains'} the config file ${config}, which runs must not see; expected a path that ${key === 'write' ? 'does not contain it' : 'is not it'}`);
            }
        }
    }
    return problems;
}

;// CONCATENATED MODULE: ./src/executor/config/publish-config.ts
// The `publish:` key of an environment: where the executor pushes a run's changes and whether it
// opens a pull request. Its own module beside publish.ts so that config.ts only calls it; every
// default of the issue lives here, and each mistake is named with its key and the expected form.

const PUBLISH_DEFAULTS = {
    branch: 'agent/{run_id}',
    remote: 'origin',
    commitMessage: '{title}\n\nRun: {session_link}',
    author: { name: 'agent-executor', email: 'agent-executor@localhost' },
    apiUrl: 'https://api.github.com',
    title: '{title}',
    body: '{result}\n\n---\nRun {run_id}: {session_link}'
};
function parsePublish(raw, at, r) {
    if (raw === undefined || raw === null || raw === false)
        return undefined;
    const publish = r.object(raw === true ? {} : raw, at);
    r.known(publish, at, ['branch', 'base', 'remote', 'commit_message', 'author', 'token_env', 'pull_request']);
    const author = r.object(publish.author, `${at}.author`);
    r.known(author, `${at}.author`, ['name', 'email']);
    const config = {
        branch: r.string(publish.branch, `${at}.branch`, PUBLISH_DEFAULTS.branch),
        remote: r.string(publish.remote, `${at}.remote`, PUBLISH_DEFAULTS.remote),
        commitMessage: r.string(publish.commit_message, `${at}.commit_message`, PUBLISH_DEFAULTS.commitMessage),
        author: {
            name: r.string(author.name, `${at}.author.name`, PUBLISH_DEFAULTS.author.name),
            email: r.string(author.email, `${at}.author.email`, PUBLISH_DEFAULTS.author.email)
        }
    };
    if (/[{}]/.test(config.branch.replace(/\{(run_id|short_id|title_slug)\}/g, ''))) {
        r.problems.push(`${at}.branch ${show(publish.branch)}: expected a branch name template with only {run_id}, {short_id} or {title_slug}`);
    }
    if (publish.base !== undefined && publish.base !== null)
        config.base = r.string(publish.base, `${at}.base`, 'main');
    if (publish.token_env !== undefined && publish.token_env !== null) {
        const name = r.string(publish.token_env, `${at}.token_env`, 'GITHUB_TOKEN');
        if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(name))
            r.problems.push(`${at}.token_env ${show(name)}: expected a variable name such as GITHUB_TOKEN`);
        config.tokenEnv = name;
    }
    if (publish.pull_request !== undefined && publish.pull_request !== null && publish.pull_request !== false) {
        const pr = r.object(publish.pull_request === true ? {} : publish.pull_request, `${at}.pull_request`);
        r.known(pr, `${at}.pull_request`, ['repository', 'api_url', 'draft', 'title', 'body']);
        config.pullRequest = {
            apiUrl: r.url(pr.api_url, `${at}.pull_request.api_url`) ?? PUBLISH_DEFAULTS.apiUrl,
            draft: true,
            title: r.string(pr.title, `${at}.pull_request.title`, PUBLISH_DEFAULTS.title),
            body: r.string(pr.body, `${at}.pull_request.body`, PUBLISH_DEFAULTS.body)
        };
        if (pr.draft !== undefined && pr.draft !== null) {
            if (typeof pr.draft === 'boolean')
                config.pullRequest.draft = pr.draft;
            else
                r.problems.push(`${at}.pull_request.draft ${show(pr.draft)}: expected true or false`);
        }
        if (pr.repository !== undefined && pr.repository !== null) {
            const repository = r.string(pr.repository, `${at}.pull_request.repository`, 'owner/name');
            if (!/^[\w.-]+\/[\w.-]+$/.test(repository))
                r.problems.push(`${at}.pull_request.repository ${show(repository)}: expected owner/name such as acme/web`);
            config.pullRequest.repository = repository;
        }
    }
    return config;
}

// EXTERNAL MODULE: external "node:net"
var external_node_net_ = __webpack_require__(77030);
;// CONCATENATED MODULE: ./src/executor/config/auth-config.ts
// `auth.oidc`: the rules by which the executor accepts a workload's OIDC token (a GitHub Actions
// job's, say) instead of an API key. Each rule names the issuer it trusts, the audience the token
// must be made for, the team and kind a matching token acts as, and the claims it must carry.
// Checked at start-up like every other key: the issuer's URL and scheme, the audience, the claim
// names and their patterns.


/** GitHub Actions' issuer, the rule's default. */
const GITHUB_ACTIONS_ISSUER = 'https://token.actions.githubusercontent.com';
/**
 * Claims a rule may test: those of a GitHub Actions token (github.com and GHES alike). A rule that
 * names another claim is a typo, and a typo in a trust rule must not pass silently.
 */
const OIDC_CLAIMS = [
    'sub',
    'repository',
    'repository_id',
    'repository_owner',
    'repository_owner_id',
    'repository_visibility',
    'ref',
    'ref_type',
    'ref_protected',
    'sha',
    'workflow',
    'workflow_ref',
    'workflow_sha',
    'job_workflow_ref',
    'job_workflow_sha',
    'event_name',
    'environment',
    'actor',
    'actor_id',
    'head_ref',
    'base_ref',
    'runner_environment',
    'enterprise',
    'enterprise_id',
    'run_id',
    'run_number',
    'run_attempt'
];
/**
 * Claims of which a rule must test one: without it the rule would admit any repository the issuer
 * serves (anyone can run a workflow on github.com and ask for a token of any audience).
 */
const SCOPING_CLAIMS = ['repository', 'repository_id', 'repository_owner', 'repository_owner_id', 'sub'];
const TEAM_FORM = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/;
/** Whether `host` (a URL's hostname) is this machine: localhost or a loopback address. */
function isLoopbackHost(host) {
    const bare = host.replace(/^\[|\]$/g, '');
    if (bare === 'localhost')
        return true;
    if ((0,external_node_net_.isIP)(bare) === 4)
        return bare.startsWith('127.');
    if ((0,external_node_net_.isIP)(bare) === 6)
        return bare === '::1' || bare === '0:0:0:0:0:0:0:1';
    return false;
}
function parseAuth(r, raw) {
    const auth = r.object(raw, 'auth');
    r.known(auth, 'auth', ['oidc']);
    const rules = [];
    if (auth.oidc === undefined || auth.oidc === null)
        return { oidc: rules };
    if (!Array.isArray(auth.oidc)) {
        r.problems.push(`auth.oidc ${show(auth.oidc)}: expected a list of rules, each with audience, team and claims`);
        return { oidc: rules };
    }
    auth.oidc.forEach((item, index) => {
        const rule = parseRule(r, item, `auth.oidc[${index}]`);
        if (rule)
            rules.push(rule);
    });
    return { oidc: rules };
}
function parseRule(r, raw, at) {
    const rule = r.object(raw, at);
    r.known(rule, at, ['issuer', 'audience', 'team', 'kind', 'claims']);
    const issuer = issuerOf(r, rule.issuer, `${at}.issuer`);
    const audience = r.string(rule.audience, `${at}.audience`, '');
    const team = r.string(rule.team, `${at}.team`, '');
    if (team !== '' && !TEAM_FORM.test(team))
        r.problems.push(`${at}.team ${show(rule.team)}: expected 1–64 letters, digits, '.', '_' or '-'`);
    const kind = r.oneOf(rule.kind, `${at}.kind`, ['agent', 'personal'], 'agent');
    const claims = claimsOf(r, rule.claims, `${at}.claims`);
    if (!SCOPING_CLAIMS.some(name => claims[name] !== undefined) && rule.claims !== null)
        r.problems.push(`${at}.claims: names no repository; expected at least one of ${SCOPING_CLAIMS.join(', ')} ` +
            '(without one, every repository on the issuer could sign in), such as {repository: acme/widgets, ref: refs/heads/main}');
    if (issuer === undefined || audience === '' || team === '')
        return undefined;
    return { issuer, audience, team, kind, claims };
}
function issuerOf(r, value, at) {
    if (value === undefined || value === null)
        return GITHUB_ACTIONS_ISSUER;
    const form = `expected an https:// URL such as ${GITHUB_ACTIONS_ISSUER} (http:// only on a loopback address)`;
    let url;
    try {
        url = new URL(String(value));
    }
    catch {
        r.problems.push(`${at} ${show(value)}: ${form}`);
        return undefined;
    }
    const plainOnLoopback = url.protocol === 'http:' && isLoopbackHost(url.hostname);
    if ((url.protocol !== 'https:' && !plainOnLoopback) || url.search !== '' || url.hash !== '') {
        r.problems.push(`${at} ${show(value)}: ${form}`);
        return undefined;
    }
    if (url.username !== '' || url.password !== '') {
        r.problems.push(`${at}: a URL with a user name or password; ${form}`);
        return undefined;
    }
    return url.href.replace(/\/+$/, '');
}
function claimsOf(r, value, at) {
    const claims = {};
    const object = r.object(value, at);
    for (const [name, pattern] of Object.entries(object)) {
        if (!OIDC_CLAIMS.includes(name)) {
            r.problems.push(`${at}.${name}: unknown claim; expected one of ${OIDC_CLAIMS.join(', ')}`);
            continue;
        }
        if ((typeof pattern !== 'string' && typeof pattern !== 'number' && typeof pattern !== 'boolean') ||
            String(pattern) === '') {
            r.problems.push(`${at}.${name} ${show(pattern)}: expected a non-empty string, where * matches any characters (such as refs/heads/*)`);
            continue;
        }
        claims[name] = String(pattern);
    }
    return claims;
}

// EXTERNAL MODULE: ./node_modules/typebox/build/index.mjs + 1 modules
var build = __webpack_require__(35007);
;// CONCATENATED MODULE: ./src/api/webhooks.ts
// Schemas of the webhook endpoints: a team's endpoints (where the executor sends signed events, by
// the Standard Webhooks specification), their secrets (shown only when made), and their delivery
// logs. The event types and the payload a receiver gets are here too, so the docs, the executor
// and a client in TypeScript read them from one place.

const Timestamp = build/* default.String */.Ay$.String({ format: 'date-time', description: 'RFC 3339 timestamp' });
const NullableString = build/* default.Unsafe */.Ay$.Unsafe({ type: ['string', 'null'] });
const NullableTimestamp = build/* default.Unsafe */.Ay$.Unsafe({
    type: ['string', 'null'],
    format: 'date-time',
    description: 'RFC 3339 timestamp, or null'
});
/** Every event a webhook endpoint can subscribe to: a run's state changes, and an accepted follow-up. */
const WEBHOOK_EVENT_TYPES = [
    'run.queued',
    'run.in_progress',
    'run.blocked',
    'run.succeeded',
    'run.failed',
    'run.error',
    'run.cancelled',
    'run.followup'
];
/** The event type of a change to a run's state (its record's value, e.g. INPROGRESS). */
const STATE_EVENT_TYPES = {
    QUEUED: 'run.queued',
    INPROGRESS: 'run.in_progress',
    BLOCKED: 'run.blocked',
    SUCCEEDED: 'run.succeeded',
    FAILED: 'run.failed',
    ERROR: 'run.error',
    CANCELLED: 'run.cancelled'
};
const WebhookEventTypeSchema = build/* default.Union */.Ay$.Union(WEBHOOK_EVENT_TYPES.map(type => build/* default.Literal */.Ay$.Literal(type)), { expected: WEBHOOK_EVENT_TYPES.join(', ') });
const CreateWebhookRequestSchema = build/* default.Object */.Ay$.Object({
    url: build/* default.String */.Ay$.String({
        maxLength: 2000,
        description: 'Where events are sent: an http or https URL.',
        expected: 'an http or https URL of at most 2000 characters'
    }),
    events: build/* default.Optional */.Ay$.Optional(build/* default.Array */.Ay$.Array(WebhookEventTypeSchema, {
        minItems: 1,
        maxItems: WEBHOOK_EVENT_TYPES.length,
        description: 'The event types sent (default: all).',
        expected: `a non-empty list of ${WEBHOOK_EVENT_TYPES.join(', ')}`
    })),
    description: build/* default.Optional */.Ay$.Optional(build/* default.String */.Ay$.String({ maxLength: 500, expected: 'a string of at most 500 characters' }))
}, { additionalProperties: false, expected: 'a JSON object with url, and optionally events and description' });
const WebhookIdParamsSchema = build/* default.Object */.Ay$.Object({
    webhook_id: build/* default.String */.Ay$.String({ description: 'The webhook endpoint id.' })
});
const DeliveryParamsSchema = build/* default.Object */.Ay$.Object({
    webhook_id: build/* default.String */.Ay$.String({ description: 'The webhook endpoint id.' }),
    delivery_id: build/* default.String */.Ay$.String({ description: 'The delivery id (its webhook-id header).' })
});
const WebhookSchema = build/* default.Object */.Ay$.Object({
    id: build/* default.String */.Ay$.String(),
    url: build/* default.String */.Ay$.String(),
    events: build/* default.Array */.Ay$.Array(build/* default.String */.Ay$.String(), { description: 'The event types sent.' }),
    description: build/* default.String */.Ay$.String(),
    created_at: Timestamp,
    source: build/* default.String */.Ay$.String({
        description: '`api`, or `config` for one the operator declared (read-only here).'
    }),
    disabled_at: build/* default.Optional */.Ay$.Optional(NullableTimestamp),
    disabled_reason: build/* default.Optional */.Ay$.Optional(NullableString)
}, { additionalProperties: true });
const WebhookWithSecretSchema = build/* default.Object */.Ay$.Object({
    id: build/* default.String */.Ay$.String(),
    url: build/* default.String */.Ay$.String(),
    events: build/* default.Array */.Ay$.Array(build/* default.String */.Ay$.String()),
    description: build/* default.String */.Ay$.String(),
    created_at: Timestamp,
    source: build/* default.String */.Ay$.String(),
    secret: build/* default.String */.Ay$.String({
        description: 'The signing secret, `whsec_` and base64; shown only here and on rotation.'
    })
}, { additionalProperties: true });
const ListWebhooksResponseSchema = build/* default.Object */.Ay$.Object({ webhooks: build/* default.Array */.Ay$.Array(WebhookSchema) });
const DeleteWebhookResponseSchema = build/* default.Object */.Ay$.Object({ success: build/* default.Boolean */.Ay$.Boolean() });
const DeliverySchema = build/* default.Object */.Ay$.Object({
    id: build/* default.String */.Ay$.String({ description: 'The delivery id, sent as webhook-id on every attempt.' }),
    event_type: build/* default.String */.Ay$.String(),
    run_id: build/* default.String */.Ay$.String(),
    created_at: Timestamp,
    status: build/* default.String */.Ay$.String({ description: '`pending`, `succeeded` or `failed` (no retry left).' }),
    attempts: build/* default.Integer */.Ay$.Integer(),
    last_status: build/* default.Unsafe */.Ay$.Unsafe({
        type: ['integer', 'null'],
        description: "The receiver's HTTP status at the last attempt, or null (none yet, or no answer)."
    }),
    last_error: NullableString,
    last_attempt_at: NullableTimestamp,
    next_attempt_at: NullableTimestamp
}, { additionalProperties: true });
const ListDeliveriesResponseSchema = build/* default.Object */.Ay$.Object({ deliveries: build/* default.Array */.Ay$.Array(DeliverySchema) });

;// CONCATENATED MODULE: ./src/executor/config/webhooks-config.ts
// The `webhooks:` key: how deliveries are retried and bounded, whether private networks may be
// sent to, and the endpoints the operator declares for teams (their secrets read from variables of
// the executor's environment, never written in the file). Each mistake is named with its key and
// the expected form.


/** The Standard Webhooks specification's schedule: 5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 14 h, 20 h, 24 h. */
const DEFAULT_RETRY_SCHEDULE_MS = [5, 300, 1800, 7200, 18_000, 36_000, 50_400, 72_000, 86_400].map(seconds => seconds * 1000);
const KEYS = [
    'retry_schedule',
    'timeout',
    'allow_private_networks',
    'max_endpoints_per_team',
    'concurrency_per_endpoint',
    'concurrency_per_team',
    'concurrency',
    'rotation_grace',
    'endpoints'
];
function parseWebhooks(raw, r) {
    const at = 'webhooks';
    const hooks = r.object(raw, at);
    r.known(hooks, at, KEYS);
    let retryScheduleMs = DEFAULT_RETRY_SCHEDULE_MS;
    if (hooks.retry_schedule !== undefined && hooks.retry_schedule !== null) {
        if (!Array.isArray(hooks.retry_schedule) || hooks.retry_schedule.length > 20) {
            r.problems.push(`${at}.retry_schedule ${show(hooks.retry_schedule)}: expected a list of at most 20 durations, such as [5s, 5m, 30m]`);
        }
        else {
            retryScheduleMs = hooks.retry_schedule.map((item, index) => r.duration(item, `${at}.retry_schedule[${index}]`, 5000));
        }
    }
    const allow = hooks.allow_private_networks;
    if (allow !== undefined && allow !== null && typeof allow !== 'boolean')
        r.problems.push(`${at}.allow_private_networks ${show(allow)}: expected true or false`);
    const config = {
        retryScheduleMs,
        timeoutMs: r.duration(hooks.timeout, `${at}.timeout`, 15_000),
        allowPrivateNetworks: allow === true,
        maxEndpointsPerTeam: r.int(hooks.max_endpoints_per_team, `${at}.max_endpoints_per_team`, 10, 1, 1000),
        concurrencyPerEndpoint: r.int(hooks.concurrency_per_endpoint, `${at}.concurrency_per_endpoint`, 4, 1, 100),
        concurrencyPerTeam: r.int(hooks.concurrency_per_team, `${at}.concurrency_per_team`, 16, 1, 1000),
        concurrency: r.int(hooks.concurrency, `${at}.concurrency`, 64, 1, 10_000),
        rotationGraceMs: r.duration(hooks.rotation_grace, `${at}.rotation_grace`, 86_400_000, true),
        endpoints: []
    };
    if (hooks.endpoints !== undefined && hooks.endpoints !== null) {
        if (!Array.isArray(hooks.endpoints)) {
            r.problems.push(`${at}.endpoints ${show(hooks.endpoints)}: expected a list of endpoints`);
        }
        else {
            hooks.endpoints.forEach((item, index) => {
                config.endpoints.push(parseDeclared(item, `${at}.endpoints[${index}]`, r));
            });
        }
    }
    return config;
}
function parseDeclared(raw, at, r) {
    const entry = r.object(raw, at);
    r.known(entry, at, ['team', 'url', 'events', 'description', 'secret_env']);
    const url = r.url(entry.url, `${at}.url`) ?? '';
    if (entry.url === undefined)
        r.problems.push(`${at}.url: required, expected an http(s) URL`);
    const secretEnv = r.string(entry.secret_env, `${at}.secret_env`, '');
    if (secretEnv !== '' && !/^[A-Za-z_][A-Za-z0-9_]*$/.test(secretEnv))
        r.problems.push(`${at}.secret_env ${show(secretEnv)}: expected a variable name such as ACME_WEBHOOK_SECRET`);
    let events = null;
    if (entry.events !== undefined && entry.events !== null) {
        events = r.strings(entry.events, `${at}.events`);
        for (const event of events)
            if (!WEBHOOK_EVENT_TYPES.includes(event))
                r.problems.push(`${at}.events ${show(event)}: expected one of ${WEBHOOK_EVENT_TYPES.join(', ')}`);
        if (events.length === 0)
            r.problems.push(`${at}.events: expected a non-empty list of event types`);
    }
    return {
        team: r.string(entry.team, `${at}.team`, ''),
        url: entry.url === undefined ? '' : url,
        events,
        description: entry.description === undefined ? '' : r.string(entry.description, `${at}.description`, ''),
        secretEnv
    };
}

;// CONCATENATED MODULE: ./src/executor/config/config.ts
// The executor's configuration: agent-executor.yaml, checked at start-up with errors that name the
// key, the value and the expected form. Without a file, one environment `local` serves the current
// directory with the simulated agent.











// eslint-disable-next-line no-control-regex
const UNPRINTABLE = /[\u0000-\u001f\u007f-\u009f\s]/;
/** The skopeo transports an `image` may name. */
const IMAGE_TRANSPORTS = ['oci:', 'oci-archive:', 'docker-archive:', 'docker://'];
/** Transports of the host's own stores, which the copy's unprivileged user does not reach. */
const HOST_STORE_TRANSPORTS = ['containers-storage:', 'docker-daemon:'];
const IMAGE_FORMS = 'expected a skopeo image reference such as oci:/srv/images/python:3.12, oci-archive:/srv/python.tar, docker-archive:/srv/python.tar or docker://debian:12';
class ConfigError extends Error {
}
/**
 * `workspaces.min_free_inodes` unless set: as many inodes as ext4 gives the default `min_free`
 * (1 GiB at its default of one inode per 16 KiB), so on such a file system the two floors agree;
 * room for the checkout of a repository of tens of thousands of files.
 */
const DEFAULT_MIN_FREE_INODES = 65_536;
/** Loads the config file (explicit, or agent-executor.yaml when present) and applies CLI overrides. */
function loadConfig(overrides = {}, cwd = process.cwd(), env = process.env) {
    const explicit = overrides.config !== undefined;
    const file = (0,external_node_path_.resolve)(cwd, overrides.config ?? 'agent-executor.yaml');
    let raw = {};
    let base = cwd;
    if ((0,external_node_fs_.existsSync)(file)) {
        let text;
        try {
            text = (0,external_node_fs_.readFileSync)(file, 'utf8');
        }
        catch (error) {
            throw new ConfigError(`config ${file}: cannot read it (${error.code})`);
        }
        try {
            raw = (0,dist/* parse */.qg)(text) ?? {};
        }
        catch (error) {
            throw new ConfigError(`config ${file}: not valid YAML (${error.message.split('\n')[0]})`);
        }
        base = (0,external_node_path_.dirname)(file);
    }
    else if (explicit) {
        throw new ConfigError(`config ${file}: no such file`);
    }
    const config = parseConfig(raw, base, explicit || (0,external_node_fs_.existsSync)(file) ? file : 'defaults');
    if ((0,external_node_fs_.existsSync)(file))
        config.configFile = file;
    if (overrides.host !== undefined)
        config.host = overrides.host;
    if (overrides.port !== undefined)
        config.port = overrides.port;
    if (overrides.dataDir !== undefined) {
        const inDataDir = config.store.kind === 'sqlite' && config.store.path === (0,external_node_path_.join)(config.dataDir, 'executor.db');
        config.dataDir = (0,external_node_path_.resolve)(cwd, overrides.dataDir);
        if (inDataDir)
            config.store = parseStoreSpec(undefined, config.dataDir, cwd);
    }
    const [store, from] = overrides.store !== undefined
        ? [overrides.store, '--store']
        : env.AGENT_EXECUTOR_STORE
            ? [env.AGENT_EXECUTOR_STORE, 'AGENT_EXECUTOR_STORE']
            : [undefined, ''];
    if (store !== undefined) {
        try {
            config.store = parseStoreSpec(store, config.dataDir, cwd);
        }
        catch (error) {
            if (error instanceof StoreSpecError)
                throw new ConfigError(`${from} ${error.message}`);
            throw error;
        }
    }
    return config;
}
function parseConfig(raw, base, where = 'config') {
    const problems = [];
    const r = new ConfigReader(problems);
    const root = r.object(raw, '');
    r.known(root, '', [
        'server',
        'data_dir',
        'store',
        'workers',
        'lease',
        'shutdown_grace',
        'log_level',
        'log_format',
        'workspaces',
        'limits',
        'webhooks',
        'environments',
        'auth'
    ]);
    const server = r.object(root.server, 'server');
    const workspaces = r.object(root.workspaces, 'workspaces');
    r.known(workspaces, 'workspaces', [
        'retention',
        'continue_for',
        'quota',
        'max_files',
        'max_patch',
        'min_free',
        'min_free_inodes',
        'cache_size'
    ]);
    r.known(server, 'server', ['host', 'port', 'public_url', 'session_pages']);
    const limits = r.object(root.limits, 'limits');
    r.known(limits, 'limits', [
        'max_body_bytes',
        'max_prompt_bytes',
        'rate_limit_per_minute',
        'max_queued_runs',
        'max_queued_runs_per_team',
        'max_running_runs_per_team',
        'max_schedules_per_team',
        'retention_days',
        'transcript',
        'max_streams_per_key',
        'max_streams',
        'stream_heartbeat',
        'stream_buffer'
    ]);
    const workers = r.int(root.workers, 'workers', 4, 1, 256);
    const dataDir = (0,external_node_path_.resolve)(base, r.string(root.data_dir, 'data_dir', '.agent-executor'));
    let store = parseStoreSpec(undefined, dataDir, base);
    if (root.store !== undefined && root.store !== null) {
        try {
            if (typeof root.store !== 'string')
                throw new StoreSpecError(`${show(root.store)}: expected a string`);
            store = parseStoreSpec(root.store, dataDir, base);
        }
        catch (error) {
            if (!(error instanceof StoreSpecError))
                throw error;
            problems.push(`store ${error.message}`);
        }
    }
    const maxQueuedRuns = r.int(limits.max_queued_runs, 'limits.max_queued_runs', 1000, 1, 1e9);
    const config = {
        host: r.string(server.host, 'server.host', '127.0.0.1'),
        port: r.int(server.port, 'server.port', 8080, 0, 65535),
        publicUrl: r.url(server.public_url, 'server.public_url'),
        sessionPages: r.oneOf(server.session_pages, 'server.session_pages', ['link', 'sign-in'], 'link'),
        dataDir,
        store,
        workers,
        leaseMs: r.duration(root.lease, 'lease', 30_000),
        shutdownGraceMs: r.duration(root.shutdown_grace, 'shutdown_grace', 30_000),
        logLevel: r.oneOf(root.log_level, 'log_level', ['fatal', 'error', 'warn', 'info', 'debug', 'silent'], 'info'),
        logFormat: r.oneOf(root.log_format, 'log_format', ['auto', 'text', 'json'], 'auto'),
        workspaces: {
            retentionMs: r.duration(workspaces.retention, 'workspaces.retention', 3_600_000, true),
            continueForMs: r.duration(workspaces.continue_for, 'workspaces.continue_for', 86_400_000, true),
            quotaBytes: r.size(workspaces.quota, 'workspaces.quota', 2 * 1024 ** 3),
            maxFiles: r.int(workspaces.max_files, 'workspaces.max_files', 200_000, 100, 1e9),
            maxPatchBytes: r.size(workspaces.max_patch, 'workspaces.max_patch', 50 * 1024 ** 2),
            minFreeBytes: r.size(workspaces.min_free, 'workspaces.min_free', 1024 ** 3),
            minFreeInodes: r.int(workspaces.min_free_inodes, 'workspaces.min_free_inodes', DEFAULT_MIN_FREE_INODES, 0, 1e9),
            cacheBytes: r.size(workspaces.cache_size, 'workspaces.cache_size', 10 * 1024 ** 3)
        },
        limits: {
            maxBodyBytes: r.int(limits.max_body_bytes, 'limits.max_body_bytes', 1024 * 1024, 1024, 1 << 30),
            maxPromptBytes: r.int(limits.max_prompt_bytes, 'limits.max_prompt_bytes', 64 * 1024, 1, 1 << 30),
            rateLimitPerMinute: r.int(limits.rate_limit_per_minute, 'limits.rate_limit_per_minute', 600, 0, 1e9),
            maxQueuedRuns,
            maxQueuedRunsPerTeam: perTeamQueueLimit(r, limits.max_queued_runs_per_team, maxQueuedRuns),
            maxRunningRunsPerTeam: r.int(limits.max_running_runs_per_team, 'limits.max_running_runs_per_team', 0, 0, 1e9),
            maxSchedulesPerTeam: r.int(limits.max_schedules_per_team, 'limits.max_schedules_per_team', 100, 1, 1e6),
            retentionDays: r.int(limits.retention_days, 'limits.retention_days', 30, 1, 36500),
            transcriptBytes: transcriptLimit(r, limits.transcript),
            maxStreamsPerKey: r.int(limits.max_streams_per_key, 'limits.max_streams_per_key', 20, 1, 1e6),
            maxStreams: r.int(limits.max_streams, 'limits.max_streams', 2000, 1, 1e7),
            streamHeartbeatMs: r.duration(limits.stream_heartbeat, 'limits.stream_heartbeat', 15_000),
            streamBufferBytes: r.size(limits.stream_buffer, 'limits.stream_buffer', 1024 ** 2)
        },
        webhooks: parseWebhooks(root.webhooks, r),
        environments: [],
        auth: parseAuth(r, root.auth)
    };
    if (root.environments === undefined) {
        config.environments.push(defaultEnvironment(base, workers));
    }
    else if (!Array.isArray(root.environments) || root.environments.length === 0) {
        problems.push(`environments: expected a non-empty list of environments, got ${show(root.environments)}`);
    }
    else {
        const seen = new Set();
        root.environments.forEach((item, index) => {
            const env = parseEnvironment(r, item, `environments[${index}]`, base, workers);
            if (seen.has(env.id))
                problems.push(`environments[${index}].id ${show(env.id)}: the id is used twice`);
            seen.add(env.id);
            config.environments.push(env);
        });
        checkOrchestrateEnvironments(config.environments, problems);
    }
    if (problems.length > 0) {
        throw new ConfigError(`${where}: ${problems.length === 1 ? problems[0] : `\n- ${problems.join('\n- ')}`}`);
    }
    return config;
}
/** The smallest `limits.transcript`: room for a head, a tail and the note between them. */
const MIN_TRANSCRIPT_BYTES = 64 * 1024;
function transcriptLimit(r, value) {
    const bytes = r.size(value, 'limits.transcript', 16 * 1024 ** 2);
    if (bytes >= MIN_TRANSCRIPT_BYTES)
        return bytes;
    r.problems.push(`limits.transcript ${show(value)}: expected at least 64KiB, such as 16MiB`);
    return MIN_TRANSCRIPT_BYTES;
}
/**
 * `limits.max_queued_runs_per_team`: by default a tenth of the node's queue, at least 100 (so a
 * team of a small executor is not held to a handful) and never more than the node's limit; a
 * value above the node's limit could never be reached, so it is refused.
 */
function perTeamQueueLimit(r, value, maxQueuedRuns) {
    const key = 'limits.max_queued_runs_per_team';
    const fallback = Math.min(maxQueuedRuns, Math.max(100, Math.floor(maxQueuedRuns / 10)));
    const limit = r.int(value, key, fallback, 1, 1e9);
    if (limit <= maxQueuedRuns)
        return limit;
    r.problems.push(`${key} ${show(value)}: expected at most limits.max_queued_runs (${maxQueuedRuns}), the node's own queue`);
    return maxQueuedRuns;
}
function defaultEnvironment(base, workers) {
    return {
        id: 'local',
        name: 'Local directory (simulated agent)',
        source: base,
        setup: [],
        setupCache: false,
        agent: { kind: 'simulated' },
        env: [],
        timeoutMs: 30 * 60_000,
        maxConcurrentRuns: workers,
        sandbox: { ...DEFAULT_SANDBOX },
        orchestrateEnvironments: []
    };
}
function parseEnvironment(r, raw, at, base, workers) {
    const env = r.object(raw, at);
    r.known(env, at, [
        'id',
        'name',
        'source',
        'setup',
        'setup_cache',
        'agent',
        'env',
        'timeout',
        'max_concurrent_runs',
        'sandbox',
        'publish',
        'orchestrate_environments',
        'image',
        'image_pull'
    ]);
    const id = r.string(env.id, `${at}.id`, '');
    if (!/^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/.test(id)) {
        r.problems.push(`${at}.id ${show(env.id)}: expected 1–64 letters, digits, '.', '_' or '-'`);
    }
    const agent = r.object(env.agent ?? { kind: 'simulated' }, `${at}.agent`);
    const kindProblems = r.problems.length;
    const kind = AGENT_KINDS.get(r.oneOf(agent.kind, `${at}.agent.kind`, [...AGENT_KINDS.keys()], 'simulated'));
    // An unknown kind is its one problem: its other keys belong to the kind meant, not to the default.
    const kindKnown = r.problems.length === kindProblems;
    if (kindKnown)
        r.known(agent, `${at}.agent`, ['kind', ...kind.keys]);
    const parsedAgent = kindKnown
        ? kind.parse(agent, `${at}.agent`, r)
        : kind.parse({ kind: kind.kind }, `${at}.agent`, new ConfigReader([]));
    const names = r.strings(env.env, `${at}.env`);
    for (const name of names) {
        if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(name)) {
            r.problems.push(`${at}.env ${show(name)}: expected a variable name such as ANTHROPIC_API_KEY`);
        }
    }
    const sandbox = parseSandbox(env.sandbox, `${at}.sandbox`, r.problems);
    const image = imageOf(r, env.image, env.image_pull, at, base);
    if (image && !sandbox.enabled)
        r.problems.push(`${at}.image ${show(env.image)}: an image is the root of the run's sandbox; expected no \`sandbox: off\` with it`);
    return {
        id,
        name: r.string(env.name, `${at}.name`, id),
        source: sourceOf(r.string(env.source, `${at}.source`, '.'), base),
        setup: r.strings(env.setup, `${at}.setup`),
        setupCache: setupCacheOf(r, env.setup_cache, `${at}.setup_cache`),
        agent: parsedAgent,
        env: names,
        timeoutMs: r.duration(env.timeout, `${at}.timeout`, 30 * 60_000),
        maxConcurrentRuns: r.int(env.max_concurrent_runs, `${at}.max_concurrent_runs`, workers, 1, 256),
        sandbox,
        publish: parsePublish(env.publish, `${at}.publish`, r),
        orchestrateEnvironments: r.strings(env.orchestrate_environments, `${at}.orchestrate_environments`),
        ...(image ? { image } : {})
    };
}
/**
 * Why `environment` cannot run an orchestrate turn, or undefined: the turn's credential must be
 * reachable only through the run's proxy, so it needs a sandbox whose network is not the host's
 * (with `network: host` the sandbox could reach the executor past the proxy; without a sandbox
 * there is no proxy at all).
 */
function orchestrateProblem(environment) {
    const why = !environment.sandbox.enabled
        ? 'has sandbox: off'
        : environment.sandbox.network === 'host'
            ? 'has sandbox.network: host'
            : undefined;
    if (!why)
        return undefined;
    return `mode "orchestrate": environment ${JSON.stringify(environment.id)} ${why}, and an orchestrate run's credential must be reachable only through its sandbox's proxy; use an environment with a sandbox whose network is none or a host:port list`;
}
/**
 * Each environment's `orchestrate_environments` names other environments of the file, once each:
 * an unknown id (with the ids there are) or a repeated one is a problem naming the entry.
 */
function checkOrchestrateEnvironments(environments, problems) {
    const ids = environments.map(env => env.id);
    environments.forEach((env, index) => {
        const seen = new Set();
        for (const id of env.orchestrateEnvironments) {
            const at = `environments[${index}].orchestrate_environments ${show(id)}`;
            if (!ids.includes(id))
                problems.push(`${at}: expected the id of another environment of this file (${ids.join(', ')})${didYouMean(id, ids)}`);
            else if (id === env.id)
                problems.push(`${at}: an environment's own id is always allowed; list only other environments`);
            else if (seen.has(id))
                problems.push(`${at}: the id is listed twice`);
            seen.add(id);
        }
    });
}
/** `image` (a skopeo reference; a relative oci:/docker-archive: path is from the config's folder) and `image_pull`. */
function imageOf(r, value, pull, at, base) {
    const mode = r.oneOf(pull, `${at}.image_pull`, ['missing', 'always'], 'missing');
    if (value === undefined || value === null) {
        if (pull !== undefined && pull !== null)
            r.problems.push(`${at}.image_pull ${show(pull)}: only with an \`image\`; expected it removed or an image set`);
        return undefined;
    }
    const text = typeof value === 'string' ? value.trim() : '';
    const hostStore = HOST_STORE_TRANSPORTS.find(prefix => text.startsWith(prefix));
    if (hostStore) {
        r.problems.push(`${at}.image ${show(value)}: images are copied by an unprivileged user that does not reach the host's ${hostStore === 'docker-daemon:' ? 'Docker daemon' : 'container storage'}; expected the image saved first (\`skopeo copy ${hostStore}NAME:TAG oci:/srv/images/NAME:TAG\`) and named as oci:/srv/images/NAME:TAG`);
        return undefined;
    }
    const transport = IMAGE_TRANSPORTS.find(prefix => text.startsWith(prefix));
    if (!transport || text.length === transport.length || text.length > 1024 || UNPRINTABLE.test(text)) {
        r.problems.push(`${at}.image ${show(value)}: ${IMAGE_FORMS}`);
        return undefined;
    }
    let ref = text;
    if (['oci:', 'oci-archive:', 'docker-archive:'].includes(transport)) {
        const rest = text.slice(transport.length);
        if (!rest.startsWith('/'))
            ref = transport + (0,external_node_path_.resolve)(base, rest);
    }
    return { ref, pull: mode };
}
function setupCacheOf(r, value, at) {
    if (value === undefined || value === null)
        return false;
    if (typeof value === 'boolean')
        return value;
    r.problems.push(`${at} ${show(value)}: expected true or false`);
    return false;
}
/** A git URL (`https://…`, `ssh://…`, `file://…`, `git@host:repo`) or a path. */
function isRemoteSource(source) {
    return /^[a-z][a-z0-9+.-]*:\/\//i.test(source) || /^[\w.-]+@[\w.-]+:/.test(source);
}
function sourceOf(source, base) {
    return isRemoteSource(source) ? source : (0,external_node_path_.resolve)(base, source);
}

// EXTERNAL MODULE: external "node:crypto"
var external_node_crypto_ = __webpack_require__(77598);
// EXTERNAL MODULE: external "node:zlib"
var external_node_zlib_ = __webpack_require__(38522);
;// CONCATENATED MODULE: ./src/executor/store/keys.ts
// API keys: `arx_` + 30 random base62 characters + a 6-character CRC32 checksum, so secret
// scanners can recognise a leaked key and the server can refuse a mistyped one without a lookup.
// Only the SHA-256 of a key is stored; keys are random enough that a fast hash is safe.


const KEY_PREFIX = 'arx_';
const ALPHABET = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';
const BODY_LENGTH = 30;
const CHECK_LENGTH = 6;
const KEY_PATTERN = new RegExp(`^${KEY_PREFIX}[0-9A-Za-z]{${BODY_LENGTH + CHECK_LENGTH}}$`);
function base62(bytes, length) {
    let out = '';
    for (const byte of bytes) {
        // 248 = 62 × 4: rejecting higher bytes keeps every character equally likely.
        if (byte < 248)
            out += ALPHABET[byte % 62];
        if (out.length === length)
            return out;
    }
    return out + base62((0,external_node_crypto_.randomBytes)(length), length - out.length);
}
function checksum(body) {
    let value = (0,external_node_zlib_.crc32)(body);
    let out = '';
    for (let i = 0; i < CHECK_LENGTH; i++) {
        out = ALPHABET[value % 62] + out;
        value = Math.floor(value / 62);
    }
    return out;
}
function generateKey(prefix = KEY_PREFIX) {
    const body = base62((0,external_node_crypto_.randomBytes)(48), BODY_LENGTH);
    return `${prefix}${body}${checksum(body)}`;
}
/**
 * An orchestrate turn's credential (worker/orchestrate.ts): the shape of a key under its own
 * prefix, so the server tells it from an API key before any lookup and scanners can still spot it.
 */
const RUN_TOKEN_PREFIX = 'art_';
function isWellFormedRunToken(token) {
    return (token.startsWith(RUN_TOKEN_PREFIX) && isWellFormedKey(KEY_PREFIX + token.slice(RUN_TOKEN_PREFIX.length)));
}
function generateKeyId() {
    return `key_${base62((0,external_node_crypto_.randomBytes)(24), 16)}`;
}
/** Whether the text has the shape and checksum of a key (says nothing about whether it exists). */
function isWellFormedKey(key) {
    if (!KEY_PATTERN.test(key))
        return false;
    const body = key.slice(KEY_PREFIX.length, KEY_PREFIX.length + BODY_LENGTH);
    return checksum(body) === key.slice(KEY_PREFIX.length + BODY_LENGTH);
}
function hashKey(key) {
    return (0,external_node_crypto_.createHash)('sha256').update(key).digest('hex');
}
/** Constant-time comparison of two hex digests. */
function sameHash(a, b) {
    const left = Buffer.from(a, 'hex');
    const right = Buffer.from(b, 'hex');
    return left.length === right.length && (0,external_node_crypto_.timingSafeEqual)(left, right);
}
/** The part of a key that is safe to show in lists: its prefix and first characters. */
function keyHint(key) {
    return `${key.slice(0, KEY_PREFIX.length + 4)}…`;
}
/** Makes a new key for a team and stores its hash; the raw key is returned once and kept nowhere. */
async function issueKey(store, options) {
    const raw = generateKey();
    const id = generateKeyId();
    await store.createKey({
        id,
        ...options,
        hash: hashKey(raw),
        hint: keyHint(raw),
        created_at: new Date().toISOString(),
        revoked_at: null
    });
    return { raw, id };
}

// EXTERNAL MODULE: ./node_modules/fastify/fastify.js
var fastify = __webpack_require__(16703);
var fastify_default = /*#__PURE__*/__webpack_require__.n(fastify);
;// CONCATENATED MODULE: ./src/executor/store/types.ts
// The RunStore interface: everything the routes and the worker need from storage. SQLite (one
// machine) and PostgreSQL (several nodes on one database) implement it; routes and worker do not
// know which. Every read and write of a run is scoped to a team, except the worker's own (it runs
// every team's work).
/** How the run record's `artifacts` lists an artifact: a file's description, a pull request's data. */
function listEntryOf(artifact, data) {
    const { run_id: _run, team: _team, artifact_type, created_at, ...file } = artifact;
    if (artifact_type === 'FILE')
        return { ...file, created_at };
    if (artifact_type === 'PLAN')
        return {
            artifact_type,
            created_at,
            data: {
                document_uid: file.artifact_uid,
                artifact_uid: file.artifact_uid,
                title: file.description ?? 'Plan'
            }
        };
    return { artifact_type, created_at, data: JSON.parse(data.toString('utf8')) };
}
/**
 * The store cannot be reached (PostgreSQL restarting, the network down). Requests answer 503 with
 * Retry-After; workers pause and try again. The message never holds the store's address.
 */
class StoreUnavailableError extends Error {
    constructor(message, options) {
        super(message, options);
        this.name = 'StoreUnavailableError';
    }
}
/** An artifact row as the store's callers see it (no null description). */
function artifactOf(row) {
    const { description, ...rest } = row;
    const artifact = { ...rest, size: Number(rest.size) };
    if (description !== null && description !== undefined)
        artifact.description = description;
    return artifact;
}

;// CONCATENATED MODULE: ./src/executor/telemetry/log-format.ts
// Where the executor's log lines go and in which shape: pino's JSON lines for machines (a pipe, a
// file, a log collector), or one readable line per record for a person watching a terminal. The
// `log_format` config key chooses (auto: text when stderr is a terminal, JSON otherwise).
const LEVELS = {
    10: 'TRACE',
    20: 'DEBUG',
    30: 'INFO',
    40: 'WARN',
    50: 'ERROR',
    60: 'FATAL'
};
/** Fields every record has, shown in the line's head rather than as key=value. */
const HEAD = new Set(['level', 'time', 'msg', 'pid', 'hostname']);
/** The stream pino writes to: `out` itself for JSON, or a translator to text lines. */
function logStream(format, out = process.stderr) {
    const text = format === 'text' || (format === 'auto' && out.isTTY === true);
    if (!text)
        return out;
    return {
        write(chunk) {
            for (const line of chunk.split('\n'))
                if (line !== '')
                    out.write(`${inert(textLine(line))}\n`);
            return true;
        }
    };
}
/**
 * A line for a terminal with every control character (C0, DEL, C1) written as its `\u` escape: a
 * message may carry what a run or a client sent (a run's error, a CLI's words), and none of it may
 * move the cursor, retitle the window or hide the lines before it.
 */
function inert(line) {
    return line.replace(
    // eslint-disable-next-line no-control-regex -- finding control characters is the point
    /[\u0000-\u001f\u007f-\u009f]/g, c => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
}
/** One JSON record as `HH:MM:SS.mmmZ LEVEL message key=value …`; a line that is not JSON as it is. */
function textLine(json) {
    let record;
    try {
        record = JSON.parse(json);
    }
    catch {
        return json;
    }
    if (record === null || typeof record !== 'object')
        return json;
    const time = typeof record.time === 'number' ? new Date(record.time).toISOString().slice(11) : '';
    const level = LEVELS[record.level] ?? String(record.level ?? '');
    const parts = [time, level.padEnd(5), String(record.msg ?? '')];
    for (const [key, value] of Object.entries(record)) {
        if (HEAD.has(key) || value === undefined)
            continue;
        parts.push(`${key}=${log_format_showValue(key, value)}`);
    }
    return parts.filter(part => part !== '').join(' ');
}
function log_format_showValue(key, value) {
    // An error's message says what went wrong; its stack is for the JSON format.
    if (key === 'err' && value !== null && typeof value === 'object' && 'message' in value)
        return JSON.stringify(String(value.message));
    if (typeof value === 'string')
        return /^[^\s"=]+$/.test(value) ? value : JSON.stringify(value);
    return JSON.stringify(value);
}

;// CONCATENATED MODULE: ./src/executor/server/bounded-events.ts
// What one response that shows a whole run (the session page, the dashboard's run page, the
// conversation) holds of its transcript: never all of it at once. The events are read from the
// store page by page; the answer keeps the first events up to half of a byte budget (the head),
// every event that says how the run ended (state, exit, result, diff, artifacts, publishing, the
// note of a cut), and the newest of the rest up to the other half (the tail). What is left out is
// replaced by one `omitted` event: "… N more events, see the transcript", at the place of the
// first one left out. Memory stays within the budget plus one page, however long the transcript.
/** Bytes of events one response shows at most (besides the kinds always kept). */
const SHOWN_EVENT_BYTES = 1024 * 1024;
const PAGE_EVENTS = 200;
/** Kinds that say how a run went: few per run, each bounded, always shown. */
const KEPT_KINDS = new Set([
    'state',
    'exit',
    'result',
    'diff',
    'artifact',
    'publish',
    'truncated',
    'warning'
]);
/** About the bytes of an event: its text, or its JSON when it has none. */
function sizeOf(event) {
    return typeof event.text === 'string' && event.kind === 'output'
        ? event.text.length + 100
        : JSON.stringify(event).length;
}
/** The omitted-events marker, placed at `seq` (the first event left out). */
function omittedEvent(runId, seq, at, count, bytes) {
    return {
        seq,
        at,
        kind: 'omitted',
        omitted_events: count,
        omitted_bytes: bytes,
        text: `… ${count} more events (${bytes} bytes) are not shown here, see the transcript (GET /api/v1/agent/runs/${runId}/transcript?after=${seq - 1})`
    };
}
/** The run's events to show: head, kept kinds, tail and one marker for what was left out. */
async function boundedEvents(store, runId, budgetBytes = SHOWN_EVENT_BYTES) {
    const half = Math.floor(budgetBytes / 2);
    const head = [];
    let headBytes = 0;
    let headFull = false;
    const kept = [];
    let tail = [];
    let tailBytes = 0;
    let tailStart = 0;
    let omitted;
    const omit = ({ event, bytes }) => {
        omitted ??= { seq: event.seq, at: event.at, count: 0, bytes: 0 };
        if (event.seq < omitted.seq)
            Object.assign(omitted, { seq: event.seq, at: event.at });
        omitted.count++;
        omitted.bytes += bytes;
    };
    for (let after = 0;;) {
        const page = await store.listEvents(runId, { after, limit: PAGE_EVENTS });
        for (const event of page) {
            const bytes = sizeOf(event);
            if (!headFull && (head.length === 0 || headBytes + bytes <= half)) {
                head.push(event);
                headBytes += bytes;
                continue;
            }
            headFull = true;
            if (KEPT_KINDS.has(event.kind)) {
                kept.push(event);
                continue;
            }
            tail.push({ event, bytes });
            tailBytes += bytes;
            while (tailBytes > half && tailStart < tail.length) {
                const old = tail[tailStart++];
                tailBytes -= old.bytes;
                omit(old);
            }
            if (tailStart > 1024 && tailStart * 2 > tail.length) {
                tail = tail.slice(tailStart);
                tailStart = 0;
            }
        }
        if (page.length < PAGE_EVENTS)
            break;
        after = page.at(-1).seq;
        // The store may answer at once (SQLite): let other requests (/healthz, reads) in between pages.
        await new Promise(resolve => setImmediate(resolve));
    }
    const rest = [...kept, ...tail.slice(tailStart).map(sized => sized.event)].sort((a, b) => a.seq - b.seq);
    if (!omitted)
        return [...head, ...rest];
    const marker = omittedEvent(runId, omitted.seq, omitted.at, omitted.count, omitted.bytes);
    const before = rest.filter(event => event.seq < omitted.seq);
    const after = rest.filter(event => event.seq >= omitted.seq);
    return [...head, ...before, marker, ...after];
}

// EXTERNAL MODULE: external "node:http"
var external_node_http_ = __webpack_require__(37067);
var external_node_http_default = /*#__PURE__*/__webpack_require__.n(external_node_http_);
;// CONCATENATED MODULE: ./src/executor/server/problem.ts
// Every error answer is RFC 7807 problem+json with an error_code from the error reference.
// Problem helpers follow one contract, which their names say: `<thing>Problem(value)` returns why
// the value is refused (a message naming it and the expected form) or undefined, and throws nothing;
// `check<Thing>(…)` throws a ProblemError (the route's refusal); `build…Problem` returns a
// ProblemError without throwing; `sendProblem` writes one as the answer.


class ProblemError extends Error {
    code;
    detail;
    headers;
    statusOverride;
    constructor(code, detail, headers = {}, statusOverride) {
        super(detail);
        this.code = code;
        this.detail = detail;
        this.headers = headers;
        this.statusOverride = statusOverride;
    }
    get status() {
        return this.statusOverride ?? ERROR_CODES[this.code].status ?? 500;
    }
}
const TITLES = {
    400: 'Bad Request',
    401: 'Unauthorized',
    403: 'Forbidden',
    404: 'Not Found',
    409: 'Conflict',
    413: 'Content Too Large',
    415: 'Unsupported Media Type',
    422: 'Unprocessable Content',
    429: 'Too Many Requests',
    500: 'Internal Server Error',
    503: 'Service Unavailable'
};
/**
 * The answer to a request Node's HTTP parser refused before Fastify saw it (a header over the size
 * limit, a control byte in a header, a broken request line): written straight to the socket, but
 * problem+json like every other error.
 */
function writeClientError(error, socket) {
    if (error.code === 'ECONNRESET' || socket.destroyed)
        return;
    const status = error.code === 'HPE_HEADER_OVERFLOW' ? 431 : error.code === 'ERR_HTTP_REQUEST_TIMEOUT' ? 408 : 400;
    const detail = status === 431
        ? 'the request line and headers are larger than the server accepts'
        : status === 408
            ? 'the request was not received in time'
            : `the request is not valid HTTP/1.1 (${error.code ?? 'parse error'})`;
    const body = JSON.stringify(problemBody('invalid_request', detail, status));
    if (socket.writable) {
        socket.write(`HTTP/1.1 ${status} ${external_node_http_.STATUS_CODES[status]}\r\nContent-Type: application/problem+json\r\n` +
            `Content-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`);
    }
    socket.destroy(error);
}
/** The one builder of every problem body the executor sends. */
function problemBody(code, detail, status = ERROR_CODES[code].status ?? 500, instance, requestId) {
    const body = {
        type: `/api/v1/errors#${code}`,
        title: TITLES[status] ?? external_node_http_.STATUS_CODES[status] ?? 'Error',
        status,
        detail,
        error_code: code,
        retryable: ERROR_CODES[code].retryable
    };
    if (instance !== undefined)
        body.instance = instance.split('?')[0];
    if (requestId !== undefined)
        body.request_id = requestId;
    return body;
}
function sendProblem(reply, problem) {
    const status = problem.status;
    for (const [name, value] of Object.entries(problem.headers))
        reply.header(name, value);
    return reply
        .code(status)
        .type('application/problem+json')
        .send(problemBody(problem.code, problem.detail, status, reply.request.url, String(reply.request.id)));
}

;// CONCATENATED MODULE: ./src/executor/server/dashboard/assets.ts
// The dashboard's own stylesheet and script, served as files (/dashboard/app.css, /dashboard/app.js)
// so the Content-Security-Policy allows no inline style or script at all. The script only adds the
// live parts: everything it shows arrives as HTML the server rendered and escaped.
const CSS = `
:root{color-scheme:light dark;--bg:#fff;--fg:#1f2328;--muted:#59636e;--line:#d1d9e0;--code:#f6f8fa;--link:#0550ae;
--ok:#1a7f37;--bad:#cf222e;--run:#9a6700;--q:#59636e;--add:#dafbe1;--del:#ffebe9;--hunk:#ddf4ff}
@media (prefers-color-scheme:dark){:root{--bg:#0d1117;--fg:#e6edf3;--muted:#9198a1;--line:#3d444d;--code:#151b23;
--link:#6cb6ff;--ok:#3fb950;--bad:#f85149;--run:#d29922;--q:#9198a1;--add:#12361f;--del:#3c1618;--hunk:#0c2d6b}}
*{box-sizing:border-box}
body{font:15px/1.5 system-ui,sans-serif;margin:0;background:var(--bg);color:var(--fg)}
a{color:var(--link)}
header{display:flex;flex-wrap:wrap;gap:.5rem 1.2rem;align-items:center;padding:.6rem 1rem;border-bottom:1px solid var(--line)}
header nav{display:flex;gap:1rem}header nav a[aria-current]{font-weight:600}
.brand{font-weight:700;text-decoration:none;color:var(--fg)}
.sign-out{margin-left:auto;display:flex;gap:.5rem;align-items:center}.who{color:var(--muted)}
main{max-width:72rem;margin:0 auto;padding:1rem}
h1{font-size:1.5rem;margin:.5rem 0 1rem;overflow-wrap:anywhere}
button,input,select{font:inherit;color:inherit;background:var(--bg);border:1px solid var(--line);border-radius:6px;padding:.35rem .6rem}
button{cursor:pointer}button:focus-visible,a:focus-visible,input:focus-visible,select:focus-visible,summary:focus-visible{outline:2px solid var(--link);outline-offset:2px}
.danger{border-color:var(--bad);color:var(--bad)}
.badge{display:inline-block;padding:0 .5rem;border-radius:1rem;font-size:.8rem;font-weight:600;border:1px solid currentColor;white-space:nowrap}
.s-succeeded{color:var(--ok)}.s-failed,.s-error{color:var(--bad)}.s-inprogress,.s-claimed,.s-blocked{color:var(--run)}.s-queued,.s-pending,.s-cancelled{color:var(--q)}
.counts{list-style:none;display:flex;flex-wrap:wrap;gap:.4rem 1rem;padding:0;margin:0 0 1rem}
.filters{display:flex;flex-wrap:wrap;gap:.5rem 1rem;align-items:end;margin-bottom:1rem}
.filters label{display:flex;flex-direction:column;font-size:.85rem;color:var(--muted)}
table{border-collapse:collapse;width:100%}th,td{text-align:left;padding:.4rem .6rem .4rem 0;vertical-align:top;border-bottom:1px solid var(--line)}
.runs td a{overflow-wrap:anywhere}
.facts{width:auto}.facts th{color:var(--muted);font-weight:500}
.lines{white-space:pre-line}
pre{background:var(--code);padding:.6rem;overflow:auto;white-space:pre-wrap;word-break:break-word;border-radius:6px;margin:.3rem 0}
.diff span{display:block}.d-add{background:var(--add)}.d-del{background:var(--del)}.d-hunk{background:var(--hunk)}.d-file{font-weight:600}
.transcript{list-style:none;padding:0}.ev{margin:.5rem 0}.ev time{color:var(--muted);font-family:ui-monospace,monospace}
.muted,.live-status,.empty{color:var(--muted)}.error{color:var(--bad);font-weight:600}
.copy{width:100%;font-family:ui-monospace,monospace;font-size:.85rem}
.run-id{display:flex;gap:.5rem;align-items:center}.run-id input{max-width:28rem}
.cancel{margin:1rem 0}.cancel summary{display:inline-block;cursor:pointer;border:1px solid var(--bad);color:var(--bad);border-radius:6px;padding:.35rem .6rem}
.sign-in{display:flex;flex-direction:column;gap:.5rem;max-width:24rem}
.paging{display:flex;justify-content:space-between;margin:1rem 0}
.sr-only{position:absolute;width:1px;height:1px;overflow:hidden;clip:rect(0 0 0 0);white-space:nowrap}
@media (max-width:640px){
.runs thead{position:absolute;width:1px;height:1px;overflow:hidden;clip:rect(0 0 0 0)}
.runs tr{display:block;border-bottom:1px solid var(--line);padding:.4rem 0}.runs td{display:flex;gap:.6rem;border:0;padding:.1rem 0}
.runs td::before{content:attr(data-label);color:var(--muted);min-width:6.5rem}
.sign-out{margin-left:0}}
`;
const JS = `'use strict';
(function () {
  function parse(html) {
    var t = document.createElement('template');
    t.innerHTML = html;
    return t.content;
  }
  var source, stream;
  var status = document.getElementById('live-status');
  var table = document.getElementById('runs');
  if (table && window.EventSource) {
    source = new EventSource('/live' + location.search);
    source.addEventListener('open', function () { if (status) status.textContent = 'Live: updates appear as they happen.'; });
    source.addEventListener('run', function (m) {
      var data = JSON.parse(m.data);
      var row = parse(data.html).firstElementChild;
      var old = document.getElementById(row.id);
      if (old) old.replaceWith(row);
      else if (table.dataset.live === 'list') table.tBodies[0].prepend(row);
      var empty = document.getElementById('empty');
      if (empty && table.tBodies[0].rows.length) empty.remove();
    });
    source.addEventListener('counts', function (m) {
      document.getElementById('counts').replaceChildren(parse(JSON.parse(m.data).html));
    });
  }
  var run = document.getElementById('run');
  if (run && run.dataset.live === 'live' && window.EventSource) {
    stream = new EventSource('/live?run=' + encodeURIComponent(run.dataset.run) + '&after=' + run.dataset.after);
    stream.addEventListener('events', function (m) {
      document.getElementById('transcript').append(parse(JSON.parse(m.data).html));
    });
    stream.addEventListener('run', function (m) {
      var data = JSON.parse(m.data);
      document.getElementById('facts').replaceChildren(parse(data.html));
      if (data.done) {
        stream.close();
        var cancel = document.getElementById('cancel');
        if (cancel) cancel.remove();
        setTimeout(function () { location.reload(); }, 500);
      }
    });
  }
  // The session ended (signed out elsewhere, expired, or its key revoked): show the sign-in page.
  [source, stream].forEach(function (es) {
    if (es) es.addEventListener('signed-out', function () { es.close(); location.reload(); });
  });
  document.querySelectorAll('input.copy').forEach(function (input) {
    input.addEventListener('focus', function () { input.select(); });
  });
})();
`;

// EXTERNAL MODULE: external "node:os"
var external_node_os_ = __webpack_require__(48161);
;// CONCATENATED MODULE: ./src/executor/telemetry/heartbeat.ts
// Each executor process reports itself in the store every few seconds (its role, workers and how
// many are busy), so the dashboard of any node can show every node and which went silent. A node
// that stops cleanly removes its report; one that died stops reporting and shows as silent, and
// its report is forgotten after a day.


/** How often a node reports itself. */
const HEARTBEAT_MS = 5_000;
/** A node unheard for this long is shown as silent. */
const SILENT_AFTER_MS = 3 * HEARTBEAT_MS;
const FORGET_AFTER_MS = 24 * 60 * 60 * 1000;
function startHeartbeat(store, role, workers, busy, log) {
    const nodeId = `${(0,external_node_os_.hostname)().slice(0, 60)}-${process.pid}-${(0,external_node_crypto_.randomBytes)(3).toString('hex')}`;
    const startedAt = new Date().toISOString();
    let failing = false;
    const report = async () => {
        const now = Date.now();
        const node = {
            node_id: nodeId,
            role,
            workers,
            busy: busy(),
            started_at: startedAt,
            seen_at: now
        };
        try {
            await store.reportNode(node, now - FORGET_AFTER_MS);
            failing = false;
        }
        catch (error) {
            // The store being away is reported by /readyz and the worker; say it here once.
            if (!failing)
                log.warn({ err: error }, 'node heartbeat failed');
            failing = true;
        }
    };
    let last = report();
    const timer = setInterval(() => {
        last = last.then(report);
    }, HEARTBEAT_MS);
    timer.unref();
    return {
        nodeId,
        async stop() {
            clearInterval(timer);
            await last;
            await store.removeNode(nodeId).catch(() => undefined);
        }
    };
}

;// CONCATENATED MODULE: ./src/executor/server/dashboard/html.ts
// The dashboard's HTML building blocks: the one escape function every piece of run content goes
// through (prompts and output are written by strangers), the page frame with its navigation and
// sign-out form, and the small pieces the pages share (state badges, times, durations).


const STATES = ['QUEUED', 'INPROGRESS', 'SUCCEEDED', 'FAILED', 'CANCELLED'];
/** Terminal colour and cursor sequences (ESC [ … letter), which agents' output is full of. */
// eslint-disable-next-line no-control-regex -- finding control characters is the point
const TERMINAL_SEQUENCES = /\u001b\[[0-?]*[ -/]*[@-~]/g;
/** Control characters other than tab, line feed and carriage return (C0, DEL and C1). */
// eslint-disable-next-line no-control-regex -- finding control characters is the point
const CONTROLS = /[\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f-\u009f]/g;
/**
 * Escapes text for HTML content and quoted attribute values. Terminal sequences are dropped and any
 * other control character becomes U+FFFD, so nothing invisible of an agent's output reaches a page.
 */
function esc(value) {
    return String(value ?? '')
        .replace(TERMINAL_SEQUENCES, '')
        .replace(CONTROLS, '\uFFFD')
        .replace(/[&<>"']/g, ch => `&#${ch.charCodeAt(0)};`);
}
/** A whole page: our own CSS and JS files only, so the CSP needs no inline anything. */
function page(title, body, viewer, current = '') {
    const link = (href, label) => `<a href="${href}"${current === href ? ' aria-current="page"' : ''}>${label}</a>`;
    const nav = viewer
        ? `<nav aria-label="Dashboard">${link('/', 'Runs')}${link('/schedules', 'Schedules')}${link('/webhooks', 'Webhooks')}${link('/environments', 'Environments')}</nav>
<form method="post" action="/sign-out" class="sign-out"><input type="hidden" name="csrf" value="${esc(viewer.csrf)}">
<span class="who">${esc(viewer.keyName)} · team ${esc(viewer.team)}</span> <button type="submit">Sign out</button></form>`
        : '';
    return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="color-scheme" content="light dark">
<title>${esc(title)} · agent-run</title>
<link rel="stylesheet" href="/dashboard/app.css">
<script src="/dashboard/app.js" defer></script>
</head><body>
<header><a class="brand" href="/">agent-run</a>${nav}</header>
<main id="main">
${body}
</main>
</body></html>
`;
}
function badge(state) {
    return `<span class="badge s-${esc(state.toLowerCase())}">${esc(state)}</span>`;
}
/** An ISO time shown as `2026-11-23 16:54:49 UTC`, machine-readable in the datetime attribute. */
function time(iso) {
    if (!iso)
        return '';
    return `<time datetime="${esc(iso)}">${esc(iso.slice(0, 19).replace('T', ' '))} UTC</time>`;
}
/** How long a run ran, written as durations are in the configuration: `45s`, `30m`, `1h2m5s`. */
function duration(run, now = Date.now()) {
    if (!run.started_at)
        return '';
    const end = run.completed_at ? Date.parse(run.completed_at) : now;
    const text = formatDuration(end - Date.parse(run.started_at));
    return run.completed_at ? text : `${text} so far`;
}
/** Text with `backtick` spans shown as code, as the Markdown it is usually written in means. */
function inlineCode(text) {
    const parts = String(text ?? '').split('`');
    // An unmatched backtick stays a backtick.
    if (parts.length % 2 === 0)
        parts[parts.length - 2] += `\`${parts.pop()}`;
    return parts
        .map((part, i) => (i % 2 === 0 ? esc(part) : part === '' ? '``' : `<code>${esc(part)}</code>`))
        .join('');
}
/**
 * A same-origin path to return to after sign-in (`/runs/r_1?x=y`), or undefined for anything
 * else: another origin, a scheme, `//host`, backslashes or control characters.
 */
function localPath(value) {
    if (typeof value !== 'string' || value.length > 2000)
        return undefined;
    if (!value.startsWith('/') || /^\/[/\\]/.test(value) || value.includes('\\'))
        return undefined;
    for (const ch of value)
        if (ch.charCodeAt(0) < 0x20 || ch.charCodeAt(0) === 0x7f)
            return undefined;
    const url = new URL(value, 'http://dashboard.invalid');
    if (url.origin !== 'http://dashboard.invalid')
        return undefined;
    return `${url.pathname}${url.search}${url.hash}`;
}
/** The run's title, else its prompt's first line (shortened). */
function heading(run) {
    if (run.title)
        return run.title;
    const line = run.prompt.split('\n', 1)[0].trim();
    return line.length > 120 ? `${line.slice(0, 119)}…` : line || '(empty prompt)';
}

;// CONCATENATED MODULE: ./src/executor/server/dashboard/environments-page.ts
// The configured environments as a signed-in team sees them: what each one runs and how many of the
// team's runs wait or run in it. Only what is safe to show: never a secret, an `env` value (or
// even the variables' names), a setup command or the source path. Below them, the executor nodes on
// this store as their heartbeats report them, with their workers busy and free.



function ago(ms) {
    const seconds = Math.max(0, Math.round(ms / 1000));
    return seconds < 120 ? `${seconds} s ago` : `${Math.round(seconds / 60)} min ago`;
}
function nodesHtml(nodes, now) {
    if (nodes.length === 0)
        return '<p class="muted">No node has reported itself yet.</p>';
    const rows = nodes.map(node => {
        const silent = now - node.seen_at > SILENT_AFTER_MS;
        const status = silent
            ? '<span class="badge s-failed">silent</span>'
            : '<span class="badge s-succeeded">alive</span>';
        const free = Math.max(0, node.workers - node.busy);
        return `<tr id="node-${esc(node.node_id)}">
<td data-label="Node"><code>${esc(node.node_id)}</code></td>
<td data-label="Status">${status}</td>
<td data-label="Role">${esc(node.role)}</td>
<td data-label="Workers">${esc(node.busy)} busy, ${esc(free)} free</td>
<td data-label="Last heard">${esc(ago(now - node.seen_at))}</td>
</tr>`;
    });
    return `<table class="runs"><thead><tr><th scope="col">Node</th><th scope="col">Status</th><th scope="col">Role</th><th scope="col">Workers</th><th scope="col">Last heard</th></tr></thead>
<tbody>${rows.join('\n')}</tbody></table>`;
}
function renderEnvironments(viewer, config, active, nodes, now = Date.now()) {
    const tally = (env, state) => active.filter(r => r.environment_id === env && r.state === state).length;
    const rows = config.environments.map(env => {
        const q = new URLSearchParams({ environment: env.id }).toString();
        return `<tr>
<td data-label="Environment"><a href="/?${esc(q)}">${esc(env.id)}</a>${env.name && env.name !== env.id ? ` <span class="muted">${esc(env.name)}</span>` : ''}</td>
<td data-label="Agent">${esc(env.agent.kind)}</td>
<td data-label="Image">${env.image ? `<code>${esc(env.image.ref)}</code>` : '<span class="muted">host</span>'}</td>
<td data-label="Queued">${tally(env.id, 'QUEUED')}</td>
<td data-label="Running">${tally(env.id, 'INPROGRESS')}</td>
<td data-label="At once">${esc(env.maxConcurrentRuns)}</td>
<td data-label="Time limit">${esc(formatDuration(env.timeoutMs))}</td>
</tr>`;
    });
    const body = `<h1>Environments</h1>
<p>This executor runs up to ${esc(config.workers)} runs at once across its environments. Queued and running counts are your team's runs.</p>
<table class="runs"><thead><tr><th scope="col">Environment</th><th scope="col">Agent</th><th scope="col">Image</th><th scope="col">Queued</th><th scope="col">Running</th><th scope="col">At once</th><th scope="col">Time limit</th></tr></thead>
<tbody>${rows.join('\n')}</tbody></table>
<h2>Nodes</h2>
<p>Every executor process on this store reports itself every ${SILENT_AFTER_MS / 3000} s; one unheard for ${SILENT_AFTER_MS / 1000} s is shown as silent.</p>
${nodesHtml(nodes, now)}`;
    return page('Environments', body, viewer, '/environments');
}

;// CONCATENATED MODULE: ./src/executor/server/dashboard/list-page.ts
// The sign-in page and the runs list: newest first, paged by the seq of the last row shown,
// filtered by state, environment, text and created range, all kept in the URL so a filtered view
// can be bookmarked and shared. Readable without JavaScript; app.js makes it live.

const PAGE_SIZE = 25;
const DATE = /^\d{4}-\d{2}-\d{2}$/;
/**
 * Dates typed as the list shows them (YYYY-MM-DD, UTC days), not the browser's locale picker, which
 * shows mm/dd/yyyy or dd/mm/yyyy beside a list of ISO times.
 */
const DATE_INPUT = 'placeholder="YYYY-MM-DD" pattern="\\d{4}-\\d{2}-\\d{2}" inputmode="numeric" size="10" title="a UTC date, YYYY-MM-DD"';
/** Reads the filters from the query string; anything malformed is ignored, not an error page. */
function readFilters(query) {
    const text = (name, max = 200) => {
        const value = query[name];
        return typeof value === 'string' ? value.slice(0, max) : '';
    };
    const before = Number(text('before', 20));
    return {
        state: /^[A-Z]{1,20}$/.test(text('state')) ? text('state') : '',
        environment: text('environment', 100),
        q: text('q').trim(),
        from: DATE.test(text('from')) ? text('from') : '',
        to: DATE.test(text('to')) ? text('to') : '',
        ...(Number.isSafeInteger(before) && before > 0 ? { before } : {})
    };
}
function listQuery(filters, limit) {
    const query = { limit };
    if (filters.before !== undefined)
        query.beforeSeq = filters.before;
    if (filters.state)
        query.states = [filters.state];
    if (filters.environment)
        query.environmentId = filters.environment;
    if (filters.q)
        query.search = filters.q;
    if (filters.from)
        query.createdAfter = `${filters.from}T00:00:00.000Z`;
    if (filters.to)
        query.createdBefore = `${filters.to}T23:59:59.999Z`;
    return query;
}
/** Whether a run belongs in the list these filters show (for live updates). */
function matches(filters, run) {
    if (filters.state && run.state !== filters.state)
        return false;
    if (filters.environment && run.environment_id !== filters.environment)
        return false;
    if (filters.from && run.created_at < `${filters.from}T00:00:00.000Z`)
        return false;
    if (filters.to && run.created_at > `${filters.to}T23:59:59.999Z`)
        return false;
    if (filters.q) {
        const needle = filters.q.toLowerCase();
        if (!`${run.title ?? ''}\n${run.prompt}`.toLowerCase().includes(needle))
            return false;
    }
    return true;
}
function filterQuery(filters, before) {
    const params = new URLSearchParams();
    for (const name of ['state', 'environment', 'q', 'from', 'to'])
        if (filters[name])
            params.set(name, filters[name]);
    if (before !== undefined)
        params.set('before', String(before));
    const text = params.toString();
    return text ? `?${text}` : '';
}
function runRow(run) {
    const id = esc(run.run_id);
    return `<tr id="run-${id}" data-state="${esc(run.state)}">
<td data-label="State">${badge(run.state)}</td>
<td data-label="Run"><a href="/runs/${encodeURIComponent(run.run_id)}">${esc(heading(run))}</a></td>
<td data-label="Environment">${esc(run.environment_id)}</td>
<td data-label="Creator">${esc(run.creator_name)}</td>
<td data-label="Created">${time(run.created_at)}</td>
<td data-label="Duration">${esc(duration(run))}</td>
</tr>`;
}
function countsHtml(counts) {
    const states = [...new Set([...STATES, ...Object.keys(counts)])];
    return states
        .map(s => `<li>${badge(s)} <span data-count="${esc(s)}">${counts[s] ?? 0}</span></li>`)
        .join('');
}
function renderList(viewer, filters, runs, more, counts, environments) {
    const option = (value, selected, label = value) => `<option value="${esc(value)}"${value === selected ? ' selected' : ''}>${esc(label)}</option>`;
    const states = [...new Set([...STATES, ...Object.keys(counts)])];
    const form = `<form method="get" action="/" class="filters" role="search" aria-label="Filter runs">
<label>State <select name="state">${option('', filters.state, 'any')}${states.map(s => option(s, filters.state)).join('')}</select></label>
<label>Environment <select name="environment">${option('', filters.environment, 'any')}${environments.map(e => option(e, filters.environment)).join('')}</select></label>
<label>Text <input type="search" name="q" value="${esc(filters.q)}" placeholder="title or prompt"></label>
<label>Created from <input type="text" name="from" value="${esc(filters.from)}" ${DATE_INPUT}></label>
<label>Created until <input type="text" name="to" value="${esc(filters.to)}" ${DATE_INPUT}></label>
<button type="submit">Filter</button> <a href="/">Clear</a>
</form>`;
    const rows = runs.map(runRow).join('\n');
    const last = runs.at(-1);
    const next = more && last ? `<a rel="next" href="/${esc(filterQuery(filters, last.seq))}">Older runs →</a>` : '';
    const newest = filters.before !== undefined ? `<a href="/${esc(filterQuery(filters))}">← Newest runs</a>` : '';
    const body = `<h1>Runs</h1>
<ul class="counts" id="counts" aria-label="Runs per state">${countsHtml(counts)}</ul>
${form}
<table class="runs" id="runs" data-live="${filters.before === undefined ? 'list' : 'page'}">
<caption class="sr-only">Runs, newest first</caption>
<thead><tr><th scope="col">State</th><th scope="col">Run</th><th scope="col">Environment</th><th scope="col">Creator</th><th scope="col">Created</th><th scope="col">Duration</th></tr></thead>
<tbody>${rows}</tbody></table>
${runs.length === 0 ? '<p class="empty" id="empty">No runs match.</p>' : ''}
<nav class="paging" aria-label="Pages">${newest} ${next}</nav>
<p class="live-status" id="live-status" aria-live="polite"></p>`;
    return page('Runs', body, viewer, '/');
}
function renderSignIn(problem, next) {
    const body = `<h1>Sign in</h1>
<p>Sign in with an API key of your team (the executor's <code>keys create</code> command makes one). The key stays on the server; your browser gets a session cookie.</p>
${problem ? `<p class="error" role="alert">${esc(problem)}</p>` : ''}
<form method="post" action="/sign-in" class="sign-in">
${next ? `<input type="hidden" name="next" value="${esc(next)}">` : ''}
<label for="api_key">API key</label>
<input id="api_key" name="api_key" type="password" autocomplete="off" required spellcheck="false">
<button type="submit">Sign in</button>
</form>`;
    return page('Sign in', body);
}
function renderProblem(viewer, title, message) {
    return page(title, `<h1>${esc(title)}</h1><p role="alert">${esc(message)}</p><p><a href="/">Back to the runs</a></p>`, viewer);
}

;// CONCATENATED MODULE: ./src/executor/server/run-view.ts
// The one renderer of a run, shared by the shareable session page (routes/sessions.ts) and the
// dashboard's run page (dashboard/run-page.ts): its facts, prompt, transcript, result (as text),
// the diff with coloured lines, and its artifacts with download links. Each page frames it and
// says where an artifact downloads from. Everything the agent wrote is hostile: it goes through
// esc() (HTML escaped, control characters dropped), links only ever point at http(s) addresses,
// and no event is shown as raw JSON (which would show fields meant for programs, not people).


function pre(text) {
    return `<pre>${esc(text)}</pre>`;
}
/** A unified diff with each line classed by its first character (added, deleted, hunk, file). */
function diffHtml(diff) {
    const lines = String(diff ?? '')
        .replace(/\n$/, '')
        .split('\n');
    const cls = (line) => line.startsWith('+++') || line.startsWith('---')
        ? 'd-file'
        : line.startsWith('+')
            ? 'd-add'
            : line.startsWith('-')
                ? 'd-del'
                : line.startsWith('@@')
                    ? 'd-hunk'
                    : 'd-ctx';
    // Each line is a block of its own (coloured across the width), so no newline is written inside.
    return `<pre class="diff">${lines.map(l => `<span class="${cls(l)}">${esc(l) || ' '}</span>`).join('')}</pre>`;
}
/** A link to an http(s) address written by someone else; anything else stays text. */
function webLink(url, label) {
    return typeof url === 'string' && /^https?:\/\/[^\s]+$/i.test(url)
        ? `<a href="${esc(url)}" rel="noopener noreferrer">${esc(label)}</a>`
        : esc(label);
}
/** A tool call's input (JSON text) as lines of `name: value`, the way a person reads it. */
function toolInput(input) {
    let value;
    try {
        value = JSON.parse(input);
    }
    catch {
        return input ? pre(input) : '';
    }
    if (value === null || typeof value !== 'object' || Array.isArray(value))
        return pre(String(input));
    const lines = Object.entries(value).map(([name, field]) => `${name}: ${typeof field === 'string' ? field : JSON.stringify(field)}`);
    return lines.length > 0 ? pre(lines.join('\n')) : '';
}
const exitText = (code, signal) => `${code === null || code === undefined ? 'no exit code' : `exit <b>${esc(code)}</b>`}${signal ? ` (${esc(signal)})` : ''}`;
/** One transcript entry; every kind has its own case (the default only compiles when none is missing). */
function eventHtml(event) {
    const at = `<time datetime="${esc(event.at)}">${esc(event.at.slice(11, 19))}</time>`;
    const item = (cls, inner) => `<li class="ev ev-${cls}" data-seq="${esc(event.seq)}">${at} ${inner}</li>`;
    const e = known(event);
    switch (e.kind) {
        case 'state':
            return item('state', `state ${badge(String(e.state))}${e.status_message ? ` <span class="lines">${esc(e.status_message)}</span>` : ''}`);
        case 'message':
            return item('message', `agent${pre(e.text)}`);
        case 'result':
            return item('message', `result${pre(e.text)}`);
        case 'output':
            return item('output', `${esc(e.stream ?? 'output')}${pre(e.text)}`);
        case 'command':
        case 'setup':
            return item('command', `${e.kind} <code>${esc(e.command)}</code> → ${exitText(e.exit_code)}${e.output ? pre(e.output) : ''}`);
        case 'file':
            return item('file', `file <code>${esc(e.path)}</code> ${esc(e.change)}`);
        case 'diff': {
            const files = Array.isArray(e.files) ? e.files : [];
            const more = typeof e.more_files === 'number' ? `, and ${esc(e.more_files)} more` : '';
            const list = files.map(f => `<code>${esc(f?.path)}</code> ${esc(f?.change)}`).join(', ') + more;
            const cut = e.truncated ? ' <span class="muted">(the diff is cut at its size limit)</span>' : '';
            return item('diff', `files changed: ${list}${cut}${diffHtml(e.diff)}`);
        }
        case 'exit':
            return item('exit', `agent exited: ${exitText(e.exit_code, e.signal)}`);
        case 'notice':
            return item('other', `notice <span class="lines">${esc(e.text)}</span>`);
        case 'warning':
            return item('other', `<span class="error">warning</span> <span class="lines">${esc(e.message)}</span>`);
        case 'truncated':
        case 'omitted':
            return item('other', `<b>${esc(e.text)}</b>`);
        case 'artifact':
            return item('file', `artifact <code>${esc(e.filename)}</code> ${esc(e.size)} bytes`);
        case 'action':
            return item('command', `tool <code>${esc(e.name)}</code>${toolInput(e.input)}`);
        case 'action_result':
            return item('output', `${e.ok === false ? '<span class="error">tool failed</span>' : 'tool result'}${pre(e.output)}`);
        case 'followup':
            return item('other', `<b>follow-up</b> (${esc(e.mode)})${pre(e.message)}`);
        case 'turn':
            return item('other', `<b>turn ${esc(e.turn)}</b> begins (${esc(e.mode)} mode)`);
        case 'agent_session':
            return item('other', `agent session <code>${esc(e.session_id)}</code> (${esc(e.harness)})`);
        case 'publish': {
            const commit = typeof e.commit === 'string' ? e.commit.slice(0, 12) : '';
            const pr = e.pull_request_url
                ? `, ${webLink(e.pull_request_url, `pull request${e.pull_request_number ? ` #${e.pull_request_number}` : ''}`)}`
                : '';
            return item('other', `published commit <code>${esc(commit)}</code> to branch <code>${esc(e.branch)}</code>${pr}`);
        }
        default:
            return item('other', unknownHtml(otherKind(e)));
    }
}
/** A kind this version does not know (written by a newer executor): its name and its text, if any. */
function unknownHtml(event) {
    const text = [event.text, event.message].find(value => typeof value === 'string');
    return `${esc(event.kind)}${text === undefined ? '' : pre(text)}`;
}
function factsHtml(run) {
    const rows = [
        ['State', badge(run.state)],
        ['Environment', esc(run.environment_id)],
        ['Creator', `${esc(run.creator_name)} (${esc(run.creator_type)})`],
        ['Created', time(run.created_at)],
        ['Started', time(run.started_at)],
        ['Completed', time(run.completed_at)],
        ['Duration', esc(duration(run))]
    ];
    if (run.status_message)
        rows.push(['Status', `<span class="lines">${esc(run.status_message)}</span>`]);
    if (run.error_code)
        rows.push(['Error code', `<code>${esc(run.error_code)}</code>`]);
    return rows.map(([k, v]) => `<tr><th scope="row">${k}</th><td>${v}</td></tr>`).join('');
}
/** The run's answer: the text of its last `result` event. */
function resultHtml(events) {
    const result = events.filter(e => e.kind === 'result').at(-1);
    return result ? `<h2>Result</h2><div id="result">${pre(result.text)}</div>` : '';
}
function artifactsHtml(artifacts, hrefOf) {
    if (artifacts.length === 0)
        return '';
    const items = artifacts.map(a => `<li><a href="${esc(hrefOf(a))}" download>${esc(a.filename)}</a> <span class="muted">${esc(a.filepath)} · ${esc(a.mime_type)} · ${esc(a.size)} bytes</span>${a.description ? ` — ${inlineCode(a.description)}` : ''}</li>`);
    return `<h2>Artifacts</h2><ul class="artifacts" id="artifacts">${items.join('')}</ul>`;
}
/** The run itself: facts, prompt, transcript, result and artifacts. */
function runViewHtml(run, events, artifacts, options) {
    const last = events.at(-1)?.seq ?? 0;
    return `<div id="run" data-run="${esc(run.run_id)}" data-after="${esc(last)}" data-live="${run_isTerminalState(run.state) ? 'done' : 'live'}">
<table class="facts"><tbody id="facts">${factsHtml(run)}</tbody></table>
${options.afterFacts ?? ''}
</div>
<h2>Prompt</h2>${pre(run.prompt)}
<h2>Transcript</h2>
<ol class="transcript" id="transcript" aria-live="polite">${events.map(eventHtml).join('\n')}</ol>
${resultHtml(events)}
${options.afterResult ?? ''}
${artifactsHtml(artifacts, options.artifactHref)}`;
}

;// CONCATENATED MODULE: ./src/executor/server/dashboard/live.ts
// Server-Sent Events for the dashboard's live parts, fed by the store's change notifications (the
// same ones that wake held reads: this process's writes at once, other nodes' by notification).
// The list stream sends a row, rendered here, for each change of a run the viewer's filters show,
// and the counts per state; the run stream sends the transcript entries after the last one the
// page has, and the run's facts when its state changes.



/** How often the run stream looks at the transcript when no notification came. */
const REREAD_MS = 2000;
/** Events per store read of the run stream, and reads one refresh makes at most before the next. */
const live_PAGE_EVENTS = 200;
const MAX_PAGES_PER_REFRESH = 50;
/**
 * Opens the stream and returns a function that sends one event; the connection ends on `close`,
 * and (with a `signed-out` event first) when the session ends: checked before every update and
 * with every keep-alive ping.
 */
function live_open(request, reply, headers, session) {
    reply.hijack();
    reply.raw.writeHead(200, {
        ...headers,
        'content-type': 'text/event-stream; charset=utf-8',
        'cache-control': 'no-store',
        'x-request-id': String(request.id)
    });
    reply.raw.write('retry: 2000\n\n');
    const cleanups = [];
    let closed = false;
    const close = () => {
        if (closed)
            return;
        closed = true;
        cleanups.forEach(c => c());
    };
    request.raw.on('close', close);
    const send = (event, data) => {
        if (!reply.raw.writableEnded)
            reply.raw.write(`event: ${event}\ndata: ${JSON.stringify(data)}\n\n`);
    };
    const end = () => {
        close();
        reply.raw.end();
    };
    /** False (and the stream ended) once the session is gone. */
    const stillSignedIn = async () => {
        if (closed)
            return false;
        if (await session())
            return true;
        send('signed-out', {});
        end();
        return false;
    };
    const ping = setInterval(() => {
        void stillSignedIn()
            .then(ok => ok && reply.raw.write(': ping\n\n'))
            .catch(() => undefined);
    }, 15_000);
    cleanups.push(() => clearInterval(ping));
    return { send, onClose: (cleanup) => cleanups.push(cleanup), end, stillSignedIn };
}
/** A queue of one: work triggered while it runs is done once more afterwards, never in parallel. */
function serial(work, fail) {
    let running = false;
    let again = false;
    const go = () => {
        if (running) {
            again = true;
            return;
        }
        running = true;
        work()
            .catch(fail)
            .finally(() => {
            running = false;
            if (again) {
                again = false;
                go();
            }
        });
    };
    return go;
}
function listStream(store, team, filters, request, reply, headers, session) {
    const stream = live_open(request, reply, headers, session);
    const pending = new Set();
    const flush = serial(async () => {
        if (!(await stream.stillSignedIn()))
            return;
        const ids = [...pending];
        pending.clear();
        for (const id of ids) {
            const run = await store.getRun(team, id);
            if (run && matches(filters, run))
                stream.send('run', { id: run.run_id, html: runRow(run) });
        }
        stream.send('counts', { html: countsHtml(await store.countRunsByState(team)) });
    }, error => request.log.warn({ err: error }, 'dashboard list stream'));
    stream.onClose(store.onChange(change => {
        pending.add(change.run_id);
        flush();
    }));
}
function runStream(store, team, runId, after, request, reply, headers, session) {
    const stream = live_open(request, reply, headers, session);
    let last = after;
    let state = '';
    const refresh = serial(async () => {
        if (!(await stream.stillSignedIn()))
            return;
        const run = await store.getRun(team, runId);
        if (!run) {
            stream.end();
            return;
        }
        // Page by page, so a long transcript streams instead of being built at once.
        for (let pages = 0; pages < MAX_PAGES_PER_REFRESH; pages++) {
            const events = await store.listEvents(runId, { after: last, limit: live_PAGE_EVENTS });
            if (events.length === 0)
                break;
            last = events.at(-1).seq;
            stream.send('events', { html: events.map(eventHtml).join('\n'), last });
            if (events.length < live_PAGE_EVENTS)
                break;
        }
        if (run.state !== state) {
            state = run.state;
            stream.send('run', { state, html: factsHtml(run), done: run_isTerminalState(run.state) });
        }
    }, error => request.log.warn({ err: error }, 'dashboard run stream'));
    stream.onClose(store.onEvent(id => id === runId && refresh()));
    stream.onClose(store.onChange(change => change.run_id === runId && refresh()));
    // Another process's appends to a shared SQLite file are not announced (only its run changes
    // are): like a held transcript read, look again now and then.
    const reread = setInterval(refresh, REREAD_MS);
    stream.onClose(() => clearInterval(reread));
    refresh();
}

;// CONCATENATED MODULE: ./src/executor/server/dashboard/run-page.ts
// The dashboard's page of one run: the shared run renderer (../run-view.ts: facts, prompt,
// transcript, result, diff, artifacts) framed with what only a signed-in viewer gets: the run id to
// copy, the session link, the usage figures, the commands that fetch the run from a terminal, and a
// "Cancel run" button behind a confirmation while it can still be cancelled. Every piece of run
// content goes through esc(); app.js appends new transcript entries as the server renders them.


function cancelHtml(run, viewer) {
    if (run_isTerminalState(run.state))
        return '';
    return `<details class="cancel" id="cancel"><summary>Cancel run</summary>
<form method="post" action="/runs/${encodeURIComponent(run.run_id)}/cancel">
<input type="hidden" name="csrf" value="${esc(viewer.csrf)}">
<p>The agent is stopped and the run ends CANCELLED. This cannot be undone.</p>
<button type="submit" class="danger">Yes, cancel this run</button>
</form></details>`;
}
/** The run's usage and cost figures as its agent reported them (request_usage). */
function usageHtml(run) {
    if (!run.request_usage)
        return '';
    let usage;
    try {
        usage = JSON.parse(run.request_usage);
    }
    catch {
        return '';
    }
    if (usage === null || typeof usage !== 'object' || Array.isArray(usage))
        return '';
    const rows = Object.entries(usage).map(([name, value]) => `<tr><th scope="row">${esc(name.replace(/_/g, ' '))}</th><td>${esc(typeof value === 'object' ? JSON.stringify(value) : value)}</td></tr>`);
    if (rows.length === 0)
        return '';
    return `<h2>Usage</h2><table class="facts usage" id="usage"><tbody>${rows.join('')}</tbody></table>`;
}
function commandsHtml(run, baseUrl) {
    const id = run.run_id;
    const q = (text) => `'${text.replace(/'/g, `'\\''`)}'`;
    const cli = `agent-run get ${q(id)}`;
    const curl = `curl -H "Authorization: Bearer $AGENT_RUN_API_KEY" ${q(`${baseUrl}/api/v1/agent/runs/${encodeURIComponent(id)}`)}`;
    return `<h2>From a terminal</h2>
<p><label for="cmd-cli">agent-run</label><input id="cmd-cli" class="copy" readonly value="${esc(cli)}"></p>
<p><label for="cmd-curl">curl</label><input id="cmd-curl" class="copy" readonly value="${esc(curl)}"></p>`;
}
function renderRun(viewer, run, events, artifacts, baseUrl, sessionLink) {
    const body = `<h1>${esc(heading(run))}</h1>
<p class="run-id"><label for="run-id">Run id</label> <input id="run-id" class="copy" readonly value="${esc(run.run_id)}"></p>
${sessionLink ? `<p class="session-link"><a id="session-link" href="${esc(sessionLink)}">Session page</a> <span class="muted">(shareable: whoever has the link sees the transcript, no sign-in)</span></p>` : ''}
${runViewHtml(run, events, artifacts, {
        artifactHref: a => `/runs/${encodeURIComponent(run.run_id)}/artifacts/${encodeURIComponent(a.artifact_uid)}`,
        afterFacts: cancelHtml(run, viewer),
        afterResult: usageHtml(run)
    })}
${commandsHtml(run, baseUrl)}`;
    return page(heading(run), body, viewer);
}

;// CONCATENATED MODULE: ./src/executor/server/dashboard/schedules-page.ts
// The team's scheduled agents as a signed-in person sees them: each schedule's cron expression,
// state, next and last fire, why its last due time started nothing, its last runs, and a pause or
// resume button (a form with the session's CSRF token, checked like a run's cancel).

function lastRuns(runs) {
    if (runs.length === 0)
        return '<span class="muted">none yet</span>';
    return runs
        .map(run => `<a href="/runs/${esc(encodeURIComponent(run.run_id))}" title="${esc(heading(run))}">${badge(run.state)}</a>`)
        .join(' ');
}
function renderSchedules(viewer, schedules) {
    const rows = schedules.map(({ schedule, runs }) => {
        const id = esc(encodeURIComponent(schedule.id));
        const action = schedule.enabled ? 'pause' : 'resume';
        const next = schedule.next_run_ms === null ? null : new Date(schedule.next_run_ms).toISOString();
        return `<tr id="schedule-${esc(schedule.id)}">
<td data-label="Schedule">${esc(schedule.spec.name)}<br><code class="muted">${esc(schedule.id)}</code></td>
<td data-label="Cron"><code>${esc(schedule.spec.cron_schedule)}</code> <span class="muted">${esc(schedule.spec.time_zone)}</span></td>
<td data-label="State">${schedule.enabled ? '<span class="badge s-succeeded">enabled</span>' : '<span class="badge s-cancelled">paused</span>'}</td>
<td data-label="Next fire">${next ? time(next) : '<span class="muted">none</span>'}</td>
<td data-label="Last fire">${schedule.last_ran ? time(schedule.last_ran) : '<span class="muted">never</span>'}${schedule.last_spawn_error
            ? `<br><span class="spawn-error">${esc(schedule.last_spawn_error)}</span>`
            : ''}</td>
<td data-label="Last runs">${lastRuns(runs)}</td>
<td data-label=""><form method="post" action="/schedules/${id}/${action}"><input type="hidden" name="csrf" value="${esc(viewer.csrf)}"><button type="submit">${action === 'pause' ? 'Pause' : 'Resume'}</button></form></td>
</tr>`;
    });
    const table = rows.length === 0
        ? '<p class="muted">Your team has no schedules. Create one with <code>agent-run schedules create</code> or <code>POST /api/v1/agent/schedules</code>.</p>'
        : `<table class="runs"><thead><tr><th scope="col">Schedule</th><th scope="col">Cron</th><th scope="col">State</th><th scope="col">Next fire</th><th scope="col">Last fire</th><th scope="col">Last runs</th><th scope="col"></th></tr></thead>
<tbody>${rows.join('\n')}</tbody></table>`;
    return page('Schedules', `<h1>Schedules</h1>\n${table}`, viewer, '/schedules');
}

;// CONCATENATED MODULE: ./src/executor/server/dashboard/webhooks-page.ts
// The team's webhook endpoints as a signed-in person sees them: each endpoint's URL, the events it
// takes, whether it is enabled (and why not), and its delivery log, newest first: the event, the
// run, the attempts, the receiver's last answer or error and when the next attempt is due. Secrets
// are never shown here.

const STATUS_CLASS = {
    succeeded: 's-succeeded',
    pending: 's-queued',
    failed: 's-failed'
};
function log(deliveries) {
    if (deliveries.length === 0)
        return '<p class="muted">No deliveries yet.</p>';
    const rows = deliveries.map(d => `<tr>
<td data-label="Event"><code>${esc(d.event_type)}</code><br><code class="muted">${esc(d.id)}</code></td>
<td data-label="Run"><a href="/runs/${esc(encodeURIComponent(d.run_id))}">${esc(d.run_id)}</a></td>
<td data-label="Status"><span class="badge ${STATUS_CLASS[d.status] ?? ''}">${esc(d.status)}</span></td>
<td data-label="Attempts">${d.attempts}</td>
<td data-label="Last answer">${d.last_status === null ? '<span class="muted">none</span>' : esc(d.last_status)}${d.last_error ? `<br><span class="spawn-error">${esc(d.last_error)}</span>` : ''}</td>
<td data-label="Next attempt">${d.status === 'pending' && d.next_attempt_ms !== null
        ? time(new Date(d.next_attempt_ms).toISOString())
        : '<span class="muted">-</span>'}</td>
</tr>`);
    return `<table class="runs"><thead><tr><th scope="col">Event</th><th scope="col">Run</th><th scope="col">Status</th><th scope="col">Attempts</th><th scope="col">Last answer</th><th scope="col">Next attempt</th></tr></thead>
<tbody>${rows.join('\n')}</tbody></table>`;
}
function renderWebhooks(viewer, endpoints) {
    const sections = endpoints.map(({ webhook, deliveries }) => {
        const state = webhook.disabled_at
            ? `<span class="badge s-failed">disabled</span> <span class="muted">${esc(webhook.disabled_reason ?? '')}, ${time(webhook.disabled_at)}</span>`
            : '<span class="badge s-succeeded">enabled</span>';
        return `<section id="webhook-${esc(webhook.id)}">
<h2><code>${esc(webhook.url)}</code></h2>
<p>${state} · <code class="muted">${esc(webhook.id)}</code>${webhook.source === 'config' ? ' · declared by the operator' : ''}${webhook.description ? ` · ${esc(webhook.description)}` : ''}</p>
<p class="muted">Events: ${esc(webhook.events === null ? 'all' : webhook.events.join(', '))}</p>
${log(deliveries)}
</section>`;
    });
    const body = sections.length === 0
        ? '<p class="muted">Your team has no webhook endpoints. Add one with <code>agent-run webhooks create --url URL</code> or <code>POST /api/v1/agent/webhooks</code>.</p>'
        : sections.join('\n');
    return page('Webhooks', `<h1>Webhooks</h1>\n${body}`, viewer, '/webhooks');
}

// EXTERNAL MODULE: ./node_modules/croner/dist/croner.js
var croner = __webpack_require__(55814);
;// CONCATENATED MODULE: ./src/executor/schedules/cron.ts
// Cron expressions of schedules, read by croner: five fields (minute hour day-of-month month
// day-of-week) or a nickname (@hourly, @daily, @weekly, @monthly, @yearly), in an IANA time zone.
// Checks answer with the field, the bad value and the expected form; an expression that never
// fires (the 31st of February) is refused like a malformed one.

const CRON_FORM = 'five fields "minute hour day-of-month month day-of-week" such as "0 9 * * 1-5", or @hourly, @daily, @weekly, @monthly, @yearly';
const NICKNAMES = new Set(['@yearly', '@annually', '@monthly', '@weekly', '@daily', '@midnight', '@hourly']);
/** Why the time zone is not one, or undefined when it is a known IANA zone. */
function timeZoneProblem(zone) {
    try {
        new Intl.DateTimeFormat('en', { timeZone: zone });
        return undefined;
    }
    catch {
        return `time_zone ${JSON.stringify(zone)}: expected an IANA time zone such as "UTC" or "Europe/Berlin"`;
    }
}
function parse(expression, zone) {
    return new croner/* Cron */.l4(expression, { timezone: zone, paused: true });
}
/** Why the expression is not a usable schedule, or undefined when it is. */
function cronProblem(expression, zone) {
    const text = expression.trim();
    const fields = text.split(/\s+/);
    const shown = JSON.stringify(expression);
    if (!(fields.length === 5 || (fields.length === 1 && NICKNAMES.has(text.toLowerCase()))))
        return `cron_schedule ${shown}: expected ${CRON_FORM}`;
    let cron;
    try {
        cron = parse(text, zone);
    }
    catch (error) {
        const reason = error instanceof Error ? error.message.replace(/^CronPattern: /, '') : String(error);
        return `cron_schedule ${shown}: ${reason}; expected ${CRON_FORM}`;
    }
    if (cron.nextRun(new Date()) === null)
        return `cron_schedule ${shown}: never fires (no such date); expected ${CRON_FORM}`;
    return undefined;
}
/** The first fire time strictly after `afterMs`, in ms; null when there is none. */
function nextFire(expression, zone, afterMs) {
    const next = parse(expression.trim(), zone).nextRun(new Date(afterMs));
    return next === null ? null : next.getTime();
}

;// CONCATENATED MODULE: ./src/api/schemas.ts
// JSON schemas of the contract (TypeBox), for the executor's validation, its compiled response
// serialisation and its OpenAPI document. The compile-time checks at the bottom keep them in step
// with the plain types in ./run.ts. `expected` on a schema is the form a bad value is told to have
// ("limit \"500\": expected a whole number from 1 to 100"); `constraint` says what a value of the
// right type still broke ("prompt: must not be empty").



const schemas_Timestamp = build/* default.String */.Ay$.String({ format: 'date-time', description: 'RFC 3339 timestamp' });
/** A string or null, as one JSON type list (serialised without trying each branch). */
const schemas_NullableString = (options = {}) => build/* default.Unsafe */.Ay$.Unsafe({ ...options, type: ['string', 'null'] });
/** How many levels of child runs may be below a root run (a root's child is 1). */
const MAX_RUN_DEPTH = 3;
const RunStateSchema = build/* default.String */.Ay$.String({
    description: `Run state. Known values: ${KNOWN_STATES.join(', ')}; clients must accept others.`,
    examples: ['QUEUED', 'INPROGRESS', 'SUCCEEDED', 'FAILED']
});
const RunConfigSchema = build/* default.Object */.Ay$.Object({
    environment_id: build/* default.String */.Ay$.String({
        pattern: '\\S',
        description: 'Environment the run executes in.',
        expected: 'a non-empty string'
    }),
    publish: build/* default.Optional */.Ay$.Optional(build/* default.Boolean */.Ay$.Boolean({
        description: "false: the executor does not publish this run's changes (branch, pull request). Where they go is the executor's configuration, never the request's.",
        expected: 'true or false (a request may turn publishing off, never choose where it goes)'
    }))
}, {
    additionalProperties: true,
    description: 'Run configuration; fields beyond environment_id are kept as sent.',
    expected: 'an object with environment_id'
});
const CreateRunRequestSchema = build/* default.Object */.Ay$.Object({
    prompt: build/* default.String */.Ay$.String({
        pattern: '\\S',
        description: 'The instruction given to the agent.',
        expected: 'a string',
        constraint: 'must not be empty'
    }),
    config: RunConfigSchema,
    title: build/* default.Optional */.Ay$.Optional(build/* default.Union */.Ay$.Union([build/* default.String */.Ay$.String(), build/* default.Null */.Ay$.Null()], { description: 'Title of the run.', expected: 'a string' })),
    parent_run_id: build/* default.Optional */.Ay$.Optional(build/* default.String */.Ay$.String({
        minLength: 1,
        maxLength: 200,
        description: `A run of the same team this run is a child of; at most ${MAX_RUN_DEPTH} levels below a root run. The child takes the parent's metadata keys it does not set, and is cancelled with it.`,
        expected: 'the run id of a run of this team'
    }))
}, { additionalProperties: true, expected: 'a JSON object with prompt and config' });
/** A create request's `metadata`: at most this many string pairs, keys and values this long. */
const MAX_METADATA_PAIRS = 20;
const MAX_METADATA_KEY = 64;
const MAX_METADATA_VALUE = 512;
/** Most bytes of JSON a create's fields beyond prompt, config and title (metadata among them) may take. */
const MAX_EXTRA_FIELDS_BYTES = 64 * 1024;
/** Most bytes of JSON a run's `config` may take (mcp_servers, base_prompt and fields kept as sent among them). */
const MAX_CONFIG_BYTES = 64 * 1024;
/** Most `metadata[key]=value` pairs one list request may filter by (the service's limit). */
const MAX_METADATA_FILTERS = 5;
/** The longest follow-up message, in characters. */
const MAX_FOLLOWUP_MESSAGE = 100_000;
/**
 * The modes a run or a follow-up may ask for: `orchestrate` gives the run's sandbox a credential
 * that may start and steer child runs of its own.
 */

/** `POST /agent/runs/{run_id}/followups`: the next user message of the run's conversation. */
const FollowupRequestSchema = build/* default.Object */.Ay$.Object({
    message: build/* default.String */.Ay$.String({
        minLength: 1,
        maxLength: MAX_FOLLOWUP_MESSAGE,
        pattern: '\\S',
        description: 'The next user message of the conversation.',
        expected: `a string of 1–${MAX_FOLLOWUP_MESSAGE} characters`,
        constraint: 'must not be empty'
    }),
    mode: build/* default.Optional */.Ay$.Optional(build/* default.String */.Ay$.String({
        description: '`normal` (the default), `plan` (the agent may read the workspace, not change it) or `orchestrate` (the agent may start and steer child runs).',
        expected: 'normal, plan or orchestrate'
    }))
}, { additionalProperties: true, expected: 'a JSON object with message' });
const FollowupResponseSchema = build/* default.Object */.Ay$.Object({ run_id: build/* default.String */.Ay$.String(), state: RunStateSchema });
/** The old params of the run routes (`:id`); the routes now name theirs `run_id` (RunIdParamsSchema). */
const RunParamsSchema = build/* default.Object */.Ay$.Object({ id: build/* default.String */.Ay$.String({ description: 'The run id.' }) });
const RunIdParamsSchema = build/* default.Object */.Ay$.Object({ run_id: build/* default.String */.Ay$.String({ description: 'The run id.' }) });
const ArtifactParamsSchema = build/* default.Object */.Ay$.Object({
    artifact_uid: build/* default.String */.Ay$.String({ description: 'The artifact id.' })
});
const SessionArtifactParamsSchema = build/* default.Object */.Ay$.Object({
    run_id: build/* default.String */.Ay$.String({ description: 'The run id.' }),
    artifact_uid: build/* default.String */.Ay$.String({ description: 'The artifact id.' })
});
/** The longest cancel reason, in characters: the only place this limit is written. */
const MAX_CANCEL_REASON = 500;
/** A cancel's answer: the run id. */
const CancelResponseSchema = build/* default.String */.Ay$.String();
/**
 * A cancel's optional body, `{"reason": "…"}` (no body, or null, is no reason). `acceptsNoBody`
 * tells the executor's validator that a request without a body is fine.
 */
const CancelRequestSchema = build/* default.Unsafe */.Ay$.Unsafe({
    type: ['object', 'null'],
    properties: {
        reason: build/* default.String */.Ay$.String({
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
const StateFilter = build/* default.String */.Ay$.String({
    pattern: `^${states}(,${states})*$`,
    expected: `one of ${KNOWN_STATES.join(', ')}`
});
/** An RFC 3339 time; empty means no filter (`format: timestamp` is checked by the executor). */
const TimeFilter = (description) => build/* default.String */.Ay$.String({
    format: 'timestamp',
    description,
    expected: 'an RFC 3339 timestamp such as 2026-01-31T12:00:00Z'
});
const Text = (description) => build/* default.String */.Ay$.String({ description, expected: 'a single value' });
const LIST_SORT_KEYS = ['created_at', 'updated_at'];
/** The list's query parameters: any other answers 400. */
const ListRunsQuerySchema = build/* default.Object */.Ay$.Object({
    limit: build/* default.Optional */.Ay$.Optional(build/* default.String */.Ay$.String({
        pattern: '^(100|[1-9][0-9]?)$',
        description: 'Page size, 1–100 (default 20).',
        expected: 'a whole number from 1 to 100'
    })),
    cursor: build/* default.Optional */.Ay$.Optional(Text('The next_cursor of the previous page (same sort).')),
    state: build/* default.Optional */.Ay$.Optional(build/* default.Union */.Ay$.Union([StateFilter, build/* default.Array */.Ay$.Array(StateFilter)], {
        description: 'Only runs in these states (repeatable, or comma-separated).',
        expected: `one of ${KNOWN_STATES.join(', ')}`
    })),
    environment_id: build/* default.Optional */.Ay$.Optional(Text('Only runs of this environment.')),
    created_after: build/* default.Optional */.Ay$.Optional(TimeFilter('Only runs created after this time.')),
    created_before: build/* default.Optional */.Ay$.Optional(TimeFilter('Only runs created before this time.')),
    updated_after: build/* default.Optional */.Ay$.Optional(TimeFilter('Only runs updated after this time.')),
    creator: build/* default.Optional */.Ay$.Optional(Text("Only runs created by this creator uid (the creator's key id here).")),
    q: build/* default.Optional */.Ay$.Optional(Text('Only runs whose title or prompt contains this text (ASCII letters fold case).')),
    name: build/* default.Optional */.Ay$.Optional(Text('Only runs whose config.name is this.')),
    model_id: build/* default.Optional */.Ay$.Optional(Text('Only runs whose config.model_id is this.')),
    artifact_type: build/* default.Optional */.Ay$.Optional(Text('Only runs that have an artifact of this type.')),
    schedule_id: build/* default.Optional */.Ay$.Optional(Text('Only runs this schedule started.')),
    ancestor_run_id: build/* default.Optional */.Ay$.Optional(Text('Only runs below this run: its children, their children and so on (every descendant).')),
    sort_by: build/* default.Optional */.Ay$.Optional(build/* default.Union */.Ay$.Union(LIST_SORT_KEYS.map(key => build/* default.Literal */.Ay$.Literal(key)), { description: 'Sort key (default created_at).', expected: 'created_at or updated_at' })),
    sort_order: build/* default.Optional */.Ay$.Optional(build/* default.Union */.Ay$.Union([build/* default.Literal */.Ay$.Literal('asc'), build/* default.Literal */.Ay$.Literal('desc')], {
        description: 'Sort order (default desc).',
        expected: 'asc or desc'
    }))
}, {
    additionalProperties: false,
    // metadata[key]=value, repeatable: only runs whose create request's metadata has each pair.
    patternProperties: {
        [`^metadata\\[[^\\]]{1,${MAX_METADATA_KEY}}\\]$`]: build/* default.Union */.Ay$.Union([
            build/* default.String */.Ay$.String({ maxLength: MAX_METADATA_VALUE }),
            build/* default.Array */.Ay$.Array(build/* default.String */.Ay$.String({ maxLength: MAX_METADATA_VALUE }))
        ], {
            description: `Only runs whose metadata has this key with this value (at most ${MAX_METADATA_FILTERS} pairs per request).`,
            expected: 'a string'
        })
    }
});
const CreateRunResponseSchema = build/* default.Object */.Ay$.Object({ run_id: build/* default.String */.Ay$.String(), state: RunStateSchema });
const StatusMessageObjectSchema = build/* default.Object */.Ay$.Object({
    message: build/* default.String */.Ay$.String(),
    error_code: build/* default.Optional */.Ay$.Optional(build/* default.String */.Ay$.String()),
    retryable: build/* default.Optional */.Ay$.Optional(build/* default.Boolean */.Ay$.Boolean())
});
const CreatorSchema = build/* default.Object */.Ay$.Object({
    type: build/* default.String */.Ay$.String({ description: '`user` for a personal key, `agent` for an agent key.' }),
    uid: build/* default.String */.Ay$.String(),
    display_name: build/* default.Optional */.Ay$.Optional(build/* default.String */.Ay$.String())
});
const WorkloadSchema = build/* default.Object */.Ay$.Object({
    issuer: build/* default.String */.Ay$.String({ description: 'The OIDC issuer that signed the token.' }),
    repository: build/* default.Optional */.Ay$.Optional(build/* default.String */.Ay$.String()),
    ref: build/* default.Optional */.Ay$.Optional(build/* default.String */.Ay$.String()),
    workflow_ref: build/* default.Optional */.Ay$.Optional(build/* default.String */.Ay$.String()),
    run_id: build/* default.Optional */.Ay$.Optional(build/* default.String */.Ay$.String())
}, {
    additionalProperties: true,
    description: "Set by the server when a workload's OIDC token created the run: the claims it was admitted by."
});
const RunRecordSchema = build/* default.Object */.Ay$.Object({
    run_id: build/* default.String */.Ay$.String(),
    state: RunStateSchema,
    title: build/* default.Optional */.Ay$.Optional(schemas_NullableString()),
    prompt: build/* default.Optional */.Ay$.Optional(build/* default.String */.Ay$.String()),
    environment_id: build/* default.Optional */.Ay$.Optional(build/* default.String */.Ay$.String()),
    created_at: build/* default.Optional */.Ay$.Optional(schemas_Timestamp),
    updated_at: build/* default.Optional */.Ay$.Optional(schemas_Timestamp),
    started_at: build/* default.Optional */.Ay$.Optional(schemas_NullableString({ format: 'date-time' })),
    completed_at: build/* default.Optional */.Ay$.Optional(schemas_NullableString({ format: 'date-time' })),
    status_message: build/* default.Optional */.Ay$.Optional(build/* default.Union */.Ay$.Union([build/* default.String */.Ay$.String(), StatusMessageObjectSchema, build/* default.Null */.Ay$.Null()])),
    error_code: build/* default.Optional */.Ay$.Optional(schemas_NullableString({ description: 'See GET /api/v1/errors.' })),
    session_link: build/* default.Optional */.Ay$.Optional(schemas_NullableString({ format: 'uri' })),
    creator: build/* default.Optional */.Ay$.Optional(CreatorSchema),
    agent_config: build/* default.Optional */.Ay$.Optional(RunConfigSchema),
    source: build/* default.Optional */.Ay$.Optional(build/* default.String */.Ay$.String()),
    parent_run_id: build/* default.Optional */.Ay$.Optional(schemas_NullableString({ description: 'The run this one is a child of (absent for a root run).' })),
    workload: build/* default.Optional */.Ay$.Optional(WorkloadSchema)
}, { additionalProperties: true });
const ListRunsResponseSchema = build/* default.Object */.Ay$.Object({
    runs: build/* default.Array */.Ay$.Array(RunRecordSchema),
    page_info: build/* default.Object */.Ay$.Object({
        has_next_page: build/* default.Boolean */.Ay$.Boolean(),
        next_cursor: build/* default.Optional */.Ay$.Optional(schemas_NullableString())
    })
});
const ProblemSchema = build/* default.Object */.Ay$.Object({
    type: build/* default.String */.Ay$.String(),
    title: build/* default.String */.Ay$.String(),
    status: build/* default.Integer */.Ay$.Integer(),
    detail: build/* default.Optional */.Ay$.Optional(build/* default.String */.Ay$.String()),
    error_code: build/* default.Optional */.Ay$.Optional(build/* default.String */.Ay$.String()),
    retryable: build/* default.Optional */.Ay$.Optional(build/* default.Boolean */.Ay$.Boolean()),
    instance: build/* default.Optional */.Ay$.Optional(build/* default.String */.Ay$.String()),
    request_id: build/* default.Optional */.Ay$.Optional(build/* default.String */.Ay$.String())
}, { additionalProperties: true, description: 'RFC 7807 problem details.' });
const TranscriptEventSchema = build/* default.Object */.Ay$.Object({
    seq: build/* default.Integer */.Ay$.Integer(),
    at: schemas_Timestamp,
    kind: build/* default.String */.Ay$.String({
        description: `${EVENT_KINDS.join(', ')}, or a kind a newer version adds (see TranscriptEventKinds for each kind's fields)`
    })
}, { additionalProperties: true });
const TranscriptSchema = build/* default.Object */.Ay$.Object({
    run_id: build/* default.String */.Ay$.String(),
    state: RunStateSchema,
    events: build/* default.Array */.Ay$.Array(TranscriptEventSchema),
    has_more: build/* default.Boolean */.Ay$.Boolean({
        description: 'More events follow this page now: read again with after=next_after.'
    }),
    next_after: build/* default.Integer */.Ay$.Integer({
        description: 'The seq of the last event of this page (after itself when empty).'
    })
});
/** The transcript's query: `after` and `limit` (others are ignored). */
const TranscriptQuerySchema = build/* default.Object */.Ay$.Object({
    after: build/* default.Optional */.Ay$.Optional(build/* default.String */.Ay$.String({
        pattern: '^(\\d{1,15})?$',
        description: 'Only events newer than this seq.',
        expected: 'the seq of an event, a whole number such as 12'
    })),
    limit: build/* default.Optional */.Ay$.Optional(build/* default.String */.Ay$.String({
        pattern: '^((?=\\d{1,4}$)0*([1-9]\\d{0,2}|1000))?$',
        description: 'At most this many events, 1–1000 (default 100).',
        expected: 'a whole number of events from 1 to 1000'
    }))
}, { additionalProperties: true });
/**
 * A signed download URL's query. Not checked by the schema: a wrong or missing signature or expiry
 * answers 404 like an artifact that does not exist, never 400.
 */
const DownloadQuerySchema = build/* default.Object */.Ay$.Object({
    expires: build/* default.Optional */.Ay$.Optional(build/* default.Unsafe */.Ay$.Unsafe({ description: 'Expiry, in seconds since 1970 (signed).' })),
    signature: build/* default.Optional */.Ay$.Optional(build/* default.Unsafe */.Ay$.Unsafe({ description: 'HMAC of the artifact id and expiry.' }))
}, { additionalProperties: true });
/**
 * A session link's query: only `token` is read. A shared link may gain parameters on its way
 * (tracking, say), and any token that is not the right one (a repeated one too) is a 404.
 */
const SessionQuerySchema = build/* default.Object */.Ay$.Object({ token: build/* default.Optional */.Ay$.Optional(build/* default.Unsafe */.Ay$.Unsafe({ description: "The run's session token (an HMAC)." })) }, { additionalProperties: true });
/** A content block of a conversation message; `type` names it, the other fields depend on it. */
const ConversationBlockSchema = build/* default.Object */.Ay$.Object({ type: build/* default.String */.Ay$.String({ description: 'text, action, action_result, event, …; unknown types may appear.' }) }, {
    additionalProperties: true,
    description: 'Blocks by `type`: text {text}; action {id, name: run_command, category, input.command}; action_result {action_id, state, output {exit_code, output}}; event {event_type, …} (state_change, file_change, changes, artifact_published, agent_exit, notice, stderr). The last assistant text block is the final answer.'
});
const ConversationMessageSchema = build/* default.Object */.Ay$.Object({
    role: build/* default.String */.Ay$.String({ description: 'user, assistant, tool or system.' }),
    timestamp: build/* default.Optional */.Ay$.Optional(schemas_Timestamp),
    content: build/* default.Array */.Ay$.Array(ConversationBlockSchema)
}, { additionalProperties: true });
const ConversationStepSchema = build/* default.Object */.Ay$.Object({
    id: build/* default.Optional */.Ay$.Optional(build/* default.String */.Ay$.String()),
    description: build/* default.Optional */.Ay$.Optional(build/* default.String */.Ay$.String()),
    summary: build/* default.Optional */.Ay$.Optional(build/* default.String */.Ay$.String()),
    started_at: build/* default.Optional */.Ay$.Optional(schemas_Timestamp),
    completed_at: build/* default.Optional */.Ay$.Optional(schemas_Timestamp),
    messages: build/* default.Array */.Ay$.Array(ConversationMessageSchema),
    steps: build/* default.Array */.Ay$.Array(build/* default.Object */.Ay$.Object({}, { additionalProperties: true, description: 'A nested step, same shape.' }))
}, { additionalProperties: true });
/** The service's normalized conversation: steps → messages → content blocks. */
const ConversationSchema = build/* default.Object */.Ay$.Object({ conversation_id: build/* default.String */.Ay$.String(), steps: build/* default.Array */.Ay$.Array(ConversationStepSchema) }, { additionalProperties: true });
const ArtifactDetailsSchema = build/* default.Object */.Ay$.Object({
    artifact_uid: build/* default.String */.Ay$.String(),
    artifact_type: build/* default.String */.Ay$.String({ examples: ['FILE'] }),
    run_id: build/* default.String */.Ay$.String(),
    created_at: schemas_Timestamp,
    download_url: build/* default.String */.Ay$.String({ description: 'Signed; needs no API key; valid until expires_at.' }),
    expires_at: schemas_Timestamp,
    data: build/* default.Object */.Ay$.Object({
        artifact_uid: build/* default.String */.Ay$.String(),
        filepath: build/* default.String */.Ay$.String(),
        filename: build/* default.String */.Ay$.String(),
        mime_type: build/* default.String */.Ay$.String({ examples: ['text/x-diff'] }),
        size: build/* default.Integer */.Ay$.Integer(),
        description: build/* default.Optional */.Ay$.Optional(schemas_NullableString())
    }, { additionalProperties: true })
});
/** Run ids the events cursor follows at once, at most. */
const MAX_EVENT_RUN_IDS = 100;
/** Events one page of the cursor holds at most (the production service's bound). */
const MAX_EVENTS_LIMIT = 500;
/** The events cursor's query: the runs, where to go on from, and the page size. */
const EventsQuerySchema = build/* default.Object */.Ay$.Object({
    run_ids: build/* default.Union */.Ay$.Union([build/* default.String */.Ay$.String({ maxLength: 20_000 }), build/* default.Array */.Ay$.Array(build/* default.String */.Ay$.String({ maxLength: 20_000 }), { maxItems: 100 })], {
        description: `The runs to follow: ids separated by commas, or the parameter repeated; 1 to ${MAX_EVENT_RUN_IDS} of this key's team.`,
        expected: `run ids separated by commas, 1 to ${MAX_EVENT_RUN_IDS}`
    }),
    since: build/* default.Optional */.Ay$.Optional(build/* default.String */.Ay$.String({
        pattern: '^(\\d{1,15})?$',
        description: 'Only events with a larger sequence (the next_since of the previous page; 0 for all).',
        expected: 'the sequence of an event, a whole number such as 12'
    })),
    limit: build/* default.Optional */.Ay$.Optional(build/* default.String */.Ay$.String({
        pattern: '^((?=\\d{1,3}$)0*([1-9]\\d{0,1}|[1-4]\\d\\d|500))?$',
        description: `At most this many events, 1–${MAX_EVENTS_LIMIT} (default 100).`,
        expected: `a whole number of events from 1 to ${MAX_EVENTS_LIMIT}`
    }))
}, { additionalProperties: true });
/** One change of a run's state on the events cursor. */
const CursorEventSchema = build/* default.Object */.Ay$.Object({
    sequence: build/* default.Integer */.Ay$.Integer({ description: "The event's place on the team's cursor." }),
    run_id: build/* default.String */.Ay$.String(),
    type: build/* default.String */.Ay$.String({
        description: 'run_in_progress, run_succeeded, run_failed, run_errored, run_blocked or run_cancelled (more may come).'
    }),
    state: RunStateSchema,
    timestamp: build/* default.String */.Ay$.String({ description: 'When the run changed state (ISO 8601).' }),
    event_type: build/* default.String */.Ay$.String({ description: 'The same as type (the production service names it so).' }),
    occurred_at: build/* default.String */.Ay$.String({ description: 'The same as timestamp (the production service names it so).' })
}, { additionalProperties: true });
const EventsPageSchema = build/* default.Object */.Ay$.Object({
    events: build/* default.Array */.Ay$.Array(CursorEventSchema),
    next_since: build/* default.Integer */.Ay$.Integer({
        description: 'Read again with since=next_since for the events after this page (since itself when empty).'
    })
});

;// CONCATENATED MODULE: ./src/executor/store/rows.ts
// How a run's row is read, on both stores: the columns the API and the worker see (not the store's
// own bookkeeping: idempotency hash, event counter, change time), and the removal of bookkeeping
// columns a query had to return alongside them. The two dialects agree on all of it.
/** Columns of a run as the API and the worker see them. */
const RUN_COLUMNS = `seq, run_id, team, environment_id, state, title, prompt, config, extra, creator_type,
  creator_uid, creator_name, status_message, error_code, created_at, updated_at, started_at, completed_at,
  version, lease_owner, lease_expires_at, artifacts, request_usage, workload`;
/** RUN_COLUMNS qualified by a table alias, for statements that join. */
function runColumnsOf(alias) {
    return RUN_COLUMNS.split(',')
        .map(column => `${alias}.${column.trim()}`)
        .join(', ');
}
/**
 * How much a run weighs in a list page: the characters of what its record carries that a client
 * chose (prompt, title, config, kept fields) or its run made (status, artifacts, usage).
 */
function runWeight(run) {
    return (run.prompt.length +
        (run.title?.length ?? 0) +
        run.config.length +
        run.extra.length +
        (run.workload?.length ?? 0) +
        (run.status_message?.length ?? 0) +
        (run.artifacts?.length ?? 0) +
        (run.request_usage?.length ?? 0));
}
/**
 * How many of `runs` (in page order) a page of at most `maxWeight` holds: those whose weights add
 * up to it, and at least one. A store reading a page may stop after the run that passes it.
 */
function runsWithin(runs, maxWeight) {
    let total = 0;
    for (let i = 0; i < runs.length; i++) {
        total += runWeight(runs[i]);
        if (total > maxWeight)
            return Math.max(1, i);
    }
    return runs.length;
}
/** The run without the store's bookkeeping columns. */
function strip(row) {
    const { event_seq: _seq, idempotency_hash: _hash, ...run } = row;
    return run;
}

;// CONCATENATED MODULE: ./src/executor/server/list-params.ts
// The list's query parameters as the store takes them, and its cursors. The route's schema has
// checked each parameter's form; what is left here is meaning: defaults, times normalised, and a
// cursor that names its sort, so it is never read under another order.


/** The cursor names its sort, so a cursor is never read under another order. */
function encodeCursor(run, sortBy, order) {
    const text = sortBy === 'updated_at'
        ? `u:${order}:${run.seq}:${run.updated_at}`
        : order === 'desc'
            ? `s:${run.seq}`
            : `sa:${run.seq}`;
    return Buffer.from(text).toString('base64url');
}
function decodeCursor(cursor, sortBy, order) {
    const text = Buffer.from(cursor, 'base64url').toString('utf8');
    const match = sortBy === 'updated_at'
        ? new RegExp(`^u:${order}:(\\d{1,15}):(\\d{4}-[\\d:.TZ-]{10,30})$`).exec(text)
        : (order === 'desc' ? /^s:(\d{1,15})$/ : /^sa:(\d{1,15})$/).exec(text);
    if (!match)
        throw new ProblemError('invalid_request', `cursor ${JSON.stringify(cursor)}: expected the next_cursor of a previous page with the same sort_by and sort_order`);
    return { seq: Number(match[1]), updatedAt: match[2] };
}
/** The query as the store takes it; the schema has checked each parameter's form already. */
function list_params_listQuery(params) {
    const query = {
        limit: params.limit === undefined ? 20 : Number(params.limit),
        sortBy: params.sort_by ?? 'created_at',
        sortOrder: params.sort_order ?? 'desc'
    };
    if (params.cursor)
        query.after = decodeCursor(params.cursor, query.sortBy, query.sortOrder);
    if (params.state !== undefined)
        query.states = [].concat(params.state).flatMap(s => s.split(','));
    const time = (value) => (value ? new Date(Date.parse(value)).toISOString() : undefined);
    const filters = {
        environmentId: params.environment_id || undefined,
        createdAfter: time(params.created_after),
        createdBefore: time(params.created_before),
        updatedAfter: time(params.updated_after),
        creatorUid: params.creator || undefined,
        search: params.q || undefined,
        name: params.name || undefined,
        modelId: params.model_id || undefined,
        artifactType: params.artifact_type || undefined,
        scheduleId: params.schedule_id || undefined,
        ancestorRunId: params.ancestor_run_id || undefined
    };
    for (const [name, value] of Object.entries(filters))
        if (value !== undefined)
            query[name] = value;
    const metadata = [];
    for (const [name, value] of Object.entries(params)) {
        const key = /^metadata\[(.+)\]$/.exec(name)?.[1];
        if (key === undefined)
            continue;
        for (const item of [].concat(value))
            metadata.push([key, String(item)]);
    }
    // Each pair is one more index lookup per run looked at: the list's cost is bounded by their number.
    if (metadata.length > MAX_METADATA_FILTERS)
        throw new ProblemError('invalid_request', `metadata[${metadata[MAX_METADATA_FILTERS][0]}]: a list filters by at most ${MAX_METADATA_FILTERS} metadata[key]=value pairs; this request has ${metadata.length}`);
    if (metadata.length > 0)
        query.metadata = metadata;
    return query;
}

;// CONCATENATED MODULE: ./src/executor/runs/lifecycle.ts
// A run's life as data: for each change a run can go through (create, claim, renew, finish,
// cancel, abandon, prune), the states it may start from, the states it leads to, the columns it
// writes, the status message and error code it sets, and whether the transcript records it. The SQL
// store (store/sql-store.ts) builds its statements from this table; nothing else states these rules.
// A new change (a follow-up that re-queues a finished run, a run BLOCKED on a person) is a new row.
//
//   create   (nothing)         →  QUEUED
//   claim    QUEUED            →  INPROGRESS, under a lease to its worker
//   renew    INPROGRESS        →  INPROGRESS, its lease longer (by the worker holding it)
//   finish   INPROGRESS        →  SUCCEEDED | FAILED | CANCELLED (by the worker holding the lease)
//   cancel   any not terminal  →  CANCELLED (by a client)
//   abandon  INPROGRESS, lease expired or left by a previous process  →  FAILED
//   followup any terminal      →  QUEUED again, same run (a queued or running run keeps its state:
//                                 the message is a transcript event the worker takes at its next turn)
//   prune    any terminal, completed before a cut-off  →  deleted with its transcript and artifacts



/** The state a new run starts in. */
const CREATED_STATE = 'QUEUED';
/** The state of a run a worker holds. */
const CLAIMED_STATE = 'INPROGRESS';
/** A lease given up: written here once, by every change that ends a run. */
const LEASE_RELEASED = { lease_owner: 'null', lease_expires_at: 'null' };
/** What every change that ends a run writes. */
const ENDING = {
    state: 'state',
    status_message: 'message',
    error_code: 'code',
    completed_at: 'at',
    updated_at: 'at',
    version: 'next',
    ...LEASE_RELEASED
};
/** States a client's cancel applies to: every state the contract names that is not terminal. */
const CANCELLABLE = KNOWN_STATES.filter(state => !run_isTerminalState(state));
const LIFECYCLE = {
    create: {
        from: [],
        to: [CREATED_STATE],
        lease: 'none',
        writes: { state: 'state', created_at: 'at', updated_at: 'at' },
        recorded: true
    },
    claim: {
        from: [CREATED_STATE],
        to: [CLAIMED_STATE],
        lease: 'none',
        writes: {
            state: 'state',
            started_at: 'at',
            updated_at: 'at',
            version: 'next',
            lease_owner: 'owner',
            lease_expires_at: 'lease'
        },
        recorded: true
    },
    renew: {
        from: [CLAIMED_STATE],
        to: [CLAIMED_STATE],
        lease: 'own',
        writes: { lease_expires_at: 'lease' },
        recorded: false
    },
    finish: {
        from: [CLAIMED_STATE],
        to: ['SUCCEEDED', 'FAILED', 'CANCELLED'],
        lease: 'own',
        writes: ENDING,
        recorded: true
    },
    cancel: { from: CANCELLABLE, to: ['CANCELLED'], lease: 'none', writes: ENDING, recorded: true },
    abandon: { from: [CLAIMED_STATE], to: ['FAILED'], lease: 'expired', writes: ENDING, recorded: true },
    followup: {
        from: TERMINAL_STATES,
        to: [CREATED_STATE],
        lease: 'none',
        writes: {
            state: 'state',
            status_message: 'message',
            error_code: 'code',
            completed_at: 'null',
            updated_at: 'at',
            version: 'next'
        },
        recorded: true
    },
    prune: { from: TERMINAL_STATES, to: [], lease: 'none', writes: {}, recorded: false }
};
/** Whether `change` may start from a run in `state` (leases aside). */
function allows(change, state) {
    return LIFECYCLE[change].from.includes(state);
}
/** A new run. */
function lifecycle_create() {
    return { state: CREATED_STATE, status_message: null, error_code: null };
}
/** A worker's claim of a queued run. */
function claim() {
    return { state: CLAIMED_STATE, status_message: null, error_code: null };
}
/** A client's cancel: allowed while the run is not terminal; a finished run stays as it is. */
function cancel(state, reason) {
    return isTerminalState(state) ? undefined : lifecycle_cancelled(reason);
}
/** What a client's cancel sets, whichever state it started from. */
function lifecycle_cancelled(reason) {
    return finish(cancelledByClient(reason));
}
/** A follow-up to an ended run: queued again, its old status message and error code cleared. */
function followup() {
    return { state: CREATED_STATE, status_message: null, error_code: null };
}
/** A worker's finish of the run it holds. */
function finish(outcome) {
    return {
        state: outcome.state,
        status_message: outcome.status_message ?? null,
        error_code: outcome.error_code ?? null
    };
}
/** A run left INPROGRESS by a process that stopped (restarted, or stopped renewing its lease). */
function abandon(message) {
    return finish(abandoned(message));
}
/**
 * The transcript's `state` event for a change, recorded in the transaction that makes it: the new
 * state, its status message once the run has ended, and its error code if any.
 */
function stateEvent(run) {
    const data = { state: run.state };
    if (run.status_message !== null && run.state !== CREATED_STATE && run.state !== CLAIMED_STATE)
        data.status_message = run.status_message;
    if (run.error_code !== null)
        data.error_code = run.error_code;
    return data;
}
const WITH_MESSAGE = new Set(['FAILED', 'CANCELLED', 'ERROR']);
/** Whether a run's record shows its status message: only when it ended other than in success. */
function showsStatusMessage(state) {
    return WITH_MESSAGE.has(state);
}
/** Whether a run's record has a session link: once it has started (and so has a transcript). */
function showsSessionLink(state) {
    return state === CLAIMED_STATE || run_isTerminalState(state);
}

;// CONCATENATED MODULE: ./src/executor/server/records.ts
// How stored runs look on the wire, and the pieces derived from them: ETags and session links.


/** Tokens never change for a run, and reads ask for them often: remember the recent ones. */
const TOKEN_CACHE_SIZE = 10_000;
class SessionLinks {
    secret;
    publicUrl;
    tokens = new Map();
    constructor(secret, publicUrl) {
        this.secret = secret;
        this.publicUrl = publicUrl;
    }
    token(runId) {
        let token = this.tokens.get(runId);
        if (token === undefined) {
            token = (0,external_node_crypto_.createHmac)('sha256', this.secret).update(runId).digest('base64url').slice(0, 32);
            if (this.tokens.size >= TOKEN_CACHE_SIZE)
                this.tokens.delete(this.tokens.keys().next().value);
            this.tokens.set(runId, token);
        }
        return token;
    }
    verify(runId, token) {
        if (typeof token !== 'string')
            return false;
        const expected = Buffer.from(this.token(runId));
        const given = Buffer.from(token);
        return expected.length === given.length && (0,external_node_crypto_.timingSafeEqual)(expected, given);
    }
    link(run) {
        if (!showsSessionLink(run.state) || run.started_at === null)
            return undefined;
        return `${this.publicUrl()}/sessions/${encodeURIComponent(run.run_id)}?token=${this.token(run.run_id)}`;
    }
}
function etagOf(run) {
    return `"v${run.version}"`;
}
/** The record as the routes answer it (their response schema serialises it; unknown fields stay). */
function toRecord(run, links) {
    // Most runs carry no extra fields: skip parsing and spreading an empty object.
    const extra = run.extra === '{}' ? undefined : JSON.parse(run.extra);
    const record = {
        ...extra,
        run_id: run.run_id,
        state: run.state,
        title: run.title,
        prompt: run.prompt,
        environment_id: run.environment_id,
        created_at: run.created_at,
        updated_at: run.updated_at,
        started_at: run.started_at,
        completed_at: run.completed_at,
        creator: { type: run.creator_type, uid: run.creator_uid, display_name: run.creator_name },
        agent_config: parsedConfig(run.config),
        source: 'API'
    };
    if (run.artifacts)
        record.artifacts = runArtifacts(run.artifacts);
    if (run.request_usage)
        record.request_usage = JSON.parse(run.request_usage);
    if (run.workload)
        record.workload = JSON.parse(run.workload);
    if (showsStatusMessage(run.state) && run.status_message !== null)
        record.status_message = run.status_message;
    if (run.error_code !== null)
        record.error_code = run.error_code;
    const link = links.link(run);
    if (link)
        record.session_link = link;
    return record;
}
/**
 * Most runs of an executor share a handful of configs (same environment, same model): a list page
 * would parse the same text twenty times. The parsed objects are only ever read (serialised), so
 * the recent ones are kept by their text.
 */
const CONFIG_CACHE_SIZE = 1_000;
const MAX_CACHED_CONFIG_LENGTH = 4_096;
const configs = new Map();
function parsedConfig(text) {
    let config = configs.get(text);
    if (config === undefined) {
        config = JSON.parse(text);
        if (text.length <= MAX_CACHED_CONFIG_LENGTH) {
            if (configs.size >= CONFIG_CACHE_SIZE)
                configs.delete(configs.keys().next().value);
            configs.set(text, config);
        }
    }
    return config;
}
/** The stored list of a run's files, in the service's shape: {artifact_type, created_at, data}. */
function runArtifacts(stored) {
    return JSON.parse(stored).map(
    // A pull request is listed in its final shape already; a file by its description.
    entry => {
        if (entry.artifact_type !== undefined)
            return entry;
        const { created_at, ...data } = entry;
        return { artifact_type: 'FILE', created_at, data };
    });
}

;// CONCATENATED MODULE: ./src/executor/server/transcript-wait.ts
// The transcript read with `after=<seq>` and `Prefer: wait=N`: a follower asks for the events newer
// than the last one it has, and the answer is held until there is one (or the run ended, the time
// is up, the client left, the server stops). Appends wake held reads through the ChangeHub; the
// hold also re-reads every few seconds, so a notification lost between nodes costs a delay, never
// an event. A read answers one page: at most `limit` events (default 100, at most 1000) and
// about 512 KiB of them, with `has_more` and `next_after` to go on from.



const transcript_wait_REREAD_MS = 2000;
const DEFAULT_TRANSCRIPT_LIMIT = 100;
const MAX_TRANSCRIPT_LIMIT = 1000;
/** A page stops once its events pass this many bytes (it always holds at least one event). */
const MAX_PAGE_BYTES = 512 * 1024;
/** `limit` from the query string: 1 to 1000, 100 when absent. */
function parseLimit(query) {
    const value = query?.limit;
    if (value === undefined || value === '')
        return DEFAULT_TRANSCRIPT_LIMIT;
    const number = typeof value === 'string' && /^\d{1,4}$/.test(value) ? Number(value) : NaN;
    if (number >= 1 && number <= MAX_TRANSCRIPT_LIMIT)
        return number;
    throw new ProblemError('invalid_request', `limit ${JSON.stringify(value)}: expected a whole number of events from 1 to ${MAX_TRANSCRIPT_LIMIT}`);
}
/** Up to `limit` events after `after`, cut at about MAX_PAGE_BYTES, and whether more follow. */
async function readPage(context, runId, after, limit) {
    const events = await context.store.listEvents(runId, { after, limit: limit + 1 });
    let more = events.length > limit;
    if (more)
        events.length = limit;
    let bytes = 0;
    for (let index = 0; index < events.length; index++) {
        bytes += sizeOf(events[index]);
        if (index > 0 && bytes > MAX_PAGE_BYTES) {
            events.length = index;
            more = true;
            break;
        }
    }
    return { events, more };
}
/** `after` from the query string: a whole number, or absent (every event). */
function parseAfter(query) {
    const value = query?.after;
    if (value === undefined || value === '')
        return 0;
    if (typeof value !== 'string' || !/^\d{1,15}$/.test(value))
        throw new ProblemError('invalid_request', `after ${JSON.stringify(value)}: expected the seq of an event, a whole number such as 12`);
    return Number(value);
}
/** `Prefer: wait=N` (RFC 7240), capped at 60 s; undefined when absent. */
function preferWait(header) {
    const match = /(?:^|[,;\s])wait\s*=\s*"?(\d+)"?/i.exec(header);
    return match ? Math.min(MAX_WAIT_SECONDS, Number(match[1])) : undefined;
}
async function readTranscript(context, request, reply, find) {
    const after = parseAfter(request.query);
    const limit = parseLimit(request.query);
    let run = await find();
    let page = await readPage(context, run.run_id, after, limit);
    const wait = preferWait(String(request.headers.prefer ?? ''));
    if (wait !== undefined)
        reply.header('preference-applied', `wait=${wait}`);
    if (wait && page.events.length === 0 && !run_isTerminalState(run.state)) {
        const closed = new AbortController();
        request.raw.once('close', () => closed.abort());
        const deadline = Date.now() + wait * 1000;
        while (!closed.signal.aborted && !context.draining && Date.now() < deadline) {
            const ms = Math.min(transcript_wait_REREAD_MS, deadline - Date.now());
            await context.hub.waitEvent(run.run_id, after, ms, closed.signal);
            run = await find();
            page = await readPage(context, run.run_id, after, limit);
            if (page.events.length > 0 || run_isTerminalState(run.state))
                break;
        }
    }
    const { events, more } = page;
    return {
        run_id: run.run_id,
        state: run.state,
        events,
        has_more: more,
        next_after: events.at(-1)?.seq ?? after
    };
}

;// CONCATENATED MODULE: ./src/executor/server/run-fields.ts
// Fields of a create or follow-up request that a schema cannot fully check: `metadata` (string
// pairs within bounds) and `mode` (normal, plan or orchestrate, which needs a sandboxed environment).
// Each problem is a 422 naming the field, the bad value and the expected form.



/** A create request's `metadata`: at most 20 string pairs, keys ≤ 64 and values ≤ 512 characters; throws a ProblemError (422) otherwise. */
function checkMetadata(metadata) {
    if (metadata === undefined || metadata === null)
        return;
    const expected = `an object of at most ${MAX_METADATA_PAIRS} string keys (1–${MAX_METADATA_KEY} characters) and string values (at most ${MAX_METADATA_VALUE} characters)`;
    if (typeof metadata !== 'object' || Array.isArray(metadata))
        throw new ProblemError('invalid_field', `metadata: expected ${expected}`);
    const pairs = Object.entries(metadata);
    if (pairs.length > MAX_METADATA_PAIRS)
        throw new ProblemError('invalid_field', `metadata: ${pairs.length} keys; expected ${expected}`);
    for (const [key, value] of pairs) {
        const shown = JSON.stringify(key.slice(0, 70));
        if (key.length === 0 || key.length > MAX_METADATA_KEY)
            throw new ProblemError('invalid_field', `metadata key ${shown}: expected ${expected}`);
        if (typeof value !== 'string' || value.length > MAX_METADATA_VALUE)
            throw new ProblemError('invalid_field', `metadata.${key}: expected ${expected}`);
        // The pairs are kept as text for the list's filter, and PostgreSQL text cannot hold NUL.
        if (key.includes('\0') || value.includes('\0'))
            throw new ProblemError('invalid_field', `metadata key ${shown}: keys and values may not contain NUL`);
    }
}
/** A follow-up's or a create's `mode`: normal (the default), plan or orchestrate. */
function followupMode(mode) {
    if (mode === undefined || mode === null)
        return 'normal';
    if (typeof mode === 'string' && RUN_MODES.includes(mode))
        return mode;
    throw new ProblemError('invalid_field', `mode ${JSON.stringify(String(mode).slice(0, 40))}: expected ${RUN_MODES.join(', ')}`);
}
/** Throws a 422 operation_not_supported when `environment` cannot run an orchestrate turn (config.ts says why). */
function checkOrchestrable(environment) {
    const problem = orchestrateProblem(environment);
    if (problem)
        throw new ProblemError('operation_not_supported', problem);
}

;// CONCATENATED MODULE: ./src/executor/server/routes/runs.ts
// The run endpoints: create, read (with ETag and Prefer: wait), list, cancel, transcript, as a
// handler map keyed by endpoint name (register.ts gives them their paths, schemas and the key
// check from src/api/endpoints.ts). Requests are checked by the schemas before a handler runs;
// what a schema cannot say stays here: the prompt's size in bytes, whether the environment
// exists, the Idempotency-Key. Plain reads and list pages are answered from the read cache while
// the store has not changed (read-cache.ts).











const JSON_TYPE = 'application/json; charset=utf-8';
/**
 * Most characters of stored text (prompt, title, config, kept fields, status, artifacts, usage) the
 * runs of one list page carry: a page of runs at their largest stops after about five. This bounds
 * each list's work on the event loop and what the page cache holds.
 */
const MAX_PAGE_WEIGHT = 1024 * 1024;
/** How the scheduler's idempotency keys begin (schedules/scheduler.ts). */
const SCHEDULER_KEY_PREFIX = 'schedule:';
/** How the keys an orchestrate run's token sends are stored: `run:<its run id>:<key>`. */
const ORCHESTRATOR_KEY_PREFIX = 'run:';
function runHandlers(context, reads) {
    const { store, config, links, hub } = context;
    const create = async (request, reply) => {
        if (context.draining)
            throw new ProblemError('shutting_down', 'the executor is shutting down and accepts no new runs', {
                'retry-after': '5'
            });
        const body = request.body;
        const bytes = Buffer.byteLength(body.prompt);
        if (bytes > config.limits.maxPromptBytes) {
            throw new ProblemError('prompt_too_large', `prompt: ${bytes} bytes is over the limit of ${config.limits.maxPromptBytes} bytes`);
        }
        const environmentId = body.config.environment_id;
        const asked = body;
        checkMetadata(asked.metadata);
        const parent = await parentOf(asked.parent_run_id, request.principal.team);
        const key = request.headers['idempotency-key'];
        let stored;
        try {
            stored = {
                config: JSON.stringify(body.config),
                extra: JSON.stringify(inheritMetadata(extraFields(body), parent)),
                // Only a create with an Idempotency-Key is compared with an earlier one: the others skip
                // the sorted copy of the body and its SHA-256.
                hash: key === undefined ? undefined : canonicalHash(body)
            };
        }
        catch (error) {
            if (error instanceof RangeError)
                throw new ProblemError('invalid_request', 'the body is nested too deeply');
            throw error;
        }
        checkExtraFields(stored.extra, body);
        const environment = config.environments.find(env => env.id === environmentId);
        if (!environment) {
            const known = config.environments.map(env => env.id).join(', ');
            throw new ProblemError('environment_not_found', `environment ${JSON.stringify(environmentId)} does not exist; this executor serves: ${known}`);
        }
        checkHarnessConfig(body.config, environment.agent.kind);
        if (followupMode(asked.mode) === 'orchestrate')
            checkOrchestrable(environment);
        await checkConversation(body, request.principal.team, environmentId);
        const principal = request.principal;
        if (key !== undefined && !isValidIdempotencyKey(key)) {
            throw new ProblemError('invalid_request', `Idempotency-Key header: expected ${IDEMPOTENCY_KEY_FORM}`);
        }
        // The scheduler's fires use `schedule:<id>:<due>` in the team's key space: a key of the team
        // that took one first would stop that fire from starting its run.
        if (key?.startsWith(SCHEDULER_KEY_PREFIX))
            throw new ProblemError('invalid_request', `Idempotency-Key header: keys starting with "${SCHEDULER_KEY_PREFIX}" are the scheduler's own; choose another`);
        // An orchestrate run's keys live in a space of their own (`run:<id>:<key>`): with the team's, a
        // hostile agent replaying a key and body of the team would learn which run they made.
        if (key?.startsWith(ORCHESTRATOR_KEY_PREFIX))
            throw new ProblemError('invalid_request', `Idempotency-Key header: keys starting with "${ORCHESTRATOR_KEY_PREFIX}" are orchestrate runs' own; choose another`);
        const storedKey = key !== undefined && principal.orchestrator
            ? `${ORCHESTRATOR_KEY_PREFIX}${principal.orchestrator.runId}:${key}`
            : key;
        const result = await store.createRun({
            run_id: (0,external_node_crypto_.randomUUID)(),
            team: principal.team,
            environment_id: environmentId,
            title: typeof body.title === 'string' ? body.title : null,
            prompt: body.prompt,
            config: stored.config,
            extra: stored.extra,
            creator_type: principal.kind === 'personal' ? 'user' : 'agent',
            creator_uid: principal.keyId,
            creator_name: principal.name,
            workload: principal.workload ? JSON.stringify(principal.workload) : null,
            created_at: new Date().toISOString()
        }, storedKey === undefined ? undefined : { key: storedKey, requestHash: stored.hash }, config.limits.maxQueuedRuns, config.limits.maxQueuedRunsPerTeam);
        if (result.kind === 'key_reused') {
            throw new ProblemError('idempotency_key_reused', `Idempotency-Key ${JSON.stringify(key)} was already used with a different request body`);
        }
        if (result.kind === 'queue_full') {
            throw new ProblemError('resource_unavailable', `the queue holds ${config.limits.maxQueuedRuns} runs, its limit; retry later`, { 'retry-after': '10' });
        }
        if (result.kind === 'team_queue_full') {
            throw new ProblemError('resource_unavailable', `this team's queued runs reached its limit, limits.max_queued_runs_per_team: ${config.limits.maxQueuedRunsPerTeam}; retry later`, { 'retry-after': '10' });
        }
        if (result.kind === 'replayed')
            reply.header('idempotent-replayed', 'true');
        return { run_id: result.run.run_id, state: result.run.state };
    };
    /**
     * A create's `parent_run_id` names a run of the key's team (else 404, as for any run it cannot
     * see) at most MAX_RUN_DEPTH - 1 levels below a root, so the child is at most MAX_RUN_DEPTH
     * below it (else 400 naming the limit). Undefined for a root run.
     */
    async function parentOf(id, team) {
        if (id === undefined || id === null)
            return undefined;
        if (typeof id !== 'string')
            throw new ProblemError('invalid_field', 'parent_run_id: expected a run id (a string)');
        const parent = await store.getRun(team, id);
        if (!parent)
            throw notFound(id);
        const above = await store.ancestorCount(team, id);
        if (above + 1 > MAX_RUN_DEPTH)
            throw new ProblemError('invalid_request', `parent_run_id ${JSON.stringify(id)}: that run is ${above} levels below its root run; a child run may be at most ${MAX_RUN_DEPTH} levels below a root (the limit of run depth)`);
        return parent;
    }
    /**
     * A create's `conversation_id` names an ended run of the key's team in the same environment,
     * whose workspace is still kept (workspaces.continue_for): the new run starts from its tree.
     */
    async function checkConversation(body, team, environmentId) {
        const id = body.conversation_id;
        if (id === undefined || id === null)
            return;
        if (typeof id !== 'string' || id.trim() === '')
            throw new ProblemError('invalid_field', 'conversation_id: expected the run id of an earlier run (a string)');
        const shown = JSON.stringify(id.slice(0, 100));
        const earlier = await store.getRun(team, id);
        if (!earlier)
            throw new ProblemError('invalid_field', `conversation_id ${shown}: no run of this key's team has that id`);
        if (earlier.environment_id !== environmentId)
            throw new ProblemError('invalid_field', `conversation_id ${shown}: that run ran in environment ${JSON.stringify(earlier.environment_id)}; a run continuing it must use the same environment`);
        if (!run_isTerminalState(earlier.state))
            throw new ProblemError('run_not_continuable', `conversation_id ${shown}: that run is ${earlier.state}; wait until it ends, or send it a follow-up instead`);
        const since = new Date(Date.now() - config.workspaces.continueForMs).toISOString();
        if ((earlier.completed_at ?? earlier.updated_at) < since)
            throw new ProblemError('run_not_continuable', `conversation_id ${shown}: that run ended longer ago than workspaces.continue_for; its workspace is gone`);
    }
    async function findRun(request, id) {
        const run = await store.getRun(request.principal.team, id);
        if (!run)
            throw notFound(id);
        return run;
    }
    return {
        createRun: create,
        createRunLegacy: create,
        getRun: async (request, reply) => {
            const id = request.params.run_id;
            const prefer = request.headers.prefer;
            const wait = prefer === undefined ? undefined : runs_preferWait(String(prefer));
            if (wait === undefined) {
                // The plain read (no hold): the serialised record, kept while the store is unchanged.
                const read = await reads.body(`run\n${request.principal.team}\n${id}`, async () => {
                    const run = await findRun(request, id);
                    return { etag: etagOf(run), body: reply.serialize(toRecord(run, links)) };
                });
                reply.header('etag', read.etag);
                if (request.headers['if-none-match'] === read.etag)
                    return reply.code(304).send();
                return reply.type(JSON_TYPE).send(read.body);
            }
            let run = await findRun(request, id);
            const current = () => request.headers['if-none-match'] === etagOf(run);
            reply.header('preference-applied', `wait=${wait}`);
            if (wait && current() && !run_isTerminalState(run.state)) {
                const closed = new AbortController();
                request.raw.once('close', () => closed.abort());
                const deadline = Date.now() + wait * 1000;
                // A wake may be a change heard twice (notification and fallback poll): wait on until this
                // run really moved, the time is up, the client left or the server is stopping.
                // Each wait also ends at once for a change heard while the run was being read (versions are
                // announced only after they are committed, so the next read sees them).
                while (!closed.signal.aborted && !context.draining && Date.now() < deadline) {
                    await hub.wait(run.run_id, run.version, deadline - Date.now(), closed.signal);
                    run = await findRun(request, id);
                    if (!current() || run_isTerminalState(run.state))
                        break;
                }
            }
            reply.header('etag', etagOf(run));
            if (current())
                return reply.code(304).send();
            return toRecord(run, links);
        },
        listRuns: async (request, reply) => {
            const search = request.url.slice(request.url.indexOf('?') + 1 || request.url.length);
            // An orchestrate run's token lists below its run even when the URL names no ancestor
            // (run-token.ts filled it in): its pages are never a team key's.
            const below = request.principal.orchestrator ? `\nbelow ${request.query.ancestor_run_id}` : '';
            const read = await reads.body(`list\n${request.principal.team}${below}\n${search}`, async () => {
                const query = list_params_listQuery(request.query);
                const rows = await store.listRuns(request.principal.team, {
                    ...query,
                    limit: query.limit + 1,
                    maxWeight: MAX_PAGE_WEIGHT
                });
                // A page ends at `limit` runs, or earlier once its runs' stored text passes MAX_PAGE_WEIGHT.
                const page = rows.slice(0, Math.min(query.limit, runsWithin(rows, MAX_PAGE_WEIGHT)));
                const more = rows.length > page.length;
                return {
                    body: reply.serialize({
                        runs: page.map(run => toRecord(run, links)),
                        page_info: {
                            has_next_page: more,
                            next_cursor: more ? encodeCursor(page.at(-1), query.sortBy, query.sortOrder) : null
                        }
                    })
                };
            });
            return reply.type(JSON_TYPE).send(read.body);
        },
        cancelRun: async (request, reply) => {
            const id = request.params.run_id;
            // The schema bounds the reason (MAX_CANCEL_REASON); blank around it is not kept.
            const reason = request.body?.reason?.trim();
            const result = await store.cancelRun(request.principal.team, id, new Date().toISOString(), reason);
            if (result.kind === 'not_found')
                throw notFound(id);
            if (result.kind === 'finished')
                throw new ProblemError('run_already_finished', `run ${id} already ended ${result.run.state}; there is nothing to cancel`);
            return reply.type('application/json').send(JSON.stringify(result.run.run_id));
        },
        submitFollowup: async (request) => {
            const id = request.params.run_id;
            const mode = followupMode(request.body.mode);
            if (mode === 'orchestrate') {
                const run = await store.getRun(request.principal.team, id);
                if (!run)
                    throw notFound(id);
                const environment = config.environments.find(env => env.id === run.environment_id);
                if (environment)
                    checkOrchestrable(environment);
            }
            if (context.draining)
                throw new ProblemError('shutting_down', 'the executor is shutting down and accepts no follow-ups', {
                    'retry-after': '5'
                });
            const now = Date.now();
            const since = new Date(now - config.workspaces.continueForMs).toISOString();
            const result = await store.submitFollowup(request.principal.team, id, { message: request.body.message, mode }, new Date(now).toISOString(), since, { maxQueued: config.limits.maxQueuedRuns, maxQueuedPerTeam: config.limits.maxQueuedRunsPerTeam });
            if (result.kind === 'not_found')
                throw notFound(id);
            if (result.kind === 'queue_full')
                throw new ProblemError('resource_unavailable', `run ${id} has ended, and continuing it would queue it again: the queue holds ${config.limits.maxQueuedRuns} runs, its limit; retry later`, { 'retry-after': '10' });
            if (result.kind === 'team_queue_full')
                throw new ProblemError('resource_unavailable', `run ${id} has ended, and continuing it would queue it again: this team's queued runs reached its limit, limits.max_queued_runs_per_team: ${config.limits.maxQueuedRunsPerTeam}; retry later`, { 'retry-after': '10' });
            if (result.kind === 'expired')
                throw new ProblemError('run_not_continuable', `run ${id} ended ${result.run.state} at ${result.run.completed_at ?? result.run.updated_at}, longer ago than workspaces.continue_for (${Math.round(config.workspaces.continueForMs / 60_000)} min): its workspace is gone, so it cannot be continued; start a new run`);
            return { run_id: result.run.run_id, state: result.run.state };
        },
        getTranscript: async (request, reply) => readTranscript(context, request, reply, () => findRun(request, request.params.run_id))
    };
}
function notFound(id) {
    return new ProblemError('not_found', `run ${JSON.stringify(id.slice(0, 100))} does not exist or is not visible to this key`);
}
const SERVER_FIELDS = new Set([
    'run_id',
    'task_id',
    'state',
    'environment_id',
    'created_at',
    'updated_at',
    'started_at',
    'completed_at',
    'status_message',
    'error_code',
    'session_link',
    'session_id',
    'creator',
    'agent_config',
    'source',
    'run_time',
    'request_usage',
    'workload',
    'artifacts',
    // set only by the scheduler: a create body cannot pass its run off as a schedule's
    'schedule_id',
    'scheduled_for'
]);
/**
 * A run's `config.harness.type` must be the one its environment's agent serves (a harness kind
 * serves one: claude-code serves `claude`); other kinds run whatever they were given. A harness
 * kind's model ids (`config.model_id`, `config.harness.model_id`) must look like model ids, and
 * whatever the kind, `config.mcp_servers` stays within its bounds (input.ts) and the whole config
 * within MAX_CONFIG_BYTES.
 */
function checkHarnessConfig(runConfig, kind) {
    const mcp = mcpServersProblem(runConfig.mcp_servers);
    if (mcp)
        throw new ProblemError('invalid_field', mcp);
    // The config is in every record and list page of the run: its size is every later read's cost.
    const bytes = Buffer.byteLength(JSON.stringify(runConfig));
    if (bytes > MAX_CONFIG_BYTES) {
        const [largest, size] = largestField(runConfig);
        throw new ProblemError('invalid_field', `config.${largest.slice(0, 100)}: ${size} bytes of JSON; config may take ${MAX_CONFIG_BYTES} bytes in all (64 KiB), this one takes ${bytes}`);
    }
    const harness = runConfig.harness;
    // A harness puts the model on its CLI's command line: it must look like a model id, not an option.
    if (agentKindOf(kind)?.harnessType !== undefined) {
        const inner = harness !== null && typeof harness === 'object' ? harness : {};
        const problem = modelIdProblem(runConfig.model_id, 'config.model_id') ??
            modelIdProblem(inner.model_id, 'config.harness.model_id');
        if (problem)
            throw new ProblemError('invalid_field', problem);
    }
    if (harness === undefined || harness === null)
        return;
    const type = typeof harness === 'object' ? harness.type : undefined;
    if (typeof harness !== 'object' ||
        Array.isArray(harness) ||
        (type !== undefined && typeof type !== 'string'))
        throw new ProblemError('invalid_field', 'config.harness: expected an object such as {"type": "claude"}');
    const serves = agentKindOf(kind)?.harnessType;
    if (type === undefined || serves === undefined || type === serves)
        return;
    throw new ProblemError('invalid_field', `config.harness.type ${JSON.stringify(type.slice(0, 40))}: this environment runs the ${kind} agent, which serves harness type ${JSON.stringify(serves)}`);
}
/**
 * A child's metadata: its own pairs, then the parent's keys it does not set, while the pairs stay
 * within MAX_METADATA_PAIRS (its own come first).
 */
function inheritMetadata(extra, parent) {
    if (!parent || parent.extra === '{}')
        return extra;
    const inherited = JSON.parse(parent.extra).metadata;
    if (inherited === null || typeof inherited !== 'object' || Array.isArray(inherited))
        return extra;
    const own = (extra.metadata ?? {});
    const merged = { ...own };
    for (const [key, value] of Object.entries(inherited)) {
        if (Object.keys(merged).length >= MAX_METADATA_PAIRS)
            break;
        if (!(key in merged) && typeof value === 'string')
            merged[key] = value;
    }
    return Object.keys(merged).length === 0 ? extra : { ...extra, metadata: merged };
}
/** The body's fields beyond prompt, config and title, kept (metadata, skill, …) unless the server owns them. */
function extraFields(body) {
    const extra = {};
    for (const name of Object.keys(body)) {
        if (name !== 'prompt' && name !== 'config' && name !== 'title' && !SERVER_FIELDS.has(name))
            extra[name] = body[name];
    }
    return extra;
}
/**
 * The fields a create keeps beyond prompt, config and title are bounded in total: every record and
 * list page carries them, so their size is every later read's cost. The problem names the largest.
 */
function checkExtraFields(extra, body) {
    const bytes = Buffer.byteLength(extra);
    if (bytes <= MAX_EXTRA_FIELDS_BYTES)
        return;
    const [largest, size] = largestField(extraFields(body));
    throw new ProblemError('invalid_field', `${largest.slice(0, 100)}: ${size} bytes of JSON; the fields beyond prompt, config and title may take ${MAX_EXTRA_FIELDS_BYTES} bytes in all (64 KiB), these take ${bytes}`);
}
/** The field of `object` whose value takes the most bytes of JSON, and how many. */
function largestField(object) {
    const sizes = Object.entries(object).map(([name, value]) => [name, Buffer.byteLength(JSON.stringify(value) ?? '')]);
    return sizes.reduce((a, b) => (b[1] > a[1] ? b : a), ['', 0]);
}
/** SHA-256 of the body with object keys sorted, so the same request always hashes the same. */
function canonicalHash(body) {
    const canonical = (value) => {
        if (Array.isArray(value))
            return value.map(canonical);
        if (value !== null && typeof value === 'object') {
            return Object.fromEntries(Object.keys(value)
                .sort()
                .map(key => [key, canonical(value[key])]));
        }
        return value;
    };
    return (0,external_node_crypto_.createHash)('sha256')
        .update(JSON.stringify(canonical(body)))
        .digest('hex');
}
/** `Prefer: wait=N` (RFC 7240), capped at MAX_WAIT_SECONDS; undefined when absent. */
function runs_preferWait(header) {
    const match = /(?:^|[,;\s])wait\s*=\s*"?(\d+)"?/i.exec(header ?? '');
    return match ? Math.min(MAX_WAIT_SECONDS, Number(match[1])) : undefined;
}

;// CONCATENATED MODULE: ./src/executor/server/routes/schedules.ts
// The schedule endpoints (create, list, get, update, delete, pause, resume) as a handler map for
// register.ts. The schemas have checked each field's form; what is left here is meaning: the cron
// expression parses and fires some day, the time zone exists, the environment is one this
// executor serves. A team sees only its own schedules (another team's id answers 404, as an unknown
// one). The runs a schedule starts are the scheduler's (schedules/scheduler.ts).




/** The settings of a create or update body, checked beyond the schema. */
function specOf(body, context, previous) {
    const zone = body.time_zone ?? previous?.time_zone ?? 'UTC';
    const zoneProblem = timeZoneProblem(zone);
    if (zoneProblem)
        throw new ProblemError('invalid_field', zoneProblem);
    const cron = cronProblem(body.cron_schedule, zone);
    if (cron)
        throw new ProblemError('invalid_field', cron);
    const agentConfig = (body.agent_config ?? previous?.agent_config ?? {});
    const environmentId = agentConfig.environment_id;
    const served = context.config.environments.map(env => env.id).join(', ');
    if (typeof environmentId !== 'string')
        throw new ProblemError('invalid_field', `agent_config.environment_id: missing; expected the id of an environment this executor serves (${served})`);
    if (!context.config.environments.some(env => env.id === environmentId))
        throw new ProblemError('invalid_field', `agent_config.environment_id ${JSON.stringify(environmentId)}: no such environment; expected one of ${served}`);
    // agent_config is the config of every run the schedule starts: checked as a create's would be.
    const environment = context.config.environments.find(env => env.id === environmentId);
    if (environment)
        checkHarnessConfig(agentConfig, environment.agent.kind);
    const bytes = Buffer.byteLength(body.prompt);
    if (bytes > context.config.limits.maxPromptBytes)
        throw new ProblemError('invalid_field', `prompt: ${bytes} bytes is over the limit of ${context.config.limits.maxPromptBytes} bytes`);
    return {
        name: body.name,
        cron_schedule: body.cron_schedule.trim(),
        prompt: body.prompt,
        agent_config: { ...agentConfig, environment_id: environmentId },
        time_zone: zone,
        overlap: body.overlap ?? previous?.overlap ?? 'skip',
        catch_up: body.catch_up ?? previous?.catch_up ?? true
    };
}
function iso(ms) {
    return ms === null ? null : new Date(ms).toISOString();
}
/** A stored schedule in the service's ScheduledAgentItem shape, with the executor's additions. */
function scheduleRecord(schedule) {
    const { spec } = schedule;
    return {
        id: schedule.id,
        name: spec.name,
        cron_schedule: spec.cron_schedule,
        prompt: spec.prompt,
        enabled: schedule.enabled,
        agent_config: spec.agent_config,
        time_zone: spec.time_zone,
        overlap: spec.overlap,
        catch_up: spec.catch_up,
        created_at: schedule.created_at,
        updated_at: schedule.updated_at,
        created_by: schedule.created_by,
        history: { last_ran: schedule.last_ran, next_run: iso(schedule.next_run_ms) },
        last_spawn_error: schedule.last_spawn_error,
        last_run_id: schedule.last_run_id,
        scope: { type: 'Team', uid: schedule.team }
    };
}
/**
 * Pauses (next due time none) or resumes (next due time from now) a team's schedule, keeping its
 * settings; the schedule as it is now, undefined when the team has none with this id. The API's
 * pause and resume and the dashboard's buttons both go through here.
 */
async function setScheduleEnabled(schedules, team, id, enabled) {
    const schedule = await schedules.getSchedule(team, id);
    if (!schedule)
        return undefined;
    const nextRunMs = enabled
        ? nextFire(schedule.spec.cron_schedule, schedule.spec.time_zone, Date.now())
        : null;
    const at = new Date().toISOString();
    if (!(await schedules.updateSchedule(team, id, { spec: schedule.spec, enabled, nextRunMs, at })))
        return undefined;
    return schedules.getSchedule(team, id);
}
function schedules_notFound(id) {
    return new ProblemError('not_found', `schedule ${JSON.stringify(id)} does not exist`);
}
function scheduleHandlers(context) {
    const schedules = context.store.schedules;
    const next = (spec, enabled) => enabled ? nextFire(spec.cron_schedule, spec.time_zone, Date.now()) : null;
    async function find(team, id) {
        const schedule = await schedules.getSchedule(team, id);
        if (!schedule)
            throw schedules_notFound(id);
        return schedule;
    }
    /** Sets enabled (and the next due time from now), keeping the settings. */
    async function setEnabled(team, id, enabled) {
        const schedule = await setScheduleEnabled(schedules, team, id, enabled);
        if (!schedule)
            throw schedules_notFound(id);
        return scheduleRecord(schedule);
    }
    return {
        createSchedule: async (request) => {
            const body = request.body;
            const spec = specOf(body, context);
            const enabled = body.enabled ?? true;
            const principal = request.principal;
            const at = new Date().toISOString();
            const schedule = {
                id: (0,external_node_crypto_.randomUUID)(),
                team: principal.team,
                spec,
                enabled,
                next_run_ms: next(spec, enabled),
                last_ran: null,
                last_run_id: null,
                last_spawn_error: null,
                created_by: {
                    type: principal.kind === 'personal' ? 'user' : 'agent',
                    uid: principal.keyId,
                    display_name: principal.name
                },
                created_at: at,
                updated_at: at
            };
            const limit = context.config.limits.maxSchedulesPerTeam;
            if (!(await schedules.createSchedule(schedule, limit)))
                throw new ProblemError('schedule_limit_reached', `this team has ${limit} schedules, the limit of limits.max_schedules_per_team; delete one to create another`);
            return scheduleRecord(schedule);
        },
        listSchedules: async (request) => ({
            schedules: (await schedules.listSchedules(request.principal.team)).map(scheduleRecord)
        }),
        getSchedule: async (request) => scheduleRecord(await find(request.principal.team, request.params.schedule_id)),
        updateSchedule: async (request) => {
            const { team } = request.principal;
            const id = request.params.schedule_id;
            const previous = await find(team, id);
            const spec = specOf(request.body, context, previous.spec);
            const enabled = request.body.enabled;
            const changed = await schedules.updateSchedule(team, id, {
                spec,
                enabled,
                nextRunMs: next(spec, enabled),
                at: new Date().toISOString()
            });
            if (!changed)
                throw schedules_notFound(id);
            return scheduleRecord(await find(team, id));
        },
        deleteSchedule: async (request) => {
            const id = request.params.schedule_id;
            if (!(await schedules.deleteSchedule(request.principal.team, id)))
                throw schedules_notFound(id);
            return { success: true };
        },
        pauseSchedule: request => setEnabled(request.principal.team, request.params.schedule_id, false),
        resumeSchedule: request => setEnabled(request.principal.team, request.params.schedule_id, true)
    };
}

;// CONCATENATED MODULE: ./src/executor/server/dashboard/session.ts
// Who is signed in to the dashboard, and the checks every state-changing request passes. The
// cookie holds a random id; the store keeps only its SHA-256, bound to the key's team, so any node
// knows the session and a revoked key ends it at the next request. The CSRF token is derived from
// the id (an attacker who cannot read the cookie cannot compute it), and a POST must also come
// from this site's own origin.


const COOKIE = 'agent_run_session';
/** How long a sign-in lasts. */
const SESSION_TTL_MS = 12 * 60 * 60 * 1000;
const sha256 = (text) => (0,external_node_crypto_.createHash)('sha256').update(text).digest('hex');
const csrfOf = (id) => (0,external_node_crypto_.createHash)('sha256').update(`csrf\n${id}`).digest('base64url');
function cookieValue(request) {
    const header = request.headers.cookie ?? '';
    for (const part of header.split(';')) {
        const [name, ...rest] = part.trim().split('=');
        if (name === COOKIE)
            return rest.join('=');
    }
    return undefined;
}
/** The signed-in viewer, or undefined (no cookie, unknown, expired, or its key revoked). */
async function viewerOf(store, request) {
    const id = cookieValue(request);
    if (!id || !/^[A-Za-z0-9_-]{43}$/.test(id))
        return undefined;
    const session = await store.findWebSession(sha256(id), Date.now());
    if (!session)
        return undefined;
    return { team: session.team, keyName: session.key_name, csrf: csrfOf(id), idHash: session.id_hash };
}
/** True when the site is reached over https, so the cookie must be Secure. */
function session_secure(config, request) {
    return request.protocol === 'https' || (config.publicUrl ?? '').startsWith('https:');
}
/** Checks an API key and makes a session of it; false for a malformed, unknown or revoked key. */
async function signIn(store, config, request, reply, key) {
    if (!isWellFormedKey(key))
        return false;
    const hash = hashKey(key);
    const record = await store.findKeyByHash(hash);
    if (!record || !sameHash(record.hash, hash) || record.revoked_at !== null)
        return false;
    const id = (0,external_node_crypto_.randomBytes)(32).toString('base64url');
    const now = Date.now();
    await store.createWebSession({
        id_hash: sha256(id),
        key_id: record.id,
        team: record.team,
        created_at: new Date(now).toISOString(),
        expires_at: now + SESSION_TTL_MS
    });
    const flags = `Path=/; HttpOnly; SameSite=Strict; Max-Age=${SESSION_TTL_MS / 1000}`;
    reply.header('set-cookie', `${COOKIE}=${id}; ${flags}${session_secure(config, request) ? '; Secure' : ''}`);
    return true;
}
function clearCookie(config, request, reply) {
    const flags = 'Path=/; HttpOnly; SameSite=Strict; Max-Age=0';
    reply.header('set-cookie', `${COOKIE}=; ${flags}${session_secure(config, request) ? '; Secure' : ''}`);
}
/** The origins this site is served at: the request's own host, and the configured public URL. */
function sameOrigin(config, request) {
    const origin = request.headers.origin;
    if (typeof origin !== 'string')
        return false;
    if (origin === `${request.protocol}://${request.host}`)
        return true;
    if (config.publicUrl) {
        try {
            return new URL(config.publicUrl).origin === origin;
        }
        catch {
            return false;
        }
    }
    return false;
}
/**
 * Why a form POST is refused, or undefined when it may go on: it must come from this origin, and
 * (when signed in) carry the session's CSRF token.
 */
function refusal(config, request, viewer, token) {
    if (!sameOrigin(config, request))
        return `the request came from origin ${JSON.stringify(request.headers.origin ?? null)}, not from this site`;
    if (!viewer)
        return undefined;
    const given = Buffer.from(typeof token === 'string' ? token : '');
    const expected = Buffer.from(viewer.csrf);
    if (given.length !== expected.length || !(0,external_node_crypto_.timingSafeEqual)(given, expected))
        return 'the form is missing its CSRF token or carries a wrong one; reload the page and try again';
    return undefined;
}

;// CONCATENATED MODULE: ./src/executor/server/dashboard/routes.ts
// The dashboard's routes: sign-in and sign-out, the runs list, a run (with cancel and artifact
// downloads), the schedules (with pause and resume), the environments, the live streams and the two static files. Forms are parsed here
// only (the JSON API still takes JSON alone), and the JSON API never looks at the cookie: it keeps
// accepting Bearer keys only.













const CSP = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; " +
    "form-action 'self'; base-uri 'none'; frame-ancestors 'none'";
const HEADERS = {
    'content-security-policy': CSP,
    // same-origin, not no-referrer: under no-referrer Chromium sends `Origin: null` with our own forms.
    'referrer-policy': 'same-origin',
    'x-content-type-options': 'nosniff',
    'x-frame-options': 'DENY',
    'cache-control': 'no-store'
};
function html(reply, body, status = 200) {
    return reply.code(status).headers(HEADERS).type('text/html; charset=utf-8').send(body);
}
/**
 * A refusal: an HTML page for a browser (it asks for text/html), and for any other client the
 * problem+json every other error of the executor is.
 */
function refuse(request, reply, page, problem) {
    if (!/\btext\/html\b/.test(request.headers.accept ?? ''))
        throw problem;
    for (const [name, value] of Object.entries(problem.headers))
        void reply.header(name, value);
    return html(reply, page, problem.status);
}
function forbidden(request, reply, viewer, why) {
    return refuse(request, reply, renderProblem(viewer, 'Request refused', why), new ProblemError('invalid_request', why, {}, 403));
}
function runNotFound(request, reply, viewer, id) {
    return refuse(request, reply, renderProblem(viewer, 'Run not found', `There is no run ${id.slice(0, 100)} in your team.`), new ProblemError('not_found', `run ${JSON.stringify(id.slice(0, 100))} does not exist or is not visible to this session`));
}
async function dashboardRoutes(app, { context }) {
    const { store, config, limiter } = context;
    app.addContentTypeParser('application/x-www-form-urlencoded', { parseAs: 'string' }, (_request, body, done) => done(null, Object.fromEntries(new URLSearchParams(body))));
    const field = (request, name) => request.body?.[name];
    const environments = config.environments.map(e => e.id);
    /** The viewer, or a redirect to the sign-in page (answered here) when there is none. */
    const signedIn = async (request, reply) => {
        const viewer = await viewerOf(store, request);
        if (!viewer) {
            clearCookie(config, request, reply);
            // After sign-in the browser comes back to the page it asked for.
            const next = localPath(request.url);
            const back = next && next !== '/' ? `/?next=${encodeURIComponent(next)}` : '/';
            void reply.code(303).header('location', back).send();
        }
        return viewer;
    };
    app.get('/dashboard/app.css', (_request, reply) => reply.type('text/css; charset=utf-8').header('cache-control', 'public, max-age=300').send(CSS));
    app.get('/dashboard/app.js', (_request, reply) => reply.type('text/javascript; charset=utf-8').header('cache-control', 'public, max-age=300').send(JS));
    app.get('/', async (request, reply) => {
        const viewer = await viewerOf(store, request);
        if (!viewer) {
            // Back after sign-in to the page asked for: a deep link's, or this list with its filters.
            const asked = request.query.next;
            const next = asked !== undefined ? localPath(asked) : request.url !== '/' ? localPath(request.url) : undefined;
            return html(reply, renderSignIn(undefined, next));
        }
        const filters = readFilters(request.query);
        const runs = await store.listRuns(viewer.team, listQuery(filters, PAGE_SIZE + 1));
        const counts = await store.countRunsByState(viewer.team);
        const more = runs.length > PAGE_SIZE;
        return html(reply, renderList(viewer, filters, runs.slice(0, PAGE_SIZE), more, counts, environments));
    });
    app.post('/sign-in', async (request, reply) => {
        const refused = refusal(config, request, undefined, undefined);
        if (refused)
            return forbidden(request, reply, undefined, refused);
        const next = localPath(field(request, 'next'));
        const wait = limiter.take(`sign-in ${request.ip}`);
        if (wait !== undefined) {
            const message = `too many sign-in attempts from this address; try again in ${wait} s`;
            return refuse(request, reply, renderSignIn(message, next), new ProblemError('rate_limited', message, { 'retry-after': String(wait) }));
        }
        const key = field(request, 'api_key');
        if (typeof key !== 'string' || !(await signIn(store, config, request, reply, key.trim()))) {
            const message = `That API key is malformed, unknown or revoked; paste a whole key of the form ${KEY_PREFIX}…`;
            return refuse(request, reply, renderSignIn(message, next), new ProblemError('unauthenticated', message));
        }
        return reply
            .code(303)
            .header('location', next ?? '/')
            .send();
    });
    app.post('/sign-out', async (request, reply) => {
        const viewer = await viewerOf(store, request);
        const refused = refusal(config, request, viewer, field(request, 'csrf'));
        if (refused)
            return forbidden(request, reply, viewer, refused);
        if (viewer)
            await store.deleteWebSession(viewer.idHash);
        clearCookie(config, request, reply);
        return reply.code(303).header('location', '/').send();
    });
    app.get('/runs/:id', async (request, reply) => {
        const viewer = await signedIn(request, reply);
        if (!viewer)
            return reply;
        const { id } = request.params;
        const run = await store.getRun(viewer.team, id);
        if (!run)
            return runNotFound(request, reply, viewer, id);
        const [events, artifacts] = await Promise.all([
            boundedEvents(store, id),
            store.listArtifacts(viewer.team, id)
        ]);
        const base = config.publicUrl ?? `${request.protocol}://${request.host}`;
        return html(reply, renderRun(viewer, run, events, artifacts, base, context.links.link(run)));
    });
    app.post('/runs/:id/cancel', async (request, reply) => {
        const viewer = await viewerOf(store, request);
        const refused = refusal(config, request, viewer, field(request, 'csrf'));
        if (refused)
            return forbidden(request, reply, viewer, refused);
        if (!viewer)
            return reply.code(303).header('location', '/').send();
        const { id } = request.params;
        const result = await store.cancelRun(viewer.team, id, new Date().toISOString(), `from the dashboard by ${viewer.keyName}`);
        if (result.kind === 'not_found')
            return runNotFound(request, reply, viewer, id);
        return reply
            .code(303)
            .header('location', `/runs/${encodeURIComponent(id)}`)
            .send();
    });
    app.get('/runs/:id/artifacts/:uid', async (request, reply) => {
        const viewer = await signedIn(request, reply);
        if (!viewer)
            return reply;
        const { id, uid } = request.params;
        const artifact = await store.getArtifact(viewer.team, uid);
        const stored = artifact && artifact.run_id === id ? await store.readArtifact(uid) : undefined;
        if (!stored)
            return refuse(request, reply, renderProblem(viewer, 'Artifact not found', `There is no artifact ${uid.slice(0, 100)} in this run.`), new ProblemError('artifact_not_found', `artifact ${JSON.stringify(uid.slice(0, 100))} does not exist in run ${JSON.stringify(id.slice(0, 100))} of this team`));
        const name = stored.artifact.filename;
        return reply
            .type(stored.artifact.mime_type)
            .headers({ ...HEADERS, 'content-security-policy': "default-src 'none'; sandbox" })
            .header('content-disposition', `attachment; filename="${name.replace(/[^\x20-\x7e]|["\\]/g, '_')}"; filename*=UTF-8''${encodeURIComponent(name)}`)
            .send(stored.data);
    });
    app.get('/environments', async (request, reply) => {
        const viewer = await signedIn(request, reply);
        if (!viewer)
            return reply;
        const active = await store.listRuns(viewer.team, { limit: 1000, states: ['QUEUED', 'INPROGRESS'] });
        return html(reply, renderEnvironments(viewer, config, active, await store.listNodes()));
    });
    app.get('/schedules', async (request, reply) => {
        const viewer = await signedIn(request, reply);
        if (!viewer)
            return reply;
        const schedules = await store.schedules.listSchedules(viewer.team);
        const rows = await Promise.all(schedules.map(async (schedule) => ({
            schedule,
            runs: await store.listRuns(viewer.team, { limit: 5, scheduleId: schedule.id })
        })));
        return html(reply, renderSchedules(viewer, rows));
    });
    app.get('/webhooks', async (request, reply) => {
        const viewer = await signedIn(request, reply);
        if (!viewer)
            return reply;
        const webhooks = await store.webhooks.listWebhooks(viewer.team);
        const rows = await Promise.all(webhooks.map(async (webhook) => ({
            webhook,
            deliveries: await store.webhooks.listDeliveries(webhook.id, 50)
        })));
        return html(reply, renderWebhooks(viewer, rows));
    });
    for (const action of ['pause', 'resume']) {
        app.post(`/schedules/:id/${action}`, async (request, reply) => {
            const viewer = await viewerOf(store, request);
            const refused = refusal(config, request, viewer, field(request, 'csrf'));
            if (refused)
                return forbidden(request, reply, viewer, refused);
            if (!viewer)
                return reply.code(303).header('location', '/').send();
            const { id } = request.params;
            const changed = await setScheduleEnabled(store.schedules, viewer.team, id, action === 'resume');
            if (!changed)
                return refuse(request, reply, renderProblem(viewer, 'Schedule not found', `There is no schedule ${id.slice(0, 100)} in your team.`), new ProblemError('not_found', `schedule ${JSON.stringify(id.slice(0, 100))} does not exist`));
            return reply.code(303).header('location', '/schedules').send();
        });
    }
    app.get('/live', async (request, reply) => {
        const viewer = await viewerOf(store, request);
        if (!viewer)
            throw new ProblemError('unauthenticated', 'no dashboard session: sign in at / first');
        const query = request.query;
        const session = async () => (await store.findWebSession(viewer.idHash, Date.now())) !== undefined;
        if (typeof query.run === 'string') {
            const run = await store.getRun(viewer.team, query.run);
            if (!run)
                return runNotFound(request, reply, viewer, query.run);
            const after = Number(query.after);
            return runStream(store, viewer.team, run.run_id, Number.isSafeInteger(after) ? after : 0, request, reply, HEADERS, session);
        }
        return listStream(store, viewer.team, readFilters(query), request, reply, HEADERS, session);
    });
}

;// CONCATENATED MODULE: ./src/executor/server/download-links.ts
// Signed, time-limited download URLs for artifacts: an HMAC of the artifact id and the expiry, so a
// client can hand the URL to a tool without its API key (like a session link). The secret lives in
// the store, so every node signs and checks the same way.


/** How long a download URL stays valid. */
const DOWNLOAD_TTL_SECONDS = 15 * 60;
class DownloadLinks {
    secret;
    constructor(secret) {
        this.secret = secret;
    }
    static async open(store) {
        return new DownloadLinks(await store.getSecret('artifact-links', () => (0,external_node_crypto_.randomBytes)(32).toString('base64url')));
    }
    sign(uid, expires) {
        return (0,external_node_crypto_.createHmac)('sha256', this.secret).update(`${uid}\n${expires}`).digest('base64url');
    }
    /** The download URL of an artifact under `base`, valid from `now` for DOWNLOAD_TTL_SECONDS. */
    url(base, uid, now = Date.now()) {
        const expires = Math.floor(now / 1000) + DOWNLOAD_TTL_SECONDS;
        return {
            url: `${base}${endpointPath('downloadArtifact', { artifact_uid: uid })}?expires=${expires}&signature=${this.sign(uid, expires)}`,
            expiresAt: new Date(expires * 1000).toISOString()
        };
    }
    /** Whether `expires` and `signature` (as the query gave them) are this artifact's and not expired. */
    verify(uid, expires, signature) {
        if (typeof expires !== 'string' || !/^\d{1,12}$/.test(expires))
            return false;
        const until = Number(expires);
        if (until * 1000 <= Date.now() || typeof signature !== 'string')
            return false;
        const given = Buffer.from(signature);
        const expected = Buffer.from(this.sign(uid, until));
        return given.length === expected.length && (0,external_node_crypto_.timingSafeEqual)(given, expected);
    }
}

;// CONCATENATED MODULE: ./src/executor/server/read-cache.ts
// Answers to reads kept between writes, so a client polling an unchanged run or list page costs one
// cheap look at the store's change stamp instead of a key lookup, a query and a serialisation. The
// stamp (RunStore.changeStamp) moves on every write committed anywhere, by this process or another
// one sharing the store; everything here is dropped as soon as it moved, so a cached answer never
// shows anything an uncached read would not (a revoked key, a cancelled run). A store that cannot
// give a stamp (PostgreSQL) gets no caching: every request reads, as before.
//
// Entries are read only after the stamp was: an entry is never older than the stamp it is kept
// under, and a write committed while it was being read moves the stamp, so the next request drops it.
/** Held per stamp at most; a busy poller's run or page is among the newest. */
const MAX_ENTRIES = 1_000;
/** Answers are kept up to this many bytes in all (a list page of long prompts can be large)… */
const MAX_TOTAL_BYTES = 32 * 1024 * 1024;
/** …and an answer larger than this is never kept. */
const MAX_BODY_BYTES = 1024 * 1024;
class ReadCache {
    store;
    stamp;
    principals = new Map();
    bodies = new Map();
    bodyBytes = 0;
    constructor(store) {
        this.store = store;
    }
    /** Looks at the store's stamp once per request: drops everything when it moved. */
    refresh() {
        const stamp = this.store.changeStamp?.();
        if (stamp !== this.stamp || stamp === undefined) {
            this.stamp = stamp;
            if (this.principals.size > 0)
                this.principals.clear();
            if (this.bodies.size > 0)
                this.bodies.clear();
            this.bodyBytes = 0;
        }
    }
    /** The principal remembered for this Authorization header while the stamp has not moved, if any. */
    knownPrincipal(header) {
        if (header === undefined || this.stamp === undefined)
            return undefined;
        return this.principals.get(header);
    }
    /** The principal of this Authorization header, remembered only once the store accepted it. */
    async principal(header, load) {
        const known = this.knownPrincipal(header);
        if (known)
            return known;
        const stamp = this.stamp;
        const principal = await load();
        if (header !== undefined && stamp !== undefined && stamp === this.stamp)
            remember(this.principals, header, principal);
        return principal;
    }
    /** The answer kept under `key` (which must name the caller's team), or the one `load` builds now. */
    async body(key, load) {
        if (this.stamp === undefined)
            return load();
        const known = this.bodies.get(key);
        if (known)
            return known;
        const stamp = this.stamp;
        const built = await load();
        const bytes = read_cache_sizeOf(built.body);
        if (stamp === this.stamp && bytes <= MAX_BODY_BYTES && !this.bodies.has(key)) {
            while (this.bodies.size > 0 &&
                (this.bodyBytes + bytes > MAX_TOTAL_BYTES || this.bodies.size >= MAX_ENTRIES)) {
                const [oldest, entry] = this.bodies.entries().next().value;
                this.bodies.delete(oldest);
                this.bodyBytes -= read_cache_sizeOf(entry.body);
            }
            this.bodies.set(key, built);
            this.bodyBytes += bytes;
        }
        return built;
    }
}
/** Bytes of an answer, about (a string's length in UTF-16 units is close enough for a bound). */
function read_cache_sizeOf(body) {
    return typeof body === 'string' ? body.length : body.byteLength;
}
function remember(map, key, value) {
    if (map.size >= MAX_ENTRIES)
        map.delete(map.keys().next().value);
    map.set(key, value);
}

;// CONCATENATED MODULE: ./src/api/schedules.ts
// Schemas of the scheduled agents and the two catalogue reads (environments, models), in the
// production service's shapes (its official SDK's ScheduledAgentItem, ScheduleCreateParams, …):
// a schedule is a cron expression, a prompt and the config of the runs it starts. What the service
// leaves open and the executor adds is optional here: `time_zone`, `overlap`, `catch_up`.

const schedules_Timestamp = build/* default.String */.Ay$.String({ format: 'date-time', description: 'RFC 3339 timestamp' });
const schedules_NullableTimestamp = build/* default.Unsafe */.Ay$.Unsafe({
    type: ['string', 'null'],
    format: 'date-time',
    description: 'RFC 3339 timestamp, or null'
});
const OVERLAP_POLICIES = ['skip', 'queue', 'cancel_previous'];
const ScheduleAgentConfigSchema = build/* default.Object */.Ay$.Object({
    environment_id: build/* default.Optional */.Ay$.Optional(build/* default.String */.Ay$.String({
        pattern: '\\S',
        description: 'Environment the runs execute in (required by this executor).',
        expected: 'a non-empty string'
    }))
}, {
    additionalProperties: true,
    description: "The config of each run the schedule starts (a run's `config`).",
    expected: 'an object with environment_id'
});
const scheduleFields = {
    name: build/* default.String */.Ay$.String({
        pattern: '\\S',
        maxLength: 200,
        description: 'Human-readable name; the title of the runs it starts.',
        expected: 'a non-empty string of at most 200 characters'
    }),
    cron_schedule: build/* default.String */.Ay$.String({
        pattern: '\\S',
        maxLength: 200,
        description: 'Five-field cron expression (minute hour day month weekday), e.g. "0 9 * * 1-5".',
        expected: 'a cron expression such as "0 9 * * *"'
    }),
    prompt: build/* default.String */.Ay$.String({
        pattern: '\\S',
        description: 'The prompt of each run.',
        expected: 'a string',
        constraint: 'must not be empty'
    }),
    agent_config: build/* default.Optional */.Ay$.Optional(ScheduleAgentConfigSchema),
    enabled: build/* default.Boolean */.Ay$.Boolean({ description: 'Whether the schedule fires.', expected: 'true or false' }),
    time_zone: build/* default.Optional */.Ay$.Optional(build/* default.String */.Ay$.String({
        description: 'IANA time zone the cron expression is read in (default UTC).',
        expected: 'an IANA time zone such as "Europe/Berlin"'
    })),
    overlap: build/* default.Optional */.Ay$.Optional(build/* default.Union */.Ay$.Union(OVERLAP_POLICIES.map(policy => build/* default.Literal */.Ay$.Literal(policy)), {
        description: "What a fire does while the schedule's previous run still runs: skip it (default), queue it until that run ends, or cancel_previous.",
        expected: 'skip, queue or cancel_previous'
    })),
    catch_up: build/* default.Optional */.Ay$.Optional(build/* default.Boolean */.Ay$.Boolean({
        description: 'Whether a fire time missed while no executor ran starts one run when one comes back (default true).',
        expected: 'true or false'
    }))
};
const CreateScheduleRequestSchema = build/* default.Object */.Ay$.Object({
    ...scheduleFields,
    enabled: build/* default.Optional */.Ay$.Optional(scheduleFields.enabled),
    team: build/* default.Optional */.Ay$.Optional(build/* default.Boolean */.Ay$.Boolean({ description: 'Accepted and ignored: schedules belong to the key’s team.' }))
}, { additionalProperties: false, expected: 'a JSON object with name, cron_schedule and prompt' });
const UpdateScheduleRequestSchema = build/* default.Object */.Ay$.Object(scheduleFields, {
    additionalProperties: false,
    expected: 'a JSON object with name, cron_schedule, prompt and enabled'
});
const ScheduleIdParamsSchema = build/* default.Object */.Ay$.Object({
    schedule_id: build/* default.String */.Ay$.String({ description: 'The schedule id.' })
});
const UserProfileSchema = build/* default.Object */.Ay$.Object({
    type: build/* default.String */.Ay$.String(),
    uid: build/* default.String */.Ay$.String(),
    display_name: build/* default.String */.Ay$.String()
}, { additionalProperties: true });
const ScheduleSchema = build/* default.Object */.Ay$.Object({
    id: build/* default.String */.Ay$.String(),
    name: build/* default.String */.Ay$.String(),
    cron_schedule: build/* default.String */.Ay$.String(),
    prompt: build/* default.String */.Ay$.String(),
    enabled: build/* default.Boolean */.Ay$.Boolean(),
    agent_config: build/* default.Optional */.Ay$.Optional(build/* default.Object */.Ay$.Object({}, { additionalProperties: true })),
    time_zone: build/* default.String */.Ay$.String(),
    overlap: build/* default.String */.Ay$.String(),
    catch_up: build/* default.Boolean */.Ay$.Boolean(),
    created_at: schedules_Timestamp,
    updated_at: schedules_Timestamp,
    created_by: build/* default.Optional */.Ay$.Optional(UserProfileSchema),
    history: build/* default.Object */.Ay$.Object({ last_ran: schedules_NullableTimestamp, next_run: schedules_NullableTimestamp }),
    last_spawn_error: build/* default.Unsafe */.Ay$.Unsafe({ type: ['string', 'null'] }),
    last_run_id: build/* default.Unsafe */.Ay$.Unsafe({ type: ['string', 'null'] }),
    scope: build/* default.Object */.Ay$.Object({ type: build/* default.String */.Ay$.String(), uid: build/* default.String */.Ay$.String() })
}, { additionalProperties: true });
const ListSchedulesResponseSchema = build/* default.Object */.Ay$.Object({ schedules: build/* default.Array */.Ay$.Array(ScheduleSchema) });
const DeleteScheduleResponseSchema = build/* default.Object */.Ay$.Object({ success: build/* default.Boolean */.Ay$.Boolean() });
const EnvironmentSchema = build/* default.Object */.Ay$.Object({
    id: build/* default.String */.Ay$.String(),
    name: build/* default.String */.Ay$.String(),
    source: build/* default.String */.Ay$.String({ description: 'The repository or directory runs start from, without credentials.' }),
    setup_commands: build/* default.Array */.Ay$.Array(build/* default.String */.Ay$.String()),
    agent_kind: build/* default.String */.Ay$.String(),
    network: build/* default.Array */.Ay$.Array(build/* default.String */.Ay$.String(), { description: 'host:port a run may reach (empty: none).' }),
    docker_image: build/* default.Optional */.Ay$.Optional(build/* default.Unsafe */.Ay$.Unsafe({
        type: ['string', 'null'],
        description: "The container image whose file system runs see as / (a skopeo reference such as docker://debian:12); null: the executor host's."
    }))
}, { additionalProperties: true });
const ListEnvironmentsResponseSchema = build/* default.Object */.Ay$.Object({ environments: build/* default.Array */.Ay$.Array(EnvironmentSchema) });
const ModelSchema = build/* default.Object */.Ay$.Object({
    id: build/* default.String */.Ay$.String(),
    provider: build/* default.String */.Ay$.String(),
    environment_ids: build/* default.Array */.Ay$.Array(build/* default.String */.Ay$.String())
}, { additionalProperties: true });
const ListModelsResponseSchema = build/* default.Object */.Ay$.Object({
    default_model_id: build/* default.Unsafe */.Ay$.Unsafe({ type: ['string', 'null'] }),
    models: build/* default.Array */.Ay$.Array(ModelSchema),
    environments: build/* default.Array */.Ay$.Array(build/* default.Object */.Ay$.Object({
        environment_id: build/* default.String */.Ay$.String(),
        agent_kind: build/* default.String */.Ay$.String(),
        default_model_id: build/* default.Unsafe */.Ay$.Unsafe({ type: ['string', 'null'] }),
        accepts_model_id: build/* default.Boolean */.Ay$.Boolean()
    }))
});

;// CONCATENATED MODULE: ./src/api/schema-registry.ts
// Every schema of the contract by its exported name (`RunIdParamsSchema`, …), so that the endpoint
// table (./endpoints.ts) can name an endpoint's schemas without loading the schema library: the
// table stays light enough for the client's bundles, and the executor and the OpenAPI document
// look the names up here (./endpoint-specs.ts). A schema is added to its module as before; its
// name is then usable in the table, and a name that is not a schema is a compile error there.



const SCHEMAS = { ...schemas_namespaceObject, ...api_schedules_namespaceObject, ...webhooks_namespaceObject };
/** The schema of that name. */
function schemaNamed(name) {
    return SCHEMAS[name];
}

;// CONCATENATED MODULE: ./src/api/endpoint-specs.ts
// The endpoint table (./endpoints.ts) with its schemas looked up (./schema-registry.ts): what the
// executor registers its routes from and the OpenAPI document is generated from. Nothing is written
// here per endpoint.


function withSchemas(entry) {
    const { params, querystring, body, response, ...rest } = entry;
    const look = (name) => schemaNamed(name);
    return {
        ...rest,
        ...(params ? { params: look(params) } : {}),
        ...(querystring ? { querystring: look(querystring) } : {}),
        ...(body ? { body: look(body) } : {}),
        response: { ...response, ...(response.schema ? { schema: look(response.schema) } : {}) }
    };
}
const ENDPOINT_SPECS = Object.fromEntries(ENDPOINT_NAMES.map(name => [name, withSchemas(ENDPOINTS[name])]));

;// CONCATENATED MODULE: ./src/api/event-schemas.ts
// The JSON schema of each kind of transcript event (TypeBox), for the OpenAPI document: what a
// reader of GET /agent/runs/{id}/transcript finds in an event of each kind. The compile-time check
// at the bottom keeps each schema equal to its fields in ./events.ts, and the mapped type makes a
// kind without a schema fail to compile. The transcript route's own response schema stays the open
// `TranscriptEventSchema` (any kind, extra fields kept), so documenting a kind costs no serialisation.

const event_schemas_Text = (description) => build/* default.String */.Ay$.String({ description });
const Count = (description) => build/* default.Integer */.Ay$.Integer({ minimum: 0, description });
const ExitCode = build/* default.Union */.Ay$.Union([build/* default.Integer */.Ay$.Integer(), build/* default.Null */.Ay$.Null()], {
    description: 'The exit code; null when the process was killed by a signal.'
});
const command = (description) => ({
    description,
    fields: {
        command: event_schemas_Text('The shell command.'),
        exit_code: ExitCode,
        output: event_schemas_Text('Its standard output and error, interleaved (bounded).'),
        duration_ms: Count('How long it ran, in milliseconds.')
    }
});
/** Each kind: what it means, and its fields besides seq, at and kind. */
const KINDS = {
    state: {
        description: 'The run changed state.',
        fields: {
            state: event_schemas_Text('The new state (QUEUED, INPROGRESS, SUCCEEDED, FAILED, CANCELLED, …).'),
            status_message: build/* default.Optional */.Ay$.Optional(event_schemas_Text('Why the run ended so (FAILED, CANCELLED, ERROR).')),
            error_code: build/* default.Optional */.Ay$.Optional(event_schemas_Text('The error code of a run that did not succeed.'))
        }
    },
    message: { description: 'Text the agent said.', fields: { text: event_schemas_Text('The text.') } },
    output: {
        description: "A chunk of a command agent's output.",
        fields: {
            stream: build/* default.Union */.Ay$.Union([build/* default.Literal */.Ay$.Literal('stdout'), build/* default.Literal */.Ay$.Literal('stderr')], { description: 'Which stream.' }),
            text: event_schemas_Text('The chunk, as written (UTF-8).')
        }
    },
    command: command('A command the agent ran.'),
    setup: command("One of the environment's setup commands, run before the agent."),
    file: {
        description: 'A file the agent wrote.',
        fields: {
            path: event_schemas_Text('Its path in the workspace.'),
            change: event_schemas_Text('added or modified.'),
            bytes: build/* default.Optional */.Ay$.Optional(Count('Its size after the write (when the executor wrote it).')),
            source: build/* default.Optional */.Ay$.Optional(event_schemas_Text("Who wrote it: agent for a harness CLI's edit."))
        }
    },
    diff: {
        description: "The run's changes to its workspace.",
        fields: {
            diff: event_schemas_Text('A unified diff of every change (cut at a size limit).'),
            truncated: build/* default.Boolean */.Ay$.Boolean({ description: 'true when the diff was cut.' }),
            files: build/* default.Array */.Ay$.Array(build/* default.Object */.Ay$.Object({ path: event_schemas_Text('The path.'), change: event_schemas_Text('added, modified, deleted, renamed, …') }), { description: 'The changed files (at most 1000).' }),
            more_files: build/* default.Optional */.Ay$.Optional(Count('How many more files changed than files lists.'))
        }
    },
    exit: {
        description: "The agent's process ended.",
        fields: {
            exit_code: ExitCode,
            signal: build/* default.Union */.Ay$.Union([build/* default.String */.Ay$.String(), build/* default.Null */.Ay$.Null()], { description: 'The signal that killed it, or null.' })
        }
    },
    result: {
        description: "The agent's final answer (the run's result).",
        fields: {
            text: event_schemas_Text('The answer.'),
            source: build/* default.Optional */.Ay$.Optional(event_schemas_Text('Where the answer came from: result_file (AGENT_RESULT_FILE) or stdout for a command agent, the harness kind (claude-code, …) for a harness.'))
        }
    },
    notice: { description: 'Something the executor tells the reader.', fields: { text: event_schemas_Text('The notice.') } },
    warning: {
        description: 'The run is confined less than configured (said at its start).',
        fields: { message: event_schemas_Text('What is weaker, and why.') }
    },
    truncated: {
        description: 'Output dropped between the head and the tail of a long run (limits.transcript).',
        fields: {
            dropped_bytes: Count('Bytes of output dropped.'),
            dropped_events: Count('Events dropped.'),
            dropped_lines: Count('Lines dropped.'),
            limit_bytes: Count("The run's transcript limit."),
            text: event_schemas_Text('The same, in words.')
        }
    },
    omitted: {
        description: 'Never stored: a page that shows a whole run (session page, conversation) left these events out.',
        fields: {
            omitted_events: Count('Events left out.'),
            omitted_bytes: Count('Their size.'),
            text: event_schemas_Text('The same, in words, with where to read them.')
        }
    },
    artifact: {
        description: 'A file the run produced, kept as an artifact (GET /agent/artifacts/{uid}).',
        fields: {
            artifact_uid: event_schemas_Text("The artifact's id."),
            filename: event_schemas_Text('Its file name.'),
            mime_type: event_schemas_Text('Its media type.'),
            size: Count('Its size in bytes.')
        }
    },
    publish: {
        description: "The run's changes were committed and pushed (and a pull request opened).",
        fields: {
            commit: event_schemas_Text('The commit made of the changes.'),
            branch: event_schemas_Text('The branch pushed.'),
            remote: event_schemas_Text('Where it was pushed (credentials removed).'),
            base_commit: event_schemas_Text('The commit the run started from.'),
            pull_request_url: build/* default.Optional */.Ay$.Optional(event_schemas_Text('The pull request opened.')),
            pull_request_number: build/* default.Optional */.Ay$.Optional(build/* default.Integer */.Ay$.Integer({ description: 'Its number.' }))
        }
    },
    action: {
        description: "A harness's tool call (Claude Code's Bash, Write, an MCP tool, …).",
        fields: {
            id: event_schemas_Text("The call's id, as the CLI gave it."),
            name: event_schemas_Text("The CLI's tool name."),
            input: event_schemas_Text('Its input, as JSON text (at most 16 KiB).')
        }
    },
    action_result: {
        description: "The result of a harness's tool call.",
        fields: {
            id: event_schemas_Text('The id of the call it answers.'),
            ok: build/* default.Optional */.Ay$.Optional(build/* default.Boolean */.Ay$.Boolean({ description: 'false when the tool reported an error.' })),
            output: event_schemas_Text('What the tool answered (at most 16 KiB).')
        }
    },
    agent_session: {
        description: "The agent CLI's own session id, kept so that a later turn can resume it.",
        fields: {
            harness: event_schemas_Text('The harness kind (claude-code, codex, gemini).'),
            session_id: event_schemas_Text("The CLI's session id.")
        }
    },
    followup: {
        description: "A client's follow-up: the next user message of the run's conversation.",
        fields: {
            message: event_schemas_Text('The message.'),
            mode: event_schemas_Text('normal, plan or orchestrate.')
        }
    },
    turn: {
        description: 'The worker began a turn of the conversation (1 for the first), taking these follow-ups.',
        fields: {
            turn: build/* default.Integer */.Ay$.Integer({ description: 'The turn, from 1.' }),
            mode: event_schemas_Text('normal, plan or orchestrate.'),
            followups: build/* default.Array */.Ay$.Array(build/* default.Integer */.Ay$.Integer(), { description: 'The seqs of the follow-up events it took.' })
        }
    }
};
/** The schema of one kind of event: seq, at, the kind itself and its fields. */
function schemaOf(kind) {
    const { description, fields } = KINDS[kind];
    return build/* default.Object */.Ay$.Object({
        seq: build/* default.Integer */.Ay$.Integer({ description: 'Position in the transcript, from 1.' }),
        at: build/* default.String */.Ay$.String({ format: 'date-time', description: 'When it was recorded.' }),
        kind: build/* default.Literal */.Ay$.Literal(kind),
        ...fields
    }, { title: `${kind} event`, description });
}
/** Every kind's schema, by kind. */
const EventSchemas = Object.fromEntries(Object.keys(KINDS).map(kind => [kind, schemaOf(kind)]));
/** Any event of a known kind (for the OpenAPI document; a client must still accept other kinds). */
const KnownEventSchema = build/* default.Union */.Ay$.Union(Object.values(EventSchemas), {
    description: 'A transcript event of a kind this version writes. Clients must accept kinds and fields they do not know.'
});
const checks = {};
void checks;

;// CONCATENATED MODULE: ./src/api/openapi.ts
// The OpenAPI 3.1 document of the contract (served by the executor at /api/v1/openapi.json),
// generated from the endpoint table (./endpoints.ts) and its schemas: nothing here is written per
// endpoint, so the document cannot drift from what the routes check and answer.






/** Schemas shown once under components and referred to by name. */
const COMPONENTS = {
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
const NAMES = new Map(Object.entries(COMPONENTS).map(([name, schema]) => [schema, name]));
const AUTH_TEXT = {
    none: 'No key needed.',
    key: 'Needs `Authorization: Bearer <API key>`.',
    session_token: "No key: the session link's `token` (an HMAC of the run id) is the access check.",
    signed_download: "No key: the URL's `expires` and `signature` (an HMAC of the artifact id and expiry) are the access check."
};
const schemaOrRef = (schema) => {
    const name = NAMES.get(schema);
    return name ? { $ref: `#/components/schemas/${name}` } : schema;
};
const problem = (description) => ({
    description,
    content: { 'application/problem+json': { schema: { $ref: '#/components/schemas/Problem' } } }
});
function parameters(endpoint) {
    const list = [];
    const params = endpoint.params?.properties ?? {};
    for (const name of pathParameters(endpoint.path)) {
        const schema = (params[name] ?? { type: 'string' });
        list.push({ name, in: 'path', required: true, schema, ...described(schema) });
    }
    const query = endpoint.querystring;
    for (const [name, schema] of Object.entries(query?.properties ?? {})) {
        list.push({
            name,
            in: 'query',
            ...(query?.required?.includes(name) ? { required: true } : {}),
            ...described(schema),
            schema,
            // A list filter may be repeated (state=A&state=B).
            ...(schema.anyOf?.some(branch => branch.type === 'array')
                ? { style: 'form', explode: true }
                : {})
        });
    }
    for (const header of endpoint.headers ?? [])
        list.push({ ...header, in: 'header' });
    return list;
}
const described = (schema) => typeof schema.description === 'string' ? { description: schema.description } : {};
/** The error answers, one per HTTP status, each naming the codes it can carry. */
function errorResponses(codes) {
    const byStatus = new Map();
    for (const code of codes) {
        const status = ERROR_CODES[code].status;
        if (status !== null)
            byStatus.set(status, [...(byStatus.get(status) ?? []), code]);
    }
    return Object.fromEntries([...byStatus.entries()]
        .sort(([a], [b]) => a - b)
        .map(([status, list]) => [
        String(status),
        problem(list.map(code => `${code}: ${ERROR_CODES[code].meaning}`).join(' '))
    ]));
}
/** One operation of the document, from one table entry. */
function operationOf(name, endpoint) {
    const { response } = endpoint;
    const codes = errorCodesOf(endpoint);
    const body = endpoint.body;
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
            ...Object.fromEntries(Object.entries(endpoint.otherAnswers ?? {}).map(([status, text]) => [status, { description: text }])),
            ...errorResponses(codes)
        }
    };
}
function openApiDocument(serverUrl) {
    const paths = {};
    for (const [name, endpoint] of Object.entries(ENDPOINT_SPECS)) {
        if (endpoint.internal)
            continue;
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

;// CONCATENATED MODULE: ./src/executor/sandbox/private-files.ts
// The data dir is the executor's alone: its database holds every team's prompts and transcripts,
// the keys' hashes and the secrets that sign session and artifact links. So the data dir is 0700
// and each file the executor keeps in it (the database and SQLite's -wal and -shm beside it, the
// role locks, the process records) 0600, whatever umask the executor was started with: modes are
// set with chmod after the create, never left to the umask. A run's own directories in the data
// dir get their modes and owner where they are made (workspace/, worker/): a root executor's
// bubblewrap binds them into the sandbox, so the run's user never walks through the data dir.

const PRIVATE_DIR_MODE = 0o700;
const PRIVATE_FILE_MODE = 0o600;
const octal = (mode) => `0${(mode & 0o7777).toString(8).padStart(3, '0')}`;
/**
 * Makes `dir` 0700 (creating it, and any missing parent 0700 too, when absent). A data dir that
 * other users could enter or read is tightened: answers the one warning that says so, naming the
 * path and both modes; undefined when nothing changed. A shared directory (sticky bit, as /tmp)
 * is refused rather than made 0700 under its other users.
 */
function privateDir(dir) {
    let mode;
    try {
        mode = (0,external_node_fs_.statSync)(dir).mode;
    }
    catch (error) {
        if (error.code !== 'ENOENT')
            throw error;
        (0,external_node_fs_.mkdirSync)(dir, { recursive: true, mode: PRIVATE_DIR_MODE });
        (0,external_node_fs_.chmodSync)(dir, PRIVATE_DIR_MODE);
        return undefined;
    }
    if ((mode & 0o7777) === PRIVATE_DIR_MODE)
        return undefined;
    // The sticky bit marks a directory other users share (/tmp, /var/tmp): never taken over.
    if (mode & 0o1000)
        throw new Error(`data dir ${dir} is mode ${octal(mode)}, a directory shared with other users (sticky bit); ` +
            'the executor makes its data dir 0700: use a directory of its own, such as a folder inside it');
    try {
        (0,external_node_fs_.chmodSync)(dir, PRIVATE_DIR_MODE);
    }
    catch (error) {
        throw new Error(`data dir ${dir} is mode ${octal(mode)} and cannot be made ${octal(PRIVATE_DIR_MODE)} ` +
            `(${error.code}); it holds every prompt and the link secrets: ` +
            "make it the executor user's own, or use another --data-dir");
    }
    if ((mode & 0o077) === 0)
        return undefined;
    return (`data dir ${dir} was mode ${octal(mode)}, open to other users of this machine (it holds every prompt ` +
        `and the link secrets): made it ${octal(PRIVATE_DIR_MODE)}`);
}
/** Writes `text` to `path` as a 0600 file (replacing its content; an existing file is made 0600 too). */
function writePrivateFile(path, text) {
    const fd = (0,external_node_fs_.openSync)(path, 'w', PRIVATE_FILE_MODE);
    try {
        (0,external_node_fs_.fchmodSync)(fd, PRIVATE_FILE_MODE);
        (0,external_node_fs_.writeSync)(fd, text);
    }
    finally {
        (0,external_node_fs_.closeSync)(fd);
    }
}
/** Creates `path` empty when absent, and makes it 0600 either way (its content is left as it is). */
function privateFile(path) {
    const fd = (0,external_node_fs_.openSync)(path, 'a', PRIVATE_FILE_MODE);
    try {
        (0,external_node_fs_.fchmodSync)(fd, PRIVATE_FILE_MODE);
    }
    finally {
        (0,external_node_fs_.closeSync)(fd);
    }
}
/** Makes `path` 0600 when it exists. */
function tightenFile(path) {
    try {
        (0,external_node_fs_.chmodSync)(path, PRIVATE_FILE_MODE);
    }
    catch (error) {
        if (error.code !== 'ENOENT')
            throw error;
    }
}

// EXTERNAL MODULE: external "node:fs/promises"
var promises_ = __webpack_require__(51455);
;// CONCATENATED MODULE: ./src/executor/sandbox/cgroup.ts
// Memory and process limits of a run with cgroups, v1 or v2, whichever the machine has. Each run
// gets a cgroup below the executor's own; the sandbox's first process joins it before it execs
// bubblewrap, so everything the run starts is counted. After the run its counters say whether a
// limit was hit, and whatever is left in it is killed.




const ROOT = '/sys/fs/cgroup';
/** Open files of a run's processes looked at for deleted ones; more stops the run (see deletedOpenBytes). */
const MAX_OPEN_FILES = 65_536;
let layout = null;
function own(line) {
    const text = (0,external_node_fs_.readFileSync)('/proc/self/cgroup', 'utf8');
    for (const entry of text.split('\n')) {
        const parts = entry.split(':');
        if (parts.length >= 3 && line(parts))
            return parts.slice(2).join(':');
    }
    return undefined;
}
function writable(dir) {
    const probe = (0,external_node_path_.join)(dir, `agent-run-probe-${process.pid}`);
    try {
        (0,external_node_fs_.mkdirSync)(probe);
        (0,external_node_fs_.rmdirSync)(probe);
        return true;
    }
    catch {
        return false;
    }
}
/** Finds a place where this process may make cgroups with memory and pids limits, once. */
function cgroupLayout() {
    if (layout !== null)
        return layout;
    layout = undefined;
    try {
        if ((0,external_node_fs_.existsSync)((0,external_node_path_.join)(ROOT, 'cgroup.controllers'))) {
            // v2: a sibling-free subtree needs memory and pids enabled in our own cgroup's subtree_control.
            const base = (0,external_node_path_.join)(ROOT, own(parts => parts[0] === '0') ?? '/');
            const enabled = (0,external_node_fs_.readFileSync)((0,external_node_path_.join)(base, 'cgroup.subtree_control'), 'utf8');
            if (/\bmemory\b/.test(enabled) && /\bpids\b/.test(enabled) && writable(base))
                layout = { version: 2, memory: base, pids: base };
        }
        else {
            const memory = (0,external_node_path_.join)(ROOT, 'memory', own(parts => parts[1].split(',').includes('memory')) ?? '/');
            const pids = (0,external_node_path_.join)(ROOT, 'pids', own(parts => parts[1].split(',').includes('pids')) ?? '/');
            if (writable(memory) && writable(pids))
                layout = { version: 1, memory, pids };
        }
    }
    catch {
        layout = undefined;
    }
    return layout;
}
/** Why limits cannot be enforced here, or undefined when they can. */
function limitsProblem() {
    if (cgroupLayout())
        return undefined;
    return 'no cgroup with memory and pids controllers can be made under this process (/sys/fs/cgroup); memory and process limits are not enforced';
}
/** One run's cgroup(s). */
class RunCgroup {
    layout;
    dirs;
    limits;
    constructor(layout, dirs, limits) {
        this.layout = layout;
        this.dirs = dirs;
        this.limits = limits;
    }
    /** `prefix` names the executor's data dir, so a sweep only touches this executor's runs. */
    static create(prefix, runId, limits) {
        const found = cgroupLayout();
        if (!found)
            return undefined;
        const leaf = `agent-run-${prefix}-${runId}`;
        if (found.version === 2) {
            const dir = (0,external_node_path_.join)(found.memory, leaf);
            (0,external_node_fs_.mkdirSync)(dir, { recursive: true });
            (0,external_node_fs_.writeFileSync)((0,external_node_path_.join)(dir, 'memory.max'), String(limits.memoryBytes));
            (0,external_node_fs_.writeFileSync)((0,external_node_path_.join)(dir, 'memory.swap.max'), '0', { flag: 'w' });
            (0,external_node_fs_.writeFileSync)((0,external_node_path_.join)(dir, 'pids.max'), String(limits.processes));
            return new RunCgroup(found, [dir], limits);
        }
        const memory = (0,external_node_path_.join)(found.memory, leaf);
        const pids = (0,external_node_path_.join)(found.pids, leaf);
        (0,external_node_fs_.mkdirSync)(memory, { recursive: true });
        (0,external_node_fs_.mkdirSync)(pids, { recursive: true });
        (0,external_node_fs_.writeFileSync)((0,external_node_path_.join)(memory, 'memory.limit_in_bytes'), String(limits.memoryBytes));
        try {
            // Swap counts too where the kernel accounts it, or a hog would page out instead of stopping.
            (0,external_node_fs_.writeFileSync)((0,external_node_path_.join)(memory, 'memory.memsw.limit_in_bytes'), String(limits.memoryBytes));
        }
        catch {
            // no swap accounting
        }
        (0,external_node_fs_.writeFileSync)((0,external_node_path_.join)(pids, 'pids.max'), String(limits.processes));
        return new RunCgroup(found, [memory, pids], limits);
    }
    static existing(found, dir) {
        return new RunCgroup(found, [dir], { memoryBytes: 0, processes: 0 });
    }
    /** The files a process writes its pid into to join this run's cgroups. */
    get procsFiles() {
        return this.dirs.map(dir => (0,external_node_path_.join)(dir, 'cgroup.procs'));
    }
    /** The limit that was hit, as a sentence, or undefined. */
    exceeded() {
        const read = (dir, file) => {
            try {
                return (0,external_node_fs_.readFileSync)((0,external_node_path_.join)(dir, file), 'utf8');
            }
            catch {
                return '';
            }
        };
        const counter = (text, name) => Number(new RegExp(`^${name} (\\d+)`, 'm').exec(text)?.[1] ?? 0);
        const [memoryDir, pidsDir] = this.layout.version === 2 ? [this.dirs[0], this.dirs[0]] : [this.dirs[0], this.dirs[1]];
        const oom = this.layout.version === 2
            ? counter(read(memoryDir, 'memory.events'), 'oom_kill')
            : counter(read(memoryDir, 'memory.oom_control'), 'oom_kill');
        if (oom > 0)
            return `the run's processes used more than the memory limit of ${Math.round(this.limits.memoryBytes / 1024 ** 2)} MiB`;
        if (counter(read(pidsDir, 'pids.events'), 'max') > 0)
            return `the run tried to start more than the limit of ${this.limits.processes} processes at once`;
        return undefined;
    }
    /** Kills whatever is left in the run's cgroups and removes them. */
    async destroy() {
        await this.kill();
        for (const dir of this.dirs) {
            try {
                // Removing a v1 memory cgroup can take a while (its charges move up): off the event loop.
                await (0,promises_.rmdir)(dir);
            }
            catch {
                // still busy: the next start-up's sweep removes it
            }
        }
    }
    /**
     * Bytes of regular files the run's processes hold open after deleting them: a file unlinked but
     * open is in no tree `du` walks, yet fills the disk. Read from the kernel's view of the run's
     * processes (/proc/<pid>/fd, whose links name the open file: nothing the run can redirect), each
     * file once. Past MAX_OPEN_FILES open files in all the count stops and answers undefined (the
     * caller stops the run: no count could be trusted).
     */
    deletedOpenBytes() {
        const pids = new Set();
        for (const file of this.procsFiles)
            try {
                for (const pid of (0,external_node_fs_.readFileSync)(file, 'utf8').split('\n'))
                    if (pid)
                        pids.add(pid);
            }
            catch {
                // gone
            }
        const seen = new Set();
        let bytes = 0;
        let looked = 0;
        for (const pid of pids) {
            let fds;
            try {
                fds = (0,external_node_fs_.readdirSync)(`/proc/${pid}/fd`);
            }
            catch {
                continue;
            }
            looked += fds.length;
            if (looked > MAX_OPEN_FILES)
                return undefined;
            for (const fd of fds) {
                const path = `/proc/${pid}/fd/${fd}`;
                try {
                    if (!(0,external_node_fs_.readlinkSync)(path).endsWith(' (deleted)'))
                        continue;
                    const stat = (0,external_node_fs_.statSync)(path);
                    const id = `${stat.dev}:${stat.ino}`;
                    if (!stat.isFile() || seen.has(id))
                        continue;
                    seen.add(id);
                    bytes += stat.size;
                }
                catch {
                    // closed meanwhile
                }
            }
        }
        return bytes;
    }
    /**
     * A signal to every process of the run but bubblewrap itself (which would end the sandbox),
     * skipping the pids in `done`, to which it adds those it signalled. Returns how many of the
     * run's own processes are alive (signalled now or before).
     */
    signalAgents(signal, done = new Set()) {
        let pids = [];
        try {
            pids = (0,external_node_fs_.readFileSync)(this.procsFiles[this.procsFiles.length - 1], 'utf8')
                .split('\n')
                .filter(Boolean)
                .map(Number);
        }
        catch {
            return 0;
        }
        let alive = 0;
        for (const pid of pids) {
            try {
                if ((0,external_node_fs_.readFileSync)(`/proc/${pid}/comm`, 'utf8').trim() === 'bwrap')
                    continue;
                alive++;
                if (done.has(pid))
                    continue;
                process.kill(pid, signal);
                done.add(pid);
            }
            catch {
                // gone
            }
        }
        return alive;
    }
    /** SIGKILL to every process in the run's cgroups, until none is left (or a second has passed). */
    async kill() {
        for (let attempt = 0; attempt < 50; attempt++) {
            let left = 0;
            for (const file of this.procsFiles) {
                let pids = [];
                try {
                    pids = (0,external_node_fs_.readFileSync)(file, 'utf8').split('\n').filter(Boolean);
                }
                catch {
                    continue;
                }
                for (const pid of pids) {
                    left++;
                    try {
                        process.kill(Number(pid), 'SIGKILL');
                    }
                    catch {
                        // gone
                    }
                }
            }
            if (left === 0)
                break;
            await new Promise(resolve => setTimeout(resolve, 20));
        }
    }
}
/** Kills what is left in cgroups of runs a previous process started, and removes them. */
async function sweepCgroups(prefix) {
    const found = cgroupLayout();
    if (!found)
        return 0;
    let removed = 0;
    for (const base of new Set([found.memory, found.pids])) {
        for (const name of (0,external_node_fs_.readdirSync)(base)) {
            if (!name.startsWith(`agent-run-${prefix}-`))
                continue;
            await RunCgroup.existing(found, (0,external_node_path_.join)(base, name)).destroy();
            removed++;
        }
    }
    return removed;
}
/** A short, stable name for a data dir, so one executor's cgroups are told from another's. */
function dataDirTag(dataDir) {
    return (0,external_node_crypto_.createHash)('sha256').update(dataDir).digest('hex').slice(0, 10);
}

;// CONCATENATED MODULE: ./src/executor/sandbox/processes.ts
// Process groups of running runs, recorded in the node's data dir (processes/<run>.<pid>) so that a
// restarted executor stops any survivor before it fails those runs `executor_restarted`, and
// killed on every exit of this process (a second Ctrl-C included). Also the free-space check that
// stops a node claiming runs while its data dir's file system is nearly full, of bytes or of inodes.




/**
 * Every process of an unconfined run (`sandbox: off`) carries this variable, set to its data dir's
 * tag: a restarted executor finds by it the survivors its records missed. Confined runs need none:
 * their cgroup finds them.
 */
const SURVIVOR_VARIABLE = 'AGENT_RUN_EXECUTOR';
const live = new Set();
let hooked = false;
/** When the process started, in clock ticks since boot: tells a survivor from a reused pid. */
function startTime(pid) {
    try {
        const stat = (0,external_node_fs_.readFileSync)(`/proc/${pid}/stat`, 'utf8');
        return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19];
    }
    catch {
        return undefined;
    }
}
/** SIGKILL to every process group this process started and has not seen end. */
function killAllGroups() {
    for (const pid of live) {
        try {
            process.kill(-pid, 'SIGKILL');
        }
        catch {
            // gone
        }
    }
    live.clear();
}
/** Records a run's process group; the returned function forgets it once the group has ended. */
function recordGroup(dataDir, runId, pid) {
    if (pid === undefined)
        return () => undefined;
    if (!hooked) {
        hooked = true;
        process.on('exit', killAllGroups);
    }
    live.add(pid);
    let file;
    if (dataDir && runId) {
        try {
            (0,external_node_fs_.mkdirSync)((0,external_node_path_.join)(dataDir, 'processes'), { recursive: true, mode: PRIVATE_DIR_MODE });
            file = (0,external_node_path_.join)(dataDir, 'processes', `${runId}.${pid}`);
            writePrivateFile(file, `${pid} ${startTime(pid) ?? ''}\n`);
        }
        catch {
            file = undefined;
        }
    }
    return () => {
        live.delete(pid);
        if (file)
            (0,external_node_fs_.rmSync)(file, { force: true });
    };
}
/** At start-up: stops process groups and cgroups a previous process of this data dir left. */
async function stopSurvivors(dataDir, log) {
    const dir = (0,external_node_path_.join)(dataDir, 'processes');
    let stopped = 0;
    let names = [];
    try {
        names = (0,external_node_fs_.readdirSync)(dir);
    }
    catch {
        // none recorded
    }
    for (const name of names) {
        const [pid, started] = (0,external_node_fs_.readFileSync)((0,external_node_path_.join)(dir, name), 'utf8').trim().split(' ');
        if (pid && started && startTime(Number(pid)) === started) {
            try {
                process.kill(-Number(pid), 'SIGKILL');
                stopped++;
            }
            catch {
                // gone meanwhile
            }
        }
        (0,external_node_fs_.rmSync)((0,external_node_path_.join)(dir, name), { force: true });
    }
    const tag = dataDirTag(dataDir);
    const tagged = killTagged(`${SURVIVOR_VARIABLE}=${tag}`);
    const cgroups = await sweepCgroups(tag);
    if (stopped > 0 || cgroups > 0 || tagged > 0)
        log.warn({ process_groups: stopped, cgroups, tagged_processes: tagged }, 'stopped processes left running by a previous executor process');
}
/** SIGKILL to every other process whose environment holds `entry` (NAME=value); how many. */
function killTagged(entry) {
    let killed = 0;
    let names = [];
    try {
        names = (0,external_node_fs_.readdirSync)('/proc');
    }
    catch {
        return 0;
    }
    for (const name of names) {
        if (!/^\d+$/.test(name) || Number(name) === process.pid)
            continue;
        let environ;
        try {
            environ = (0,external_node_fs_.readFileSync)(`/proc/${name}/environ`, 'latin1');
        }
        catch {
            continue; // ended meanwhile, or not ours to read
        }
        if (!environ.split('\0').includes(entry))
            continue;
        try {
            process.kill(Number(name), 'SIGKILL');
            killed++;
        }
        catch {
            // gone meanwhile
        }
    }
    return killed;
}
/** Data dirs whose file system is short of space or inodes now, with the reason. */
const low = new Map();
/** Bytes an unprivileged user may still write on the file system of `dir`, or undefined. */
function freeBytes(dir) {
    try {
        const stats = (0,external_node_fs_.statfsSync)(dir);
        return stats.bavail * stats.bsize;
    }
    catch {
        return undefined;
    }
}
/**
 * Inodes (files, directories, links) that can still be made on the file system of `dir`; undefined
 * when it cannot be read or the file system has no fixed number (btrfs, some FUSE ones report 0).
 */
function freeInodes(dir) {
    try {
        const stats = (0,external_node_fs_.statfsSync)(dir);
        return stats.files > 0 ? stats.ffree : undefined;
    }
    catch {
        return undefined;
    }
}
/** Why the data dir's file system is too full to take a run (space, inodes or both), or undefined. */
function freeSpaceShortage(config) {
    const reasons = [];
    const free = freeBytes(config.dataDir);
    const min = config.workspaces.minFreeBytes;
    if (free !== undefined && free < min)
        reasons.push(`the data dir's file system has ${Math.floor(free / 1024 ** 2)} MiB free, less than workspaces.min_free (${Math.round(min / 1024 ** 2)} MiB)`);
    const inodes = freeInodes(config.dataDir);
    const minInodes = config.workspaces.minFreeInodes;
    if (inodes !== undefined && inodes < minInodes)
        reasons.push(`the data dir's file system has ${inodes} free inodes, less than workspaces.min_free_inodes (${minInodes})`);
    return reasons.length > 0 ? reasons.join('; ') : undefined;
}
/**
 * Why this node must not claim runs now (too little free space, or too few free inodes), or
 * undefined; logged when it starts and when it ends. Both the pool (before each claim) and /readyz
 * look: statfs is one system call.
 */
function freeSpaceProblem(config, log) {
    const shortage = freeSpaceShortage(config);
    const problem = shortage && `${shortage}: not claiming runs`;
    const was = low.get(config.dataDir);
    if (problem && !was)
        log.warn({
            data_dir: config.dataDir,
            free_bytes: freeBytes(config.dataDir),
            free_inodes: freeInodes(config.dataDir)
        }, problem);
    if (!problem && was)
        log.info({ data_dir: config.dataDir }, 'free space and inodes are back above workspaces.min_free and min_free_inodes: claiming runs again');
    if (problem)
        low.set(config.dataDir, problem);
    else
        low.delete(config.dataDir);
    return problem;
}
/** Whether process `pid` of this machine is alive (one of another user's counts). */
function processAlive(pid) {
    try {
        process.kill(pid, 0);
        return true;
    }
    catch (error) {
        return error.code === 'EPERM';
    }
}
/**
 * A folder being made, `<final path>.making-<pid>`: whether it is left over, to be removed. Several
 * executor processes may share a data dir: a folder of another live process is its build in
 * progress, never removed; one of this process only when `buildingHere(final path)` says no build
 * of it is under way.
 */
function makingLeftOver(dir, buildingHere) {
    const at = dir.lastIndexOf('.making-');
    const pid = Number(dir.slice(at + '.making-'.length));
    if (!Number.isSafeInteger(pid) || pid <= 0)
        return true;
    if (pid === process.pid)
        return !buildingHere(dir.slice(0, at));
    return !processAlive(pid);
}

;// CONCATENATED MODULE: ./src/executor/server/routes/meta.ts
// Liveness, readiness, the OpenAPI document and the error reference: no key needed.



function metaHandlers(context, publicUrl, 
/** Whether this node claims runs (not an `api` node): its readiness then needs room on the data dir. */
runsWork = true) {
    let document;
    return {
        health: async () => ({ status: 'ok' }),
        ready: async (request, reply) => {
            if (context.draining)
                return reply.code(503).send({ status: 'shutting_down' });
            try {
                await context.store.ping();
            }
            catch {
                return reply.code(503).send({ status: 'store_unavailable' });
            }
            // Looked at now, not when the pool last tried a claim: ready again as soon as room is back.
            const short = runsWork ? freeSpaceProblem(context.config, request.log) : undefined;
            if (short)
                return reply.code(503).send({ status: 'low_on_space', claiming: false, reason: short });
            return { status: 'ready', environments: context.config.environments.map(env => env.id) };
        },
        getOpenApi: async (_request, reply) => {
            document ??= JSON.stringify(openApiDocument(publicUrl()));
            return reply.type('application/json').send(document);
        },
        listErrorCodes: async () => ({
            errors: Object.entries(ERROR_CODES).map(([code, info]) => ({ error_code: code, ...info }))
        })
    };
}

// EXTERNAL MODULE: ./node_modules/jose/dist/webapi/util/decode_protected_header.js
var decode_protected_header = __webpack_require__(61196);
// EXTERNAL MODULE: ./node_modules/jose/dist/webapi/util/decode_jwt.js
var decode_jwt = __webpack_require__(77961);
// EXTERNAL MODULE: ./node_modules/jose/dist/webapi/jwt/verify.js + 2 modules
var verify = __webpack_require__(64490);
// EXTERNAL MODULE: ./node_modules/jose/dist/webapi/jwks/local.js
var local = __webpack_require__(36687);
// EXTERNAL MODULE: ./node_modules/jose/dist/webapi/util/errors.js
var errors = __webpack_require__(5674);
;// CONCATENATED MODULE: ./src/executor/server/oidc.ts
// Sign-in with a workload's OIDC token (a GitHub Actions job's, say) instead of an API key. The
// token is checked by `jose`, against the keys its issuer publishes (OIDC discovery, then the JWKS
// it points at): signature, issuer, audience, expiry, not-before and issue time (with a small clock
// skew), and an allow-list of asymmetric algorithms (never `none`, never HMAC). Then the first
// `auth.oidc` rule whose claims all match gives the team and the kind.
//
// The keys are cached per issuer. A token signed with a key id the cache lacks makes it refetch
// (the issuer rotated its keys), but refetches are a token bucket per issuer: a stream of forged
// key ids costs the issuer a bounded number of requests, never one each. Before any fetch the
// token must name a trusted issuer and audience, so made-up issuers cost nothing at all.
//
// No answer or log line carries the token or a rule: a refused token is told what was wrong with
// it, never which rules exist.


/** Asymmetric algorithms only: `none` and HMAC (whose "key" would be the public key) never pass. */
const OIDC_ALGORITHMS = [
    'RS256',
    'RS384',
    'RS512',
    'PS256',
    'PS384',
    'PS512',
    'ES256',
    'ES384',
    'ES512',
    'EdDSA',
    'Ed25519'
];
/** Clocks of the issuer and this machine may differ by this much. */
const CLOCK_SKEW_SECONDS = 60;
/** A token issued longer ago than this is refused (GitHub's live minutes). */
const MAX_TOKEN_AGE = '24h';
/** Longest token looked at; real ones are a few KiB. */
const MAX_TOKEN_LENGTH = 16 * 1024;
/** Longest discovery document or key set read from an issuer. */
const MAX_DOCUMENT_BYTES = 256 * 1024;
/** How long an issuer may take to answer one fetch. */
const FETCH_TIMEOUT_MS = 10_000;
/** Keys are refetched this often even when every token's key is known (a removed key stops working). */
const KEYS_MAX_AGE_MS = 15 * 60_000;
/** Refetches on an unknown key id: this many at once… */
const REFETCH_BURST = 3;
/** …then one per this many ms. */
const REFETCH_INTERVAL_MS = 60_000;
/** A refused token: `message` says what was wrong with it (never the token, never a rule). */
class TokenRefused extends Error {
}
/** Whether a bearer credential has the form of a JWT (three base64url parts); keys start `arx_`. */
function looksLikeJwt(credential) {
    return /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*$/.test(credential);
}
class OidcVerifier {
    rules;
    fetchJson;
    issuers = new Map();
    /** Fetches made of each issuer (discovery and key set count one each): tests and metrics read it. */
    fetches = new Map();
    constructor(rules, fetchJson = boundedFetch) {
        this.rules = rules;
        this.fetchJson = fetchJson;
    }
    get enabled() {
        return this.rules.length > 0;
    }
    async verify(token) {
        if (!this.enabled)
            throw new TokenRefused('this executor accepts no OIDC tokens (its auth.oidc is empty); send an API key');
        if (token.length > MAX_TOKEN_LENGTH)
            throw new TokenRefused(`the token is longer than ${MAX_TOKEN_LENGTH} characters`);
        let unverified;
        let header;
        try {
            header = (0,decode_protected_header/* decodeProtectedHeader */._)(token);
            unverified = (0,decode_jwt/* decodeJwt */.i)(token);
        }
        catch {
            throw new TokenRefused('the token is not a well-formed JWT');
        }
        if (typeof header.alg !== 'string' || !OIDC_ALGORITHMS.includes(header.alg))
            throw new TokenRefused(`the token's algorithm ${JSON.stringify(String(header.alg).slice(0, 20))} is not accepted; expected one of ${OIDC_ALGORITHMS.join(', ')}`);
        const issuer = typeof unverified.iss === 'string' ? unverified.iss.replace(/\/+$/, '') : undefined;
        const ofIssuer = this.rules.filter(rule => rule.issuer === issuer);
        if (issuer === undefined || ofIssuer.length === 0)
            throw new TokenRefused("the token's issuer (iss) is not one this executor trusts");
        const audiences = [...new Set(ofIssuer.map(rule => rule.audience))];
        const given = Array.isArray(unverified.aud) ? unverified.aud : [unverified.aud];
        if (!given.some(aud => typeof aud === 'string' && audiences.includes(aud)))
            throw new TokenRefused("the token's audience (aud) is not one this executor accepts");
        const payload = await this.checked(token, issuer, unverified.iss, audiences, header.kid);
        const rule = ofIssuer.find(candidate => (Array.isArray(payload.aud) ? payload.aud : [payload.aud]).includes(candidate.audience) &&
            Object.entries(candidate.claims).every(([name, pattern]) => claimMatches(payload[name], pattern)));
        if (!rule)
            throw new TokenRefused('the token is valid, but no rule of this executor admits its claims');
        const text = (name) => {
            const value = payload[name];
            return typeof value === 'string' || typeof value === 'number' ? String(value) : undefined;
        };
        const repository = text('repository');
        const uid = repository ?? text('sub') ?? issuer;
        const workflow = text('workflow');
        const workload = { issuer };
        for (const name of ['repository', 'ref', 'workflow_ref', 'run_id']) {
            const value = text(name);
            if (value !== undefined)
                workload[name] = value;
        }
        return {
            team: rule.team,
            kind: rule.kind,
            uid,
            name: workflow === undefined ? uid : `${uid} (${workflow})`,
            workload
        };
    }
    /** The verified claims; refetches the issuer's keys (within the bucket) when the key id is new. */
    async checked(token, issuer, iss, audiences, kid) {
        const state = this.stateOf(issuer);
        // The first fetch and the periodic one are free; any other (a new key id, or keys that could
        // not be fetched before) takes a refetch from the bucket.
        const due = state.fetchedAt === 0 || (state.keys !== undefined && Date.now() - state.fetchedAt > KEYS_MAX_AGE_MS);
        const missing = state.keys === undefined || (kid !== undefined && !state.kids.has(kid));
        if (due || missing)
            await this.refresh(issuer, state, due);
        if (!state.keys)
            throw new TokenRefused("the issuer's signing keys could not be fetched; retry later");
        try {
            const { payload } = await (0,verify/* jwtVerify */.V)(token, state.keys, {
                issuer: iss,
                audience: audiences,
                algorithms: OIDC_ALGORITHMS,
                clockTolerance: CLOCK_SKEW_SECONDS,
                maxTokenAge: MAX_TOKEN_AGE,
                requiredClaims: ['exp', 'iat']
            });
            return payload;
        }
        catch (error) {
            throw new TokenRefused(oidc_refusal(error));
        }
    }
    stateOf(issuer) {
        let state = this.issuers.get(issuer);
        if (!state) {
            state = { kids: new Set(), fetchedAt: 0, tokens: REFETCH_BURST, tokensAt: Date.now() };
            this.issuers.set(issuer, state);
        }
        return state;
    }
    /**
     * Fetches the issuer's keys again, unless a fetch is under way (then waits for it) or, for an
     * unknown key id, the issuer's bucket of refetches is empty (then keeps the keys it has).
     */
    async refresh(issuer, state, due) {
        if (state.loading)
            return state.loading;
        if (!due) {
            const now = Date.now();
            state.tokens = Math.min(REFETCH_BURST, state.tokens + (now - state.tokensAt) / REFETCH_INTERVAL_MS);
            state.tokensAt = now;
            if (state.tokens < 1)
                return;
            state.tokens -= 1;
        }
        state.loading = (async () => {
            try {
                const { keys, kids } = await this.load(issuer);
                state.keys = keys;
                state.kids = kids;
            }
            catch {
                // The keys held are kept; without any, the token is refused as unverifiable.
            }
            finally {
                // Counted even when failed: a failing issuer is not asked again before its time.
                state.fetchedAt = Date.now();
                state.loading = undefined;
            }
        })();
        return state.loading;
    }
    async load(issuer) {
        this.count(issuer);
        const discovery = (await this.fetchJson(`${issuer}/.well-known/openid-configuration`));
        if (typeof discovery?.issuer !== 'string' || discovery.issuer.replace(/\/+$/, '') !== issuer)
            throw new Error('the discovery document names another issuer');
        if (typeof discovery.jwks_uri !== 'string' || !trustedUrl(discovery.jwks_uri))
            throw new Error('the discovery document names no https jwks_uri');
        this.count(issuer);
        const jwks = (await this.fetchJson(discovery.jwks_uri));
        if (!Array.isArray(jwks?.keys))
            throw new Error('the key set has no keys');
        const kids = new Set();
        for (const key of jwks.keys)
            if (typeof key?.kid === 'string')
                kids.add(key.kid);
        return { keys: (0,local/* createLocalJWKSet */.w)(jwks), kids };
    }
    count(issuer) {
        this.fetches.set(issuer, (this.fetches.get(issuer) ?? 0) + 1);
    }
}
/** Whether a claim's value matches a rule's pattern (`*`: any run of characters). */
function claimMatches(value, pattern) {
    if (typeof value !== 'string' && typeof value !== 'number' && typeof value !== 'boolean')
        return false;
    const text = String(value);
    if (!pattern.includes('*'))
        return text === pattern;
    const parts = pattern.split('*');
    const first = parts[0];
    const last = parts[parts.length - 1];
    if (!text.startsWith(first) || text.length < first.length + last.length || !text.endsWith(last))
        return false;
    // The middle parts in order, each as early as it fits: no regular expression, no backtracking.
    let at = first.length;
    const end = text.length - last.length;
    for (const part of parts.slice(1, -1)) {
        const found = text.indexOf(part, at);
        if (found === -1 || found + part.length > end)
            return false;
        at = found + part.length;
    }
    return true;
}
/** What was wrong with a token, in words that name neither the token nor a rule. */
function oidc_refusal(error) {
    if (error instanceof errors/* JWTExpired */.n)
        return 'the token has expired (exp), or was issued too long ago';
    if (error instanceof errors/* JWTClaimValidationFailed */.ie) {
        switch (error.claim) {
            case 'nbf':
                return 'the token is not valid yet (nbf)';
            case 'iat':
                return 'the token was issued in the future (iat)';
            case 'aud':
                return "the token's audience (aud) is not one this executor accepts";
            case 'iss':
                return "the token's issuer (iss) is not one this executor trusts";
            default:
                return `the token lacks a valid ${JSON.stringify(error.claim)} claim`;
        }
    }
    if (error instanceof errors/* JOSEAlgNotAllowed */.Rb)
        return "the token's algorithm is not accepted";
    if (error instanceof errors/* JWKSNoMatchingKey */.BT)
        return 'the token is signed with a key its issuer does not publish (unknown kid)';
    if (error instanceof errors/* JWKSMultipleMatchingKeys */.$4)
        return 'the token names no key id (kid) and its issuer publishes several keys';
    if (error instanceof errors/* JWSSignatureVerificationFailed */.h2)
        return "the token's signature is not valid";
    return 'the token could not be verified';
}
function trustedUrl(text) {
    try {
        const url = new URL(text);
        return url.protocol === 'https:' || (url.protocol === 'http:' && isLoopbackHost(url.hostname));
    }
    catch {
        return false;
    }
}
/** GETs a JSON document of at most MAX_DOCUMENT_BYTES, within FETCH_TIMEOUT_MS, following no redirect. */
async function boundedFetch(url) {
    const response = await fetch(url, {
        redirect: 'error',
        signal: AbortSignal.timeout(FETCH_TIMEOUT_MS),
        headers: { accept: 'application/json' }
    });
    if (!response.ok) {
        await response.body?.cancel();
        throw new Error(`HTTP ${response.status}`);
    }
    const chunks = [];
    let bytes = 0;
    for await (const chunk of response.body ?? []) {
        bytes += chunk.byteLength;
        if (bytes > MAX_DOCUMENT_BYTES)
            throw new Error('document too large');
        chunks.push(chunk);
    }
    return JSON.parse(Buffer.concat(chunks).toString('utf8'));
}

;// CONCATENATED MODULE: ./src/executor/server/auth.ts
// Bearer authentication (an API key, or a workload's OIDC token: oidc.ts) and the per-key rate limit.



const CHALLENGE = { 'www-authenticate': 'Bearer realm="agent-executor"' };
/**
 * SHA-256 of the keys that recently authenticated, so a busy client's key is not hashed on every
 * request. Only keys the store knew are kept (made-up keys cannot grow it), at most this many.
 */
const MAX_REMEMBERED_HASHES = 1_000;
const hashes = new Map();
/** The credential of an Authorization header: `Bearer <API key or OIDC token>`. */
function bearerOf(header) {
    if (!header)
        throw new ProblemError('unauthenticated', 'missing Authorization header; expected `Bearer <API key>`', CHALLENGE);
    const match = /^Bearer\s+(\S+)\s*$/i.exec(header);
    if (!match)
        throw new ProblemError('unauthenticated', 'Authorization header is not of the form `Bearer <API key>`', CHALLENGE);
    return match[1];
}
/** Whether the header carries an OIDC token rather than a key (such principals are not cached). */
function carriesToken(header) {
    const match = header === undefined ? null : /^Bearer\s+(\S+)\s*$/i.exec(header);
    return match !== null && looksLikeJwt(match[1]);
}
/** The principal of a workload's OIDC token, or a 401 saying what was wrong with it. */
async function authenticateToken(oidc, request) {
    const token = bearerOf(request.headers.authorization);
    try {
        const found = await oidc.verify(token);
        return {
            keyId: found.uid,
            team: found.team,
            kind: found.kind,
            name: found.name,
            workload: found.workload
        };
    }
    catch (error) {
        if (error instanceof TokenRefused)
            throw new ProblemError('unauthenticated', error.message, CHALLENGE);
        throw error;
    }
}
async function authenticate(store, request) {
    const key = bearerOf(request.headers.authorization);
    if (!isWellFormedKey(key)) {
        throw new ProblemError('unauthenticated', 'the API key is malformed (wrong prefix, length or checksum)', CHALLENGE);
    }
    const hash = hashes.get(key) ?? hashKey(key);
    // The store is asked every time (it knows about revocations); only the hashing is remembered.
    const record = await store.findKeyByHash(hash);
    if (!record || !sameHash(record.hash, hash) || record.revoked_at !== null) {
        hashes.delete(key);
        throw new ProblemError('unauthenticated', 'the API key is unknown or revoked', CHALLENGE);
    }
    if (!hashes.has(key)) {
        if (hashes.size >= MAX_REMEMBERED_HASHES)
            hashes.delete(hashes.keys().next().value);
        hashes.set(key, hash);
    }
    return { keyId: record.id, team: record.team, kind: record.kind, name: record.name };
}
/** A token bucket per key: `perMinute` requests a minute, in bursts of up to the same number. */
class RateLimiter {
    perMinute;
    buckets = new Map();
    constructor(perMinute) {
        this.perMinute = perMinute;
    }
    /** Takes a token; returns the seconds to wait when none is left. */
    take(key, now = Date.now()) {
        if (this.perMinute <= 0)
            return undefined;
        const rate = this.perMinute / 60_000;
        const bucket = this.buckets.get(key) ?? { tokens: this.perMinute, at: now };
        bucket.tokens = Math.min(this.perMinute, bucket.tokens + (now - bucket.at) * rate);
        bucket.at = now;
        this.buckets.set(key, bucket);
        if (bucket.tokens >= 1) {
            bucket.tokens -= 1;
            return undefined;
        }
        if (this.buckets.size > 10_000)
            this.sweep(now);
        return Math.max(1, Math.ceil((1 - bucket.tokens) / rate / 1000));
    }
    sweep(now) {
        for (const [key, bucket] of this.buckets)
            if (now - bucket.at > 60_000)
                this.buckets.delete(key);
    }
}

// EXTERNAL MODULE: external "node:https"
var external_node_https_ = __webpack_require__(44708);
var external_node_https_default = /*#__PURE__*/__webpack_require__.n(external_node_https_);
;// CONCATENATED MODULE: ./src/executor/sandbox/proxy.ts
// The filtering proxy of a run whose `network:` is a list of host:port. The run has no network of
// its own (direct connections fail); inside it a small forwarder listens on 127.0.0.1 and passes
// each connection through a Unix socket to this proxy, which answers CONNECT and plain-HTTP
// requests for the listed targets only (403 for anything else, said in the response).
// An orchestrate turn's proxy also has a gateway: requests for the reserved host GATEWAY_HOST (plain,
// or through a CONNECT tunnel to its port 80) go to the executor's own API, with the turn's proxy
// secret in VIA_HEADER; the executor accepts the turn's credential only beside that secret.






/** Connections one run's proxy holds at once (a tunnel or a request each). */
const MAX_PROXY_CONNECTIONS = 256;
/** Where the proxy's socket and forwarder appear inside the sandbox. */
const INSIDE_DIR = '/run/agent-proxy';
const INSIDE_PORT = 3128;
/** Runs inside the sandbox with the executor's own node: 127.0.0.1:PORT → the proxy's socket. */
const FORWARDER = `
const net = require('node:net');
const fs = require('node:fs');
const [port, socket, ready] = process.argv.slice(2);
net.createServer(client => {
  const upstream = net.connect(socket);
  client.pipe(upstream).pipe(client);
  const end = () => { client.destroy(); upstream.destroy(); };
  client.on('error', end); upstream.on('error', end);
}).listen(Number(port), '127.0.0.1', () => fs.writeFileSync(ready, ''));
`;
/** The host name a run's AGENT_RUN_BASE_URL names: only its proxy knows where it leads. */
const GATEWAY_HOST = 'agent-run.internal';
/** The header the proxy adds to each request it forwards to the executor: the turn's proxy secret. */
const VIA_HEADER = 'x-agent-run-via';
/** Headers that belong to one connection, never forwarded (RFC 9110 §7.6.1), and the secret's own. */
const HOP_HEADERS = new Set([
    'connection',
    'keep-alive',
    'proxy-connection',
    'proxy-authorization',
    'te',
    'trailer',
    'transfer-encoding',
    'upgrade',
    VIA_HEADER
]);
/** Forwards one request of the run to the executor's API, with the turn's secret beside it. */
function forwardToExecutor(gateway, path, request, response) {
    const target = new URL(gateway.target);
    const headers = {};
    for (const [name, value] of Object.entries(request.headers))
        if (!HOP_HEADERS.has(name.toLowerCase()))
            headers[name] = value;
    headers.host = target.host;
    headers[VIA_HEADER] = gateway.secret;
    // A body the run sent chunked goes on chunked: dropped with the other hop headers, a GET's body
    // would be written unframed and read by the API as the next request on the connection.
    if (request.headers['transfer-encoding'] !== undefined)
        headers['transfer-encoding'] = 'chunked';
    const send = target.protocol === 'https:' ? external_node_https_.request : external_node_http_.request;
    const upstream = send({
        host: target.hostname.replace(/^\[|\]$/g, ''),
        port: target.port || (target.protocol === 'https:' ? 443 : 80),
        method: request.method,
        path: path.startsWith('/') ? path : `/${path}`,
        headers,
        // A connection of its own, never one pooled with other runs' requests (other teams' tokens).
        agent: false
    }, reply => {
        response.writeHead(reply.statusCode ?? 502, reply.headers);
        reply.pipe(response);
    });
    upstream.on('error', () => {
        if (!response.headersSent)
            response.writeHead(502, { 'content-type': 'text/plain' });
        response.end('agent-run proxy: the executor could not be reached\n');
    });
    // The run's side gone (its client gave up): the request to the executor goes with it.
    response.once('close', () => upstream.destroy());
    request.pipe(upstream);
}
function isGateway(host, port) {
    return host.replace(/^\[|\]$/g, '').toLowerCase() === GATEWAY_HOST && port === 80;
}
function allowed(targets, host, port) {
    const name = host.replace(/^\[|\]$/g, '').toLowerCase();
    return targets.some(target => target.host === name && target.port === port);
}
/**
 * `user`: the run's host user (a root executor), who must be able to reach the socket; `gateway`:
 * an orchestrate turn's way to the executor's API (GATEWAY_HOST).
 */
async function startProxy(targets, runId, user, gateway) {
    const dir = (0,external_node_fs_.mkdtempSync)((0,external_node_path_.join)((0,external_node_os_.tmpdir)(), `agent-run-proxy-${runId.slice(0, 12)}-`));
    const socket = (0,external_node_path_.join)(dir, 'proxy.sock');
    (0,external_node_fs_.writeFileSync)((0,external_node_path_.join)(dir, 'forwarder.cjs'), FORWARDER, { mode: 0o644 });
    const refuse = (what) => `agent-run proxy: ${what} is not in this environment's sandbox.network list (${targets.map(t => `${t.host}:${t.port}`).join(', ')})\n`;
    const gatewayServer = gateway
        ? (0,external_node_http_.createServer)((request, response) => forwardToExecutor(gateway, request.url ?? '/', request, response))
        : undefined;
    const server = (0,external_node_http_.createServer)((request, response) => {
        let url;
        try {
            url = new URL(request.url ?? '');
        }
        catch {
            response.writeHead(400).end('agent-run proxy: expected an absolute http:// URL\n');
            return;
        }
        const port = Number(url.port || 80);
        if (gateway && url.protocol === 'http:' && isGateway(url.hostname, port)) {
            forwardToExecutor(gateway, url.pathname + url.search, request, response);
            return;
        }
        if (url.protocol !== 'http:' || !allowed(targets, url.hostname, port)) {
            response.writeHead(403, { 'content-type': 'text/plain' }).end(refuse(`${url.hostname}:${port}`));
            return;
        }
        const upstream = (0,external_node_http_.request)({
            host: url.hostname,
            port,
            method: request.method,
            path: url.pathname + url.search,
            headers: request.headers,
            // Not pooled across runs: one run's bytes never share a connection with another's.
            agent: false
        }, reply => {
            response.writeHead(reply.statusCode ?? 502, reply.headers);
            reply.pipe(response);
        });
        upstream.on('error', error => response.writeHead(502).end(`agent-run proxy: ${error.message}\n`));
        request.pipe(upstream);
    });
    server.on('connect', (request, client, head) => {
        const match = /^(\[[^\]]+\]|[^:]+):(\d+)$/.exec(request.url ?? '');
        const host = match?.[1] ?? '';
        const port = Number(match?.[2]);
        client.on('error', () => undefined);
        if (match && gatewayServer && isGateway(host, port)) {
            // A client that tunnels even plain HTTP (as @actions/http-client does): the tunnel's bytes
            // are read as HTTP requests here, each forwarded with the secret like a plain one.
            client.write('HTTP/1.1 200 Connection established\r\n\r\n');
            if (head.length > 0)
                client.unshift(head);
            gatewayServer.emit('connection', client);
            return;
        }
        if (!match || !allowed(targets, host, port)) {
            const body = refuse(request.url ?? '?');
            client.end(`HTTP/1.1 403 Forbidden\r\ncontent-type: text/plain\r\ncontent-length: ${Buffer.byteLength(body)}\r\n\r\n${body}`);
            return;
        }
        const upstream = (0,external_node_net_.connect)(port, host.replace(/^\[|\]$/g, ''), () => {
            client.write('HTTP/1.1 200 Connection established\r\n\r\n');
            if (head.length > 0)
                upstream.write(head);
            upstream.pipe(client).pipe(upstream);
        });
        upstream.on('error', error => client.end(`HTTP/1.1 502 Bad Gateway\r\n\r\nagent-run proxy: ${error.message}\n`));
        // The run's side gone (its program ended, or the proxy closed): the far side goes with it.
        client.once('close', () => upstream.destroy());
    });
    // Every connection, tunnels included: a CONNECT tunnel leaves the HTTP server's own tracking, so
    // `closeAllConnections()` misses it, and `close()` would wait for it for ever (a tunnel whose far
    // end stays open outlives the run). Closing the proxy destroys them all.
    // Each connection costs the executor's own file descriptors (two for a tunnel), which the run's
    // limits do not count: past this many at once, a new one is closed as it comes.
    server.maxConnections = MAX_PROXY_CONNECTIONS;
    const sockets = new Set();
    server.on('connection', (connection) => {
        sockets.add(connection);
        connection.once('close', () => sockets.delete(connection));
    });
    await new Promise((resolve, reject) => {
        server.once('error', reject);
        server.listen(socket, () => resolve());
    });
    // The folder is bound read-only inside; its user only connects to the socket.
    if (user)
        for (const path of [dir, socket])
            (0,external_node_fs_.chownSync)(path, user.uid, user.gid);
    const url = `http://127.0.0.1:${INSIDE_PORT}`;
    return {
        files: [
            [dir, INSIDE_DIR],
            [process.execPath, '/run/agent-proxy-node']
        ],
        env: { HTTPS_PROXY: url, HTTP_PROXY: url, https_proxy: url, http_proxy: url, NO_PROXY: '', no_proxy: '' },
        command(program, args) {
            const ready = '/tmp/.agent-run-proxy-ready';
            const script = `/run/agent-proxy-node ${INSIDE_DIR}/forwarder.cjs ${INSIDE_PORT} ${INSIDE_DIR}/proxy.sock ${ready} & ` +
                `i=0; while [ ! -e ${ready} ] && [ $i -lt 500 ]; do sleep 0.01; i=$((i+1)); done; exec "$0" "$@"`;
            return ['/bin/sh', '-c', script, program, ...args];
        },
        async close() {
            const closed = new Promise(resolve => server.close(resolve));
            for (const connection of sockets)
                connection.destroy();
            server.closeAllConnections();
            await closed;
            (0,external_node_fs_.rmSync)(dir, { recursive: true, force: true });
        }
    };
}

;// CONCATENATED MODULE: ./src/executor/server/run-token.ts
// An orchestrate turn's credential on the API (worker/orchestrate.ts mints it). It is accepted only
// beside the secret its run's proxy adds (sandbox/proxy.ts VIA_HEADER: the request came out of that
// run's sandbox) and only while the run has not ended; the store is asked on every request, nothing
// of it is cached. What it may do is narrow: create runs below its own run (in its own environment
// or those its environment lists under orchestrate_environments), and read, list, cancel and follow
// up the runs below its own. Everything else is 403 forbidden, or 404 for a run outside its tree,
// and no answer ever shows the token.




const run_token_CHALLENGE = { 'www-authenticate': 'Bearer realm="agent-executor"' };
/** Whether the Authorization header carries a run token (`art_…`) rather than an API key. */
function carriesRunToken(header) {
    const match = header === undefined ? null : /^Bearer\s+(\S+)\s*$/i.exec(header);
    return match !== null && match[1].startsWith(RUN_TOKEN_PREFIX);
}
/**
 * The orchestrator a run token signs in as, or a 401 (malformed, unknown, its turn over: the run
 * ended) or 403 (the request did not come through the run's proxy).
 */
async function authenticateRunToken(store, environments, token, request) {
    if (!isWellFormedRunToken(token))
        throw new ProblemError('unauthenticated', "the run token is malformed (an orchestrate run's credential is art_ and 36 letters and digits)", run_token_CHALLENGE);
    const record = await store.findRunToken(hashKey(token));
    if (!record)
        throw new ProblemError('unauthenticated', 'the run token is unknown, or the orchestrate turn that held it has ended', run_token_CHALLENGE);
    const via = request.headers[VIA_HEADER];
    if (typeof via !== 'string' || !sameHash(hashKey(via), record.via_hash))
        throw new ProblemError('forbidden', "a run token is accepted only from inside its run's sandbox, through the run's proxy (AGENT_RUN_BASE_URL there); this request came another way");
    const run = await store.getRunAnyTeam(record.run_id);
    if (!run || run_isTerminalState(run.state))
        throw new ProblemError('unauthenticated', `the run token is no longer valid: its run ${run ? `ended ${run.state}` : 'is gone'}`, run_token_CHALLENGE);
    const own = environments.find(env => env.id === record.environment_id);
    return {
        team: record.team,
        orchestrator: {
            runId: record.run_id,
            environments: [record.environment_id, ...(own?.orchestrateEnvironments ?? [])]
        }
    };
}
/** The endpoints a run token may reach; each takes the checks below. */
const ALLOWED = new Set([
    'createRun',
    'createRunLegacy',
    'listRuns',
    'getRun',
    'cancelRun',
    'submitFollowup',
    'getTranscript',
    'getConversation',
    'getRunEvents'
]);
/**
 * A 403 unless the endpoint is one a run token may use: checked as soon as the token is, before
 * the request is parsed, so a refused endpoint says so whatever the request holds.
 */
function checkOrchestratorEndpoint(orchestrator, endpoint, request) {
    if (endpoint === undefined || !ALLOWED.has(endpoint))
        throw new ProblemError('forbidden', `a run's orchestrate credential may create, read, list, cancel and follow up only the runs below its run ${orchestrator.runId}; ${request.method} ${request.routeOptions.url ?? request.url} is not among these`);
}
/**
 * Checks (and completes) a request of an orchestrator before its handler runs: the endpoint is
 * one it may use, each run it names is below its own run, a create's environment is one it may
 * use. A create without parent_run_id gets its own run as the parent, a list without
 * ancestor_run_id its own run as the ancestor.
 */
async function checkOrchestratorRequest(store, team, orchestrator, endpoint, request) {
    const own = orchestrator.runId;
    checkOrchestratorEndpoint(orchestrator, endpoint, request);
    const below = (id) => store.isDescendant(team, id, own);
    const within = async (id) => id === own || (await below(id));
    const params = request.params;
    if (typeof params?.run_id === 'string' && !(await below(params.run_id)))
        throw new ProblemError('not_found', `run ${JSON.stringify(params.run_id.slice(0, 100))} does not exist or is not below run ${own}, whose orchestrate credential this is`);
    if (endpoint === 'listRuns') {
        const query = request.query;
        if (query.ancestor_run_id === undefined)
            query.ancestor_run_id = own;
        else if (typeof query.ancestor_run_id !== 'string' || !(await within(query.ancestor_run_id)))
            throw new ProblemError('forbidden', `ancestor_run_id ${JSON.stringify(String(query.ancestor_run_id).slice(0, 100))}: a run's orchestrate credential lists only the runs below its run ${own}; name that run or one below it`);
        return;
    }
    if (endpoint !== 'createRun' && endpoint !== 'createRunLegacy')
        return;
    const body = request.body;
    if (body.parent_run_id === undefined || body.parent_run_id === null)
        body.parent_run_id = own;
    else if (typeof body.parent_run_id !== 'string' || !(await within(body.parent_run_id)))
        throw new ProblemError('forbidden', `parent_run_id ${JSON.stringify(String(body.parent_run_id).slice(0, 100))}: a run's orchestrate credential creates runs only below its run ${own}; name that run, one below it, or leave parent_run_id out`);
    // A conversation_id start copies that run's files: only a run of its own tree may be continued.
    if (body.conversation_id !== undefined &&
        body.conversation_id !== null &&
        (typeof body.conversation_id !== 'string' || !(await within(body.conversation_id))))
        throw new ProblemError('forbidden', `conversation_id ${JSON.stringify(String(body.conversation_id).slice(0, 100))}: a run's orchestrate credential may continue only runs below its run ${own}`);
    const environment = body.config?.environment_id;
    if (typeof environment === 'string' && !orchestrator.environments.includes(environment))
        throw new ProblemError('forbidden', `environment ${JSON.stringify(environment.slice(0, 100))}: the orchestrate run ${own} may start runs only in ${orchestrator.environments.map(id => JSON.stringify(id)).join(', ')} (its own environment and its orchestrate_environments)`);
}

;// CONCATENATED MODULE: ./src/executor/server/routes/register.ts
// The executor's routes, registered from the endpoint table (src/api/endpoints.ts, with its schemas looked up in src/api/endpoint-specs.ts): each endpoint
// gets its method, path and schemas from the table and its handler from a map keyed by its name.
// Endpoints are grouped into one route tree per kind of access, and each tree has one hook that
// checks it (an API key and its rate limit, a session token, a download signature), so no handler
// repeats it. A handler missing from the map is a type error, and a table entry left without one
// throws at start-up.





/** The endpoint a request was routed to (each route's config names it). */
function endpointOf(request) {
    return request.routeOptions.config.endpoint;
}
/** Sets the answer's `x-request-id` header (the id Fastify gave the request: app.ts's genReqId). */
const stampRequestId = (request, reply, done) => {
    reply.header('x-request-id', request.id);
    done();
};
/** The hook that admits a request to a tree of this access kind (undefined: everyone). */
function accessHook(auth, rateLimited, { context, reads, downloads }) {
    const { store, config, limiter, links } = context;
    switch (auth) {
        case 'none':
            return undefined;
        case 'key': {
            /** The rate limit, once the principal is known: a 429 problem when the key has no token left. */
            const limit = (request) => {
                if (!rateLimited)
                    return undefined;
                const wait = limiter.take(request.principal.keyId);
                if (wait === undefined)
                    return undefined;
                return new ProblemError('rate_limited', `this key may send ${config.limits.rateLimitPerMinute} requests a minute; retry in ${wait} s`, { 'retry-after': String(wait) });
            };
            const admit = async (request, header) => {
                // A token's principal is not remembered: its signature and expiry are checked each time,
                // and a run token's run and proxy secret on every request.
                if (carriesRunToken(header)) {
                    const { team, orchestrator } = await authenticateRunToken(store, config.environments, bearerOf(header), request);
                    const id = `run:${orchestrator.runId}`;
                    request.principal = { keyId: id, team, kind: 'agent', name: id, orchestrator };
                    checkOrchestratorEndpoint(orchestrator, endpointOf(request), request);
                }
                else
                    request.principal = carriesToken(header)
                        ? await authenticateToken(context.oidc, request)
                        : await reads.principal(header, () => authenticate(store, request));
                const limited = limit(request);
                if (limited)
                    throw limited;
            };
            // A callback hook, so that the common request (a key the read cache knows while the store is
            // unchanged) is admitted without a promise: only a key looked up in the store waits.
            return (request, reply, done) => {
                reply.header('x-request-id', request.id);
                reads.refresh();
                const header = request.headers.authorization;
                const known = reads.knownPrincipal(header);
                if (known === undefined) {
                    admit(request, header).then(() => done(), done);
                    return;
                }
                request.principal = known;
                done(limit(request));
            };
        }
        case 'session_token':
            return async (request) => {
                const { run_id } = request.params;
                if (!links.verify(run_id, request.query.token))
                    throw new ProblemError('not_found', 'no session with this id and token');
            };
        case 'signed_download':
            return async (request) => {
                const { artifact_uid } = request.params;
                const { expires, signature } = request.query;
                if (!downloads.verify(artifact_uid, expires, signature))
                    throw new ProblemError('artifact_not_found', 'this download link is wrong or has expired; ask GET /api/v1/agent/artifacts/{uid} for a new one');
            };
    }
}
/**
 * Registers the named endpoints with their handlers, one route tree per access kind. `names` is
 * every endpoint the handlers serve (a `worker` node serves only those that need no key).
 */
async function registerEndpoints(app, trees, handlers, names) {
    if (!app.hasRequestDecorator('principal'))
        app.decorateRequest('principal', null);
    const groups = new Map();
    for (const name of names) {
        const { auth, rateLimited } = ENDPOINT_SPECS[name];
        const group = `${auth} ${rateLimited}`;
        groups.set(group, [...(groups.get(group) ?? []), name]);
    }
    for (const [group, members] of groups) {
        const [auth, limited] = group.split(' ');
        await app.register(async (tree) => {
            // Every answer of a tree carries its request id: the key tree's hook sets it, the others a
            // hook of their own (app.ts sets it on the answers no tree gives: 404s, malformed URLs).
            const hook = accessHook(auth, limited === 'true', trees);
            if (auth !== 'key')
                tree.addHook('onRequest', stampRequestId);
            if (hook)
                tree.addHook('onRequest', hook);
            // An orchestrate run's token acts only below its run: checked once the request is parsed (a
            // callback hook: a key's request, the common one, passes without a promise).
            if (auth === 'key')
                tree.addHook('preHandler', (request, _reply, done) => {
                    const { orchestrator, team } = request.principal;
                    const endpoint = endpointOf(request);
                    if (!orchestrator || !endpoint)
                        return done();
                    checkOrchestratorRequest(trees.context.store, team, orchestrator, endpoint, request).then(() => done(), done);
                });
            for (const name of members) {
                const endpoint = ENDPOINT_SPECS[name];
                const handler = handlers[name];
                if (!handler)
                    throw new Error(`endpoint ${name} has no handler; add one to its route file's map`);
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
                    handler: handler
                });
            }
        });
    }
}

;// CONCATENATED MODULE: ./src/executor/server/conversation-from-transcript.ts
// The run's conversation in the production service's normalized shape (GET
// /agent/runs/{id}/conversation), built from the transcript: steps → messages → content blocks
// `text`, `action`, `action_result` and `event`. The prompt is the user's message; agent text and a
// command agent's standard output are the assistant's; each command is an action with its result;
// everything else (file changes, published artifacts, state changes) is an event. The switch has a
// case for every kind of src/api/events.ts (a new kind does not compile until it has one). Messages
// come in transcript order; the agent's final answer (a `result` event, recorded after everything
// the agent said) is the last assistant text block, so a client takes it from there. A pure function
// of the run and its events: no store, no I/O.
//
// The types are the executor's own output types (src/api has no conversation types yet); they
// follow the service's shapes and a client reads them as tolerantly as the rest.

/** Transcript kinds that become event blocks, and the event_type they get there (else their kind). */
const EVENT_TYPES = {
    state: 'state_change',
    file: 'file_change',
    diff: 'changes',
    artifact: 'artifact_published',
    exit: 'agent_exit'
};
function buildConversation(run, events) {
    let messages = [
        { role: 'user', timestamp: run.created_at, content: [{ type: 'text', text: run.prompt }] }
    ];
    // Each later turn of a continued run is a step of its own, its follow-ups as the user message.
    const turns = [{ at: run.created_at, messages }];
    const followups = new Map();
    for (const event of events) {
        const e = known(event);
        const { seq, at, kind, ...rest } = e;
        const data = rest;
        switch (e.kind) {
            case 'result':
                placeAnswer(messages, String(data.text ?? ''), at);
                break;
            case 'message':
                addText(messages, at, String(data.text ?? ''));
                break;
            case 'output':
                if (data.stream === 'stdout')
                    addText(messages, at, String(data.text ?? ''), true);
                else
                    add(messages, 'system', at, { type: 'event', event_type: 'stderr', text: String(data.text ?? '') });
                break;
            case 'command':
            case 'setup': {
                const id = `action-${seq}`;
                const exitCode = typeof data.exit_code === 'number' ? data.exit_code : null;
                const action = {
                    type: 'action',
                    id,
                    name: 'run_command',
                    category: 'command',
                    input: { command: String(data.command ?? '') }
                };
                if (kind === 'setup')
                    action.description = 'environment setup';
                add(messages, 'assistant', at, action);
                const output = {
                    exit_code: exitCode,
                    output: String(data.output ?? '')
                };
                if (typeof data.duration_ms === 'number')
                    output.duration_ms = data.duration_ms;
                add(messages, 'tool', at, {
                    type: 'action_result',
                    action_id: id,
                    state: exitCode === 0 ? 'SUCCEEDED' : 'FAILED',
                    output
                });
                break;
            }
            // A harness's tool call (Claude Code's Bash, Write, an MCP tool…) and its result, by the CLI's id.
            case 'action':
                add(messages, 'assistant', at, {
                    type: 'action',
                    id: String(data.id ?? `action-${seq}`),
                    name: String(data.name ?? 'tool'),
                    category: 'tool',
                    input: parsedInput(data.input)
                });
                break;
            case 'action_result':
                add(messages, 'tool', at, {
                    type: 'action_result',
                    action_id: String(data.id ?? ''),
                    state: data.ok === false ? 'FAILED' : 'SUCCEEDED',
                    output: { output: String(data.output ?? '') }
                });
                break;
            case 'state':
            case 'file':
            case 'diff':
            case 'artifact':
            case 'exit':
            case 'notice':
            case 'warning':
            case 'truncated':
            case 'omitted':
            case 'publish':
            case 'agent_session':
                add(messages, 'system', at, { ...data, type: 'event', event_type: EVENT_TYPES[e.kind] ?? e.kind });
                break;
            case 'followup':
                followups.set(seq, String(data.message ?? ''));
                break;
            case 'turn': {
                if (e.turn <= 1)
                    break;
                const taken = (Array.isArray(e.followups) ? e.followups : []).map(at => followups.get(at) ?? '');
                messages = [{ role: 'user', timestamp: at, content: [{ type: 'text', text: taken.join('\n\n') }] }];
                turns.push({ at, messages });
                break;
            }
            default:
                // A kind a newer executor wrote into the same store: an event named by its kind.
                add(messages, 'system', at, { ...data, type: 'event', event_type: otherKind(e).kind });
        }
    }
    const steps = turns.map((turn, index) => {
        const step = {
            id: index === 0 ? run.run_id : `${run.run_id}-turn-${index + 1}`,
            messages: turn.messages,
            steps: []
        };
        if (run.title !== null)
            step.description = run.title;
        if (index === 0 && run.started_at !== null)
            step.started_at = run.started_at;
        if (index > 0)
            step.started_at = turn.at;
        if (index === turns.length - 1 && run.completed_at !== null)
            step.completed_at = run.completed_at;
        return step;
    });
    return { conversation_id: run.run_id, steps };
}
/** A harness stores a tool's input as bounded JSON text: the value again when it is whole. */
function parsedInput(input) {
    if (typeof input !== 'string')
        return input;
    try {
        return JSON.parse(input);
    }
    catch {
        return input;
    }
}
function add(messages, role, at, block) {
    messages.push({ role, timestamp: at, content: [block] });
}
/** Agent text; a stream's consecutive chunks join into one block. */
function addText(messages, at, text, stream = false) {
    const last = messages.at(-1);
    const block = last?.content.at(-1);
    if (stream && last?.role === 'assistant' && block?.type === 'text' && last.streamed) {
        block.text += text;
        return;
    }
    const message = { role: 'assistant', timestamp: at, content: [{ type: 'text', text }] };
    if (stream)
        Object.defineProperty(message, 'streamed', { value: true, enumerable: false });
    messages.push(message);
}
/**
 * The final answer goes where the transcript has it (after the agent's exit and its last standard
 * error, say), unless the last assistant text, followed by events only, already says exactly that.
 */
function placeAnswer(messages, answer, at) {
    let index = messages.length;
    while (index > 1 && messages[index - 1].content.every(block => block.type === 'event'))
        index--;
    const before = messages.slice(0, index);
    const lastText = before
        .filter(message => message.role === 'assistant')
        .flatMap(message => message.content)
        .filter(block => block.type === 'text')
        .at(-1);
    const lastBlock = before.at(-1)?.content.at(-1);
    if (lastText && lastText === lastBlock && lastText.type === 'text' && lastText.text === answer)
        return;
    messages.push({ role: 'assistant', timestamp: at, content: [{ type: 'text', text: answer }] });
}

;// CONCATENATED MODULE: ./src/executor/server/routes/results.ts
// What a run produced, read back: its conversation, its artifacts' details with a signed,
// time-limited download URL, and that URL itself (the bytes). The first two take an API key and
// see only the key's team (the key tree's hook checks it and the rate limit); the download URL
// carries an HMAC of the artifact id and its expiry instead (download-links.ts, checked by the
// download tree's hook), so a client can hand it to a tool without the key, like a session link.
// Artifact bytes live in the store, so any node serves any artifact.



function resultHandlers(context, downloads) {
    const { store, config } = context;
    return {
        getConversation: async (request) => {
            const id = request.params.run_id;
            const run = await store.getRun(request.principal.team, id);
            if (!run)
                throw new ProblemError('not_found', `run ${JSON.stringify(id.slice(0, 100))} does not exist or is not visible to this key`);
            return buildConversation(run, await boundedEvents(store, run.run_id));
        },
        getArtifact: async (request) => {
            const uid = request.params.artifact_uid;
            const artifact = await store.getArtifact(request.principal.team, uid);
            if (!artifact)
                throw artifactNotFound(uid);
            const base = config.publicUrl ?? `${request.protocol}://${request.host}`;
            const link = downloads.url(base, uid);
            const { run_id, team: _team, artifact_type, created_at, ...data } = artifact;
            // A plan answers with its content, as the service does (and its download link as any artifact).
            const plan = artifact_type === 'PLAN'
                ? {
                    document_uid: artifact.artifact_uid,
                    title: artifact.description ?? 'Plan',
                    content: (await store.readArtifact(uid))?.data.toString('utf8') ?? ''
                }
                : {};
            return {
                artifact_uid: artifact.artifact_uid,
                artifact_type,
                run_id,
                created_at,
                download_url: link.url,
                expires_at: link.expiresAt,
                data: { ...data, ...plan }
            };
        },
        downloadArtifact: async (request, reply) => {
            const uid = request.params.artifact_uid;
            const stored = await store.readArtifact(uid);
            if (!stored)
                throw artifactNotFound(uid);
            const { artifact, data } = stored;
            return reply
                .type(artifact.mime_type)
                .header('content-disposition', attachment(artifact.filename))
                .header('cache-control', 'private, no-store')
                .header('x-content-type-options', 'nosniff')
                .send(data);
        }
    };
}
function artifactNotFound(uid) {
    return new ProblemError('artifact_not_found', `artifact ${JSON.stringify(uid.slice(0, 100))} does not exist or is not visible to this key`);
}
/** Content-Disposition for a file name of any characters (RFC 6266 with an ASCII fallback). */
function attachment(filename) {
    const ascii = filename.replace(/[^\x20-\x7e]|["\\]/g, '_');
    return `attachment; filename="${ascii}"; filename*=UTF-8''${encodeURIComponent(filename)}`;
}

;// CONCATENATED MODULE: ./src/executor/server/routes/catalog.ts
// What a key may learn of the executor's configuration before it creates a run: the environments
// (id, name, where runs start from, setup commands, agent kind, the network a run may reach) and
// the models their agents take. Never a variable's value or name, a secret, or credentials in a
// source: a source that is a URL loses its user and password here.
/** Which provider's models each harness kind runs. */
const PROVIDERS = {
    'claude-code': 'anthropic',
    codex: 'openai',
    gemini: 'google'
};
/** The source without credentials: `https://user:token@host/x` → `https://host/x`. */
function sourceWithoutCredentials(source) {
    return source.replace(/^([a-z][a-z0-9+.-]*:\/\/)[^/@]*@/i, '$1');
}
function environmentRecord(env) {
    const network = env.sandbox.network;
    return {
        id: env.id,
        name: env.name,
        source: sourceWithoutCredentials(env.source),
        setup_commands: [...env.setup],
        agent_kind: env.agent.kind,
        network: network === 'none' ? [] : network === 'host' ? ['*'] : network.map(t => `${t.host}:${t.port}`),
        docker_image: env.image ? sourceWithoutCredentials(env.image.ref) : null
    };
}
/** The model an environment's agent uses when a run names none (a harness's `agent.model`). */
function defaultModelOf(env) {
    const model = env.agent.model;
    return typeof model === 'string' && model !== '' ? model : null;
}
function catalogHandlers(context) {
    const { config } = context;
    return {
        listEnvironments: async () => ({ environments: config.environments.map(environmentRecord) }),
        listModels: async () => {
            const models = new Map();
            const environments = config.environments.map(env => {
                const provider = PROVIDERS[env.agent.kind];
                const model = defaultModelOf(env);
                if (provider && model) {
                    const entry = models.get(model) ?? { id: model, provider, environment_ids: [] };
                    entry.environment_ids.push(env.id);
                    models.set(model, entry);
                }
                return {
                    environment_id: env.id,
                    agent_kind: env.agent.kind,
                    default_model_id: model,
                    accepts_model_id: provider !== undefined
                };
            });
            const first = config.environments[0];
            return {
                default_model_id: first ? defaultModelOf(first) : null,
                models: [...models.values()],
                environments
            };
        }
    };
}

;// CONCATENATED MODULE: ./src/executor/server/event-stream.ts
// Server-sent event streams (text/event-stream): a run's transcript events and changes of state as
// they happen (GET /runs/{id}/events), and the changes of state of several runs of a team on one
// cursor (GET /events). A stream is woken by the ChangeHub's notifications (the store's own, and
// PostgreSQL's LISTEN between nodes) and reads the store only when woken, once per heartbeat as a
// fallback for a lost notification, and never in a loop of its own. Every message carries an `id:`
// (the event's seq, or the team's sequence), so a client that is cut resumes with Last-Event-ID and
// gets each event once. What a stream may hold for a slow reader is bounded: past
// limits.stream_buffer, or a heartbeat with nothing taken, the connection is cut between two
// messages and the client resumes from its last whole one. Streams are counted per key and per node;
// beyond either bound the answer is 429 too_many_streams with Retry-After.



/** Events one read of the store takes at most. */
const event_stream_PAGE_EVENTS = 200;
/** The delay an EventSource waits before it reconnects (the `retry:` field), in ms. */
const RECONNECT_MS = 1000;
/** Seconds a client refused for the stream bounds is asked to wait. */
const RETRY_AFTER_SECONDS = 5;
/** The event types of the events cursor, by the state they announce (the production service's names). */
const event_stream_STATE_EVENT_TYPES = {
    INPROGRESS: 'run_in_progress',
    SUCCEEDED: 'run_succeeded',
    FAILED: 'run_failed',
    ERROR: 'run_errored',
    BLOCKED: 'run_blocked',
    CANCELLED: 'run_cancelled'
};
/** Whether the request asks for an event stream (Accept: text/event-stream). */
function wantsEventStream(request) {
    return /(^|,)\s*text\/event-stream\s*(;|,|$)/i.test(String(request.headers.accept ?? ''));
}
/** The open streams of this node, per key and in all. */
class StreamSlots {
    maxPerKey;
    maxTotal;
    perKey = new Map();
    total = 0;
    constructor(maxPerKey, maxTotal) {
        this.maxPerKey = maxPerKey;
        this.maxTotal = maxTotal;
    }
    /** Takes a slot for `keyId`, or throws 429 too_many_streams; the function gives it back (once). */
    take(keyId) {
        const mine = this.perKey.get(keyId) ?? 0;
        const retry = { 'retry-after': String(RETRY_AFTER_SECONDS) };
        if (mine >= this.maxPerKey)
            throw new ProblemError('too_many_streams', `this key has ${mine} event streams open, its limit (limits.max_streams_per_key: ${this.maxPerKey}); close one or retry in ${RETRY_AFTER_SECONDS} s`, retry);
        if (this.total >= this.maxTotal)
            throw new ProblemError('too_many_streams', `this executor node has ${this.total} event streams open, its limit (limits.max_streams: ${this.maxTotal}); retry in ${RETRY_AFTER_SECONDS} s`, retry);
        this.perKey.set(keyId, mine + 1);
        this.total++;
        let given = false;
        return () => {
            if (given)
                return;
            given = true;
            this.total--;
            const left = (this.perKey.get(keyId) ?? 1) - 1;
            if (left <= 0)
                this.perKey.delete(keyId);
            else
                this.perKey.set(keyId, left);
        };
    }
    get open() {
        return this.total;
    }
}
/**
 * Where a stream resumes: the Last-Event-ID header (an EventSource's reconnect) before the query's
 * cursor (`after` or `since`). A header that is not a whole number is refused, naming it.
 */
function resumePoint(request, fromQuery) {
    const header = request.headers['last-event-id'];
    if (header === undefined || header === '')
        return fromQuery;
    const value = Array.isArray(header) ? header[0] : header;
    if (!/^\d{1,15}$/.test(value.trim()))
        throw new ProblemError('invalid_request', `Last-Event-ID ${JSON.stringify(value.slice(0, 40))}: expected the id of an event this stream sent, a whole number such as 12`);
    return Number(value.trim());
}
/** One message of the stream: JSON on one line, so no field can break the framing. */
function message(id, event, data) {
    const name = event.replace(/[^\w.-]/g, '_');
    return `${id === undefined ? '' : `id: ${id}\n`}event: ${name}\ndata: ${JSON.stringify(data)}\n\n`;
}
/**
 * The open connection: writes whole messages, waits between reads for a wake (or the heartbeat),
 * and cuts a reader too slow for its buffer.
 */
class Stream {
    raw;
    bufferBytes;
    heartbeatMs;
    woken = false;
    /** The last write was not taken whole: 'drain' tells when it is. */
    full = false;
    wakeUp;
    closed = new AbortController();
    constructor(raw, bufferBytes, heartbeatMs) {
        this.raw = raw;
        this.bufferBytes = bufferBytes;
        this.heartbeatMs = heartbeatMs;
        raw.once('close', () => {
            this.closed.abort();
            this.wake();
        });
    }
    wake = () => {
        this.woken = true;
        this.wakeUp?.();
    };
    get open() {
        return !this.closed.signal.aborted;
    }
    /** Writes one message; false (and the connection cut) when the reader is too slow for its buffer. */
    send(text) {
        if (!this.open)
            return false;
        // What waits unsent is checked before a message is added: a message larger than the buffer
        // still goes to a reader that keeps up.
        if (this.raw.writableLength > this.bufferBytes) {
            this.cut();
            return false;
        }
        this.full = !this.raw.write(text) || this.full;
        return true;
    }
    cut() {
        this.raw.destroy();
        this.closed.abort();
    }
    /**
     * Waits until what was written is taken (at once when the last write was): a reader that takes
     * nothing for a heartbeat is cut.
     */
    async drained() {
        if (!this.open)
            return false;
        if (!this.full)
            return true;
        const taken = await new Promise(resolve => {
            const done = (value) => {
                clearTimeout(timer);
                this.raw.off('drain', onDrain);
                this.raw.off('close', onClose);
                resolve(value);
            };
            const onDrain = () => done(true);
            const onClose = () => done(false);
            const timer = setTimeout(() => done(false), this.heartbeatMs);
            this.raw.once('drain', onDrain);
            this.raw.once('close', onClose);
        });
        if (!taken)
            this.cut();
        else
            this.full = false;
        return taken && this.open;
    }
    /** Until a wake (at once if one came since the last call), the heartbeat or the end; true on a wake. */
    async idle() {
        if (this.woken || !this.open) {
            this.woken = false;
            return true;
        }
        const woken = await new Promise(resolve => {
            const timer = setTimeout(() => {
                this.wakeUp = undefined;
                resolve(false);
            }, this.heartbeatMs);
            this.wakeUp = () => {
                clearTimeout(timer);
                this.wakeUp = undefined;
                resolve(true);
            };
        });
        this.woken = false;
        if (!woken)
            this.send(': keep-alive\n\n');
        return woken;
    }
    end() {
        if (this.open)
            this.raw.end();
    }
}
/** Starts the answer: 200, text/event-stream, no caching or proxy buffering. */
function event_stream_open(context, request, reply) {
    reply.hijack();
    const raw = reply.raw;
    raw.writeHead(200, {
        'content-type': 'text/event-stream; charset=utf-8',
        'cache-control': 'no-cache, no-transform',
        'x-accel-buffering': 'no',
        'x-request-id': String(request.id)
    });
    raw.socket?.setNoDelay(true);
    const { streamBufferBytes, streamHeartbeatMs } = context.config.limits;
    const stream = new Stream(raw, streamBufferBytes, streamHeartbeatMs);
    stream.send(`retry: ${RECONNECT_MS}\n\n`);
    return stream;
}
/** Logs a failure of a stream already answering (its status is sent: the connection is cut). */
function event_stream_failed(request, stream, error) {
    if (stream.open)
        request.log.warn({ err: error }, 'event stream failed; the client resumes');
    request.raw.destroy();
}
/**
 * GET /runs/{id}/events as a stream: every event after `after`, then each new one as it is
 * appended; `done` once the run is terminal and every event is sent. A `state` event that is the
 * newest of its read carries the run's record as `run` when the record is in that state.
 */
async function streamRunEvents(context, request, reply, find, after, release) {
    const stream = event_stream_open(context, request, reply);
    let run = await find().catch(() => undefined);
    const stop = context.hub.watch(run ? [run.run_id] : [], stream.wake);
    try {
        if (!run)
            return;
        let cursor = after;
        for (let idle = false; stream.open;) {
            const events = await context.store.listEvents(run.run_id, { after: cursor, limit: event_stream_PAGE_EVENTS });
            const lastState = events.findLast(event => event.kind === 'state');
            if (lastState || idle)
                run = await find();
            for (const event of events) {
                const shown = event === lastState && event.state === run.state
                    ? { ...event, run: toRecord(run, context.links) }
                    : event;
                if (!stream.send(message(event.seq, event.kind, shown)) || !(await stream.drained()))
                    return;
                cursor = event.seq;
            }
            if (!(await stream.drained()))
                return;
            if (events.length === event_stream_PAGE_EVENTS)
                continue;
            if (run_isTerminalState(run.state)) {
                // Events written with the end (and any after it) are read once more before `done`.
                const rest = await context.store.listEvents(run.run_id, { after: cursor, limit: event_stream_PAGE_EVENTS });
                if (rest.length > 0)
                    continue;
                stream.send(message(undefined, 'done', {
                    run_id: run.run_id,
                    state: run.state,
                    last_seq: cursor,
                    run: toRecord(run, context.links)
                }));
                return;
            }
            idle = !(await stream.idle());
        }
    }
    catch (error) {
        event_stream_failed(request, stream, error);
    }
    finally {
        stop();
        release();
        stream.end();
    }
}
/** One entry of the events cursor, in the production service's shape (and its field names too). */
function cursorEvent(row) {
    const type = event_stream_STATE_EVENT_TYPES[row.state] ?? `run_${row.state.toLowerCase()}`;
    return {
        sequence: row.sequence,
        run_id: row.run_id,
        type,
        state: row.state,
        timestamp: row.at,
        event_type: type,
        occurred_at: row.at
    };
}
/**
 * GET /events as a stream: the changes of state of these runs after `since`, then each new one;
 * `done` once every run is terminal and its changes are sent.
 */
async function streamStateEvents(context, request, reply, team, runIds, since, release) {
    const stream = event_stream_open(context, request, reply);
    const stop = context.hub.watch(runIds, stream.wake);
    try {
        let cursor = since;
        while (stream.open) {
            const rows = await context.store.listStateEvents(team, runIds, cursor, event_stream_PAGE_EVENTS);
            for (const row of rows) {
                const event = cursorEvent(row);
                if (!stream.send(message(row.sequence, String(event.type), event)) || !(await stream.drained()))
                    return;
                cursor = row.sequence;
            }
            if (!(await stream.drained()))
                return;
            if (rows.length === event_stream_PAGE_EVENTS)
                continue;
            const states = await context.store.runStates(team, runIds);
            if ([...states.values()].every(state => run_isTerminalState(state))) {
                const rest = await context.store.listStateEvents(team, runIds, cursor, 1);
                if (rest.length > 0)
                    continue;
                stream.send(message(undefined, 'done', { next_since: cursor, states: Object.fromEntries(states) }));
                return;
            }
            await stream.idle();
        }
    }
    catch (error) {
        event_stream_failed(request, stream, error);
    }
    finally {
        stop();
        release();
        stream.end();
    }
}

;// CONCATENATED MODULE: ./src/executor/server/routes/events.ts
// The event endpoints: a run's events (a JSON page, or with Accept: text/event-stream the
// resumable stream of event-stream.ts) and the events cursor over several runs of a team (a JSON
// page in the production service's shape, or the same as a stream).




const DEFAULT_EVENTS_LIMIT = 100;
/** A run id as the executor makes them (and any the service might): one plain path segment. */
const RUN_ID = /^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$/;
function events_notFound(id) {
    return new ProblemError('not_found', `run ${JSON.stringify(id.slice(0, 100))} does not exist or is not visible to this key`);
}
/** `run_ids` as given (comma-separated, or repeated), checked and without repeats. */
function parseRunIds(value) {
    const parts = (Array.isArray(value) ? value : [value])
        .flatMap(item => String(item ?? '').split(','))
        .map(item => item.trim())
        .filter(item => item !== '');
    const ids = [...new Set(parts)];
    if (ids.length === 0)
        throw new ProblemError('invalid_request', 'run_ids: expected at least one run id, such as run_ids=ID1,ID2 (comma-separated or repeated)');
    if (ids.length > MAX_EVENT_RUN_IDS)
        throw new ProblemError('invalid_request', `run_ids: ${ids.length} runs; expected at most ${MAX_EVENT_RUN_IDS} (follow more with several cursors)`);
    const bad = ids.find(id => !RUN_ID.test(id));
    if (bad !== undefined)
        throw new ProblemError('invalid_request', `run_ids: ${JSON.stringify(bad.slice(0, 100))} is not a run id; expected ids such as 3f2b9c1e-…, separated by commas`);
    return ids;
}
function parseSince(query) {
    const value = query?.since;
    if (value === undefined || value === '')
        return 0;
    if (typeof value !== 'string' || !/^\d{1,15}$/.test(value))
        throw new ProblemError('invalid_request', `since ${JSON.stringify(value)}: expected the sequence of an event, a whole number such as 12`);
    return Number(value);
}
function parseEventsLimit(query) {
    const value = query?.limit;
    if (value === undefined || value === '')
        return DEFAULT_EVENTS_LIMIT;
    const number = typeof value === 'string' && /^\d{1,3}$/.test(value) ? Number(value) : NaN;
    if (number >= 1 && number <= 500)
        return number;
    throw new ProblemError('invalid_request', `limit ${JSON.stringify(value)}: expected a whole number of events from 1 to 500`);
}
function eventHandlers(context, slots) {
    const { store } = context;
    return {
        getRunEvents: async (request, reply) => {
            const id = request.params.run_id;
            const find = async () => {
                const run = await store.getRun(request.principal.team, id);
                if (!run)
                    throw events_notFound(id);
                return run;
            };
            if (!wantsEventStream(request))
                return readTranscript(context, request, reply, find);
            const after = resumePoint(request, parseAfter(request.query));
            await find();
            const release = slots.take(request.principal.keyId);
            await streamRunEvents(context, request, reply, find, after, release);
            return reply;
        },
        listEvents: async (request, reply) => {
            const team = request.principal.team;
            const runIds = parseRunIds(request.query.run_ids);
            const since = parseSince(request.query);
            const limit = parseEventsLimit(request.query);
            const stream = wantsEventStream(request);
            const after = stream ? resumePoint(request, since) : since;
            // Another team's run answers as one that does not exist, as every run endpoint does.
            const states = await store.runStates(team, runIds);
            const missing = runIds.find(id => !states.has(id));
            if (missing !== undefined)
                throw events_notFound(missing);
            if (stream) {
                const release = slots.take(request.principal.keyId);
                await streamStateEvents(context, request, reply, team, runIds, after, release);
                return reply;
            }
            const rows = await store.listStateEvents(team, runIds, after, limit);
            return { events: rows.map(cursorEvent), next_since: rows.at(-1)?.sequence ?? after };
        }
    };
}

;// CONCATENATED MODULE: ./src/executor/server/session-page.ts
// The session page behind a run's session_link: the shared run renderer (run-view.ts) in a
// self-contained page for whoever holds the link, without a sign-in. It carries the dashboard's own
// stylesheet inline (its CSP allows inline style and nothing else: no script, no image, no request
// elsewhere) and works without JavaScript. Artifacts download through the same token
// (routes/sessions.ts), from paths relative to the page so a public URL with a path prefix works too.



/** Where the session page of `run` downloads an artifact: relative to /sessions/{id}?token=…. */
function sessionArtifactHref(run, artifact, token) {
    const id = encodeURIComponent(run.run_id);
    return `${id}/artifacts/${encodeURIComponent(artifact.artifact_uid)}?token=${encodeURIComponent(token)}`;
}
function renderSession(run, events, artifacts, token) {
    const title = run.title || `Run ${run.run_id}`;
    const view = runViewHtml(run, events, artifacts, {
        artifactHref: artifact => sessionArtifactHref(run, artifact, token)
    });
    return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="color-scheme" content="light dark">
<title>${esc(title)}</title>
<style>${CSS}</style>
</head><body>
<header><span class="brand">agent-run</span> <span class="muted">session of run <code>${esc(run.run_id)}</code></span></header>
<main id="main">
<h1>${esc(run.title || 'Agent run')}</h1>
${view}
</main>
</body></html>
`;
}

;// CONCATENATED MODULE: ./src/executor/server/routes/sessions.ts
// The session page behind a run's session_link (HTML that works without JavaScript and escapes
// every piece of run content), and the downloads of that run's artifacts the page links to. The
// token (an HMAC of the run id) is the access check for both, made by the session tree's hook
// (register.ts); a wrong or missing token answers 404, like a run that does not exist, and an
// artifact of another run is not found either. With `server.session_pages: sign-in` the link
// alone is not enough: the browser must also be signed in to the dashboard with a key of the run's
// team (a link posted publicly then shows nothing to strangers).




function sessionHandlers(context) {
    /** The run of a session link whose token the hook checked, or a 404 for an unknown run. */
    const sessionRun = async (id) => {
        const run = await context.store.getRunAnyTeam(id);
        if (!run)
            throw new ProblemError('not_found', 'no session with this id and token');
        return run;
    };
    /**
     * With session_pages: sign-in, whether the browser is signed in as the run's team: false after
     * answering (a redirect to sign in, or 404 for another team's sign-in, as for a wrong token).
     */
    const admitted = async (request, reply, run) => {
        if (context.config.sessionPages !== 'sign-in')
            return true;
        const viewer = await viewerOf(context.store, request);
        if (viewer?.team === run.team)
            return true;
        if (viewer)
            throw new ProblemError('not_found', 'no session with this id and token');
        await reply
            .code(303)
            .header('location', `/?next=${encodeURIComponent(request.url)}`)
            .header('cache-control', 'no-store')
            .send();
        return false;
    };
    return {
        getSession: async (request, reply) => {
            const run = await sessionRun(request.params.run_id);
            if (!(await admitted(request, reply, run)))
                return reply;
            return sendSessionPage(context, run, String(request.query.token), reply);
        },
        getSessionArtifact: async (request, reply) => {
            const run = await sessionRun(request.params.run_id);
            if (!(await admitted(request, reply, run)))
                return reply;
            return sendSessionArtifact(context, run, request.params.artifact_uid, reply);
        }
    };
}
/** The session page of a run whose link (`token`) was checked. */
async function sendSessionPage(context, run, token, reply) {
    const [events, artifacts] = await Promise.all([
        boundedEvents(context.store, run.run_id),
        context.store.listArtifacts(run.team, run.run_id)
    ]);
    return reply
        .type('text/html; charset=utf-8')
        .header('content-security-policy', "default-src 'none'; style-src 'unsafe-inline'")
        .header('referrer-policy', 'no-referrer')
        .header('cache-control', 'no-store')
        .send(renderSession(run, events, artifacts, token));
}
/** One artifact of a run whose session link was checked, as an attachment; another run's is not found. */
async function sendSessionArtifact(context, run, uid, reply) {
    const artifact = await context.store.getArtifact(run.team, uid);
    const stored = artifact?.run_id === run.run_id ? await context.store.readArtifact(uid) : undefined;
    if (!stored)
        throw new ProblemError('artifact_not_found', `artifact ${JSON.stringify(uid.slice(0, 100))} does not exist in this session's run`);
    const name = stored.artifact.filename;
    return reply
        .type(stored.artifact.mime_type)
        .header('content-disposition', `attachment; filename="${name.replace(/[^\x20-\x7e]|["\\]/g, '_')}"; filename*=UTF-8''${encodeURIComponent(name)}`)
        .header('content-security-policy', "default-src 'none'; sandbox")
        .header('x-content-type-options', 'nosniff')
        .header('referrer-policy', 'no-referrer')
        .header('cache-control', 'private, no-store')
        .send(stored.data);
}

// EXTERNAL MODULE: external "node:dns/promises"
var external_node_dns_promises_ = __webpack_require__(71553);
;// CONCATENATED MODULE: ./src/executor/webhooks/address.ts
// Which addresses a webhook may be sent to. An endpoint's URL is the team's to choose, so without
// a check it could make the executor call what only the executor can reach: its own loopback
// ports, the private network it sits in, a cloud's metadata service. Unless the operator allows
// private networks, the host is resolved here and every address outside the public internet is
// refused; the request then connects to the address that was checked (send.ts), so a name that
// answers differently a moment later (DNS rebinding) cannot move it.


const refused = new external_node_net_.BlockList();
for (const [net, prefix] of [
    ['0.0.0.0', 8], // "this network"
    ['10.0.0.0', 8], // private
    ['100.64.0.0', 10], // carrier-grade NAT
    ['127.0.0.0', 8], // loopback
    ['169.254.0.0', 16], // link-local, where cloud metadata services answer
    ['172.16.0.0', 12], // private
    ['192.0.0.0', 24], // protocol assignments
    ['192.0.2.0', 24], // documentation
    ['192.88.99.0', 24], // 6to4 relay
    ['192.168.0.0', 16], // private
    ['198.18.0.0', 15], // benchmarking
    ['198.51.100.0', 24], // documentation
    ['203.0.113.0', 24], // documentation
    ['224.0.0.0', 4], // multicast
    ['240.0.0.0', 4] // reserved, and broadcast
])
    refused.addSubnet(net, prefix, 'ipv4');
for (const [net, prefix] of [
    ['::', 128], // unspecified
    ['::1', 128], // loopback
    ['100::', 64], // discard
    ['2001:db8::', 32], // documentation
    ['fc00::', 7], // unique local (fd00:ec2::254 is a metadata service)
    ['fe80::', 10], // link-local
    ['ff00::', 8] // multicast
])
    refused.addSubnet(net, prefix, 'ipv6');
/** The IPv4 address an IPv6 one carries (mapped ::ffff:a.b.c.d, NAT64 64:ff9b::/96, 6to4, compatible). */
function embeddedIpv4(address) {
    const lower = address.toLowerCase();
    const dotted = /^(?:::ffff:|::|64:ff9b::)(\d+\.\d+\.\d+\.\d+)$/.exec(lower);
    if (dotted)
        return dotted[1];
    const hex = /^(?:::ffff:|64:ff9b::|::)([0-9a-f]{1,4}):([0-9a-f]{1,4})$/.exec(lower);
    if (hex) {
        const high = parseInt(hex[1], 16);
        const low = parseInt(hex[2], 16);
        return `${high >> 8}.${high & 255}.${low >> 8}.${low & 255}`;
    }
    const sixToFour = /^2002:([0-9a-f]{1,4}):([0-9a-f]{1,4}):/.exec(lower);
    if (sixToFour) {
        const high = parseInt(sixToFour[1], 16);
        const low = parseInt(sixToFour[2], 16);
        return `${high >> 8}.${high & 255}.${low >> 8}.${low & 255}`;
    }
    return undefined;
}
/** Whether an IP address is on the public internet (not loopback, private, link-local, metadata, …). */
function isPublicAddress(address) {
    const family = (0,external_node_net_.isIP)(address);
    if (family === 4)
        return !refused.check(address, 'ipv4');
    if (family === 6) {
        const v4 = embeddedIpv4(address);
        if (v4 !== undefined)
            return !refused.check(v4, 'ipv4');
        return !refused.check(address, 'ipv6');
    }
    return false;
}
class AddressRefused extends Error {
}
/**
 * The address to connect to for `hostname` (a name or an IP literal, IPv6 without brackets): the
 * first one its name resolves to that may be reached. Throws AddressRefused, naming the host and
 * what it resolved to, when none may.
 */
async function resolveHost(hostname, allowPrivate) {
    const literal = (0,external_node_net_.isIP)(hostname);
    const found = literal !== 0
        ? [{ address: hostname, family: literal }]
        : (await (0,external_node_dns_promises_.lookup)(hostname, { all: true, verbatim: true })).map(entry => ({
            address: entry.address,
            family: entry.family
        }));
    if (found.length === 0)
        throw new AddressRefused(`${hostname} resolves to no address`);
    if (allowPrivate)
        return found[0];
    const allowed = found.find(entry => isPublicAddress(entry.address));
    if (allowed)
        return allowed;
    const addresses = found.map(entry => entry.address).join(', ');
    throw new AddressRefused(`${hostname} resolves only to addresses that are not public (${addresses}): loopback, private, ` +
        'link-local and metadata addresses are refused unless webhooks.allow_private_networks is true');
}
/**
 * What is wrong with an endpoint URL, or undefined: an http(s) URL without credentials, whose host
 * resolves to an address that may be reached. The host is looked up again at every attempt.
 */
async function urlProblem(url, allowPrivate) {
    let parsed;
    try {
        parsed = new URL(url);
    }
    catch {
        return `url ${JSON.stringify(url)}: not a URL; expected an http or https URL such as https://example.com/hooks`;
    }
    if (parsed.protocol !== 'https:' && parsed.protocol !== 'http:')
        return `url ${JSON.stringify(url)}: the scheme ${parsed.protocol.replace(/:$/, '')} is not sent to; expected http or https`;
    if (parsed.username !== '' || parsed.password !== '')
        return 'url: credentials in the URL are refused (they would be shown in the endpoint record); expected a URL without user:password@';
    try {
        await resolveHost(hostOf(parsed), allowPrivate);
    }
    catch (error) {
        if (error instanceof AddressRefused)
            return `url ${JSON.stringify(url)}: ${error.message}`;
        return `url ${JSON.stringify(url)}: the host ${hostOf(parsed)} does not resolve (${error.code ?? 'lookup failed'})`;
    }
    return undefined;
}
/** The URL's host without the brackets of an IPv6 literal. */
function hostOf(url) {
    return url.hostname.replace(/^\[(.*)\]$/, '$1');
}

;// CONCATENATED MODULE: ./src/executor/webhooks/sign.ts
// Signatures by the Standard Webhooks specification: a secret is `whsec_` and the base64 of random
// bytes; a signature is `v1,` and the base64 HMAC-SHA256, keyed with those bytes, of
// "{webhook-id}.{webhook-timestamp}.{body}". During a rotation's grace period the header carries
// one signature per secret, separated by spaces, and a receiver accepts any that verifies.

const PREFIX = 'whsec_';
function newSecret() {
    return PREFIX + (0,external_node_crypto_.randomBytes)(24).toString('base64');
}
/** Whether a string is a secret of this form (for the operator's declared ones). */
function isSecret(value) {
    if (!value.startsWith(PREFIX))
        return false;
    const key = Buffer.from(value.slice(PREFIX.length), 'base64');
    return key.length >= 16 && key.toString('base64') === value.slice(PREFIX.length);
}
function signature(secret, id, timestamp, body) {
    const key = Buffer.from(secret.slice(PREFIX.length), 'base64');
    return `v1,${(0,external_node_crypto_.createHmac)('sha256', key).update(`${id}.${timestamp}.${body}`).digest('base64')}`;
}
/** The webhook-signature header: one signature for each secret in use. */
function signatureHeader(secrets, id, timestamp, body) {
    return secrets.map(secret => signature(secret, id, timestamp, body)).join(' ');
}

;// CONCATENATED MODULE: ./src/executor/server/routes/webhooks.ts
// The webhook endpoints (create, list, get, delete, rotate, deliveries, retry) as a handler map for
// register.ts. A team sees only its own endpoints (another team's id answers 404, as an unknown
// one). The URL is checked here as the deliverer checks it at every attempt (webhooks/address.ts):
// http(s), and, unless webhooks.allow_private_networks, a host that resolves to a public address.
// A secret is shown only in the answers of create and rotate.





/** Deliveries a log answer shows. */
const DELIVERY_PAGE = 100;
function webhooks_iso(ms) {
    return ms === null ? null : new Date(ms).toISOString();
}
function webhookRecord(webhook) {
    return {
        id: webhook.id,
        url: webhook.url,
        events: webhook.events ?? [...WEBHOOK_EVENT_TYPES],
        description: webhook.description,
        created_at: webhook.created_at,
        source: webhook.source,
        disabled_at: webhook.disabled_at,
        disabled_reason: webhook.disabled_reason
    };
}
function withSecret(webhook) {
    const { disabled_at: _at, disabled_reason: _reason, ...record } = webhookRecord(webhook);
    return { ...record, secret: webhook.secret };
}
function deliveryRecord(delivery) {
    return {
        id: delivery.id,
        event_type: delivery.event_type,
        run_id: delivery.run_id,
        created_at: delivery.created_at,
        status: delivery.status,
        attempts: delivery.attempts,
        last_status: delivery.last_status,
        last_error: delivery.last_error,
        last_attempt_at: delivery.last_attempt_at,
        next_attempt_at: delivery.status === 'pending' ? webhooks_iso(delivery.next_attempt_ms) : null
    };
}
function webhooks_notFound(id) {
    return new ProblemError('not_found', `webhook ${JSON.stringify(id)} does not exist`);
}
function declared(id) {
    return new ProblemError('webhook_declared_in_config', `webhook ${JSON.stringify(id)} is declared in the executor's configuration file (webhooks.endpoints); change it there`);
}
function webhookHandlers(context) {
    const webhooks = context.store.webhooks;
    const settings = context.config.webhooks;
    async function find(team, id) {
        const webhook = await webhooks.getWebhook(team, id);
        if (!webhook)
            throw webhooks_notFound(id);
        return webhook;
    }
    return {
        createWebhook: async (request) => {
            const { url, events, description } = request.body;
            const problem = await urlProblem(url, settings.allowPrivateNetworks);
            if (problem)
                throw new ProblemError('invalid_field', problem);
            const webhook = {
                id: `wh_${(0,external_node_crypto_.randomBytes)(12).toString('hex')}`,
                team: request.principal.team,
                url,
                events: events === undefined ? null : [...new Set(events)],
                description: description ?? '',
                secret: newSecret(),
                previous_secret: null,
                previous_until_ms: null,
                source: 'api',
                created_at: new Date().toISOString(),
                disabled_at: null,
                disabled_reason: null
            };
            const limit = settings.maxEndpointsPerTeam;
            if (!(await webhooks.createWebhook(webhook, limit)))
                throw new ProblemError('webhook_limit_reached', `this team has ${limit} webhook endpoints, the limit of webhooks.max_endpoints_per_team; delete one to add another`);
            context.wakeDeliveries();
            return withSecret(webhook);
        },
        listWebhooks: async (request) => ({
            webhooks: (await webhooks.listWebhooks(request.principal.team)).map(webhookRecord)
        }),
        getWebhook: async (request) => webhookRecord(await find(request.principal.team, request.params.webhook_id)),
        deleteWebhook: async (request) => {
            const { team } = request.principal;
            const id = request.params.webhook_id;
            if ((await find(team, id)).source === 'config')
                throw declared(id);
            if (!(await webhooks.deleteWebhook(team, id)))
                throw webhooks_notFound(id);
            return { success: true };
        },
        rotateWebhookSecret: async (request) => {
            const { team } = request.principal;
            const id = request.params.webhook_id;
            if ((await find(team, id)).source === 'config')
                throw declared(id);
            const until = Date.now() + settings.rotationGraceMs;
            if (!(await webhooks.rotateSecret(team, id, newSecret(), until)))
                throw webhooks_notFound(id);
            return withSecret(await find(team, id));
        },
        listWebhookDeliveries: async (request) => {
            const webhook = await find(request.principal.team, request.params.webhook_id);
            return { deliveries: (await webhooks.listDeliveries(webhook.id, DELIVERY_PAGE)).map(deliveryRecord) };
        },
        retryWebhookDelivery: async (request) => {
            const { team } = request.principal;
            const { webhook_id: id, delivery_id: deliveryId } = request.params;
            await find(team, id);
            if (!(await webhooks.retryDelivery(team, id, deliveryId)))
                throw new ProblemError('not_found', `delivery ${JSON.stringify(deliveryId)} of webhook ${JSON.stringify(id)} does not exist`);
            context.wakeDeliveries();
            const delivery = await webhooks.getDelivery(id, deliveryId);
            if (!delivery)
                throw webhooks_notFound(id);
            return deliveryRecord(delivery);
        }
    };
}

// EXTERNAL MODULE: ./node_modules/typebox/build/compile/index.mjs + 267 modules
var compile = __webpack_require__(95595);
// EXTERNAL MODULE: ./node_modules/typebox/build/format/index.mjs + 32 modules
var format = __webpack_require__(86127);
;// CONCATENATED MODULE: ./src/executor/server/validation.ts
// Request validation for every route: the route's TypeBox schema is compiled once (TypeBox's own
// compiler, no Ajv: nothing is coerced, dropped or defaulted behind the handler's back) and the
// first failure becomes a problem body that names the field, the bad value and the expected form
// (the schema's `expected`, or its `constraint` when a value of the right type broke a rule).



// Query times: RFC 3339 (a date-time, or at least a date that parses); empty means "no filter".
format/* default.Set */.Ay.Set('timestamp', value => value === '' || (/^\d{4}-\d{2}-\d{2}/.test(value) && !Number.isNaN(Date.parse(value))));
const validatorCompiler = ({ schema, httpPart }) => {
    const check = (0,compile/* Compile */.Wx)(schema);
    const root = schema;
    // A body schema may allow no body at all (a cancel without a reason).
    const noBodyFine = httpPart === 'body' && root.acceptsNoBody === true;
    return data => {
        if (check.Check(data) || (data === undefined && noBodyFine))
            return { value: data };
        return { error: [describe(root, data, check.Errors(data)[0])] };
    };
};
function describe(root, data, error) {
    const path = error.instancePath
        .split('/')
        .slice(1)
        .map(segment => segment.replace(/~1/g, '/').replace(/~0/g, '~'));
    const accepted = Object.keys(root.properties ?? {});
    const params = error.params;
    if (error.keyword === 'required')
        path.push(String(params.requiredProperties[0]));
    if (error.keyword === 'additionalProperties' || error.schemaPath.endsWith('/additionalProperties')) {
        const name = path.at(-1) ?? String(params.additionalProperties?.[0]);
        return { ...error, path, value: undefined, unknownParameter: name, accepted };
    }
    let value = data;
    let node = root;
    let described = root;
    for (const segment of path) {
        value =
            value !== null && typeof value === 'object' ? value[segment] : undefined;
        node = child(node, segment);
        if (node?.expected !== undefined)
            described = node;
    }
    return { ...error, path, value, schema: described, accepted };
}
function child(node, segment) {
    if (!node)
        return undefined;
    if (node.properties?.[segment])
        return node.properties[segment];
    if (node.items)
        return node.items;
    for (const branch of node.anyOf ?? []) {
        const found = child(branch, segment);
        if (found)
            return found;
    }
    return undefined;
}
/** The schema error handler: a validation failure as a problem (400, or 422 for a body field). */
function buildSchemaProblem(errors, part) {
    const failure = errors[0];
    if (failure.unknownParameter !== undefined) {
        const where = part === 'querystring' ? 'parameter' : 'field';
        return new ProblemError('invalid_request', `unknown ${where} ${JSON.stringify(failure.unknownParameter)}; expected one of ${failure.accepted.join(', ')}`);
    }
    const expected = failure.schema?.expected ?? 'a value of the documented form';
    const constraint = failure.keyword !== 'type' && failure.keyword !== 'required' ? failure.schema?.constraint : undefined;
    if (part === 'body') {
        if (failure.path.length === 0)
            return new ProblemError('invalid_request', `the body must be ${expected}, got ${kindOf(failure.value)}`);
        const field = failure.path.join('.');
        return new ProblemError('invalid_field', constraint ? `${field}: ${constraint}` : `${field}: expected ${expected}, got ${kindOf(failure.value)}`);
    }
    const name = failure.path[0] ?? part;
    return new ProblemError('invalid_request', `${name} ${JSON.stringify(failure.value)}: expected ${expected}`);
}
/** A bad value in words, short: `nothing`, `number 5`, `the string "abc"`, `an array`. */
function kindOf(value) {
    if (value === undefined)
        return 'nothing';
    if (value === null)
        return 'null';
    if (Array.isArray(value))
        return 'an array';
    if (typeof value === 'string')
        return `the string ${JSON.stringify(value.length > 40 ? `${value.slice(0, 40)}…` : value)}`;
    return typeof value === 'object' ? 'an object' : `${typeof value} ${String(value)}`;
}

;// CONCATENATED MODULE: ./src/executor/server/app.ts
// The Fastify app with its routes, hooks and error handling, and nothing that needs a port or a
// worker: tests may drive it with `app.inject()`, and `startExecutor` (executor.ts) listens and
// adds the worker pool. Every request check a schema can say lives on the route (schemas.ts in
// src/api); every error answer is built by problem.ts.



















async function buildApp(context, options) {
    const { config } = context;
    let requestCount = 0;
    const app = fastify_default()({
        logger: { level: config.logLevel, stream: logStream(config.logFormat) },
        // Requests are logged by the onResponse hook below, in one line each (and only at info).
        logController: new fastify.LogController({ disableRequestLogging: true }),
        bodyLimit: config.limits.maxBodyBytes,
        forceCloseConnections: true,
        return503OnClosing: true,
        clientErrorHandler: writeClientError,
        genReqId: () => `${options.requestPrefix}-${(++requestCount).toString(36)}`,
        // Malformed URLs (bad percent-encoding, say) get a problem body like every other error.
        frameworkErrors: (error, request, reply) => void reply
            .header('x-request-id', request.id)
            .code(400)
            .type('application/problem+json')
            .send(problemBody('invalid_request', error.message, 400, request.url, String(request.id)))
    });
    app.setValidatorCompiler(validatorCompiler);
    app.setSchemaErrorFormatter(buildSchemaProblem);
    app.removeContentTypeParser('text/plain');
    // JSON bodies as usual, except that an empty body (a cancel with Content-Type: json) is no body.
    const parseJson = app.getDefaultJsonParser('error', 'error');
    app.addContentTypeParser('application/json', { parseAs: 'string' }, (request, body, done) => {
        if (body === '')
            return done(null, undefined);
        parseJson(request, body, done);
    });
    // Every answer carries `x-request-id`: the route trees' first hook sets it (register.ts, the
    // dashboard below), and the answers no route gives (a 404, a malformed URL) set it themselves, so
    // no hook of every request is needed for it.
    if (config.logLevel === 'info' || config.logLevel === 'debug') {
        app.addHook('onResponse', (request, reply, done) => {
            request.log.info({
                method: request.method,
                path: request.url.split('?')[0],
                status: reply.statusCode,
                ms: Math.round(reply.elapsedTime)
            }, 'request');
            done();
        });
    }
    app.setErrorHandler((error, request, reply) => {
        if (error instanceof ProblemError)
            return sendProblem(reply, error);
        if (error instanceof StoreUnavailableError) {
            request.log.warn({ err: error }, 'store unavailable');
            return sendProblem(reply, new ProblemError('store_unavailable', 'the executor cannot reach its store; retry shortly', {
                'retry-after': '2'
            }));
        }
        switch (error.code) {
            case 'FST_ERR_CTP_BODY_TOO_LARGE':
                return sendProblem(reply, new ProblemError('payload_too_large', `the body is over the limit of ${config.limits.maxBodyBytes} bytes`));
            case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
                return sendProblem(reply, new ProblemError('unsupported_media_type', `Content-Type ${JSON.stringify(request.headers['content-type'] ?? '')} is not supported; send application/json`));
            case 'FST_ERR_CTP_INVALID_CONTENT_LENGTH':
            case 'FST_ERR_CTP_EMPTY_JSON_BODY':
                return sendProblem(reply, new ProblemError('invalid_request', error.message));
        }
        if (error instanceof SyntaxError || error.statusCode === 400) {
            return sendProblem(reply, new ProblemError('invalid_request', `the body is not valid JSON: ${error.message}`));
        }
        if (error.statusCode !== undefined && error.statusCode >= 400 && error.statusCode < 500) {
            return sendProblem(reply, new ProblemError('invalid_request', error.message, {}, error.statusCode));
        }
        request.log.error({ err: error }, 'request failed');
        return sendProblem(reply, new ProblemError('internal_error', 'the executor failed while answering; the error is in its log'));
    });
    app.setNotFoundHandler((request, reply) => sendProblem(reply.header('x-request-id', request.id), new ProblemError('route_not_found', `no endpoint ${request.method} ${request.url.split('?')[0]}`)));
    // The endpoint table's routes (a worker node serves only those that need no key), then the
    // dashboard, which is HTML for people with its own cookie sign-in.
    const worker = (options.role ?? 'all') === 'worker';
    const reads = new ReadCache(context.store);
    const downloads = await DownloadLinks.open(context.store);
    const handlers = {
        ...metaHandlers(context, options.publicUrl, (options.role ?? 'all') !== 'api'),
        ...sessionHandlers(context),
        ...runHandlers(context, reads),
        ...resultHandlers(context, downloads),
        ...scheduleHandlers(context),
        ...webhookHandlers(context),
        ...catalogHandlers(context),
        ...eventHandlers(context, new StreamSlots(config.limits.maxStreamsPerKey, config.limits.maxStreams))
    };
    const served = ENDPOINT_NAMES.filter(name => !worker || ENDPOINTS[name].auth === 'none');
    await registerEndpoints(app, { context, reads, downloads }, handlers, served);
    if (!worker)
        await app.register(async (dashboard) => {
            dashboard.addHook('onRequest', stampRequestId);
            await dashboard.register(dashboardRoutes, { context });
        });
    return app;
}

;// CONCATENATED MODULE: ./src/executor/server/changes.ts
// Wakes held reads (`Prefer: wait`) the moment their run changes: one store listener, dispatched
// by run id, so a thousand held reads cost nothing per unrelated change. It remembers the newest
// version heard of each recently changed run: a change heard between a read's look at the run and
// its wait (another node's notification can arrive then) ends the wait at once instead of being
// missed.
class ChangeHub {
    waiters = new Map();
    heard = new Map();
    changes = 0;
    unsubscribe;
    /** Held transcript reads, by run id, and the newest event number heard of each run. */
    eventWaiters = new Map();
    heardEvents = new Map();
    unsubscribeEvents;
    constructor(store) {
        this.unsubscribe = store.onChange((change) => {
            const seen = this.heard.get(change.run_id);
            if (!seen || seen.version < change.version)
                this.heard.set(change.run_id, { version: change.version, at: Date.now() });
            if (++this.changes % 1000 === 0)
                this.forget();
            const set = this.waiters.get(change.run_id);
            if (set)
                for (const wake of [...set])
                    wake();
            // A change of state is also an event of the transcript.
            this.wakeEvents(change.run_id);
        });
        this.unsubscribeEvents = store.onEvent((runId, seq) => {
            const seen = this.heardEvents.get(runId);
            if (!seen || seen.seq < seq)
                this.heardEvents.set(runId, { seq, at: Date.now() });
            if (++this.changes % 1000 === 0)
                this.forget();
            this.wakeEvents(runId);
        });
    }
    wakeEvents(runId) {
        const set = this.eventWaiters.get(runId);
        if (set)
            for (const wake of [...set])
                wake();
    }
    /**
     * Resolves when an event is appended to the run's transcript or the run changes (at once if an
     * event newer than `afterSeq` was already heard), after `ms`, or when `signal` fires.
     */
    waitEvent(runId, afterSeq, ms, signal) {
        if ((this.heardEvents.get(runId)?.seq ?? 0) > afterSeq)
            return Promise.resolve();
        return this.hold(this.eventWaiters, runId, ms, signal);
    }
    /**
     * Calls `wake` on every event appended to any of these runs and every change of them, until the
     * returned function is called: an event stream's lifelong subscription (event-stream.ts).
     */
    watch(runIds, wake) {
        for (const runId of runIds) {
            let set = this.eventWaiters.get(runId);
            if (!set)
                this.eventWaiters.set(runId, (set = new Set()));
            set.add(wake);
        }
        return () => {
            for (const runId of runIds) {
                const set = this.eventWaiters.get(runId);
                set?.delete(wake);
                if (set?.size === 0)
                    this.eventWaiters.delete(runId);
            }
        };
    }
    /** A held read lasts at most a minute: what is older than that can no longer matter. */
    forget() {
        const before = Date.now() - 120_000;
        for (const [runId, seen] of this.heard)
            if (seen.at < before)
                this.heard.delete(runId);
        for (const [runId, seen] of this.heardEvents)
            if (seen.at < before)
                this.heardEvents.delete(runId);
    }
    /**
     * Resolves when the run changes past `version` (at once if that was already heard), after `ms`,
     * or when `signal` fires, whichever is first.
     */
    wait(runId, version, ms, signal) {
        if ((this.heard.get(runId)?.version ?? 0) > version)
            return Promise.resolve();
        return this.hold(this.waiters, runId, ms, signal);
    }
    hold(waiters, runId, ms, signal) {
        return new Promise(resolve => {
            let set = waiters.get(runId);
            if (!set)
                waiters.set(runId, (set = new Set()));
            const wake = () => {
                clearTimeout(timer);
                signal.removeEventListener('abort', wake);
                set.delete(wake);
                if (set.size === 0)
                    waiters.delete(runId);
                resolve();
            };
            const timer = setTimeout(wake, ms);
            set.add(wake);
            if (signal.aborted)
                wake();
            else
                signal.addEventListener('abort', wake, { once: true });
        });
    }
    /** Releases every held read (at shutdown). */
    wakeAll() {
        for (const set of [...this.waiters.values()])
            for (const wake of [...set])
                wake();
        for (const set of [...this.eventWaiters.values()])
            for (const wake of [...set])
                wake();
    }
    close() {
        this.wakeAll();
        this.unsubscribe();
        this.unsubscribeEvents();
    }
}

;// CONCATENATED MODULE: ./src/executor/sandbox/bwrap.ts
// The bubblewrap command line that confines one process of a run, and the start-up check that
// bubblewrap works here. Inside: system directories read-only, the workspace read-write, a private
// /tmp and an empty private HOME; the executor's data dir, config file and home are absent; own PID,
// IPC, UTS and network namespaces, a new session, no capabilities, killed with the executor.
// Started by a root executor, bubblewrap makes the mounts as root (so it reaches paths under
// root-only directories, such as a data dir made by mkdtemp) without a user namespace, and the
// run's program is then started as the run's unprivileged user (sandbox/user.ts dropTo): uid 0
// never runs agent code.




/** The system directories a run sees, read-only (each only when it exists). */
const SYSTEM_DIRS = [
    '/usr',
    '/bin',
    '/sbin',
    '/lib',
    '/lib32',
    '/lib64',
    '/libx32',
    '/etc',
    '/opt/hostedtoolcache'
];
/** Files under /etc that only root should read: shadowed by an empty file. */
const HIDDEN_ETC = ['/etc/shadow', '/etc/gshadow', '/etc/shadow-', '/etc/gshadow-', '/etc/sudoers'];
/** HOME inside the sandbox: an empty tmpfs per run. */
const SANDBOX_HOME = '/home/agent';
/**
 * The program to run: AGENT_EXECUTOR_BWRAP (tests point it at a missing file), else bwrap on the
 * executor's PATH, as an absolute path. It starts as root in the run's workspace with the run's
 * variables: looked up by name there, a relative PATH entry (`node_modules/.bin`) would find a
 * `bwrap` the run wrote in its workspace and run it as root on the host.
 */
function bwrapProgram() {
    return hostProgram(process.env.AGENT_EXECUTOR_BWRAP || 'bwrap');
}
/** `name` in the first absolute directory of the executor's PATH that has it; else `name` itself. */
function hostProgram(name) {
    if (name.includes('/'))
        return name;
    for (const dir of (process.env.PATH ?? '').split(external_node_path_.delimiter)) {
        if (!(0,external_node_path_.isAbsolute)(dir))
            continue;
        const file = (0,external_node_path_.join)(dir, name);
        try {
            (0,external_node_fs_.accessSync)(file, external_node_fs_.constants.X_OK);
            if ((0,external_node_fs_.statSync)(file).isFile())
                return file;
        }
        catch {
            // not here
        }
    }
    return name;
}
/**
 * `--dir` for each directory above a path bound at `dest`: bubblewrap would make the missing ones
 * 0700 root, which the run's user could not pass through (existing ones are left as they are).
 */
function parentDirs(dest) {
    const args = [];
    let dir = (0,external_node_path_.dirname)(dest);
    const dirs = [];
    while (dir !== '/' && dir !== '.') {
        dirs.unshift(dir);
        dir = (0,external_node_path_.dirname)(dir);
    }
    for (const d of dirs)
        args.push('--dir', d);
    return args;
}
/** A read-only bind of `from` at `to`, its missing parents made passable first. */
function roBind(from, to) {
    return [...parentDirs(to), '--ro-bind', from, to];
}
function inside(path, dir) {
    return path === dir || path.startsWith(dir.endsWith(external_node_path_.sep) ? dir : dir + external_node_path_.sep);
}
/** bwrap's arguments up to (not including) the command. */
function bwrapArgs(options) {
    const args = ['--die-with-parent', '--new-session'];
    if (options.user) {
        // No user namespace: the program's uid is the run user's on the host too. The first process
        // keeps only what dropTo needs (own HOME, then setuid/setgid and emptying the bounding set).
        args.push('--unshare-ipc', '--unshare-pid', '--unshare-uts', '--unshare-cgroup-try');
        if (options.network !== 'host')
            args.push('--unshare-net');
        args.push('--cap-drop', 'ALL');
        for (const cap of ['CAP_SETUID', 'CAP_SETGID', 'CAP_CHOWN', 'CAP_SETPCAP'])
            args.push('--cap-add', cap);
    }
    else {
        args.push('--unshare-all', '--cap-drop', 'ALL');
        if (options.network === 'host')
            args.push('--share-net');
    }
    for (const dir of SYSTEM_DIRS)
        args.push('--ro-bind-try', dir, dir);
    for (const file of HIDDEN_ETC)
        if ((0,external_node_fs_.existsSync)(file))
            args.push('--ro-bind', '/dev/null', file);
    // Made by root, /tmp and /dev/shm are open to all (sticky) so the run's user may write there.
    args.push('--proc', '/proc', '--dev', '/dev', '--perms', '1777', '--tmpfs', '/dev/shm');
    args.push('--perms', '1777', '--tmpfs', '/tmp');
    if (options.home && (0,external_node_fs_.existsSync)(options.home))
        args.push(...parentDirs(SANDBOX_HOME), '--bind', options.home, SANDBOX_HOME);
    else
        args.push('--tmpfs', SANDBOX_HOME);
    for (const path of options.read.map(p => (0,external_node_path_.resolve)(p)))
        if ((0,external_node_fs_.existsSync)(path))
            args.push(...roBind(path, path));
    // What must be absent goes over whatever bound it, shortest path first so nested ones stay hidden;
    // the workspace and writable paths are bound afterwards, so one inside the data dir still shows.
    const hidden = [...new Set(options.hide.map(p => (0,external_node_path_.resolve)(p)))]
        .filter(path => path !== '/' && (0,external_node_fs_.existsSync)(path))
        .sort((a, b) => a.length - b.length);
    for (const path of hidden) {
        if ((0,external_node_fs_.statSync)(path).isDirectory())
            args.push('--tmpfs', path);
        else
            args.push(...parentDirs(path), '--ro-bind', '/dev/null', path);
    }
    // Read-only paths a hidden directory covered (the source's objects inside the data dir).
    for (const path of options.read.map(p => (0,external_node_path_.resolve)(p)))
        if ((0,external_node_fs_.existsSync)(path) && hidden.some(h => inside(path, h)))
            args.push(...roBind(path, path));
    for (const path of options.write.map(p => (0,external_node_path_.resolve)(p)))
        if ((0,external_node_fs_.existsSync)(path))
            args.push(...parentDirs(path), '--bind', path, path);
    const workspace = (0,external_node_path_.resolve)(options.workspace);
    if ((0,external_node_fs_.existsSync)(workspace))
        args.push(...parentDirs(workspace), options.readOnlyWorkspace ? '--ro-bind' : '--bind', workspace, workspace);
    for (const [from, to] of options.files ?? [])
        args.push(...roBind(from, to));
    return args;
}
const checked = new Map();
/**
 * Starts `true` in a sandbox shaped like a run's (as the run's user when given), once per process,
 * bubblewrap program and user.
 */
function checkBubblewrap(user) {
    const program = bwrapProgram();
    const key = `${program}\0${user?.uid ?? ''}:${user?.gid ?? ''}`;
    const known = checked.get(key);
    if (known)
        return known;
    let cached;
    const workspace = (0,external_node_path_.dirname)(process.execPath);
    const command = user ? [...dropTo(user, SANDBOX_HOME), 'true'] : ['true'];
    const result = (0,external_node_child_process_.spawnSync)(program, [...bwrapArgs({ workspace, read: [], write: [], hide: [], network: 'none', user }), ...command], {
        encoding: 'utf8',
        timeout: 10_000
    });
    if (result.error) {
        const missing = result.error.code === 'ENOENT';
        cached = {
            ok: false,
            problem: missing
                ? `bubblewrap (${program}) is not installed; install it with \`sudo apt-get install bubblewrap\` (Debian/Ubuntu) or \`dnf install bubblewrap\``
                : `bubblewrap (${program}) could not start: ${result.error.message}`
        };
    }
    else if (result.status !== 0) {
        const stderr = result.stderr.trim().split('\n').slice(-2).join(' ');
        const userns = /namespace|uid map|permission|not permitted/i.test(stderr);
        const setpriv = /setpriv/.test(stderr) || result.status === 125;
        cached = {
            ok: false,
            problem: setpriv
                ? `the sandbox could not become the run's user ${user?.label ?? ''} (${stderr || `exit code ${result.status}`}); setpriv (util-linux) must be installed: \`sudo apt-get install util-linux\``
                : userns
                    ? `bubblewrap cannot create user namespaces here (${stderr}); allow them with \`sudo sysctl -w kernel.apparmor_restrict_unprivileged_userns=0\` (Ubuntu 23.10+ AppArmor) or \`sudo sysctl -w kernel.unprivileged_userns_clone=1\``
                    : `bubblewrap failed its start-up check with exit code ${result.status}: ${stderr}`
        };
    }
    else {
        cached = { ok: true };
    }
    checked.set(key, cached);
    return cached;
}

;// CONCATENATED MODULE: ./src/executor/node/harness-startup.ts
// The start-up look at each harness environment's CLI, for a node that runs work: the program is
// found (agent.command, else the CLI's usual name on the PATH), it starts in a sandbox shaped like a
// run's (as the run's user, nothing but its own file visible besides the system) and prints its
// version, which the start-up log states. A missing CLI is refused earlier, by the kind's own check
// (kind.ts), with the command that installs it; one that is there but cannot run is refused here.










/** The specs by kind; the other harnesses join here as they are registered. */
const SPECS = Object.fromEntries([claudeCode, codexHarness, geminiHarness].map(spec => [spec.kind, spec]));
/** Runs each harness environment's CLI with its version flag, confined as a run would be. */
function checkHarnessClis(environments) {
    const report = { notes: [], problems: [] };
    const checked = new Map();
    for (const environment of environments) {
        const spec = SPECS[environment.agent.kind];
        if (!spec || !agentKindOf(environment.agent.kind)?.harnessType)
            continue;
        const agent = environment.agent;
        const { program, prefix } = programOf(agent, spec);
        const found = findOnPath(program, process.env.PATH ?? '');
        if (!found)
            continue; // refused by the kind's check, with the install command
        const file = (0,external_node_fs_.realpathSync)(found);
        // The CLI as the user names it: a Node script's own path, not the node that runs it.
        const cli = program === process.execPath && prefix[0] ? prefix[0] : found;
        const shown = cli === found ? found : `${cli} (a Node script, run with ${found})`;
        const args = [...prefix, ...(spec.versionArgs ?? ['--version'])];
        let command = [file, ...args];
        if (environment.sandbox.enabled) {
            const user = runUser(environment.sandbox.user);
            // What a run of the environment sees: its sandbox.read (where a CLI installed outside the
            // system directories lives, with its packages), the program, and a script's own folder.
            const read = [
                ...environment.sandbox.read,
                file,
                ...prefix.filter(arg => arg.startsWith('/')).map(arg => (0,external_node_path_.dirname)((0,external_node_fs_.realpathSync)(arg)))
            ];
            const confine = bwrapArgs({ workspace: '/tmp', read, write: [], hide: [], network: 'none', user });
            const inner = user ? [...dropTo(user, SANDBOX_HOME), file, ...args] : [file, ...args];
            command = [bwrapProgram(), ...confine, '--', ...inner];
        }
        // Environments that differ only in what a run gets (its key, its model) run the same check once.
        const checkKey = JSON.stringify(command);
        const result = checked.get(checkKey) ??
            (0,external_node_child_process_.spawnSync)(command[0], command.slice(1), {
                encoding: 'utf8',
                timeout: 30_000,
                env: {
                    PATH: process.env.PATH ?? '/usr/bin:/bin',
                    HOME: SANDBOX_HOME,
                    LANG: process.env.LANG ?? 'C.UTF-8'
                }
            });
        checked.set(checkKey, result);
        const at = `environment ${JSON.stringify(environment.id)}`;
        const where = environment.sandbox.enabled ? 'in its sandbox' : 'unconfined';
        if (result.status === 0) {
            const version = result.stdout.trim().split('\n')[0] ?? '';
            report.notes.push(`${at}: ${spec.kind} CLI ${shown} runs ${where}, version ${version}`);
        }
        else {
            const why = result.error?.message ??
                (result.stderr.trim().split('\n').slice(-2).join(' ') || `exit code ${result.status}`);
            const user = environment.sandbox.enabled ? runUser(environment.sandbox.user) : undefined;
            const locked = user ? lockedOut(user, file, cli === found ? [] : [cli]) : undefined;
            report.problems.push(locked
                ? `${at}: the ${spec.kind} CLI ${shown} cannot run ${where}: ${locked}`
                : `${at}: the ${spec.kind} CLI ${shown} does not run ${where} (${why}); reinstall it with \`${spec.install}\``);
        }
    }
    return report;
}
/** Whether `user` may pass through the folder `stat` describes (its search bit for them). */
function canEnter(user, stat) {
    if (stat.uid === user.uid)
        return (stat.mode & 0o100) !== 0;
    if (stat.gid === user.gid)
        return (stat.mode & 0o010) !== 0;
    return (stat.mode & 0o001) !== 0;
}
/**
 * Why the run user cannot reach the program (`node`, for a Node script) or the scripts it runs: the
 * folders on their way it may not enter (a clone under root's home, a `mktemp -d` folder, both mode
 * 700), with the fix; undefined when every folder lets it through. These are the executor's own
 * install paths, never a tree a run can write, so they are looked at directly.
 */
function lockedOut(user, program, scripts) {
    const blocked = new Map();
    const reasons = [];
    const what = (path) => path === process.execPath ? `the Node this executor runs on (${path})` : `the CLI (${path})`;
    for (const path of [program, ...scripts]) {
        const dirs = [];
        for (let dir = (0,external_node_path_.dirname)(path);; dir = (0,external_node_path_.dirname)(dir)) {
            dirs.unshift(dir);
            if (dir === (0,external_node_path_.dirname)(dir))
                break;
        }
        const closed = dirs.filter(dir => {
            try {
                const stat = (0,external_node_fs_.statSync)(dir);
                if (canEnter(user, stat))
                    return false;
                blocked.set(dir, `mode ${(stat.mode & 0o777).toString(8)}, owner uid ${stat.uid}`);
                return true;
            }
            catch {
                return false;
            }
        });
        if (closed.length > 0)
            reasons.push(`${closed.join(', ')}, where ${what(path)} lives`);
    }
    if (blocked.size === 0)
        return undefined;
    const dirs = [...blocked.keys()];
    return (`the runs' user ${user.label} cannot enter ${dirs.map(dir => `${dir} (${blocked.get(dir)})`).join(', ')}; ` +
        `${reasons.join('; ')}. Let it through with \`chmod o+x ${dirs.join(' ')}\`, or run the executor ` +
        'and the CLI from folders every user can enter (e.g. Node 24 and the CLI installed under /usr/local or /opt)');
}

;// CONCATENATED MODULE: ./src/executor/sandbox/run-files.ts
// The one way the executor reads, copies, measures, lists or changes a tree a run can write (its
// workspace or layer, its HOME, its output folder, an earlier run's of the same): a program run as
// the run's own unprivileged user, with no capability, inside a bubblewrap sandbox that shows only
// the system directories and the trees named for this call. A link the run planted, a directory
// swapped for a link mid-walk, a FIFO or /dev/zero under a name the executor expects: each reaches
// at most what the run itself could reach, never a file of the host, the data dir or another run.
// What the program prints is the run's bytes: callers bound it here and parse it as untrusted.
//
// Root (the executor) still mounts and unmounts, makes a run's directories (empty) and removes
// whole trees once no process of the run exists, never following a link; it never opens a path
// inside such a tree. docs/architecture.md states the rule; __tests__/unit/run-files-sites.test.ts
// lists every call site that touches a run's tree and fails on one that does not come through here.





/** The system directories a reader sees, read-only (the same a run sees). */
const run_files_SYSTEM_DIRS = ['/usr', '/bin', '/sbin', '/lib', '/lib32', '/lib64', '/libx32', '/etc'];
/** Files of /etc only root should read: shadowed by an empty file here too. */
const run_files_HIDDEN_ETC = ['/etc/shadow', '/etc/gshadow', '/etc/shadow-', '/etc/gshadow-', '/etc/sudoers'];
/** Files of the system directories a reader must not see (the executor's config file). */
const run_files_hidden = new Set();
/** Hides `paths` (files under the system directories, such as a config file in /etc) from readers. */
function hideFromReaders(paths) {
    for (const path of paths)
        run_files_hidden.add((0,external_node_path_.resolve)(path));
}
const STDERR_KEPT = 8 * 1024;
const READER_TIMEOUT_MS = 5 * 60 * 1000;
const READER_MEMORY_KB = 2 * 1024 * 1024;
const PATH = '/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin';
/** `--dir` for each directory above `dest` (made passable inside; the host's are not shown). */
function parents(dest) {
    const dirs = [];
    for (let dir = (0,external_node_path_.dirname)(dest); dir !== '/' && dir !== '.'; dir = (0,external_node_path_.dirname)(dir))
        dirs.unshift(dir);
    return dirs.flatMap(dir => ['--dir', dir]);
}
/** The bubblewrap arguments of a reader: system directories, the named trees, nothing else. */
function readerArgs(identity, call) {
    const args = ['--die-with-parent', '--new-session', '--unshare-ipc', '--unshare-pid', '--unshare-uts'];
    if (!call.network)
        args.push('--unshare-net');
    args.push('--unshare-cgroup-try');
    if (identity.user) {
        // Made as root (it must reach the data dir's root-only folders to bind them), then setpriv
        // below drops to the run's user for good: these capabilities are only for that step (and
        // DAC_READ_SEARCH for entering the folder the program starts in).
        args.push('--cap-drop', 'ALL');
        for (const cap of ['CAP_SETUID', 'CAP_SETGID', 'CAP_SETPCAP', 'CAP_DAC_READ_SEARCH'])
            args.push('--cap-add', cap);
    }
    else {
        args.push('--unshare-user', '--cap-drop', 'ALL');
    }
    for (const dir of run_files_SYSTEM_DIRS)
        args.push('--ro-bind-try', dir, dir);
    for (const file of [...run_files_HIDDEN_ETC, ...run_files_hidden])
        if (run_files_SYSTEM_DIRS.some(dir => file.startsWith(`${dir}/`)) && (0,external_node_fs_.existsSync)(file))
            args.push('--ro-bind', '/dev/null', file);
    args.push('--proc', '/proc', '--dev', '/dev', '--perms', '1777', '--tmpfs', '/tmp');
    for (const dir of (call.read ?? []).map(path => (0,external_node_path_.resolve)(path)))
        args.push(...parents(dir), '--ro-bind', dir, dir);
    for (const dir of (call.write ?? []).map(path => (0,external_node_path_.resolve)(path)))
        args.push(...parents(dir), '--bind', dir, dir);
    return args;
}
/**
 * The command that, inside the reader, sets the address-space cap, enters `cwd` and becomes the
 * run's user for good (no groups, no capability, none regained through a setuid file) as it execs
 * the program: one shell, then setpriv. The shell may enter a folder closed to root without its
 * capabilities (a run's 0700 folder) by CAP_DAC_READ_SEARCH, which goes with the change of user.
 */
function asUser(user, memoryKb, cwd, fileSizeKb) {
    const drop = user
        ? [
            systemProgram('setpriv'),
            `--reuid=${user.uid}`,
            `--regid=${user.gid}`,
            '--clear-groups',
            '--inh-caps=-all',
            '--bounding-set=-all',
            '--no-new-privs',
            '--'
        ]
        : [];
    // `ulimit -f` counts 512-byte blocks in dash (Debian's sh) and POSIX.
    const files = fileSizeKb === undefined ? '' : `ulimit -f ${fileSizeKb * 2} || exit 125; `;
    const script = `ulimit -v ${memoryKb} || exit 125; ${files}cd -- "$1" || exit 125; shift; exec "$@"`;
    return ['/bin/sh', '-c', script, 'sh', cwd, ...drop];
}
/**
 * Runs `call.program` as the run's user on the trees `call` names, and answers what it printed
 * (bounded) and how it ended. Never throws for the program's own failure: callers read `code`.
 */
function asRunUser(identity, call) {
    const maxStdout = call.maxStdout ?? 64 * 1024;
    const memoryKb = call.memoryKb ?? READER_MEMORY_KB;
    const env = { PATH, HOME: '/tmp', LANG: 'C', ...call.env };
    const command = [
        ...asUser(identity.user, memoryKb, call.cwd ?? '/', call.fileSizeKb),
        call.program,
        ...call.args
    ];
    const [program, args] = identity.confined
        ? [bwrapProgram(), [...readerArgs(identity, call), '--', ...command]]
        : [command[0], command.slice(1)];
    return new Promise((resolveResult, reject) => {
        const child = (0,external_node_child_process_.spawn)(program, args, {
            cwd: '/',
            env,
            detached: true,
            stdio: [call.stdin === undefined ? 'ignore' : 'pipe', 'pipe', 'pipe']
        });
        const kept = [];
        let keptBytes = 0;
        let stdoutBytes = 0;
        let stderr = '';
        let timedOut = false;
        const kill = () => {
            try {
                process.kill(-child.pid, 'SIGKILL');
            }
            catch {
                // already gone
            }
        };
        const timeLimitMs = call.timeoutMs ?? READER_TIMEOUT_MS;
        const timer = setTimeout(() => {
            timedOut = true;
            kill();
        }, timeLimitMs);
        child.stdout.on('data', (chunk) => {
            stdoutBytes += chunk.length;
            if (keptBytes < maxStdout) {
                const part = chunk.subarray(0, maxStdout - keptBytes);
                kept.push(part);
                keptBytes += part.length;
            }
            if (call.stopPastMax && stdoutBytes > maxStdout)
                kill();
        });
        child.stderr.on('data', (chunk) => {
            stderr = (stderr + chunk.toString('utf8')).slice(-STDERR_KEPT);
        });
        if (call.stdin !== undefined) {
            child.stdin.on('error', () => undefined);
            child.stdin.end(call.stdin);
        }
        child.on('error', error => {
            clearTimeout(timer);
            reject(error);
        });
        child.on('close', (code, signal) => {
            clearTimeout(timer);
            resolveResult({
                code,
                signal,
                stdout: Buffer.concat(kept),
                stdoutBytes,
                stderr,
                timedOut,
                timeLimitMs
            });
        });
    });
}
/** The first line of a reader's complaint, for a message (bounded, control characters dropped). */
function readerReason(result) {
    if (result.timedOut) {
        const minutes = result.timeLimitMs / 60_000;
        return Number.isInteger(minutes)
            ? `it ran longer than ${minutes} minute${minutes === 1 ? '' : 's'}`
            : result.timeLimitMs < 1000
                ? `it ran longer than ${result.timeLimitMs} ms`
                : `it ran longer than ${Math.round(result.timeLimitMs / 1000)} s`;
    }
    const line = result.stderr
        .split('\n')
        .map(text => text.trim())
        .find(Boolean) ?? `exit code ${result.code ?? result.signal}`;
    // eslint-disable-next-line no-control-regex
    return line.replace(/[\u0000-\u001f\u007f-\u009f]/g, '?').slice(0, 300);
}

;// CONCATENATED MODULE: ./src/executor/workspace/copy.ts
// Copying a source that is not a git repository into a workspace. The copy is counted against the
// workspace quota as it goes and stops there, and it never descends into an executor's data dir
// (its own or another node's): two nodes whose data dirs sat inside one source directory once
// copied each other's workspaces until the disk was full.



/** Written into every data dir's workspaces folder, so any executor's copy recognises it. */
const WORKSPACES_MARKER = '.agent-run-workspaces';
class WorkspaceQuotaError extends Error {
    /** The run's outcome: execute.ts ends the run with it. */
    outcome;
    constructor(quotaBytes) {
        const outcome = sourceOverQuota(quotaBytes);
        super(outcome.status_message);
        this.outcome = outcome;
    }
}
/** Marks a data dir's workspaces folder (see WORKSPACES_MARKER). */
function markWorkspaces(dir) {
    (0,external_node_fs_.mkdirSync)(dir, { recursive: true });
    const marker = (0,external_node_path_.join)(dir, WORKSPACES_MARKER);
    if (!(0,external_node_fs_.existsSync)(marker))
        (0,external_node_fs_.writeFileSync)(marker, 'agent-run workspaces: never copied into a workspace\n');
}
/** Whether a directory is an executor's data dir or workspaces folder. */
function isExecutorDir(dir) {
    return ((0,external_node_fs_.existsSync)((0,external_node_path_.join)(dir, WORKSPACES_MARKER)) ||
        (0,external_node_fs_.existsSync)((0,external_node_path_.join)(dir, 'executor.pid')) ||
        (0,external_node_fs_.existsSync)((0,external_node_path_.join)(dir, 'executor.db')) ||
        (0,external_node_fs_.existsSync)((0,external_node_path_.join)(dir, 'workspaces', WORKSPACES_MARKER)));
}
/** Copies `from` to `to`, leaving out `skip` and executor dirs; throws past `quotaBytes`. */
function copyTree(from, to, skip, quotaBytes) {
    let used = 0;
    const walk = (source, target) => {
        (0,external_node_fs_.mkdirSync)(target, { recursive: true });
        for (const entry of (0,external_node_fs_.readdirSync)(source, { withFileTypes: true })) {
            const path = (0,external_node_path_.join)(source, entry.name);
            const into = (0,external_node_path_.join)(target, entry.name);
            if (path === skip)
                continue;
            if (entry.isDirectory()) {
                if (isExecutorDir(path))
                    continue;
                walk(path, into);
            }
            else if (entry.isSymbolicLink()) {
                (0,external_node_fs_.symlinkSync)((0,external_node_fs_.readlinkSync)(path), into);
            }
            else if (entry.isFile()) {
                used += (0,external_node_fs_.lstatSync)(path).size;
                if (used > quotaBytes)
                    throw new WorkspaceQuotaError(quotaBytes);
                (0,external_node_fs_.copyFileSync)(path, into);
            }
        }
    };
    if (isExecutorDir(from))
        throw new Error(`source ${from} is an executor's data dir; it is never copied`);
    walk(from, to);
}

;// CONCATENATED MODULE: ./src/executor/workspace/remove.ts
// Removing a directory tree a run wrote (its workspace, its own layer, its HOME, its output
// folder). A run chooses the tree's shape, and Node's recursive rmSync keeps a file descriptor open
// for each level: a tree nested deeper than the process's open-file limit (1,500 directories under
// the usual 1,024) made it throw EMFILE, and the sweep that met it stopped there every time, so
// no workspace, layer or HOME after it (secrets included) was ever removed and the disk filled.
// The system's `rm` walks any depth; it never follows a link and stays on the tree's file system.


const RM = (0,external_node_fs_.existsSync)('/usr/bin/rm') ? '/usr/bin/rm' : '/bin/rm';
/** Removes `path` and everything under it (nothing when it is absent); throws when it stays. */
function removeTree(path) {
    try {
        (0,external_node_fs_.rmSync)(path, { recursive: true, force: true });
        return;
    }
    catch {
        // deeper than rmSync goes: the system's rm below
    }
    (0,external_node_child_process_.execFileSync)(RM, ['-rf', '--one-file-system', '--', path], { stdio: 'ignore' });
}

;// CONCATENATED MODULE: ./src/executor/workspace/git.ts
// The executor's own git. Two kinds: git on a source (clone, fetch, rev-parse), where the user's
// own config applies; and git on a run's workspace after (or before) its agent, which runs outside
// the sandbox with the executor's privileges on files the agent wrote. The second never reads a
// `.git` of the workspace: it is always `--git-dir <the run's private git dir> --work-tree
// <workspace>` (see private-git.ts), with no system or global config, no inherited GIT_* variable
// (a push keeps the operator's ssh and certificate ones), a small environment that holds no
// secret of the executor (a push adds HOME, ssh and proxy variables and its token header), and
// settings on its command line that switch off everything a repository or a work tree could use
// to start a program: hooks, fsmonitor, external diff and textconv, submodule recursion,
// transports, ssh, credential helpers. `.gitattributes` of the work tree may still name
// `filter=`/`diff=` drivers, but no config git reads defines one, so none runs; the attributes
// that stay (eol, text, working-tree-encoding, ident) only transform bytes.






const git_exec = (0,external_node_util_.promisify)(external_node_child_process_.execFile);
/** Hides the credentials a git URL may carry (`https://user:token@host/…`). */
function redactUrls(text) {
    return text.replace(/\/\/[^/@\s]+@/g, '//***@');
}
/**
 * One line of why git failed, for a status message: its own `fatal:` (or `error:`) line, without
 * the `hint:` lines and suggestions around it; the first line it printed when it printed neither.
 */
function gitReason(error) {
    const failed = error;
    // Killed by its timeout (execFile's, or `timeout -s KILL` in a script: exit 137) or its memory cap.
    if (failed.killed || failed.code === 137 || failed.signal === 'SIGKILL')
        return `killed: it ran longer than ${POST_RUN_TIMEOUT_MS / 60000} minutes or past its memory cap`;
    const lines = String(error.stderr ?? '')
        .split('\n')
        .map(line => line.trim())
        .filter(line => line !== '' && !/^hint:/i.test(line));
    const reason = lines.find(line => /^fatal:/i.test(line)) ?? lines.find(line => /^error:/i.test(line));
    return reason ?? lines[0] ?? error.message.split('\n')[0];
}
/** Settings that win over anything a config could say (command-line `-c` has the last word). */
const HARDENED = [
    'core.hooksPath=/dev/null',
    'core.fsmonitor=false',
    'core.untrackedCache=false',
    'core.attributesFile=/dev/null',
    'core.excludesFile=/dev/null',
    'core.sshCommand=false',
    'core.askPass=',
    'credential.helper=',
    'diff.external=',
    'diff.ignoreSubmodules=all',
    'diff.submodule=short',
    'submodule.recurse=false',
    'status.submoduleSummary=false',
    'push.recurseSubmodules=no',
    'fetch.recurseSubmodules=false',
    'protocol.allow=never',
    'gc.auto=0',
    'maintenance.auto=false',
    'advice.addEmbeddedRepo=false',
    'user.name=agent-executor',
    'user.email=agent-executor@localhost',
    // Smaller mmap windows than git's defaults, so that git fits under POST_RUN_MEMORY_KB.
    'core.packedGitLimit=256m',
    'core.packedGitWindowSize=32m',
    'core.deltaBaseCacheLimit=64m',
    'core.bigFileThreshold=64m'
].flatMap(setting => ['-c', setting]);
/** What a workspace git process inherits of the executor's environment (no secret is among them). */
const LOCAL_VARIABLES = ['PATH', 'LANG', 'LC_ALL', 'LC_CTYPE', 'LC_MESSAGES', 'TZ', 'TMPDIR'];
/** What a push also needs: ssh's keys and agent, proxies and certificate bundles. */
const PUSH_VARIABLES = [
    'HOME',
    'SSH_AUTH_SOCK',
    'SSL_CERT_FILE',
    'SSL_CERT_DIR',
    'CURL_CA_BUNDLE',
    // The operator's own ssh and certificate settings for git: the only GIT_* variables passed.
    'GIT_SSH_COMMAND',
    'GIT_SSH',
    'GIT_SSL_CAINFO',
    'GIT_SSL_CAPATH',
    ...['http_proxy', 'https_proxy', 'all_proxy', 'no_proxy'].flatMap(name => [name, name.toUpperCase()])
];
/**
 * The environment of a workspace git process: a few variables of the executor's (more for a
 * push), no other GIT_* one, then the protections and `extra` (a push's token header).
 */
function privateEnv(repository, extra = {}, push = false) {
    const env = {};
    for (const name of push ? [...LOCAL_VARIABLES, ...PUSH_VARIABLES] : LOCAL_VARIABLES)
        if (process.env[name] !== undefined)
            env[name] = process.env[name];
    return {
        ...env,
        GIT_CONFIG_NOSYSTEM: '1',
        GIT_CONFIG_GLOBAL: '/dev/null',
        GIT_TERMINAL_PROMPT: '0',
        GIT_NO_REPLACE_OBJECTS: '1',
        GIT_CEILING_DIRECTORIES: (0,external_node_path_.dirname)(repository.workTree),
        GIT_DIR: repository.gitDir,
        GIT_WORK_TREE: repository.workTree,
        ...extra
    };
}
/** A fixed, generous bound on each workspace git process: it is killed after this long. */
const POST_RUN_TIMEOUT_MS = 5 * 60 * 1000;
/** The address space a workspace git command may use (`ulimit -v`, in KiB): 2 GiB. */
const POST_RUN_MEMORY_KB = 2 * 1024 * 1024;
/**
 * The command line that runs git so that the files it makes belong to `owner`: the effective ids
 * are the owner's (the kernel gives new files the effective ids), the real ones stay root's, and it
 * has only the two capabilities that let it read and write what root can (the source's objects,
 * the executor's root-only directories), in its bounding set too: neither git nor anything it
 * starts can take back the rest, not even by setting its effective uid to its real one. With a real
 * uid of root, the kernel's access() checks, which git makes on its git dir, still pass.
 */
function asOwner(owner, args) {
    const caps = '+dac_override,+dac_read_search';
    return [
        SETPRIV,
        [
            '--ruid=0',
            `--euid=${owner.uid}`,
            '--rgid=0',
            `--egid=${owner.gid}`,
            '--clear-groups',
            `--bounding-set=-all,${caps}`,
            `--inh-caps=${caps}`,
            `--ambient-caps=${caps}`,
            '--no-new-privs',
            '--',
            'git',
            ...args
        ]
    ];
}
const SETPRIV = systemProgram('setpriv');
async function run(args, env, cwd, timeout = 0, owner) {
    try {
        const [program, programArgs] = owner ? asOwner(owner, args) : ['git', args];
        const { stdout } = await git_exec(program, programArgs, {
            maxBuffer: 64 * 1024 * 1024,
            env,
            cwd,
            timeout,
            killSignal: 'SIGKILL'
        });
        return stdout;
    }
    catch (error) {
        const code = error.code;
        if (owner && (code === 'ENOENT' || code === 'EACCES'))
            throw new Error(`git ${args.includes('read-tree') ? 'read-tree' : 'command'} could not start as the run's user: ${SETPRIV} is missing or not executable (${code}); install util-linux (\`apt-get install util-linux\`)`);
        // The error's own message holds the whole command line; say which git command failed and why.
        const why = gitReason(error);
        const verb = args.find(arg => !arg.startsWith('-') && !arg.includes('=') && !arg.startsWith('/')) ?? 'git';
        // The whole of git's error output stays on the error for callers that need more than one line
        // (a push refused by the remote says why in its `remote:` lines).
        const stderr = redactUrls(String(error.stderr ?? ''));
        throw Object.assign(new Error(redactUrls(`git ${verb} failed: ${why}`)), { stderr });
    }
}
/** git on a source (clone, fetch, rev-parse): the user's own config applies, credentials included. */
function sourceGit(args, cwd) {
    return run(cwd ? ['-C', cwd, ...args] : args);
}
/**
 * git on a workspace through the run's private git dir. `env` adds variables for this one process
 * (publishing passes the token's header this way, with `push` set so that ssh and proxies work).
 */
function privateGit(repository, args, options = {}) {
    return run([...HARDENED, '--git-dir', repository.gitDir, '--work-tree', repository.workTree, ...args], privateEnv(repository, options.env, options.push), 
    // Never the workspace: a relative path git meets is then not the agent's.
    repository.gitDir, POST_RUN_TIMEOUT_MS, options.owner);
}
/**
 * Several git commands on a workspace in one child process (`a && b && …`: each process costs
 * milliseconds on a busy machine), with the same protections as privateGit.
 */
async function privateGitAll(repository, commands) {
    // Each git under an address-space cap and killed by `timeout` (the shell's own kill would leave
    // its git running).
    const seconds = String(POST_RUN_TIMEOUT_MS / 1000);
    const script = [
        `ulimit -v ${POST_RUN_MEMORY_KB}`,
        ...commands.map(args => ['timeout', '-s', 'KILL', seconds, 'git', ...HARDENED, ...args].map(quote).join(' '))
    ].join(' && ');
    try {
        const { stdout } = await git_exec('/bin/sh', ['-c', script], {
            cwd: repository.gitDir,
            maxBuffer: 64 * 1024 * 1024,
            env: privateEnv(repository)
        });
        return stdout;
    }
    catch (error) {
        // git names what it refused in `error:` lines before its `fatal:` one (`invalid path '.GIT/x'`).
        const errors = String(error.stderr ?? '')
            .split('\n')
            .map(line => line.trim())
            .filter(line => /^error:/i.test(line))
            .slice(0, 3);
        const why = [...new Set([...errors, gitReason(error)])].join('; ');
        throw new Error(redactUrls(`git ${commands.map(c => c[0]).join(', ')} failed: ${why}`));
    }
}
/** `arg` as one word of a shell command. */
function quote(arg) {
    return `'${arg.replaceAll("'", `'\\''`)}'`;
}
/** A git command with the protections, as a line of a shell script (for runTreeGit's own lines). */
function gitLine(args) {
    return ['git', ...HARDENED, ...args].map(quote).join(' ');
}
/**
 * git commands on a run's work tree (`a && b && …`) run as the run's user in the reader sandbox
 * (sandbox/run-files.ts): it sees the work tree (read-only unless `writeTree`), the private git
 * dir (the run user's, writable) and the borrowed objects, nothing else of the host. What git
 * prints is answered as bytes, at most `maxStdout` of them (`stopPastMax` ends git there; else the
 * rest is counted in `bytes`). Throws, naming git's reason, when a command fails.
 */
async function runTreeGit(tree, 
/** git's arguments per command; a string is a shell command of our own, used as written. */
commands, options = {}) {
    const { repository } = tree;
    const line = (command) => (typeof command === 'string' ? command : gitLine(command));
    const script = options.pipeline
        ? `set -o pipefail; ${commands.map(line).join(' | ')}`
        : commands.map(line).join(' && ');
    const env = {};
    for (const [name, value] of Object.entries(privateEnv(repository)))
        if (value !== undefined && name !== 'PATH' && name !== 'TMPDIR')
            env[name] = value;
    const result = await asRunUser(tree.identity, {
        read: [...tree.borrowed, ...(options.writeTree ? [] : [repository.workTree])],
        write: [repository.gitDir, ...(options.writeTree ? [repository.workTree] : [])],
        // Never the work tree unless it is written: a relative path git meets is then not the agent's.
        cwd: options.writeTree ? repository.workTree : repository.gitDir,
        program: options.pipeline ? '/bin/bash' : '/bin/sh',
        args: ['-c', script],
        env,
        stdin: options.stdin,
        maxStdout: options.maxStdout ?? 64 * 1024 * 1024,
        stopPastMax: options.stopPastMax,
        timeoutMs: POST_RUN_TIMEOUT_MS,
        memoryKb: POST_RUN_MEMORY_KB
    });
    const stopped = options.stopPastMax && result.stdoutBytes > result.stdout.length;
    if (result.code !== 0 && !stopped) {
        const errors = result.stderr
            .split('\n')
            .map(line => line.trim())
            .filter(line => /^error:/i.test(line))
            .slice(0, 3);
        const fatal = result.timedOut
            ? `killed: it ran longer than ${POST_RUN_TIMEOUT_MS / 60000} minutes`
            : result.signal === 'SIGKILL'
                ? 'killed: past its memory cap'
                : (result.stderr.split('\n').find(line => /^fatal:/i.test(line.trim())) ?? readerReason(result));
        const why = [...new Set([...errors, fatal.trim()])].join('; ');
        const names = commands.map(c => (typeof c === 'string' ? c.split(' ')[0] : c[0]));
        throw new Error(redactUrls(`git ${names.join(', ')} failed: ${why}`));
    }
    return { stdout: result.stdout, bytes: result.stdoutBytes };
}
/**
 * The index entries of the private git dir that are submodules (gitlinks, mode 160000), read as a
 * stream: a large repository's index listing is never held whole in memory.
 */
function privateGitlinks(repository) {
    return new Promise((resolve, reject) => {
        const child = (0,external_node_child_process_.spawn)('git', [...HARDENED, '--git-dir', repository.gitDir, 'ls-files', '--stage', '-z'], {
            cwd: repository.gitDir,
            env: privateEnv(repository),
            stdio: ['ignore', 'pipe', 'pipe']
        });
        const links = [];
        let rest = Buffer.alloc(0);
        let stderr = '';
        child.stdout.on('data', (chunk) => {
            rest = Buffer.concat([rest, chunk]);
            for (let end = rest.indexOf(0); end >= 0; end = rest.indexOf(0)) {
                // `<mode> <object> <stage>\t<path>`
                const entry = rest.subarray(0, end).toString('utf8');
                rest = rest.subarray(end + 1);
                if (entry.startsWith('160000 '))
                    links.push(entry.slice(entry.indexOf('\t') + 1));
            }
        });
        child.stderr.on('data', chunk => (stderr += String(chunk)));
        child.on('error', reject);
        child.on('close', code => code === 0
            ? resolve(links)
            : reject(new Error(`git ls-files failed: ${gitReason({ stderr }) || `exit code ${code}`}`)));
    });
}
/** Replaces a file without following a symbolic link the run may have put in its place. */
function replaceFile(path, text) {
    try {
        (0,external_node_fs_.unlinkSync)(path);
    }
    catch {
        // not there
    }
    (0,external_node_fs_.writeFileSync)(path, text, { flag: 'wx', mode: 0o644 });
}

;// CONCATENATED MODULE: ./src/executor/workspace/nested.ts
// Finds the nested repositories a run made in its work tree, so that the executor's post-run git
// never looks into them. `git add --all` probes every untracked directory for a `.git` (to record
// it as a gitlink) and reads what it finds: a FIFO there blocks it, a link to /dev/zero eats
// memory, a `gitdir:` file naming another repository publishes that repository's commit id. A
// directory excluded by a negative pathspec is never probed (git's dir.c returns before the probe;
// `.gitignore` exclusion does not), so each one found here is passed to git as
// `:(exclude,literal)<path>`. The walk is `find` as the run's user in the reader sandbox
// (sandbox/run-files.ts): it lists names only, never opens, follows or reads an entry, and what it
// prints is bounded.

/** More nested repositories than this fail the run instead of becoming a giant argv. */
const MAX_NESTED = 1000;
/** What find may print: far more than MAX_NESTED paths of any sensible length. */
const MAX_LISTING = 4 * 1024 * 1024;
function tooMany() {
    return Object.assign(new Error(`the run made more than ${MAX_NESTED} nested repositories (directories holding .git)`), { code: 'workspace_tampered' });
}
/** Work-tree-relative paths (with `/`) of directories below the root that hold an entry `.git`. */
async function nestedRepositories(root, identity) {
    const result = await asRunUser(identity, {
        read: [root],
        cwd: root,
        program: 'find',
        // The agent's own `.git` at the top is not a nested one and is never walked.
        args: ['.', '-path', './.git', '-prune', '-o', '-name', '.git', '-printf', '%h\\0'],
        maxStdout: MAX_LISTING,
        stopPastMax: true
    });
    if (result.stdoutBytes > MAX_LISTING)
        throw tooMany();
    // A directory find could not read is left to git, which then says so itself.
    const dirs = result.stdout
        .toString('utf8')
        .split('\0')
        .filter(dir => dir.startsWith('./'))
        .map(dir => dir.slice(2))
        .sort();
    const found = outermost(dirs);
    if (found.length > MAX_NESTED)
        throw tooMany();
    return found;
}
/** The directories of `dirs` not below another of them, sorted (git never looks below one). */
function outermost(dirs) {
    const found = new Set();
    const depth = (dir) => dir.split('/').length;
    for (const dir of [...new Set(dirs)].sort((a, b) => depth(a) - depth(b))) {
        const parts = dir.split('/');
        if (parts.some((_, i) => i > 0 && found.has(parts.slice(0, i).join('/'))))
            continue;
        found.add(dir);
    }
    return [...found].sort();
}
/** The pathspecs that keep git out of `nested` (a lone `.` first: git needs a positive one). */
function excludeNested(nested) {
    return nested.length === 0 ? [] : ['--', '.', ...nested.map(path => `:(exclude,literal)${path}`)];
}

;// CONCATENATED MODULE: ./src/executor/workspace/layer-changes.ts
// What a run may have changed in a copy-on-write workspace, read from its layers instead of a walk
// of the whole tree. The run's upper layer holds every file it wrote and a whiteout for every
// file it deleted; a directory it removed and made again hides everything below it (an opaque
// directory, marked by an xattr only root may read), so deletions are also found by comparing
// each directory of the upper layer with the same directory in the layers under it: a name below
// that the merged view no longer shows is gone. The kept setup layer (when there is one) is read
// the same way, since the start commit is under it too. The paths found are candidates: git then
// looks at them alone, in a temporary index of only those paths written as two small trees (see
// changedOnly in workspace.ts), and the diff, the patch and the size of the changes between those
// trees are what a full walk gives, byte for byte. Listing and comparing run as the run's user in the reader sandbox (run-files.ts):
// only names are printed, bounded, and parsed here as untrusted data.
//
// Where the layers say more than MAX_LAYER_PATHS candidates, or cannot all be read, undefined is
// answered and the caller walks the whole tree as a full checkout does.


/** Past this many candidate paths the whole tree is walked instead (git matches each pathspec). */
const MAX_LAYER_PATHS = 2000;
/** What the listing may print: far more than MAX_LAYER_PATHS paths of any sensible length. */
const layer_changes_MAX_LISTING = 8 * 1024 * 1024;
// $1 upper, $2 setup (or empty), $3 tree, $4 merged. Prints NUL-ended records:
//   u<type> <path>  an entry of the upper layer (find's %y type: f d l c p s b)
//   sf <path>       a non-directory of the setup layer (below directories the checkout has too)
//   g <path>        a `.git` of the setup layer below its top
//   x <path>        a name of a lower layer the merged view no longer shows, or a lower
//                   non-directory the upper layer made a directory
//   n <path>        a directory of the upper layer no lower layer has, or of the setup layer the
//                   checkout has not (all of it is the run's, or the setup's)
// The agent's own `.git` at the top is never listed. Exits 4 when a lower directory cannot be read.
const LISTING = [
    'set -o pipefail',
    'shopt -s nullglob dotglob',
    'U=$1 S=$2 T=$3 M=$4',
    '# Names below lower directory $1 (at work-tree path $2) that the merged view no longer shows.',
    'gone() {',
    '  { [ -r "$1" ] && [ -x "$1" ]; } || exit 4',
    '  local p rel',
    '  for p in "$1"/*; do',
    '    rel="${2:+$2/}${p##*/}"',
    '    [ -e "$M/$rel" ] || [ -L "$M/$rel" ] || printf \'x %s\\0\' "$rel"',
    '  done',
    '}',
    '# The setup layer, descending only into directories the checkout has too.',
    'setup() {',
    '  local p rel',
    '  { [ -r "$S${1:+/$1}" ] && [ -x "$S${1:+/$1}" ]; } || exit 4',
    '  [ -z "$1" ] || gone "$T/$1" "$1"',
    '  for p in "$S${1:+/$1}"/*; do',
    '    rel="${1:+$1/}${p##*/}"',
    '    [ "$rel" != .git ] || continue',
    '    if [ -d "$p" ] && [ ! -L "$p" ]; then',
    '      if [ -d "$T/$rel" ] && [ ! -L "$T/$rel" ]; then setup "$rel"; else printf \'n %s\\0\' "$rel"; fi',
    '    else',
    '      printf \'sf %s\\0\' "$rel"',
    '      if [ -d "$T/$rel" ] && [ ! -L "$T/$rel" ]; then printf \'x %s\\0\' "$rel"; fi',
    '    fi',
    '  done',
    '}',
    'find "$U" -mindepth 1 -path "$U/.git" -prune -o -printf \'u%y %P\\0\' || exit 3',
    'if [ -n "$S" ]; then',
    '  find "$S" -mindepth 1 -path "$S/.git" -prune -o -name .git -printf \'g %P\\0\' -prune || exit 3',
    "  setup '' || exit 4",
    'fi',
    'find "$U" -path "$U/.git" -prune -o -type d -printf \'%P\\0\' | while IFS= read -r -d \'\' d; do',
    '  found=',
    '  for L in "$S" "$T"; do',
    '    [ -n "$L" ] || continue',
    '    here="$L${d:+/$d}"',
    '    if [ -L "$here" ] || { [ -e "$here" ] && [ ! -d "$here" ]; }; then printf \'x %s\\0\' "$d"; found=1; continue; fi',
    '    [ -d "$here" ] || continue',
    '    found=1',
    '    gone "$here" "$d"',
    '  done',
    '  [ -n "$found" ] || printf \'n %s\\0\' "$d"',
    'done'
].join('\n');
/** Whether `path` has a `.git` component (git never tracks such a path). */
function underGit(path) {
    return path.split('/').includes('.git');
}
/** The outermost of `path` and the directories above it that `dirs` holds. */
function outermostIn(path, dirs) {
    if (dirs.size === 0)
        return undefined;
    for (let at = path.indexOf('/'); at !== -1; at = path.indexOf('/', at + 1))
        if (dirs.has(path.slice(0, at)))
            return path.slice(0, at);
    return dirs.has(path) ? path : undefined;
}
/**
 * The paths of a copy-on-write workspace the run may have changed, from its layers; undefined
 * when they say too much or cannot all be read (the caller then walks the whole tree).
 */
async function layerPaths(identity, layers) {
    const result = await asRunUser(identity, {
        read: [layers.upper, ...(layers.setup ? [layers.setup] : []), layers.tree, layers.merged],
        program: '/bin/bash',
        args: ['-c', LISTING, 'layers', layers.upper, layers.setup ?? '', layers.tree, layers.merged],
        maxStdout: layer_changes_MAX_LISTING,
        stopPastMax: true
    });
    if (result.code !== 0 || result.stdoutBytes > layer_changes_MAX_LISTING)
        return undefined;
    const records = result.stdout.toString('utf8').split('\0');
    records.pop();
    const paths = [];
    const gitDirs = [];
    const fresh = [];
    for (const record of records) {
        const space = record.indexOf(' ');
        const [tag, path] = [record.slice(0, space), record.slice(space + 1)];
        if (space < 1 || path === '')
            continue;
        if (tag === 'g')
            gitDirs.push(path.slice(0, -'/.git'.length));
        else if ((tag[0] === 'u' || tag[0] === 's') && tag.length === 2) {
            if (path.endsWith('/.git') || path === '.git') {
                if (path.includes('/'))
                    gitDirs.push(path.slice(0, -'/.git'.length));
                continue;
            }
            if (tag[1] !== 'd')
                paths.push(path);
        }
        else if (tag === 'x')
            paths.push(path);
        else if (tag === 'n')
            fresh.push(path);
    }
    const nested = outermost(gitDirs);
    if (nested.length > MAX_NESTED)
        return undefined;
    const nestedSet = new Set(nested);
    // Whatever lies in a directory only the run (or the setup) made is looked at through that
    // directory: one path for git, however many files it holds.
    const freshTops = new Set(outermost(fresh));
    const candidates = new Set();
    for (const path of [...freshTops, ...paths]) {
        if (underGit(path) || outermostIn(path, nestedSet))
            continue;
        candidates.add(outermostIn(path, freshTops) ?? path);
        if (candidates.size > MAX_LAYER_PATHS)
            return undefined;
    }
    return { candidates: [...candidates].sort(), nested };
}

;// CONCATENATED MODULE: ./src/executor/workspace/mounts.ts
// The overlayfs mounts of copy-on-write workspaces (layers.ts makes what they stack): whether
// this machine can mount one at all (probed once per data dir, for the start-up log), the mount
// points below a directory as the kernel lists them, and unmounting a workspace (lazily when
// something still has it open) or all of a node's (also synchronously, for a process that exits
// at once on a second signal). A workspace is never deleted through a mount.




const mounts_exec = (0,external_node_util_.promisify)(external_node_child_process_.execFile);
const modes = new Map();
/** Mounts overlayfs once on a scratch directory of the data dir: what works here, probed once. */
function layerMode(dataDir) {
    let mode = modes.get(dataDir);
    if (!mode) {
        mode = probe(dataDir);
        modes.set(dataDir, mode);
    }
    return mode;
}
function probe(dataDir) {
    if (process.env.AGENT_EXECUTOR_WORKSPACES === 'checkout')
        return { kind: 'checkout', reason: 'AGENT_EXECUTOR_WORKSPACES=checkout' };
    if (process.platform !== 'linux')
        return { kind: 'checkout', reason: 'overlayfs is Linux only' };
    if (process.getuid?.() !== 0)
        return {
            kind: 'checkout',
            reason: `mounting overlayfs needs root and the executor is uid ${process.getuid?.()}`
        };
    // overlayfs separates its options with `,` and lower layers with `:`.
    if (/[,:\\\n]/.test(dataDir))
        return {
            kind: 'checkout',
            reason: `the data dir ${dataDir} holds a character overlayfs options cannot name (, : \\)`
        };
    const dir = (0,external_node_path_.join)(dataDir, 'layers', '.probe');
    // A probe a crash interrupted may still be mounted: never delete through it.
    if (mountPoints(dir).size > 0)
        (0,external_node_child_process_.spawnSync)('umount', ['-l', (0,external_node_path_.join)(dir, 'merged')], { timeout: 10_000 });
    (0,external_node_fs_.rmSync)(dir, { recursive: true, force: true });
    for (const sub of ['lower', 'upper', 'work', 'merged'])
        (0,external_node_fs_.mkdirSync)((0,external_node_path_.join)(dir, sub), { recursive: true });
    const merged = (0,external_node_path_.join)(dir, 'merged');
    const mounted = (0,external_node_child_process_.spawnSync)('mount', [
        '-t',
        'overlay',
        'overlay',
        '-o',
        options((0,external_node_path_.join)(dir, 'lower'), (0,external_node_path_.join)(dir, 'upper'), (0,external_node_path_.join)(dir, 'work')),
        merged
    ], {
        encoding: 'utf8',
        timeout: 10_000
    });
    if (mounted.status === 0)
        (0,external_node_child_process_.spawnSync)('umount', [merged], { timeout: 10_000 });
    const why = (mounted.stderr ?? '').trim().split('\n').pop() ||
        mounted.error?.message ||
        `exit code ${mounted.status}`;
    if (mounted.status === 0 && !mountPoints(dataDir).has(merged))
        (0,external_node_fs_.rmSync)(dir, { recursive: true, force: true });
    return mounted.status === 0
        ? { kind: 'overlay' }
        : { kind: 'checkout', reason: `overlayfs could not be mounted here (${why})` };
}
function options(lower, upper, work) {
    return `lowerdir=${lower},upperdir=${upper},workdir=${work}`;
}
/** The mount points at or below `dir`, from /proc/self/mountinfo (octal escapes decoded). */
function mountPoints(dir) {
    const found = new Set();
    let text = '';
    try {
        text = (0,external_node_fs_.readFileSync)('/proc/self/mountinfo', 'utf8');
    }
    catch {
        return found;
    }
    for (const line of text.split('\n')) {
        const field = line.split(' ')[4];
        if (!field)
            continue;
        const path = field.replace(/\\([0-7]{3})/g, (_, code) => String.fromCharCode(parseInt(code, 8)));
        if (path === dir || path.startsWith(`${dir}/`))
            found.add(path);
    }
    return found;
}
/**
 * Unmounts a run's workspace when it is mounted (lazily when something still has it open) and
 * answers whether nothing is mounted there any more: a workspace is never deleted through a mount.
 */
async function unmountWorkspace(dataDir, runId) {
    const path = (0,external_node_path_.join)(dataDir, 'workspaces', runId);
    if (!mountPoints(path).has(path))
        return true;
    await mounts_exec('umount', [path]).catch(() => mounts_exec('umount', ['-l', path]).catch(() => undefined));
    return !mountPoints(path).has(path);
}
/**
 * Unmounts every workspace of the data dir (the node stops: no mount outlives it; a retained
 * workspace's layer stays and is mounted again by the next start's sweep).
 */
async function unmountAll(dataDir) {
    const workspaces = (0,external_node_path_.join)(dataDir, 'workspaces');
    for (const mount of mountPoints(workspaces)) {
        const runId = mount.slice(workspaces.length + 1);
        if (runId && !runId.includes('/'))
            await unmountWorkspace(dataDir, runId);
    }
}
/**
 * Unmounts every workspace of the data dir at once, lazily and synchronously: for a process about
 * to exit without its graceful stop (a second SIGTERM or SIGINT), so that no mount outlives it.
 */
function unmountAllNow(dataDir) {
    const workspaces = (0,external_node_path_.join)(dataDir, 'workspaces');
    for (const mount of mountPoints(workspaces)) {
        const runId = mount.slice(workspaces.length + 1);
        if (runId && !runId.includes('/'))
            (0,external_node_child_process_.spawnSync)('umount', ['-l', mount], { timeout: 10_000 });
    }
}

;// CONCATENATED MODULE: ./src/executor/workspace/private-git.ts
// Each run's private git dir, DATA_DIR/gitdirs/<run id>.git: the executor's own record of the
// workspace, outside it and outside everything the sandbox shows (the data dir is hidden from a
// run). It borrows the source's objects (alternates the executor writes), its config, HEAD, index
// and info/ are written only by the executor, and its HEAD is the commit the run starts at. Every
// git step after the agent (the diff, the patch, the commit and push of publishing) runs through
// it with `--work-tree <workspace>`: whatever the agent did to the `.git` in its workspace (a
// gitfile, a symbolic link, `commondir`, hooks, filters, a rewritten history) is never read, and
// the changes are always the work tree against the start commit.
//
// The agent gets an ordinary repository of its own in the workspace, made here before it starts
// (the same start commit, the same index, its own objects or the source's borrowed); it may wreck
// it at will.



const CONFIG = '[core]\n\trepositoryformatversion = 0\n\tfilemode = true\n\tbare = false\n';
const COMMIT = /^(?:[0-9a-f]{40}|[0-9a-f]{64})$/;
/** Where a run's private git dir lives. */
function privateGitDir(dataDir, runId) {
    return (0,external_node_path_.join)(dataDir, 'gitdirs', `${runId}.git`);
}
/** The skeleton of a git dir, written file by file (no template, no hooks, no process). */
function writeGitDir(gitDir, head, alternates, shallow) {
    for (const dir of ['objects/info', 'objects/pack', 'refs/heads', 'refs/tags', 'info'])
        (0,external_node_fs_.mkdirSync)((0,external_node_path_.join)(gitDir, dir), { recursive: true, mode: 0o755 });
    replaceFile((0,external_node_path_.join)(gitDir, 'config'), CONFIG);
    replaceFile((0,external_node_path_.join)(gitDir, 'HEAD'), `${head}\n`);
    if (alternates.length > 0)
        replaceFile((0,external_node_path_.join)(gitDir, 'objects', 'info', 'alternates'), alternates.map(p => `${p}\n`).join(''));
    // A shallow source (actions/checkout's default) has commits whose parents are not there.
    if (shallow && (0,external_node_fs_.existsSync)(shallow))
        (0,external_node_fs_.copyFileSync)(shallow, (0,external_node_path_.join)(gitDir, 'shallow'));
}
/**
 * A repository source: the private git dir at `head`, borrowing `borrowed`, its files checked out
 * into `workTree`; then the agent's own `.git` beside them. Answers the start commit. With `owner`
 * every file of the work tree is the owner's from the start (git writes them as the owner: see
 * git.ts), so the index git writes already holds the owner and the files' times, and nothing is
 * given away (chown) afterwards, which would change every file's ctime and make git read every
 * file again; the private git dir stays root's.
 */
async function checkoutRepository(repository, head, borrowed, shallow, owner) {
    if (!COMMIT.test(head))
        throw new Error(`the source's start ${JSON.stringify(head)} is not a commit id`);
    (0,external_node_fs_.mkdirSync)(repository.workTree, { recursive: true });
    writeGitDir(repository.gitDir, head, borrowed, shallow);
    await privateGit(repository, ['read-tree', '--reset', '-u', head], { owner });
    if (owner)
        (0,external_node_fs_.lchownSync)((0,external_node_path_.join)(repository.gitDir, 'index'), 0, 0);
    await leaveSubmodulesAlone(repository);
    agentRepository(repository, head, { borrowed, shallow });
    if (owner) {
        (0,external_node_fs_.lchownSync)(repository.workTree, owner.uid, owner.gid);
        giveAll((0,external_node_path_.join)(repository.workTree, '.git'), owner);
    }
    return head;
}
/** Gives a directory the executor just wrote (no link in it) and all below it to `owner`. */
function giveAll(path, owner) {
    (0,external_node_fs_.lchownSync)(path, owner.uid, owner.gid);
    if (!(0,external_node_fs_.lstatSync)(path).isDirectory())
        return;
    for (const name of (0,external_node_fs_.readdirSync)(path))
        giveAll((0,external_node_path_.join)(path, name), owner);
}
/**
 * A copied source: its files (already in `workTree`) committed in the private git dir as the
 * baseline; the agent's own `.git` gets a copy of those objects. Answers the baseline commit.
 */
async function snapshotCopy(repository) {
    writeGitDir(repository.gitDir, 'ref: refs/heads/baseline', []);
    const out = await privateGitAll(repository, [
        ['add', '--all'],
        ['commit', '--quiet', '--allow-empty', '--no-verify', '-m', 'workspace baseline'],
        ['rev-parse', '--verify', 'HEAD^{commit}']
    ]);
    const head = out.trim();
    if (!COMMIT.test(head))
        throw new Error(`the workspace baseline came out as ${JSON.stringify(head)}`);
    replaceFile((0,external_node_path_.join)(repository.gitDir, 'HEAD'), `${head}\n`);
    await leaveSubmodulesAlone(repository);
    agentRepository(repository, head, { objects: (0,external_node_path_.join)(repository.gitDir, 'objects') });
    return head;
}
/**
 * Marks the start's submodule entries (gitlinks) skip-worktree in the private index. git looks
 * into a submodule's directory when its entry is unchanged (`git add` runs `git status` there, in
 * a repository the agent may have made, with its filters and config): a skip-worktree entry is
 * never compared with the work tree, so the executor's git never enters one. A submodule's
 * recorded commit therefore never changes in a run's patch or published commit.
 */
async function leaveSubmodulesAlone(repository) {
    const links = await privateGitlinks(repository);
    if (links.length > 0)
        await privateGit(repository, ['update-index', '--skip-worktree', '--', ...links]);
}
/**
 * The agent's `.git` in its workspace: detached at `head`, with a copy of the private index (same
 * files, same stat data: `git status` is clean), the source's objects borrowed or the baseline's
 * copied. Written before the agent starts; never read by the executor afterwards.
 */
function agentRepository(repository, head, from) {
    const dotGit = (0,external_node_path_.join)(repository.workTree, '.git');
    (0,external_node_fs_.rmSync)(dotGit, { recursive: true, force: true });
    if (from.objects)
        (0,external_node_fs_.cpSync)(from.objects, (0,external_node_path_.join)(dotGit, 'objects'), { recursive: true });
    writeGitDir(dotGit, head, from.borrowed ?? [], from.shallow);
    const index = (0,external_node_path_.join)(repository.gitDir, 'index');
    if ((0,external_node_fs_.existsSync)(index))
        (0,external_node_fs_.copyFileSync)(index, (0,external_node_path_.join)(dotGit, 'index'));
}
/** Removes a run's private git dir (a plain recursive delete: it holds no link to follow). */
function removePrivateGitDir(gitDir) {
    (0,external_node_fs_.rmSync)(gitDir, { recursive: true, force: true });
}

;// CONCATENATED MODULE: ./src/executor/workspace/shared-checkout.ts
// The shared, read-only checkouts under copy-on-write workspaces (layers.ts mounts them): one per
// commit, object stores and owner, DATA_DIR/checkouts/<commit>-<stores>-<uid.gid>, holding the files
// with the agent's `.git` (tree/) and the private git dir with its index (git/). Made once, under a
// temporary name, by git writing every file as the run's user (private-git.ts, git.ts): the index
// git writes then already holds each file's owner and times, so nothing has to give the files away
// and make git read them all again. A `ready` file (commit, bytes) written last marks it whole; one
// found after a restart is checked with git before its first use (or before a retained workspace is
// mounted on it again) and made again when anything in it changed.







const shared_checkout_exec = (0,external_node_util_.promisify)(external_node_child_process_.execFile);
/**
 * Where a shared checkout lives: one per commit, object stores it borrows (two sources may hold
 * the same commit, and a run's sandbox shows only its own source's objects) and owner.
 */
function checkoutDir(dataDir, head, borrowed, owner) {
    const stores = (0,external_node_crypto_.createHash)('sha256').update(borrowed.join('\n')).digest('hex').slice(0, 12);
    return (0,external_node_path_.join)(dataDir, 'checkouts', `${head}-${stores}-${owner ? `${owner.uid}.${owner.gid}` : 'own'}`);
}
/** Checkouts (and setup layers) this process is making or has handed to a run not yet mounted. */
const busy = new Map();
/** Checkouts found whole by this process (after a restart, each is verified before its first use). */
const verified = new Set();
/** One build at a time per checkout. */
const building = new Map();
/** Holds `dir` against collection until the returned function is called. */
function hold(dir) {
    busy.set(dir, (busy.get(dir) ?? 0) + 1);
    return () => {
        const left = (busy.get(dir) ?? 1) - 1;
        if (left > 0)
            busy.set(dir, left);
        else
            busy.delete(dir);
    };
}
/** Forgets which checkouts were verified, as a restarted process would (for tests). */
function forgetVerified() {
    verified.clear();
}
function readReady(dir) {
    try {
        const ready = JSON.parse((0,external_node_fs_.readFileSync)((0,external_node_path_.join)(dir, 'ready'), 'utf8'));
        return typeof ready.head === 'string' && typeof ready.bytes === 'number' ? ready : undefined;
    }
    catch {
        return undefined;
    }
}
/** Whether a checkout left by an earlier process is still what it claims: nothing changed, nothing added. */
async function intact(dir, head) {
    const ready = readReady(dir);
    if (ready?.head !== head || !(0,external_node_fs_.existsSync)((0,external_node_path_.join)(dir, 'tree', '.git', 'HEAD')))
        return false;
    const repo = { gitDir: (0,external_node_path_.join)(dir, 'git'), workTree: (0,external_node_path_.join)(dir, 'tree') };
    try {
        // A refresh first (stat data a reboot changed is looked at again); it fails on a changed file.
        const out = await privateGitAll(repo, [
            ['update-index', '-q', '--refresh'],
            ['diff-index', '--quiet', '--ignore-submodules=all', head, '--'],
            ['ls-files', '--others', '--directory']
        ]);
        return out.trim() === '';
    }
    catch {
        return false;
    }
}
/**
 * Whether the shared checkout `dir` may be mounted under a workspace: whole (its `ready` file) and,
 * the first time this process meets it, found unchanged by git. A changed one is left as it is
 * (the next run that needs its commit makes it again).
 */
async function checkoutWhole(dir) {
    while (building.has(dir))
        await building.get(dir);
    const ready = readReady(dir);
    if (!ready)
        return false;
    if (verified.has(dir))
        return true;
    // One check at a time per checkout, as one build (two refreshes of one index fail on its lock).
    let whole = false;
    const checked = (async () => {
        whole = await intact(dir, ready.head);
        if (whole)
            verified.add(dir);
    })();
    building.set(dir, checked);
    try {
        await checked;
    }
    finally {
        building.delete(dir);
    }
    return whole;
}
/** The shared checkout of `head`, made when missing (or found changed); answers its directory. */
async function sharedCheckout(dataDir, head, borrowed, shallow, owner) {
    const dir = checkoutDir(dataDir, head, borrowed, owner);
    while (building.has(dir))
        await building.get(dir);
    if (verified.has(dir) && (0,external_node_fs_.existsSync)((0,external_node_path_.join)(dir, 'ready')))
        return dir;
    const made = (async () => {
        if ((0,external_node_fs_.existsSync)(dir) && (await intact(dir, head)))
            return;
        (0,external_node_fs_.rmSync)(dir, { recursive: true, force: true });
        const temporary = `${dir}.making-${process.pid}`;
        (0,external_node_fs_.rmSync)(temporary, { recursive: true, force: true });
        (0,external_node_fs_.mkdirSync)(temporary, { recursive: true, mode: 0o700 });
        const repo = { gitDir: (0,external_node_path_.join)(temporary, 'git'), workTree: (0,external_node_path_.join)(temporary, 'tree') };
        (0,external_node_fs_.mkdirSync)(repo.gitDir, { mode: 0o700 });
        await checkoutRepository(repo, head, borrowed, shallow, owner);
        const bytes = indexedBytes((0,external_node_path_.join)(repo.gitDir, 'index'), head.length === 40 ? 20 : 32);
        (0,external_node_fs_.writeFileSync)((0,external_node_path_.join)(temporary, 'ready'), JSON.stringify({ head, bytes }));
        (0,external_node_fs_.renameSync)(temporary, dir);
        measureLater(dir, head);
    })();
    building.set(dir, made);
    try {
        await made;
        verified.add(dir);
    }
    finally {
        building.delete(dir);
    }
    return dir;
}
/**
 * The index records a file's size modulo 4 GiB (a commit may hold a larger one): `du` counts the
 * checkout's bytes exactly once the run is on its way (MEASURE_AFTER_MS later), and its count
 * replaces the index's in the `ready` file (renamed over it whole), unless the checkout was removed
 * or made again meanwhile.
 */
function measureLater(dir, head) {
    const measure = () => shared_checkout_exec('du', ['-s', '--apparent-size', '--block-size=1', dir])
        .then(({ stdout }) => {
        const bytes = Number(stdout.split('\t')[0]);
        if (!Number.isSafeInteger(bytes) || readReady(dir)?.head !== head)
            return;
        (0,external_node_fs_.writeFileSync)((0,external_node_path_.join)(dir, 'ready.measured'), JSON.stringify({ head, bytes }));
        (0,external_node_fs_.renameSync)((0,external_node_path_.join)(dir, 'ready.measured'), (0,external_node_path_.join)(dir, 'ready'));
    })
        .catch(() => undefined);
    // Not while the run's sandbox and agent start (a walk of every file, on a machine of few cores).
    setTimeout(() => void measure(), MEASURE_AFTER_MS).unref();
}
/** How long after a checkout is made its bytes are counted. */
const MEASURE_AFTER_MS = 10_000;
/**
 * What a checkout weighs until `du` has counted it (measureLater), for workspaces.cache_size: the
 * sizes of its files as the index records them (read from the index git just wrote, instead of
 * walking the tree again), and the index itself twice (the private one and the agent's copy).
 * Index versions 2 and 3 (what read-tree writes); for any other, the index's size alone.
 */
function indexedBytes(indexFile, hashBytes) {
    const index = (0,external_node_fs_.readFileSync)(indexFile);
    let bytes = 2 * (0,external_node_fs_.statSync)(indexFile).size;
    const version = index.length >= 12 ? index.readUInt32BE(4) : 0;
    if (index.toString('latin1', 0, 4) !== 'DIRC' || (version !== 2 && version !== 3))
        return bytes;
    let at = 12;
    for (let i = index.readUInt32BE(8); i > 0 && at + 42 + hashBytes < index.length; i--) {
        bytes += index.readUInt32BE(at + 36);
        const extended = (index.readUInt16BE(at + 40 + hashBytes) & 0x4000) !== 0;
        const nameEnd = index.indexOf(0, at + 42 + hashBytes + (extended ? 2 : 0));
        if (nameEnd < 0)
            break;
        // Entries are padded with 1 to 8 NULs to a multiple of 8 bytes.
        at += (nameEnd - at + 8) & ~7;
    }
    return bytes;
}

;// CONCATENATED MODULE: ./src/executor/workspace/setup-layers.ts
// The setup cache (`setup_cache: true`): an environment's setup commands (`npm ci`, say) cost the
// same for every run of one commit, so the first run of a commit keeps what they wrote as a second
// shared, read-only layer, DATA_DIR/setups/<key>/upper, stacked between the shared checkout and each
// later run's own upper layer; those runs skip the commands. The key is a hash of the checkout (the
// commit, the object stores, the run user), the environment's source (its directory), the setup
// list, the names and values of the environment's `env` variables and its sandbox settings: a
// change to any of them is another key.
//
// What is kept is only what the setup commands wrote into the workspace, in the sandbox, before the
// agent's first process: the run's upper layer is moved out once the last command succeeded (the
// sandbox's pid namespace ended every process the commands started, and the workspace is unmounted
// first), and the run goes on with a fresh empty upper layer of its own over it. An agent never
// writes to it; a failed or interrupted setup is never kept. One build per key at a time (the
// others wait for it); a layer is made under a temporary name with a `ready` file written last and
// renamed whole, and after a restart its listing is checked against the one recorded before use.







const setup_layers_exec = (0,external_node_util_.promisify)(external_node_child_process_.execFile);
function setupsDir(dataDir) {
    return (0,external_node_path_.join)(dataDir, 'setups');
}
/**
 * The key of the setup's result for one shared checkout (its directory names commit, stores, owner).
 * The environment's source is part of it: environments on two directories of one repository share
 * a checkout, but their setup runs in their own directory and writes there.
 */
function setupKey(checkout, environment) {
    const { network, read, write, user } = environment.sandbox;
    const values = environment.env.map(name => [name, process.env[name] ?? null]);
    const { source, setup } = environment;
    return (0,external_node_crypto_.createHash)('sha256')
        .update(JSON.stringify([(0,external_node_path_.basename)(checkout), source, setup, values, { network, read, write, user }]))
        .digest('hex')
        .slice(0, 32);
}
/** Builds under way in this process, by layer directory. */
const setup_layers_building = new Map();
/** Layers found whole by this process (after a restart, each is checked before its first use). */
const setup_layers_verified = new Set();
/** Forgets which layers were checked, as a restarted process would (for tests). */
function forgetVerifiedSetups() {
    setup_layers_verified.clear();
}
function isBuilding(dir) {
    return setup_layers_building.has(dir);
}
function readSetupReady(dir) {
    try {
        const ready = JSON.parse((0,external_node_fs_.readFileSync)((0,external_node_path_.join)(dir, 'ready'), 'utf8'));
        return typeof ready.checkout === 'string' && typeof ready.bytes === 'number' ? ready : undefined;
    }
    catch {
        return undefined;
    }
}
/**
 * Who reads a layer a run's setup commands wrote: its owner (the run's user) in the reader sandbox
 * (sandbox/run-files.ts), never root.
 */
function layerReader(upper) {
    const { uid, gid } = (0,external_node_fs_.statSync)(upper);
    return process.getuid?.() === 0 && uid !== 0 ? { user: { uid, gid }, confined: true } : { confined: true };
}
/**
 * Every entry of a layer with its type, size, time, mode and owner, hashed: what a change alters;
 * listed by `find` as the layer's owner (run-files.ts), and its bytes with it.
 */
async function listing(upper) {
    const result = await asRunUser(layerReader(upper), {
        read: [upper],
        program: 'find',
        args: [upper, '-printf', '%P\\t%y\\t%s\\t%T@\\t%m\\t%U\\t%G\\n'],
        maxStdout: 1024 ** 3
    });
    if (result.code !== 0)
        throw new Error(`the setup layer cannot be listed: ${readerReason(result)}`);
    const lines = result.stdout.toString('utf8').split('\n').filter(Boolean).sort();
    const bytes = lines.reduce((sum, line) => sum + (Number(line.split('\t')[2]) || 0), 0);
    return { hash: (0,external_node_crypto_.createHash)('sha256').update(lines.join('\n')).digest('hex'), bytes };
}
/** Whether a kept layer is still as it was made (checked once per process). */
async function setup_layers_intact(dir, key, checkout) {
    if (setup_layers_verified.has(dir))
        return true;
    const ready = readSetupReady(dir);
    if (ready?.key !== key || ready.checkout !== checkout || !(0,external_node_fs_.existsSync)((0,external_node_path_.join)(dir, 'upper')))
        return false;
    const same = await listing((0,external_node_path_.join)(dir, 'upper'))
        .then(found => found.hash === ready.listing)
        .catch(() => false);
    if (same)
        setup_layers_verified.add(dir);
    return same;
}
/**
 * Whether the kept layer `dir` is still as it was made over `checkout`, for a retained workspace
 * mounted again after a restart: the same check a new run's first use of it makes.
 */
function setupLayerIntact(dir, checkout) {
    return setup_layers_intact(dir, (0,external_node_path_.basename)(dir), checkout);
}
/**
 * The setup layer of `key` over `checkout`: the kept one when there is one (waiting for a build
 * of the same key under way), else a build this run makes (the caller mounts without it).
 */
async function claimSetupLayer(dataDir, key, checkout) {
    const dir = (0,external_node_path_.join)(setupsDir(dataDir), key);
    while (setup_layers_building.has(dir))
        await setup_layers_building.get(dir);
    if ((0,external_node_fs_.existsSync)(dir) && (await setup_layers_intact(dir, key, checkout))) {
        const now = new Date();
        (0,external_node_fs_.utimesSync)((0,external_node_path_.join)(dir, 'ready'), now, now);
        return { cached: dir };
    }
    (0,external_node_fs_.rmSync)(dir, { recursive: true, force: true });
    let release;
    setup_layers_building.set(dir, new Promise(resolve => {
        release = () => {
            setup_layers_building.delete(dir);
            resolve();
        };
    }));
    return { build: dir, release };
}
/**
 * Moves a run's upper layer (what the setup commands wrote) to be the kept layer `dir` and mounts
 * the run's workspace again over it with a fresh upper layer; answers false (nothing changed) when
 * the workspace cannot be unmounted.
 */
async function keepSetupLayer(dataDir, runId, key, dir, checkout) {
    const workspace = (0,external_node_path_.join)(dataDir, 'workspaces', runId);
    const layers = (0,external_node_path_.join)(dataDir, 'layers', runId);
    const upper = (0,external_node_path_.join)(layers, 'upper');
    const work = (0,external_node_path_.join)(layers, 'work');
    // Never lazily: a process still holding the view must not see its layer become a shared one.
    await setup_layers_exec('umount', [workspace]).catch(() => undefined);
    if (mountPoints(workspace).has(workspace))
        return false;
    const { uid, gid } = (0,external_node_fs_.statSync)(upper);
    const temporary = `${dir}.making-${process.pid}`;
    (0,external_node_fs_.rmSync)(temporary, { recursive: true, force: true });
    (0,external_node_fs_.mkdirSync)(temporary, { recursive: true, mode: 0o700 });
    (0,external_node_fs_.renameSync)(upper, (0,external_node_path_.join)(temporary, 'upper'));
    const found = await listing((0,external_node_path_.join)(temporary, 'upper'));
    const ready = { key, checkout, bytes: found.bytes, listing: found.hash };
    (0,external_node_fs_.writeFileSync)((0,external_node_path_.join)(temporary, 'ready'), JSON.stringify(ready));
    (0,external_node_fs_.renameSync)(temporary, dir);
    setup_layers_verified.add(dir);
    (0,external_node_fs_.mkdirSync)(upper, { mode: 0o700 });
    (0,external_node_fs_.chownSync)(upper, uid, gid);
    (0,external_node_fs_.chmodSync)(upper, 0o755);
    (0,external_node_fs_.rmSync)(work, { recursive: true, force: true });
    (0,external_node_fs_.mkdirSync)(work, { mode: 0o700 });
    (0,external_node_fs_.writeFileSync)((0,external_node_path_.join)(layers, 'setup'), `${dir}\n`);
    await setup_layers_exec('mount', [
        '-t',
        'overlay',
        'overlay',
        '-o',
        options(lowers(checkout, dir), upper, work),
        workspace
    ]);
    return true;
}
/** The lower layers of a workspace: the setup layer (when there is one) over the checkout's tree. */
function lowers(checkout, setup) {
    return setup ? `${(0,external_node_path_.join)(setup, 'upper')}:${(0,external_node_path_.join)(checkout, 'tree')}` : (0,external_node_path_.join)(checkout, 'tree');
}
/** Forgets a removed layer. */
function forgetSetup(dir) {
    setup_layers_verified.delete(dir);
}

;// CONCATENATED MODULE: ./src/executor/workspace/layers.ts
// Copy-on-write workspaces. Checking a large repository out for every run costs seconds and the
// repository's whole size on disk per run; instead each source commit is checked out once per node
// (shared-checkout.ts: the files with the agent's `.git`, and the private git dir with its index),
// never written again, and each run's workspace is an overlayfs mount of it (the kernel's, mounted
// by the executor, which needs root) with an upper layer of the run's own,
// DATA_DIR/layers/<run id>/upper: whatever the run writes, deletes or renames lands there and never
// in the shared checkout nor in another run. The files keep the checkout's inode numbers and times,
// so the index copied with them stays valid and git compares by stat as in a plain checkout.
//
// Where overlayfs cannot be mounted (the executor is not root, the kernel lacks it, a data dir path
// overlayfs cannot name, AGENT_EXECUTOR_WORKSPACES=checkout) every workspace is a full checkout, as
// before; layerMode() (mounts.ts) says which once, for the start-up log. This file mounts a run's
// layers over its shared checkout (and setup layer), mounts them again after a restart, and removes
// unused shared checkouts past `workspaces.cache_size`; mounts.ts probes, lists and unmounts.











const layers_exec = (0,external_node_util_.promisify)(external_node_child_process_.execFile);
function layersDir(dataDir, runId) {
    return (0,external_node_path_.join)(dataDir, 'layers', runId);
}
/**
 * Makes a run's workspace at `workTree` as a copy-on-write view of the shared checkout of `head`,
 * and its private git dir at `gitDir` from the checkout's (the same index: no file is read again).
 */
async function mountWorkspace(dataDir, runId, repository, head, borrowed, shallow, owner, 
/** The run may use or make a kept setup layer (setup-layers.ts): the key of one, from the checkout. */
setupKeyOf) {
    if (!/^(?:[0-9a-f]{40}|[0-9a-f]{64})$/.test(head))
        throw new Error(`the source's start ${JSON.stringify(head)} is not a commit id`);
    const released = [hold(checkoutDir(dataDir, head, borrowed, owner))];
    let claimed;
    try {
        const dir = await sharedCheckout(dataDir, head, borrowed, shallow, owner);
        const now = new Date();
        (0,external_node_fs_.utimesSync)((0,external_node_path_.join)(dir, 'ready'), now, now);
        const setupKey = setupKeyOf?.(dir);
        if (setupKey) {
            // Never collected while it is claimed and mounted (as the checkout is, through `busy`).
            released.push(hold((0,external_node_path_.join)(setupsDir(dataDir), setupKey)));
            claimed = await claimSetupLayer(dataDir, setupKey, dir);
        }
        const cachedSetup = claimed && 'cached' in claimed ? claimed.cached : undefined;
        const layers = layersDir(dataDir, runId);
        await unmountWorkspace(dataDir, runId);
        (0,external_node_fs_.rmSync)(layers, { recursive: true, force: true });
        const upper = (0,external_node_path_.join)(layers, 'upper');
        const work = (0,external_node_path_.join)(layers, 'work');
        (0,external_node_fs_.mkdirSync)(upper, { recursive: true, mode: 0o700 });
        (0,external_node_fs_.mkdirSync)(work, { mode: 0o700 });
        // The root of the view is the upper layer's: the run's user owns it as it owned a checkout.
        if (owner)
            (0,external_node_fs_.chownSync)(upper, owner.uid, owner.gid);
        (0,external_node_fs_.chmodSync)(upper, 0o755);
        (0,external_node_fs_.writeFileSync)((0,external_node_path_.join)(layers, 'checkout'), `${dir}\n`);
        if (cachedSetup)
            (0,external_node_fs_.writeFileSync)((0,external_node_path_.join)(layers, 'setup'), `${cachedSetup}\n`);
        (0,external_node_fs_.cpSync)((0,external_node_path_.join)(dir, 'git'), repository.gitDir, { recursive: true });
        (0,external_node_fs_.mkdirSync)(repository.workTree, { recursive: true });
        await layers_exec('mount', [
            '-t',
            'overlay',
            'overlay',
            '-o',
            options(lowers(dir, cachedSetup), upper, work),
            repository.workTree
        ]);
        if (!claimed)
            return { upper };
        if ('cached' in claimed)
            return { upper, setup: { cached: true, finish: () => Promise.resolve(false) } };
        return { upper, setup: buildingLayer(dataDir, runId, setupKey, claimed, dir) };
    }
    catch (error) {
        if (claimed && 'build' in claimed)
            claimed.release();
        throw error;
    }
    finally {
        for (const release of released)
            release();
    }
}
/** The setup layer a run builds: kept (or not) once its setup commands ended, then released. */
function buildingLayer(dataDir, runId, key, claimed, checkout) {
    let finished = false;
    return {
        cached: false,
        async finish(succeeded) {
            if (finished)
                return false;
            finished = true;
            try {
                return succeeded && (await keepSetupLayer(dataDir, runId, key, claimed.build, checkout));
            }
            finally {
                claimed.release();
            }
        }
    };
}
/**
 * Mounts a retained workspace again over its layer (after a restart), when its checkout is whole
 * and its setup layer (if any) still as it was made; a changed setup layer is never mounted under
 * it: why is written to the run's layers (`refused`), and the workspace stays unmounted for good.
 */
async function remount(dataDir, runId) {
    const layers = layersDir(dataDir, runId);
    if ((0,external_node_fs_.existsSync)((0,external_node_path_.join)(layers, REFUSED)))
        return;
    try {
        const dir = (0,external_node_fs_.readFileSync)((0,external_node_path_.join)(layers, 'checkout'), 'utf8').trim();
        if (!readReady(dir))
            return;
        // Checked as a new run's first use checks it: a changed checkout is never mounted under it.
        if (!(await checkoutWhole(dir))) {
            (0,external_node_fs_.writeFileSync)((0,external_node_path_.join)(layers, REFUSED), `the shared checkout under it (${(0,external_node_path_.relative)(dataDir, dir)}) changed since the workspace was made over it\n`);
            return;
        }
        const setup = (0,external_node_fs_.existsSync)((0,external_node_path_.join)(layers, 'setup'))
            ? (0,external_node_fs_.readFileSync)((0,external_node_path_.join)(layers, 'setup'), 'utf8').trim()
            : undefined;
        if (setup && !readSetupReady(setup))
            return;
        if (setup && !(await setupLayerIntact(setup, dir))) {
            (0,external_node_fs_.writeFileSync)((0,external_node_path_.join)(layers, REFUSED), `the setup layer under it (${(0,external_node_path_.relative)(dataDir, setup)}) changed since the workspace was made over it\n`);
            return;
        }
        const options_ = options(lowers(dir, setup), (0,external_node_path_.join)(layers, 'upper'), (0,external_node_path_.join)(layers, 'work'));
        await layers_exec('mount', ['-t', 'overlay', 'overlay', '-o', options_, (0,external_node_path_.join)(dataDir, 'workspaces', runId)]);
    }
    catch {
        // left unmounted: the sweep removes it at the end of its retention
    }
}
/**
 * The layers of a run's copy-on-write workspace as they are now (keeping a setup layer moves the
 * run's first writes under it), or undefined when it is not one or not mounted. Only root's own
 * records are read here, never the layers.
 */
function workspaceLayers(dataDir, runId) {
    const layers = layersDir(dataDir, runId);
    const merged = (0,external_node_path_.join)(dataDir, 'workspaces', runId);
    if (!(0,external_node_fs_.existsSync)((0,external_node_path_.join)(layers, 'checkout')) || !mountPoints(merged).has(merged))
        return undefined;
    const checkout = (0,external_node_fs_.readFileSync)((0,external_node_path_.join)(layers, 'checkout'), 'utf8').trim();
    const setup = (0,external_node_fs_.existsSync)((0,external_node_path_.join)(layers, 'setup')) ? (0,external_node_fs_.readFileSync)((0,external_node_path_.join)(layers, 'setup'), 'utf8').trim() : '';
    return {
        upper: (0,external_node_path_.join)(layers, 'upper'),
        ...(setup ? { setup: (0,external_node_path_.join)(setup, 'upper') } : {}),
        tree: (0,external_node_path_.join)(checkout, 'tree'),
        merged
    };
}
/** Why a retained workspace was not mounted again (remount), in its layers. */
const REFUSED = 'refused';
/**
 * Why a copy-on-write workspace that should be there is not (its mount is missing: a changed setup
 * layer refused, its checkout gone), or undefined when it is mounted or is not copy-on-write.
 */
function unmountedWorkspace(dataDir, runId) {
    const layers = layersDir(dataDir, runId);
    const workspace = (0,external_node_path_.join)(dataDir, 'workspaces', runId);
    if (!(0,external_node_fs_.existsSync)((0,external_node_path_.join)(layers, 'upper')) || mountPoints(workspace).has(workspace))
        return undefined;
    try {
        return `it could not be mounted again: ${(0,external_node_fs_.readFileSync)((0,external_node_path_.join)(layers, REFUSED), 'utf8').trim()}`;
    }
    catch {
        return 'it is not mounted (the shared checkout under it is gone or could not be mounted again)';
    }
}
/** Removes a run's layers (after its workspace is unmounted). */
function removeLayers(dataDir, runId) {
    removeTree(layersDir(dataDir, runId));
}
/**
 * After a crash or at any sweep: unmounts workspaces whose layers are gone, removes layers whose
 * workspace is gone, mounts again retained workspaces a stop or a reboot unmounted, and removes
 * unused shared checkouts and kept setup layers, least recently used first, while all of them
 * together weigh more than `cacheBytes` or `enough` (free space, see freeSharedLayers) says no. A
 * checkout or setup layer is used while a run's layers name it; a setup layer goes with its checkout.
 */
async function sweepLayers(dataDir, cacheBytes, active, enough = () => true) {
    const workspaces = (0,external_node_path_.join)(dataDir, 'workspaces');
    for (const mount of mountPoints(workspaces)) {
        const runId = mount.slice(workspaces.length + 1);
        if (runId.includes('/') || active.has(runId))
            continue;
        if (!(0,external_node_fs_.existsSync)(layersDir(dataDir, runId)))
            await unmountWorkspace(dataDir, runId);
    }
    const layers = (0,external_node_path_.join)(dataDir, 'layers');
    const used = new Set(busy.keys());
    for (const runId of (0,external_node_fs_.existsSync)(layers) ? (0,external_node_fs_.readdirSync)(layers) : []) {
        if (runId.startsWith('.'))
            continue;
        if (!active.has(runId) && !(0,external_node_fs_.existsSync)((0,external_node_path_.join)(workspaces, runId))) {
            if (await unmountWorkspace(dataDir, runId))
                removeLayers(dataDir, runId);
            continue;
        }
        const workspace = (0,external_node_path_.join)(workspaces, runId);
        if (!active.has(runId) &&
            (0,external_node_fs_.existsSync)((0,external_node_path_.join)(layers, runId, 'upper')) &&
            !mountPoints(workspace).has(workspace))
            await remount(dataDir, runId);
        for (const name of ['checkout', 'setup']) {
            try {
                used.add((0,external_node_fs_.readFileSync)((0,external_node_path_.join)(layers, runId, name), 'utf8').trim());
            }
            catch {
                // layers being made (their checkout is in `busy`), or without a setup layer
            }
        }
    }
    const checkouts = (0,external_node_path_.join)(dataDir, 'checkouts');
    const setups = setupsDir(dataDir);
    const all = [];
    const byCheckout = new Map();
    for (const name of (0,external_node_fs_.existsSync)(checkouts) ? (0,external_node_fs_.readdirSync)(checkouts) : []) {
        const dir = (0,external_node_path_.join)(checkouts, name);
        if (name.includes('.making-')) {
            // Another live process's checkout in the making is its own, never removed here.
            if (makingLeftOver(dir, made => building.has(made)))
                (0,external_node_fs_.rmSync)(dir, { recursive: true, force: true });
            continue;
        }
        const ready = readReady(dir);
        if (!ready) {
            if (!building.has(dir) && !used.has(dir))
                (0,external_node_fs_.rmSync)(dir, { recursive: true, force: true });
            continue;
        }
        const entry = { dir, bytes: ready.bytes, used: (0,external_node_fs_.statSync)((0,external_node_path_.join)(dir, 'ready')).mtimeMs, setups: [] };
        all.push(entry);
        byCheckout.set(dir, entry);
    }
    for (const name of (0,external_node_fs_.existsSync)(setups) ? (0,external_node_fs_.readdirSync)(setups) : []) {
        const dir = (0,external_node_path_.join)(setups, name);
        const made = name.includes('.making-') ? dir.slice(0, dir.indexOf('.making-')) : dir;
        if (isBuilding(made) || (made !== dir && !makingLeftOver(dir, isBuilding)))
            continue;
        const ready = made === dir ? readSetupReady(dir) : undefined;
        const checkout = ready && byCheckout.get(ready.checkout);
        // Half made, or over a checkout that is gone: never used again.
        if (!ready || !checkout) {
            if (used.has(dir))
                continue;
            (0,external_node_fs_.rmSync)(dir, { recursive: true, force: true });
            forgetSetup(dir);
            continue;
        }
        checkout.setups.push(dir);
        all.push({ dir, bytes: ready.bytes, used: (0,external_node_fs_.statSync)((0,external_node_path_.join)(dir, 'ready')).mtimeMs, setups: [] });
    }
    let total = all.reduce((sum, entry) => sum + entry.bytes, 0);
    const freed = [];
    const gone = new Set();
    const remove = (entry) => {
        (0,external_node_fs_.rmSync)(entry.dir, { recursive: true, force: true });
        verified.delete(entry.dir);
        forgetSetup(entry.dir);
        gone.add(entry.dir);
        total -= entry.bytes;
        freed.push({ name: (0,external_node_path_.relative)(dataDir, entry.dir), bytes: entry.bytes });
    };
    for (const entry of all.sort((a, b) => a.used - b.used)) {
        if (total <= cacheBytes && enough())
            break;
        if (gone.has(entry.dir) || used.has(entry.dir) || building.has(entry.dir))
            continue;
        // A checkout's setup layers go first (no run uses them: a run using one names the checkout too).
        for (const setup of entry.setups)
            remove(all.find(other => other.dir === setup));
        remove(entry);
    }
    return freed;
}
/**
 * Removes unused shared checkouts and setup layers, least recently used first, until `enough`
 * (the data dir's file system has workspaces.min_free again) or none is left unused.
 */
function freeSharedLayers(dataDir, active, enough) {
    return sweepLayers(dataDir, Number.POSITIVE_INFINITY, active, enough);
}

;// CONCATENATED MODULE: ./src/executor/workspace/workspace.ts
// Each run gets its own workspace under DATA_DIR/workspaces/<run id>: the files of the environment's
// source (a git repository: a local path, or a URL cloned once into DATA_DIR/sources/ and fetched
// before each run; or a plain copy otherwise), with a repository of its own for the agent. What the
// executor knows of the workspace lives apart, in the run's private git dir (private-git.ts): the
// start commit, an index, objects borrowed read-only from the source (alternates), a clean config.
// The diff, the patch and publishing read the workspace's files through it and never the agent's
// `.git`. A run never sees another run's objects nor the credentials a checkout keeps in
// .git/config, and the source is never written to. Where the executor may mount overlayfs, a git
// source's workspace is a copy-on-write view of one shared checkout of its commit (layers.ts).
















const MAX_DIFF_BYTES = 1024 * 1024;
/** The `diff` event names at most this many files; the rest are counted (`more_files`). */
const MAX_DIFF_FILES = 1000;
/** Every diff of a workspace: no external diff, no textconv, submodules never looked into. */
const NO_PROGRAMS = ['--no-ext-diff', '--no-textconv', '--ignore-submodules=all'];
/** Whether a directory is inside a git repository with a commit, cached: sources do not move. */
const topLevels = new Map();
function gitTopLevel(dir) {
    let top = topLevels.get(dir);
    if (!top) {
        top = sourceGit(['rev-parse', '--show-toplevel', '--verify', '--quiet', 'HEAD'], dir)
            .then(out => out.split('\n')[0].trim() || undefined)
            .catch(() => undefined);
        topLevels.set(dir, top);
    }
    return top;
}
/** A remote source is cloned once (bare) and fetched before each run. */
async function remoteCache(source, dataDir) {
    const cache = (0,external_node_path_.join)(dataDir, 'sources', (0,external_node_crypto_.createHash)('sha256').update(source).digest('hex').slice(0, 16) + '.git');
    if (!(0,external_node_fs_.existsSync)(cache)) {
        (0,external_node_fs_.mkdirSync)((0,external_node_path_.join)(dataDir, 'sources'), { recursive: true });
        await sourceGit(['clone', '--bare', '--quiet', source, cache]);
    }
    else {
        await sourceGit(['fetch', '--quiet', '--prune', 'origin', '+refs/heads/*:refs/heads/*'], cache);
    }
    return cache;
}
/** The object stores a repository reads: its own and those it borrows itself. */
function objectStores(gitDir) {
    const own = (0,external_node_path_.join)(gitDir, 'objects');
    const stores = [own];
    const alternates = (0,external_node_path_.join)(own, 'info', 'alternates');
    if ((0,external_node_fs_.existsSync)(alternates)) {
        for (const line of (0,external_node_fs_.readFileSync)(alternates, 'utf8').split('\n')) {
            const path = line.trim();
            if (path && !path.startsWith('#'))
                stores.push((0,external_node_path_.isAbsolute)(path) ? path : (0,external_node_path_.resolve)(own, path));
        }
    }
    return stores.filter(path => (0,external_node_fs_.existsSync)(path));
}
/**
 * The commit a published environment's runs start at, and its branch: `publish.base` (a branch of
 * the source, or of its `origin`), else the branch the source's HEAD is on (none when detached).
 */
async function startOf(repository, base) {
    if (base === undefined) {
        const branch = await sourceGit(['symbolic-ref', '--quiet', '--short', 'HEAD'], repository)
            .then(out => out.trim() || undefined)
            .catch(() => undefined);
        return { commit: (await sourceGit(['rev-parse', '--verify', 'HEAD^{commit}'], repository)).trim(), branch };
    }
    for (const ref of [`refs/heads/${base}`, `refs/remotes/origin/${base}`]) {
        const commit = await sourceGit(['rev-parse', '--verify', '--quiet', `${ref}^{commit}`], repository)
            .then(out => out.trim())
            .catch(() => '');
        if (commit)
            return { commit, branch: base };
    }
    throw new Error(`publish.base ${JSON.stringify(base)}: the source ${repository} has no such branch`);
}
async function createWorkspace(environment, dataDir, runId, quotaBytes = Number.POSITIVE_INFINITY, 
/** The run's host user, when the executor is root: a shared checkout's files are theirs. */
owner, 
/** Whether the run may use or make a kept setup layer (the environment's setup_cache). */
cacheSetup = false) {
    const root = (0,external_node_path_.join)(dataDir, 'workspaces', runId);
    markWorkspaces((0,external_node_path_.join)(dataDir, 'workspaces'));
    let repository;
    let sub = '';
    if (isRemoteSource(environment.source)) {
        repository = await remoteCache(environment.source, dataDir);
    }
    else {
        if (!(0,external_node_fs_.existsSync)(environment.source))
            throw new Error(`source ${environment.source} does not exist`);
        repository = await gitTopLevel(environment.source);
        if (repository)
            sub = (0,external_node_path_.relative)(repository, environment.source);
    }
    let kind;
    let counted = root;
    let owned = [root];
    let borrowed = [];
    let start;
    let base;
    let setupLayer;
    // The private git dir is made first, so a crash leaves nothing the sweep would not see.
    const repo = { gitDir: privateGitDir(dataDir, runId), workTree: root };
    removePrivateGitDir(repo.gitDir);
    (0,external_node_fs_.mkdirSync)(repo.gitDir, { recursive: true, mode: 0o700 });
    if (repository) {
        if (environment.publish)
            start = await startOf(repository, environment.publish.base);
        const head = start?.commit ?? (await sourceGit(['rev-parse', '--verify', 'HEAD^{commit}'], repository)).trim();
        const gitDir = (0,external_node_path_.resolve)(repository, (await sourceGit(['rev-parse', '--git-common-dir'], repository)).trim());
        borrowed = objectStores(gitDir);
        if (layerMode(dataDir).kind === 'overlay') {
            const keyOf = cacheSetup ? (checkout) => setupKey(checkout, environment) : undefined;
            const mounted = await mountWorkspace(dataDir, runId, repo, head, borrowed, (0,external_node_path_.join)(gitDir, 'shallow'), owner, keyOf);
            counted = mounted.upper;
            setupLayer = mounted.setup;
            owned = [];
            base = head;
        }
        else {
            base = await checkoutRepository(repo, head, borrowed, (0,external_node_path_.join)(gitDir, 'shallow'));
        }
        kind = 'repository';
    }
    else {
        copyTree(environment.source, root, dataDir, quotaBytes);
        base = await snapshotCopy(repo);
        kind = 'copy';
    }
    // git on the work tree runs as the run's user from now on (run-files.ts): the private git dir and
    // a workspace root made here, which nothing of the run has touched yet, become that user's.
    if (owner) {
        ownAll(repo.gitDir, owner);
        await giveTo(owner, owned);
    }
    const identity = { user: owner, confined: environment.sandbox?.enabled !== false };
    const made = {
        sub,
        kind,
        borrowed,
        repository,
        baseBranch: start?.branch,
        base,
        counted,
        owned,
        identity
    };
    try {
        // Kept beside the private git dir, so a later turn of the run (a follow-up) reopens the workspace.
        (0,external_node_fs_.writeFileSync)(madeFile(dataDir, runId), JSON.stringify(made), { mode: 0o600 });
    }
    catch (error) {
        await setupLayer?.finish(false);
        throw error;
    }
    const layersOf = counted === root ? undefined : () => workspaceLayers(dataDir, runId);
    return { ...workspaceOf(root, repo, made, layersOf), setupLayer };
}
/**
 * Gives a directory root just made (nothing of a run has been in it) and everything below it to
 * `owner`, without following a link.
 */
function ownAll(path, owner) {
    (0,external_node_fs_.lchownSync)(path, owner.uid, owner.gid);
    if (!(0,external_node_fs_.lstatSync)(path).isDirectory())
        return;
    for (const name of (0,external_node_fs_.readdirSync)(path))
        ownAll((0,external_node_path_.join)(path, name), owner);
}
const MADE_FILE = 'agent-run-workspace.json';
/**
 * Where a workspace's record is kept: beside its private git dir, in a folder only root writes
 * (the private git dir itself is the run user's since git runs as that user).
 */
function madeFile(dataDir, runId) {
    return (0,external_node_path_.join)(dataDir, 'gitdirs', `${runId}.json`);
}
function readMade(dataDir, runId) {
    // Records of earlier versions are inside the private git dir, which root alone wrote then.
    for (const file of [madeFile(dataDir, runId), (0,external_node_path_.join)(privateGitDir(dataDir, runId), MADE_FILE)])
        if ((0,external_node_fs_.existsSync)(file))
            return JSON.parse((0,external_node_fs_.readFileSync)(file, 'utf8'));
    return undefined;
}
/**
 * Marks a workspace as one no later turn may continue, saying why (a start from an earlier run
 * that failed half way: a follow-up must not run over a partial copy).
 */
function markUnusable(dataDir, runId, why) {
    const made = readMade(dataDir, runId);
    if (made)
        (0,external_node_fs_.writeFileSync)(madeFile(dataDir, runId), JSON.stringify({ ...made, unusable: why }), { mode: 0o600 });
}
/**
 * The workspace an earlier turn of the run made, as it was left (a follow-up continues in it);
 * undefined when it is gone (removed after workspaces.continue_for) or was never made. Throws,
 * saying why, for a copy-on-write workspace that is not mounted: never an empty directory.
 */
function reopenWorkspace(dataDir, runId, 
/** Who reads it when its record (of an earlier version) does not say: the environment's run user. */
identity) {
    const root = (0,external_node_path_.join)(dataDir, 'workspaces', runId);
    const repo = { gitDir: privateGitDir(dataDir, runId), workTree: root };
    const made = (0,external_node_fs_.existsSync)(root) ? readMade(dataDir, runId) : undefined;
    if (!made)
        return undefined;
    if (made.unusable)
        throw new Error(`the workspace of run ${runId} cannot be continued: ${made.unusable}`);
    const unmounted = unmountedWorkspace(dataDir, runId);
    if (unmounted)
        throw new Error(`the workspace of run ${runId} cannot be continued: ${unmounted}`);
    return workspaceOf(root, repo, { ...made, identity: made.identity ?? identity }, () => workspaceLayers(dataDir, runId));
}
function workspaceOf(root, repo, made, 
/** The layers of a copy-on-write workspace as they are when asked. */
layersOf) {
    const { sub, kind, borrowed, repository, baseBranch, base, counted, owned, identity } = made;
    const tree = { repository: repo, borrowed, identity };
    // The two trees a diff from the layers wrote (the start and the end of the paths it looked at);
    // unset after a walk, whose changes are the private index against the start.
    let ends;
    // What git compares: the two trees, or the private index (as `add` left it) and the start.
    const compared = () => (ends ? [ends.from, ends.to] : ['--cached', base]);
    const changes = (...options) => [
        'diff',
        '--no-color',
        '--no-renames',
        ...NO_PROGRAMS,
        ...options,
        ...compared()
    ];
    return {
        path: sub ? (0,external_node_path_.join)(root, sub) : root,
        root,
        kind,
        counted,
        owned,
        borrowed,
        repository,
        baseBranch,
        base,
        git: repo,
        identity,
        async diff(walk = 'layers') {
            ends = undefined;
            // A copy-on-write workspace says what the run may have changed (layer-changes.ts); else, or
            // when its layers say too much, the whole tree is walked.
            const layers = walk === 'layers' ? layersOf?.() : undefined;
            let found = layers ? await layerPaths(identity, layers) : undefined;
            // git refuses some candidates the layers name (a path below a directory the run swapped for a
            // link): the whole tree is then walked, as for a full checkout.
            const listed = found
                ? await runTreeGit(tree, [changedOnly(found.nested, base)], {
                    pipeline: true,
                    stdin: Buffer.from(found.candidates.map(path => `:(literal)${path}\0`).join(''))
                }).catch(() => undefined)
                : undefined;
            if (!listed)
                found = undefined;
            const nested = found ? found.nested : await nestedRepositories(root, identity);
            let names;
            // The head of the diff the end's script printed after the names (from the layers only).
            let head;
            if (listed) {
                // The first line names the two trees, the name-status lines follow up to a NUL (no line
                // of git's has one), then the head of the diff.
                const out = listed.stdout;
                const newline = out.indexOf(0x0a);
                const end = out.indexOf(0, newline);
                const [from, to] = out.toString('utf8', 0, Math.max(newline, 0)).split(' ');
                if (!from || !to || !TREE.test(from) || !TREE.test(to))
                    throw new Error('git write-tree failed: no tree was named');
                ends = { from, to };
                // Past what runTreeGit keeps (64 MB of names) the diff is printed on its own below.
                names = out.toString('utf8', newline + 1, end < 0 ? undefined : end);
                head = end < 0 ? undefined : out.subarray(end + 1);
            }
            else {
                names = (await runTreeGit(tree, [
                    // Nested repositories the run made stay out of the index: git never probes them (nested.ts).
                    ['add', '--all', ...excludeNested(nested)],
                    ['diff', '--cached', '--name-status', '--no-renames', ...NO_PROGRAMS, base]
                ])).stdout.toString('utf8');
            }
            const lines = names.split('\n').filter(Boolean);
            const files = lines.slice(0, MAX_DIFF_FILES).map(line => {
                const [status, ...path] = line.split('\t');
                const change = status === 'A' ? 'added' : status === 'D' ? 'deleted' : 'modified';
                return { path: path.join('\t'), change };
            });
            const more = lines.length - files.length;
            const { diff, truncated } = files.length === 0
                ? { diff: '', truncated: false }
                : cutDiff(head ?? (await boundedDiff(tree, changes())));
            const walked = found ? 'layers' : 'tree';
            return more > 0
                ? { diff, truncated, files, more_files: more, nested, walked }
                : { diff, truncated, files, nested, walked };
        },
        async patch(max) {
            const { stdout, bytes } = await runTreeGit(tree, [changes('--binary')], { maxStdout: max });
            return { bytes: stdout, size: bytes };
        },
        async changedBytes() {
            const { stdout } = await runTreeGit(tree, [
                changes('--raw', '--no-abbrev'),
                // `:<old mode> <new mode> <old id> <new id> <status>`: new contents only, no submodule.
                `awk '$2 != "160000" && $4 !~ /^0+$/ { print $4 }'`,
                ['cat-file', '--batch-check=%(objectsize)'],
                `awk '{ s += $1 } END { printf "%.0f\\n", s }'`
            ], { pipeline: true });
            const bytes = Number(stdout.toString('utf8').trim());
            if (!Number.isSafeInteger(bytes))
                throw new Error('the size of the changes could not be read');
            return bytes;
        },
        async tree() {
            // After a walk the private index holds the whole work tree; after a diff from the layers, the
            // start's tree with the changes between the two trees put in (a whole index is read here
            // only, when a run publishes).
            const made = ends
                ? (await runTreeGit(tree, [wholeTree(base, ends)], { pipeline: true })).stdout.toString('utf8')
                : await privateGit(repo, ['write-tree']);
            const id = made.trim();
            if (!TREE.test(id))
                throw new Error('git write-tree failed: no tree was named');
            return id;
        },
        size: () => treeUsage(identity, [counted]),
        release() {
            const now = new Date();
            if ((0,external_node_fs_.existsSync)(root))
                (0,external_node_fs_.utimesSync)(root, now, now);
        }
    };
}
/** A tree id as `write-tree` prints it. */
const TREE = /^(?:[0-9a-f]{40}|[0-9a-f]{64})$/;
/**
 * The script that finds what changed among `candidates` (on stdin, NUL-ended pathspecs) without
 * the private index, whose every load costs what the repository weighs: a temporary index holds
 * only the start's entries below the candidates (`reset`), written as the first tree; `ls-files`
 * keeps the candidates git tracks or would add (a pathspec naming nothing, or only ignored files,
 * would make `add` fail), `add --all` records them, and that index is written as the second tree.
 * The upper layer holds every turn's changes, so nothing an earlier turn recorded is needed. Prints
 * the two trees on one line, then the name-status diff between them.
 */
function changedOnly(nested, base) {
    const file = (name) => `"$GIT_DIR/agent-run-end-${name}"`;
    const [index, list, kept] = [file('index'), file('changed'), file('kept')];
    const exclude = nested.map(path => `:(exclude,literal)${path}`);
    const fromFile = (file) => `--pathspec-from-file=${file}`;
    return [
        `export GIT_INDEX_FILE=${index}`,
        // Whatever happens, nothing of the end is left in the private git dir.
        `trap 'rm -f ${index} ${list} ${kept}' EXIT`,
        `rm -f ${index} ${list} ${kept}`,
        `cat > ${list} || exit 1`,
        // An empty pathspec list would reset the whole index.
        `if [ -s ${list} ]; then ${gitLine(['reset', '-q', base, '--pathspec-file-nul'])} ${fromFile(list)} || exit 1; fi`,
        `from=$(${gitLine(['write-tree'])}) || exit 1`,
        `if [ -s ${list} ]; then xargs -0 -r ${gitLine(['ls-files', '-z', '--cached', '--others', '--exclude-standard', '--', ...exclude])} < ${list} | sort -zu | sed -z 's/^/:(literal)/' > ${kept} || exit 1; fi`,
        `if [ -s ${kept} ]; then ${gitLine(['add', '--all', '--pathspec-file-nul'])} ${fromFile(kept)} || exit 1; fi`,
        `to=$(${gitLine(['write-tree'])}) || exit 1`,
        `printf '%s %s\\n' "$from" "$to"`,
        `${gitLine(['diff', '--name-status', '--no-renames', ...NO_PROGRAMS])} "$from" "$to" || exit 1`,
        "printf '\\0'",
        // The head of the diff, no more: git is stopped by `head` (SIGPIPE) once past it.
        `[ "$from" != "$to" ] || exit 0`,
        `${gitLine(['diff', '--no-color', '--no-renames', ...NO_PROGRAMS])} "$from" "$to" | head -c ${MAX_DIFF_BYTES + 1}`,
        'status=("${PIPESTATUS[@]}")',
        '[ "${status[1]}" = 0 ] && { [ "${status[0]}" = 0 ] || [ "${status[0]}" = 141 ]; }'
    ].join('\n');
}
/**
 * The script that prints the tree of the whole work tree after a diff from the layers: the start's
 * tree read into a temporary index, the paths deleted between the two trees taken out (mode 0),
 * then every entry of the second tree put in.
 */
function wholeTree(base, { from, to }) {
    const index = '"$GIT_DIR/agent-run-tree-index"';
    const deleted = gitLine([
        'diff-tree',
        '-r',
        '-z',
        '--no-renames',
        '--ignore-submodules=none',
        '--diff-filter=D',
        '--name-only',
        from,
        to
    ]);
    return [
        `export GIT_INDEX_FILE=${index}`,
        `trap 'rm -f ${index}' EXIT`,
        `rm -f ${index}`,
        `${gitLine(['read-tree', base])} || exit 1`,
        `{ ${deleted} | sed -z 's/^/0 ${'0'.repeat(from.length)}\\t/' && ${gitLine(['ls-tree', '-r', '-z', '--full-tree', to])}; } | ${gitLine(['update-index', '-z', '--index-info'])} || exit 1`,
        gitLine(['write-tree'])
    ].join('\n');
}
/**
 * Removes released workspaces older than `retentionMs` (and any left by a crashed process) with
 * their private git dirs, and private git dirs left without a workspace; then lets git forget
 * worktrees whose directories are gone (workspaces made by earlier versions were worktrees of the
 * source). A workspace is removed by a plain recursive delete that follows no link: nothing in it
 * (a `.git` file naming another directory, say) is read.
 */
async function sweepWorkspaces(dataDir, environments, retentionMs, active, 
/** How much unused shared checkouts may weigh together (layers.ts); unbounded by default. */
cacheBytes = Number.POSITIVE_INFINITY) {
    const dir = (0,external_node_path_.join)(dataDir, 'workspaces');
    const gitDirs = (0,external_node_path_.join)(dataDir, 'gitdirs');
    const old = (path) => Date.now() - (0,external_node_fs_.statSync)(path).mtimeMs >= retentionMs;
    let removed = 0;
    for (const name of (0,external_node_fs_.existsSync)(dir) ? (0,external_node_fs_.readdirSync)(dir) : []) {
        if (active.has(name) || name.startsWith('.'))
            continue;
        const path = (0,external_node_path_.join)(dir, name);
        if (!old(path))
            continue;
        // A copy-on-write workspace is unmounted first, and left for the next sweep when it cannot be.
        if (!(await unmountWorkspace(dataDir, name)))
            continue;
        removeLayers(dataDir, name);
        removeTree(path);
        removePrivateGitDir(privateGitDir(dataDir, name));
        // A harness run's HOME (its CLI's session) is kept as long as its workspace, for follow-ups.
        removeTree((0,external_node_path_.join)(dataDir, 'homes', name));
        removed++;
    }
    for (const name of (0,external_node_fs_.existsSync)(gitDirs) ? (0,external_node_fs_.readdirSync)(gitDirs) : []) {
        const runId = name.replace(/\.git$/, '');
        if (active.has(runId) || (0,external_node_fs_.existsSync)((0,external_node_path_.join)(dir, runId)))
            continue;
        if (old((0,external_node_path_.join)(gitDirs, name)))
            removePrivateGitDir((0,external_node_path_.join)(gitDirs, name));
    }
    await sweepLayers(dataDir, cacheBytes, active);
    if (removed > 0) {
        const repositories = new Set();
        for (const env of environments) {
            if (isRemoteSource(env.source)) {
                repositories.add((0,external_node_path_.join)(dataDir, 'sources', (0,external_node_crypto_.createHash)('sha256').update(env.source).digest('hex').slice(0, 16) + '.git'));
            }
            else {
                const top = await gitTopLevel(env.source);
                if (top)
                    repositories.add(top);
            }
        }
        for (const repository of repositories)
            await sourceGit(['worktree', 'prune'], repository).catch(() => undefined);
    }
    return removed;
}
/**
 * The head of the unified diff `diff` prints, at most MAX_DIFF_BYTES + 1 bytes of it: git prints
 * it through the reader (a diff of any size: a run may have written GBs of text) and is stopped
 * once past the limit; cutDiff then cuts it at a line's end when one is near.
 */
async function boundedDiff(tree, diff) {
    const { stdout } = await runTreeGit(tree, [diff], { maxStdout: MAX_DIFF_BYTES + 1, stopPastMax: true });
    return stdout;
}
/** A diff's head (at most MAX_DIFF_BYTES + 1 bytes of it) as the `diff` event shows it. */
function cutDiff(stdout) {
    if (stdout.length <= MAX_DIFF_BYTES)
        return { diff: stdout.toString('utf8'), truncated: false };
    const lineEnd = stdout.lastIndexOf(0x0a, MAX_DIFF_BYTES - 1);
    const cut = lineEnd > MAX_DIFF_BYTES / 2 ? lineEnd + 1 : MAX_DIFF_BYTES;
    return {
        diff: `${stdout.toString('utf8', 0, cut)}\n[diff cut at ${MAX_DIFF_BYTES} bytes]\n`,
        truncated: true
    };
}
/**
 * Bytes and entries under a run's trees, counted by `du` as the run's user in the reader sandbox
 * (run-files.ts): links are not followed, and what the run made unreadable to its own user is
 * reported, so that nothing can be hidden from the quota.
 */
async function treeUsage(identity, dirs) {
    const present = dirs.filter(dir => (0,external_node_fs_.existsSync)(dir));
    if (present.length === 0)
        return { bytes: 0, files: 0 };
    const result = await asRunUser(identity, {
        read: present,
        program: '/bin/sh',
        args: [
            '-c',
            'du -s -c --apparent-size --block-size=1 -- "$@"; a=$?; du -s -c --inodes -- "$@"; exit $((a | $?))',
            'sh',
            ...present
        ],
        maxStdout: 64 * 1024
    });
    const totals = result.stdout
        .toString('utf8')
        .split('\n')
        .map(line => /^(\d+)\ttotal$/.exec(line)?.[1])
        .filter((total) => total !== undefined);
    if (totals.length !== 2)
        throw new Error(`what the run wrote cannot be measured: ${readerReason(result)}`);
    const usage = { bytes: Number(totals[0]), files: Number(totals[1]) };
    return result.code === 0 ? usage : { ...usage, unreadable: readerReason(result) };
}

;// CONCATENATED MODULE: ./src/executor/node/startup.ts
// Every start-up check of a node, in one place; serve.ts runs them before it opens the store.
// Configuration that parses but cannot work (a source directory that is not there, a misspelt URL
// scheme, an agent program not on the PATH runs get, a listed variable that is not set) would fail
// every run of its environment later, one by one, with a worse message; an environment whose runs
// are sandboxed needs bubblewrap working here. Nodes that run work refuse to start on either,
// naming the cause and the fix. An environment that says `sandbox: off` starts anyway, with a
// warning (and a warning event per run). A root executor also settles here who its runs are on the
// host (sandbox/user.ts): a bad `sandbox.user` refuses the start, naming it. A `sandbox.read` or
// `sandbox.write` path that would show runs the data dir refuses every role's start, as a
// configuration error (sandbox/config.ts), before anything is made in the data dir.










/** Schemes git can fetch a source from; anything else is a typo, not a transport. */
const SOURCE_SCHEMES = ['https', 'http', 'ssh', 'git', 'file'];
const SOURCE_FORMS = 'expected a directory, an https://, http://, ssh://, git:// or file:// URL, or user@host:path';
/** The configuration a worker cannot run, one refusal per line (the executor exits 1 on it). */
class StartupCheckError extends Error {
}
/** A sandboxed environment that cannot be confined on this machine. */
class SandboxUnavailableError extends StartupCheckError {
}
/** Why the source cannot make a workspace, or undefined. An unreachable remote is not checked here. */
function sourceProblem(source) {
    if (isRemoteSource(source)) {
        const scheme = /^([a-z][a-z0-9+.-]*):\/\//i.exec(source)?.[1];
        if (scheme === undefined || SOURCE_SCHEMES.includes(scheme.toLowerCase()))
            return undefined;
        return `source ${show(redactUrls(source))}: ${scheme}:// is not a scheme git fetches from; ${SOURCE_FORMS}`;
    }
    if (!(0,external_node_fs_.existsSync)(source))
        return `source ${show(source)}: no such directory; ${SOURCE_FORMS}`;
    if (!(0,external_node_fs_.statSync)(source).isDirectory())
        return `source ${show(source)}: not a directory; ${SOURCE_FORMS}`;
    return undefined;
}
/** Every problem of one environment, each starting with the environment's id. */
function environmentProblems(environment, processEnv = process.env) {
    const at = `environment ${show(environment.id)}:`;
    const problems = [];
    const source = sourceProblem(environment.source);
    if (source)
        problems.push(`${at} ${source}`);
    for (const name of environment.env) {
        if (processEnv[name] === undefined)
            problems.push(`${at} env ${show(name)}: not set in the executor's environment; expected it exported before ` +
                'agent-executor starts, or removed from env');
    }
    const kind = agentKindOf(environment.agent.kind);
    // A source that is not there also hides the program a relative command path names.
    // An image's command is looked for in the image (image-startup.ts), not on this machine.
    if (kind?.check && !source && !environment.image) {
        const remoteSource = isRemoteSource(environment.source);
        for (const problem of kind.check({ ...environment, remoteSource }, 'agent', processEnv))
            problems.push(`${at} ${problem}`);
    }
    return problems;
}
/** Throws a StartupCheckError naming every environment of `config` that no run could succeed in. */
function checkRunnable(config, processEnv = process.env) {
    const problems = config.environments.flatMap(env => environmentProblems(env, processEnv));
    if (problems.length === 0)
        return;
    throw new StartupCheckError(`refusing to start:${problems.length === 1 ? ` ${problems[0]}` : `\n- ${problems.join('\n- ')}`}`);
}
/**
 * Throws SandboxUnavailableError when a sandboxed environment cannot be confined on this machine;
 * returns the warnings to log otherwise, and adds to `notes` the lines the start-up log states
 * (which host user each environment's runs are).
 */
function checkSandboxes(config, notes = []) {
    const warnings = [];
    const confined = config.environments.filter(env => env.sandbox.enabled);
    const off = config.environments.filter(env => !env.sandbox.enabled).map(env => env.id);
    if (off.length > 0)
        warnings.push(`environment ${off.join(', ')} has \`sandbox: off\`: its agents run unconfined, as the executor's user`);
    if (confined.length === 0)
        return warnings;
    const ids = confined.map(env => env.id).join(', ');
    const check = checkBubblewrap();
    if (!check.ok) {
        throw new SandboxUnavailableError(`cannot confine the runs of environment ${ids}: ${check.problem}. ` +
            'To run them unconfined anyway (not recommended), set `sandbox: off` on the environment.');
    }
    const users = new Map();
    for (const env of confined) {
        let user;
        try {
            user = runUser(env.sandbox.user);
        }
        catch (error) {
            if (!(error instanceof RunUserError))
                throw error;
            throw new SandboxUnavailableError(`environment ${env.id}: ${error.message}`);
        }
        if (!user) {
            if (env.sandbox.user !== undefined)
                warnings.push(`environment ${env.id} sets sandbox.user ${JSON.stringify(env.sandbox.user)}, but the executor is not root and cannot switch users: its runs are the executor's own user (uid ${process.getuid?.()})`);
            continue;
        }
        const asUser = checkBubblewrap(user);
        if (!asUser.ok)
            throw new SandboxUnavailableError(`cannot confine the runs of environment ${env.id}: ${asUser.problem}`);
        users.set(user.label, [...(users.get(user.label) ?? []), env.id]);
    }
    for (const [label, envs] of users)
        notes.push(`the runs of environment ${envs.join(', ')} run as host user ${label}, not root`);
    const limits = limitsProblem();
    if (!limits)
        return warnings;
    const strict = confined.filter(env => env.sandbox.requireLimits).map(env => env.id);
    if (strict.length > 0)
        throw new SandboxUnavailableError(`environment ${strict.join(', ')} sets sandbox.require_limits but ${limits}; run the executor where it may create cgroups (as root, or with a delegated cgroup v2 subtree)`);
    warnings.push(`environment ${ids}: ${limits}`);
    return warnings;
}
/**
 * Throws a ConfigError naming each `sandbox.read` or `sandbox.write` path that would show runs the
 * data dir (or the config file). serve.ts calls it first, before the data dir is made.
 */
function checkSandboxPaths(config) {
    const paths = sandboxPathProblems(config.environments, config.dataDir, config.configFile);
    if (paths.length === 0)
        return;
    const where = `config${config.configFile ? ` ${config.configFile}` : ''}`;
    throw new ConfigError(`${where}: refusing to start:${paths.length === 1 ? ` ${paths[0]}` : `\n- ${paths.join('\n- ')}`}`);
}
/**
 * Every check a node of `role` makes before it opens its store: an `api` node runs nothing and
 * checks nothing. Throws a StartupCheckError on a refusal; answers the lines to log otherwise.
 */
function checkStartup(config, role, checks = {}) {
    const notes = [];
    if (role === 'api')
        return { warnings: [], notes };
    if (checks.environments ?? true)
        checkRunnable(config, checks.processEnv);
    const warnings = checkSandboxes(config, notes);
    // Each harness's CLI (claude, …): found, runnable in the sandbox, its version stated.
    const clis = checkHarnessClis(config.environments.filter(env => !env.image));
    if (clis.problems.length > 0)
        throw new StartupCheckError(`refusing to start: ${clis.problems.join('; ')}`);
    notes.push(...clis.notes);
    const layers = layerMode(config.dataDir);
    notes.push(layers.kind === 'overlay'
        ? 'workspaces are copy-on-write views (overlayfs) of one shared checkout per commit'
        : `workspaces are full checkouts: ${layers.reason}`);
    // A kept setup layer is an overlay layer made in the sandbox: anything else runs the setup each time.
    for (const env of config.environments.filter(env => env.setupCache)) {
        const why = layers.kind !== 'overlay'
            ? 'workspaces are full checkouts here'
            : !env.sandbox.enabled
                ? 'it has `sandbox: off` (only a sandboxed setup is kept)'
                : env.setup.length === 0
                    ? 'it has no setup commands'
                    : undefined;
        if (why)
            warnings.push(`environment ${env.id}: setup_cache is ignored, ${why}: its setup runs in every run`);
    }
    return { warnings, notes };
}

;// CONCATENATED MODULE: ./src/executor/sandbox/spawn.ts
// How a run starts processes: the one spawner of agents, setup commands and `@sim run`. Each
// process goes through the run's sandbox (when the run has one) and into its own process group,
// recorded in the data dir, so that stopping it stops everything it started: SIGTERM first,
// SIGKILL after a grace period. The worker makes a run's RunProcesses with its sandbox
// (confineRun) and hands it to the agent kind in its context: a kind has no other way to start a
// process (the lint forbids node:child_process under agents/).
//
// A process counts as ended when it exits; pipes still held open by something it left behind (a
// daemon, `setsid`) are closed shortly after, so a run can never hang on them (a pipe paused
// because its output is still being stored counts as busy, not held). A reader of the output may
// pause a pipe by answering a promise, so a program that prints faster than its output is stored
// waits instead of filling memory.


const KILL_GRACE_MS = 5000;
/** After exit, output still in the pipes gets this long to arrive. */
const DRAIN_MS = 250;
/** Hands each chunk of `stream` to `take`, pausing the stream while `take` is busy with it. */
function pipeInto(stream, take) {
    stream.on('data', (chunk) => {
        const busy = take?.(chunk);
        if (!busy)
            return;
        stream.pause();
        const resume = () => void stream.resume();
        busy.then(resume, resume);
    });
}
/** The processes of one run, all started through its sandbox. */
class RunProcesses {
    bound;
    constructor(bound) {
        this.bound = bound;
    }
    get home() {
        return this.bound.sandbox ? SANDBOX_HOME : undefined;
    }
    async run(program, args, options) {
        const started = Date.now();
        const { sandbox, record } = this.bound;
        const signal = options.signal ? AbortSignal.any([this.bound.signal, options.signal]) : this.bound.signal;
        const cwd = options.cwd ?? this.bound.cwd;
        if (signal.aborted)
            return { exitCode: null, signal: 'SIGTERM', durationMs: 0 };
        const wrapped = sandbox
            ? sandbox.wrap(program, args, cwd, options.env)
            : { program, args, env: { ...options.env, ...this.bound.unconfinedEnv } };
        if (!wrapped) {
            const spawnError = Object.assign(new Error(`spawn ${program} ENOENT`), { code: 'ENOENT' });
            return { exitCode: null, signal: null, spawnError, durationMs: 0 };
        }
        return new Promise(resolve => {
            const child = (0,external_node_child_process_.spawn)(wrapped.program, wrapped.args, {
                cwd,
                env: wrapped.env,
                detached: true,
                stdio: [options.stdin === undefined ? 'ignore' : 'pipe', 'pipe', 'pipe']
            });
            pipeInto(child.stdout, options.onStdout);
            pipeInto(child.stderr, options.onStderr);
            if (options.stdin !== undefined) {
                child.stdin.on('error', () => undefined); // the program may exit without reading its input
                child.stdin.end(options.stdin);
            }
            const forget = record(child.pid);
            const stop = () => (sandbox ? sandbox.stop(child.pid, KILL_GRACE_MS) : stopGroup(child.pid));
            signal.addEventListener('abort', stop, { once: true });
            let settled = false;
            const settle = (result) => {
                if (settled)
                    return;
                settled = true;
                forget();
                signal.removeEventListener('abort', stop);
                resolve({ ...result, durationMs: Date.now() - started });
            };
            child.on('error', error => settle({ exitCode: null, signal: null, spawnError: error }));
            child.on('close', (exitCode, exitSignal) => settle({ exitCode, signal: exitSignal }));
            child.on('exit', (exitCode, exitSignal) => {
                const drain = () => setTimeout(() => {
                    // A stream paused while its output is being stored is busy, not hung: wait for it.
                    if (child.stdout.isPaused() || child.stderr.isPaused())
                        return void drain();
                    child.stdout.destroy();
                    child.stderr.destroy();
                    settle({ exitCode, signal: exitSignal });
                }, DRAIN_MS).unref();
                drain();
            });
        });
    }
    async shell(command, options) {
        const max = options.maxOutput ?? 64 * 1024;
        let output = '';
        const append = (chunk) => {
            output += chunk.toString('utf8');
            if (output.length > 2 * max)
                output = output.slice(-max);
        };
        const cwd = options.cwd ?? this.bound.cwd;
        const env = {
            PATH: process.env.PATH ?? '/usr/bin:/bin',
            HOME: process.env.HOME ?? cwd,
            ...options.env
        };
        const result = await this.run('/bin/sh', ['-c', command], {
            cwd,
            env,
            signal: options.signal,
            onStdout: append,
            onStderr: append
        });
        if (result.spawnError)
            return {
                exitCode: 127,
                signal: null,
                output: result.spawnError.message,
                durationMs: result.durationMs
            };
        return {
            exitCode: result.exitCode,
            signal: result.signal,
            output: output.slice(-max),
            durationMs: result.durationMs
        };
    }
}
/** SIGTERM to the whole process group, SIGKILL to whatever is left after the grace period. */
function stopGroup(pid, graceMs = KILL_GRACE_MS) {
    if (pid === undefined)
        return;
    try {
        process.kill(-pid, 'SIGTERM');
    }
    catch {
        return;
    }
    setTimeout(() => {
        try {
            process.kill(-pid, 'SIGKILL');
        }
        catch {
            // already gone
        }
    }, graceMs).unref();
}

;// CONCATENATED MODULE: ./src/executor/sandbox/image-root.ts
// A run whose environment names a container image sees the image's unpacked file system as `/`.
// The run's sandbox is then two bubblewraps, one inside the other:
//   1. the usual one (bwrap.ts), made as root: the host's system directories read-only, the
//      workspace, HOME, /tmp, the output folder and the image's root bound at their host paths, its
//      first process dropping to the run's user with the host's own sh and setpriv;
//   2. started as the run's user by that process, with the host's bwrap: a user namespace that maps
//      only the run's own ids, whose root is made of the image's entries (each bound read-only, its
//      links made again as links), with the workspace, HOME, /tmp, /proc, /dev and the output folder
//      of sandbox 1 bound again at the same paths. `/` is made read-only last.
// No program of the image ever runs with a privilege: every root step runs the host's programs in
// sandbox 1, before the image is in view. A link of the image is only ever made again as a link
// inside sandbox 2, where it resolves inside the image (an absolute target names the image's own
// file; `..` stops at its root); nothing of the host is reached through one. The read-only binds
// are nosuid and nodev (bubblewrap's own flags), and the run has no_new_privs from sandbox 1, so a
// setuid file of the image changes no one's ids; the image was unpacked by an unprivileged user
// (images/cache.ts), so it holds no device node and no file of root's.

/** Top-level names of the image never shown: the sandbox mounts its own there. */
const OWN_TOP = new Set(['proc', 'dev', 'sys', 'tmp']);
function parts(path) {
    return path.split('/').filter(part => part !== '' && part !== '.');
}
/**
 * The bubblewrap arguments of sandbox 2 (without the program): the image's entries, then the
 * binds. A directory of the image on the way to a bind's path is not bound whole but "spread": made
 * empty, then each of its entries bound (or linked) one by one, so the path below it can be made
 * (the image's own directories are read-only). An entry in the way (a link or a file where the
 * bind's path needs a directory) is left out: nothing is ever mounted through a link of the image.
 */
function imageRootArgs(image, ids, binds, cwd, 
/** Variables the sandbox itself sets (HOME, TMPDIR, the proxy's): never the image's. */
own = []) {
    const spread = new Set(['']);
    const dropped = new Set();
    for (const bind of binds) {
        const names = parts(bind.path);
        let rel = '';
        for (let i = 0; i < names.length; i++) {
            const name = names[i];
            const next = rel ? `${rel}/${name}` : name;
            if (i === 0 && OWN_TOP.has(name))
                break;
            const entry = image.list(rel)?.find(item => item.name === name);
            if (!entry)
                break;
            if (i === names.length - 1 || entry.type !== 'dir') {
                dropped.add(next);
                break;
            }
            spread.add(next);
            rel = next;
        }
    }
    const args = ['--unshare-user', '--disable-userns', '--uid', String(ids.uid), '--gid', String(ids.gid)];
    args.push('--die-with-parent');
    for (const rel of [...spread].sort((a, b) => parts(a).length - parts(b).length || a.localeCompare(b))) {
        if (rel !== '')
            args.push('--dir', `/${rel}`);
        for (const entry of image.list(rel) ?? []) {
            const next = rel ? `${rel}/${entry.name}` : entry.name;
            if (spread.has(next) || dropped.has(next) || (rel === '' && OWN_TOP.has(entry.name)))
                continue;
            if (entry.type === 'link')
                args.push('--symlink', entry.target ?? '', `/${next}`);
            else
                args.push('--ro-bind', (0,external_node_path_.join)(image.rootfs, next), `/${next}`);
        }
    }
    // sandbox 1's /proc (a fresh one cannot be mounted in a user namespace under it), /dev and /tmp.
    args.push('--bind', '/proc', '/proc', '--dev-bind', '/dev', '/dev', '--bind', '/tmp', '/tmp');
    for (const bind of binds) {
        if (OWN_TOP.has(parts(bind.path)[0] ?? '') && parts(bind.path).length === 1)
            continue;
        args.push(bind.how === 'ro' ? '--ro-bind' : bind.how === 'dev' ? '--dev-bind' : '--bind', bind.path, bind.path);
    }
    args.push('--remount-ro', '/', ...imageVariables(image, own), '--chdir', cwd);
    return args;
}
/**
 * The image config's `Env` under the environment's own `env`, as `--setenv` arguments of sandbox 2
 * (a variable the environment passes keeps its value; the executor's PATH, LANG… give way to the
 * image's). Set only there: the root steps of sandbox 1 never see a variable of the image (an
 * LD_PRELOAD naming a file of the workspace would load it into them).
 */
function imageVariables(image, own) {
    const args = [];
    for (const [name, value] of Object.entries(image.env))
        if (!image.keep.includes(name) && !own.includes(name))
            args.push('--setenv', name, value);
    return args;
}

;// CONCATENATED MODULE: ./src/executor/sandbox/index.ts
// A run's sandbox: made by the worker when the run starts, together with the run's spawner
// (spawn.ts) bound to it, which the worker hands to setup commands and to the agent kind: every
// process of a run is confined because there is no other way for a kind to start one.
// When the executor is root, the run's processes become its unprivileged host user (user.ts), whose
// the run's workspace, HOME and output folder are from the moment they are made.









/** How often a stopping run is looked at for processes to signal, and for its end. */
const STOP_POLL_MS = 100;
/** How often a run's cgroup counters are read: past a limit, the whole run is stopped at once. */
const LIMIT_CHECK_MS = 250;
class RunSandbox {
    options;
    proxy;
    watch;
    hit;
    cgroup;
    cgroupMade = false;
    wrapped = false;
    readOnlyWorkspace;
    constructor(options, proxy) {
        this.options = options;
        this.proxy = proxy;
        this.readOnlyWorkspace = options.readOnlyWorkspace === true;
    }
    /**
     * Binds the workspace read-only for every process started from now on: a plan-mode turn's agent,
     * after the environment's setup wrote what it needed (each setup command's processes ended with
     * its own sandbox, so none of them keeps a writable view).
     */
    protectWorkspace() {
        this.readOnlyWorkspace = true;
    }
    /**
     * Sets up the run's proxy when it has a host:port list or a gateway to the executor; limits come
     * with its first process.
     */
    static async create(options) {
        const { sandbox, gateway } = options;
        if (gateway && sandbox.network === 'host')
            throw new Error("an orchestrate turn needs a sandbox whose network is not the host's");
        const targets = Array.isArray(sandbox.network) ? sandbox.network : [];
        const proxy = Array.isArray(sandbox.network) || gateway
            ? await startProxy(targets, options.runId, options.user, gateway)
            : undefined;
        return new RunSandbox(options, proxy);
    }
    /** The run's cgroup, made when its first process starts (a run that starts none pays nothing). */
    limits() {
        if (this.cgroupMade)
            return this.cgroup;
        this.cgroupMade = true;
        const { sandbox } = this.options;
        const cgroup = RunCgroup.create(dataDirTag(this.options.dataDir), this.options.runId, {
            memoryBytes: sandbox.memoryBytes,
            processes: sandbox.processes
        });
        this.cgroup = cgroup;
        // A fork bomb held at the process limit, or a shell whose child the OOM killer took, would
        // otherwise go on until the run's timeout.
        if (cgroup)
            this.watch = setInterval(() => {
                if (this.hit)
                    return;
                this.hit = cgroup.exceeded();
                if (this.hit)
                    void cgroup.kill();
            }, LIMIT_CHECK_MS).unref();
        return cgroup;
    }
    /** Whether any process of the run was started (it may have written files since). */
    get started() {
        return this.wrapped;
    }
    /** The command line that runs `program args` confined; undefined when the program is not found. */
    wrap(program, args, cwd, env) {
        if (this.options.image)
            return this.wrapInImage(this.options.image, program, args, cwd, env);
        const resolved = findProgram(program, cwd, env.PATH ?? process.env.PATH ?? '');
        if (!resolved)
            return undefined;
        this.wrapped = true;
        const { sandbox } = this.options;
        const hide = [this.options.dataDir, process.env.HOME ?? '', this.options.configFile ?? ''].filter(Boolean);
        const read = [...sandbox.read, ...this.options.read];
        // An agent program outside the system directories (a script of the user's) is visible too;
        // one in the workspace already is (and is not bound again: the run may have made it a link).
        const system = resolved.startsWith('/usr/') || resolved.startsWith('/bin/');
        if (!system && !isInside(resolved, this.options.workspace))
            read.push(resolved);
        const files = this.proxy ? this.proxy.files : [];
        const confine = bwrapArgs({
            workspace: this.options.workspace,
            read,
            write: [...sandbox.write, ...(this.options.write ?? [])],
            hide,
            network: sandbox.network === 'host' ? 'host' : 'none',
            files,
            user: this.options.user,
            home: this.options.home,
            readOnlyWorkspace: this.readOnlyWorkspace
        });
        const command = this.proxy ? this.proxy.command(resolved, args) : [resolved, ...args];
        const user = this.options.user;
        const inner = user ? [...dropTo(user, SANDBOX_HOME), ...command] : command;
        return this.launch([bwrapProgram(), ...confine, '--chdir', cwd, '--', ...inner], env);
    }
    /**
     * How a confined process starts: bubblewrap's command line with the sandbox's variables, and, with
     * cgroups, a first process that joins the run's cgroups and then becomes bubblewrap (so all it
     * starts is counted).
     */
    launch(bwrap, env) {
        const innerEnv = {
            ...env,
            HOME: SANDBOX_HOME,
            TMPDIR: '/tmp',
            ...(this.proxy?.env ?? {})
        };
        const cgroup = this.limits();
        if (!cgroup)
            return { program: bwrap[0], args: bwrap.slice(1), env: innerEnv };
        const join = 'while [ "$1" != -- ]; do echo $$ > "$1" || exit 125; shift; done; shift; exec "$@"';
        return {
            program: '/bin/sh',
            args: ['-c', join, 'sh', ...cgroup.procsFiles, '--', ...bwrap],
            env: innerEnv
        };
    }
    /**
     * The command line of a process of an image's run: sandbox 1 (the host's view, as in `wrap`) with
     * the image's root bound read-only, whose first process becomes the run's user and starts sandbox
     * 2 (image-root.ts) with the host's bwrap; the program is looked up on the image's PATH there.
     */
    wrapInImage(image, program, args, cwd, env) {
        this.wrapped = true;
        const { sandbox } = this.options;
        const hide = [this.options.dataDir, process.env.HOME ?? '', this.options.configFile ?? ''].filter(Boolean);
        const read = [...sandbox.read, ...this.options.read];
        const write = [...sandbox.write, ...(this.options.write ?? [])];
        const confine = bwrapArgs({
            workspace: this.options.workspace,
            read: [...read, image.rootfs],
            write,
            hide,
            network: sandbox.network === 'host' ? 'host' : 'none',
            files: this.proxy ? this.proxy.files : [],
            user: this.options.user,
            home: this.options.home,
            readOnlyWorkspace: this.readOnlyWorkspace
        });
        const binds = [
            { path: SANDBOX_HOME, how: 'rw' },
            ...read.filter(path => (0,external_node_fs_.existsSync)(path)).map(path => ({ path: (0,external_node_path_.resolve)(path), how: 'ro' })),
            ...write.filter(path => (0,external_node_fs_.existsSync)(path)).map(path => ({ path: (0,external_node_path_.resolve)(path), how: 'rw' })),
            { path: (0,external_node_path_.resolve)(this.options.workspace), how: this.readOnlyWorkspace ? 'ro' : 'rw' }
        ];
        // The executor's own variables stay its own: the image's Env may set PATH, LANG…, never where
        // the run's files, answer, conversation or orchestrate credential are.
        const own = [
            'HOME',
            'TMPDIR',
            ...Object.keys(this.proxy?.env ?? {}),
            ...Object.keys(env).filter(name => name.startsWith('AGENT_'))
        ];
        const user = this.options.user;
        const ids = user ?? { uid: process.getuid?.() ?? 0, gid: process.getgid?.() ?? 0 };
        const inner = [bwrapProgram(), ...imageRootArgs(image, ids, binds, cwd, own), '--', program, ...args];
        const command = this.proxy ? this.proxy.command(inner[0], inner.slice(1)) : inner;
        const dropped = user ? [...dropTo(user, SANDBOX_HOME), ...command] : command;
        return this.launch([bwrapProgram(), ...confine, '--chdir', '/', '--', ...dropped], env);
    }
    /**
     * Stops a confined process: SIGTERM to the run's own processes (bubblewrap does not pass signals
     * on), then SIGKILL to bubblewrap's group after the grace period, which ends the whole sandbox.
     * Without a cgroup the run's processes cannot be told apart from outside: SIGTERM to bubblewrap
     * ends the sandbox at once.
     */
    stop(pid, graceMs) {
        if (pid === undefined)
            return;
        const killGroup = () => {
            try {
                process.kill(-pid, 'SIGKILL');
            }
            catch {
                // already gone
            }
            void this.cgroup?.kill();
        };
        if (!this.cgroup) {
            killGroup();
            return;
        }
        // A cancel may come while the sandbox is still starting its command: processes that appear
        // during the grace period get SIGTERM too, and once none of the run's own is left, bubblewrap
        // goes at once instead of after the whole grace period.
        const cgroup = this.cgroup;
        const signalled = new Set();
        const started = Date.now();
        const tick = setInterval(() => {
            if (cgroup.signalAgents('SIGTERM', signalled) === 0 || Date.now() - started >= graceMs) {
                clearInterval(tick);
                killGroup();
            }
        }, STOP_POLL_MS);
        tick.unref();
        cgroup.signalAgents('SIGTERM', signalled);
    }
    /**
     * Bytes of files the run's processes deleted but keep open (the quota adds them to what `du`
     * sees); undefined when they hold too many open files to count. Zero without a cgroup.
     */
    deletedOpenBytes() {
        return this.cgroup ? this.cgroup.deletedOpenBytes() : 0;
    }
    /** The limit the run hit, as a sentence, or undefined. */
    exceeded() {
        this.hit ??= this.cgroup?.exceeded();
        return this.hit;
    }
    /** Stops whatever the run left behind and releases its limits and proxy. */
    async close() {
        this.options.image?.release?.();
        clearInterval(this.watch);
        await this.cgroup?.destroy();
        await this.proxy?.close();
    }
}
function isInside(path, dir) {
    const rel = (0,external_node_path_.relative)((0,external_node_path_.resolve)(dir), (0,external_node_path_.resolve)(path));
    return rel !== '' && !rel.startsWith('..') && !(0,external_node_path_.isAbsolute)(rel);
}
function findProgram(program, cwd, path) {
    const executable = (file) => {
        try {
            (0,external_node_fs_.accessSync)(file, external_node_fs_.constants.X_OK);
            return true;
        }
        catch {
            return false;
        }
    };
    if (program.includes('/')) {
        const file = (0,external_node_path_.isAbsolute)(program) ? program : (0,external_node_path_.join)(cwd, program);
        return executable(file) ? file : undefined;
    }
    for (const dir of path.split(external_node_path_.delimiter)) {
        if (!dir)
            continue;
        const file = (0,external_node_path_.join)(dir, program);
        if (executable(file))
            return file;
    }
    return undefined;
}
/** Warnings every run of this environment records in its transcript. */
function runWarnings(sandbox) {
    if (!sandbox.enabled)
        return [
            "this environment has `sandbox: off`: the run's processes run unconfined, as the executor's own user"
        ];
    const limits = limitsProblem();
    return limits ? [limits] : [];
}
/**
 * What the worker calls when a run's workspace is ready: the run's sandbox, the spawner every
 * process of the run goes through (bound to that sandbox and to the run's signal), and the
 * warnings the run records.
 */
async function confineRun(options, run) {
    const warnings = runWarnings(options.sandbox);
    const sandbox = options.sandbox.enabled ? await RunSandbox.create(options) : undefined;
    const processes = new RunProcesses({
        cwd: run.cwd,
        signal: run.signal,
        sandbox,
        record: pid => recordGroup(options.dataDir, options.runId, pid),
        unconfinedEnv: sandbox || !options.dataDir ? undefined : { [SURVIVOR_VARIABLE]: dataDirTag(options.dataDir) }
    });
    return { sandbox, processes, warnings };
}

// EXTERNAL MODULE: external "node:stream"
var external_node_stream_ = __webpack_require__(57075);
// EXTERNAL MODULE: external "node:stream/promises"
var external_node_stream_promises_ = __webpack_require__(46466);
;// CONCATENATED MODULE: ./src/executor/images/tar-entries.ts
// Reads a layer's tar headers as its bytes go by (images/cache.ts hashes and counts the same
// stream), so what an entry unpacks to is known before anything is written. The tar's own length
// bounds what its regular files write, except for sparse files: a PAX sparse entry (GNU.sparse.*
// records, or the GNU 'S' type) of a few hundred bytes unpacks to as many bytes as its header
// claims. Those are refused; and entries are counted, since empty files and folders cost inodes the
// byte bound does not see.
const BLOCK = 512;
/** PAX header data is kept whole to look for sparse records; a larger one is refused. */
const MAX_PAX_BYTES = 1 << 20;
class TarEntries {
    maxEntries;
    refuse;
    /** Entries seen (headers of files, folders, links…; PAX and long-name records not counted). */
    entries = 0;
    pending = Buffer.alloc(0);
    /** Bytes of the current entry's data still to pass (padded to the block). */
    skip = 0;
    /** The data of a PAX header being gathered, and how much of it is still to come. */
    pax;
    /** A PAX `size` record's value: the next entry's data length, in place of its header's. */
    nextSize;
    /** `refuse` answers the error to throw, given why. */
    constructor(maxEntries, refuse) {
        this.maxEntries = maxEntries;
        this.refuse = refuse;
    }
    /** The next layer's tar begins (the entries counted so far stay counted). */
    nextTar() {
        this.pending = Buffer.alloc(0);
        this.skip = 0;
        this.pax = undefined;
        this.nextSize = undefined;
    }
    /** Takes the next bytes of the tar; throws `refuse(…)` at a sparse entry or past maxEntries. */
    feed(chunk) {
        let data = this.pending.length > 0 ? Buffer.concat([this.pending, chunk]) : chunk;
        this.pending = Buffer.alloc(0);
        while (data.length > 0) {
            if (this.pax) {
                const take = Math.min(this.pax.left, data.length);
                this.pax.parts.push(data.subarray(0, take));
                this.pax.left -= take;
                data = data.subarray(take);
                if (this.pax.left > 0)
                    return;
                this.checkPax(Buffer.concat(this.pax.parts), this.pax.global);
                this.skip = this.pax.padding;
                this.pax = undefined;
                continue;
            }
            if (this.skip > 0) {
                const take = Math.min(this.skip, data.length);
                this.skip -= take;
                data = data.subarray(take);
                continue;
            }
            if (data.length < BLOCK) {
                this.pending = Buffer.from(data);
                return;
            }
            this.header(data.subarray(0, BLOCK));
            data = data.subarray(BLOCK);
        }
    }
    header(block) {
        if (block.every(byte => byte === 0))
            return; // the end-of-archive blocks
        const type = String.fromCharCode(block[156]);
        const field = entrySize(block.subarray(124, 136));
        if (field === undefined)
            throw this.refuse('a tar header with an unreadable size');
        // The unpacker reads an entry's length from a PAX `size` record where there is one: so does this.
        const size = type === 'x' || type === 'g' ? field : (this.nextSize ?? field);
        if (type !== 'x' && type !== 'g')
            this.nextSize = undefined;
        const padded = Math.ceil(size / BLOCK) * BLOCK;
        if (type === 'S')
            throw this.refuse('a sparse file (GNU tar type S)');
        if (type === 'x' || type === 'g') {
            if (size > MAX_PAX_BYTES)
                throw this.refuse(`a PAX header of ${size} bytes`);
            this.pax = { parts: [], left: size, padding: padded - size, global: type === 'g' };
            if (size === 0) {
                this.pax = undefined;
                this.skip = padded;
            }
            return;
        }
        if (type !== 'L' && type !== 'K') {
            this.entries++;
            if (this.entries > this.maxEntries)
                throw this.refuse(`more than ${this.maxEntries} entries (files, folders and links)`);
        }
        this.skip = padded;
    }
    /**
     * PAX records are `LENGTH KEY=VALUE\n`: a GNU.sparse key makes the next entry a sparse file, and a
     * `size` key gives the next entry's data length (a global one would give every entry's: refused).
     */
    checkPax(data, global) {
        const text = data.toString('latin1');
        if (/(^|\n)\d+ GNU\.sparse\./.test(text))
            throw this.refuse('a sparse file (GNU.sparse PAX records)');
        const sizes = [...text.matchAll(/(?:^|\n)\d+ size=([^\n]*)\n/g)].map(match => match[1]);
        if (sizes.length === 0)
            return;
        const value = sizes[sizes.length - 1];
        if (global || !/^\d{1,15}$/.test(value))
            throw this.refuse(`a PAX size record ${JSON.stringify(value.slice(0, 20))}`);
        this.nextSize = Number(value);
    }
}
/** A header's size field: octal digits (NUL or space ended), or base-256 when its first bit is set. */
function entrySize(field) {
    if (field[0] === 0xff)
        return undefined; // a negative base-256 number
    if ((field[0] & 0x80) !== 0) {
        let value = field[0] & 0x7f;
        for (const byte of field.subarray(1))
            value = value * 256 + byte;
        return Number.isSafeInteger(value) ? value : undefined;
    }
    const text = field
        .toString('latin1')
        .replace(/[\0 ]+$/, '')
        .trim();
    if (text === '')
        return 0;
    return /^[0-7]+$/.test(text) ? parseInt(text, 8) : undefined;
}

;// CONCATENATED MODULE: ./src/executor/images/cache.ts
// Container images as the root of runs (an environment's `image`), kept in the data dir:
//   DATA_DIR/images/layout/        one OCI image layout, where skopeo copies every image (its blobs
//                                  shared between images), each under a tag named after its reference
//   DATA_DIR/images/roots/<digest> one unpacked root per manifest digest: u/bundle/rootfs, and a
//                                  `ready` file (digest, bytes, the config's Env) written last
// An image is third-party input. Its manifest and config are read only after their sha256 matched
// the digest that names them, and each layer's blob is hashed and its unpacked size counted (bounded)
// before anything is unpacked. umoci unpacks it `--rootless` as the system user `agent-run-image`
// (no run is that user) inside a reader sandbox (sandbox/run-files.ts): an unprivileged process makes
// no device node, no file of root's, no setuid file of anyone who matters, and a link of the image
// is never followed on the host (umoci resolves paths inside the root it unpacks to). Unpacked once
// per digest, under a temporary name renamed at the end (one build at a time per digest in this
// process; a second process that lost the rename uses the winner's); shared read-only by every run
// of every environment naming it; unused roots go, least recently used first, while they weigh more
// than workspaces.cache_size (sweepImages).










/** The system user that unpacks images (a root executor); no run is ever this user. */
const IMAGE_USER = 'agent-run-image';
/** The largest manifest or config blob read. */
const MAX_JSON_BYTES = 4 * 1024 * 1024;
/** Entries of one directory of an image the sandbox lists (on the way to a mount point). */
const MAX_DIR_ENTRIES = 10_000;
/** How long a copy or an unpack may take. */
const STEP_TIMEOUT_MS = 15 * 60_000;
/**
 * Entries (files, folders, links) an image's layers may hold in all: each costs an inode the byte
 * bound does not see. A large toolchain image holds a few hundred thousand.
 */
const MAX_IMAGE_ENTRIES = 1_000_000;
class ImageError extends Error {
}
const imagesDir = (dataDir) => (0,external_node_path_.join)(dataDir, 'images');
const layoutDir = (dataDir) => (0,external_node_path_.join)(dataDir, 'images', 'layout');
const rootsDir = (dataDir) => (0,external_node_path_.join)(dataDir, 'images', 'roots');
const rootfsOf = (dir) => (0,external_node_path_.join)(dir, 'u', 'bundle', 'rootfs');
/** Roots held by a run (or being made) in this process: never collected. */
const held = new Map();
/** Roots being made, by directory. */
const cache_building = new Map();
/** `missing` references already resolved in this process: data dir + ref → digest. */
const cache_resolved = new Map();
/** One copy or unpack at a time per data dir (the layout's index is one file). */
const queues = new Map();
function exclusive(dataDir, step) {
    const before = queues.get(dataDir) ?? Promise.resolve();
    const mine = before.then(step, step);
    queues.set(dataDir, mine.catch(() => undefined));
    return mine;
}
/** Holds the root `dir` against collection until the returned function is called (once). */
function holdImage(dir) {
    held.set(dir, (held.get(dir) ?? 0) + 1);
    let done = false;
    return () => {
        if (done)
            return;
        done = true;
        const left = (held.get(dir) ?? 1) - 1;
        if (left > 0)
            held.set(dir, left);
        else
            held.delete(dir);
    };
}
/** Forgets which references were resolved, as a restarted process would (for tests). */
function forgetResolvedImages() {
    cache_resolved.clear();
}
let unpacker;
/** Who unpacks: `agent-run-image` when the executor is root; else the executor's own user. */
function imageUser() {
    if (process.getuid?.() !== 0)
        return undefined;
    unpacker ??= systemUser(IMAGE_USER, FALLBACK_ID + 1);
    return unpacker;
}
function cache_readReady(dir) {
    try {
        const ready = JSON.parse((0,external_node_fs_.readFileSync)((0,external_node_path_.join)(dir, 'ready'), 'utf8'));
        return typeof ready.digest === 'string' && typeof ready.bytes === 'number' ? ready : undefined;
    }
    catch {
        return undefined;
    }
}
/** The tag an image reference is copied under in the layout. */
function tagOf(ref) {
    return `ref-${(0,external_node_crypto_.createHash)('sha256').update(ref).digest('hex').slice(0, 32)}`;
}
/** The digest the layout's index gives `tag`, or undefined. */
function taggedDigest(dataDir, tag) {
    return layoutTags(dataDir).get(tag);
}
/** The layout's tags and the digests its index gives them (empty when it has no index). */
function layoutTags(dataDir) {
    const tags = new Map();
    try {
        const index = JSON.parse(readLayoutFile(dataDir, 'index.json', MAX_JSON_BYTES).toString('utf8'));
        for (const entry of Array.isArray(index.manifests) ? index.manifests : []) {
            const tag = entry?.annotations?.['org.opencontainers.image.ref.name'];
            if (typeof tag === 'string' && typeof entry.digest === 'string')
                tags.set(tag, entry.digest);
        }
    }
    catch {
        // no index yet, or one the image user spoiled: nothing tagged
    }
    return tags;
}
/**
 * Opens a file of the layout for reading. The layout is the image user's (skopeo and umoci write
 * it as that user), so nothing in it is trusted as a path: the last name is opened without
 * following a link and without waiting on a FIFO, and the file opened must be a regular file of
 * the image user's whose real path lies inside the layout (a link planted on a folder of the way,
 * or a hard link to a file of root's, is refused). Answers the descriptor.
 */
function openLayoutFile(dataDir, rel) {
    const base = (0,external_node_fs_.realpathSync)(layoutDir(dataDir));
    const refused = new ImageError(`the image cache's ${rel.replace(CONTROL, '?')} is not a regular file of ${IMAGE_USER} inside it; refused`);
    let fd;
    try {
        fd = (0,external_node_fs_.openSync)((0,external_node_path_.join)(base, rel), external_node_fs_.constants.O_RDONLY | external_node_fs_.constants.O_NOFOLLOW | external_node_fs_.constants.O_NONBLOCK | external_node_fs_.constants.O_NOCTTY);
    }
    catch (error) {
        const code = error.code;
        if (code === 'ELOOP')
            throw refused;
        throw new ImageError(`the image cache's ${rel.replace(CONTROL, '?')} cannot be read (${code ?? 'error'})`);
    }
    try {
        const stat = (0,external_node_fs_.fstatSync)(fd);
        const user = imageUser();
        const real = (0,external_node_fs_.readlinkSync)(`/proc/self/fd/${fd}`);
        if (!stat.isFile() || (user && stat.uid !== user.uid) || !real.startsWith(`${base}/`))
            throw refused;
        return fd;
    }
    catch (error) {
        (0,external_node_fs_.closeSync)(fd);
        throw error;
    }
}
/** A file of the layout (openLayoutFile), at most `max` bytes. */
function readLayoutFile(dataDir, rel, max) {
    const fd = openLayoutFile(dataDir, rel);
    try {
        const buffer = Buffer.alloc(max + 1);
        let length = 0;
        for (;;) {
            const read = (0,external_node_fs_.readSync)(fd, buffer, length, buffer.length - length, null);
            if (read === 0)
                break;
            length += read;
            if (length > max)
                throw new ImageError(`the image cache's ${rel} is larger than ${max} bytes`);
        }
        return buffer.subarray(0, length);
    }
    finally {
        (0,external_node_fs_.closeSync)(fd);
    }
}
const DIGEST = /^sha256:([0-9a-f]{64})$/;
// eslint-disable-next-line no-control-regex
const CONTROL = /[\u0000-\u001f\u007f-\u009f]/g;
/** A blob's path inside the layout. */
function blobPath(digest) {
    const hex = DIGEST.exec(digest)?.[1];
    if (!hex)
        throw new ImageError(`digest ${JSON.stringify(digest).slice(0, 80)}: expected sha256:<64 hex digits>`);
    return (0,external_node_path_.join)('blobs', 'sha256', hex);
}
/** A small blob of the layout, parsed as JSON after its sha256 was found to match `digest`. */
function verifiedJson(dataDir, digest, what) {
    let bytes;
    try {
        bytes = readLayoutFile(dataDir, blobPath(digest), MAX_JSON_BYTES);
    }
    catch (error) {
        if (error instanceof ImageError && /larger than/.test(error.message))
            throw new ImageError(`its ${what} is larger than ${MAX_JSON_BYTES} bytes`);
        throw error;
    }
    const actual = `sha256:${(0,external_node_crypto_.createHash)('sha256').update(bytes).digest('hex')}`;
    if (actual !== digest)
        throw new ImageError(`its ${what} does not match its digest ${digest} (it is ${actual})`);
    const value = JSON.parse(bytes.toString('utf8'));
    if (!value || typeof value !== 'object' || Array.isArray(value))
        throw new ImageError(`its ${what} is not a JSON object`);
    return value;
}
/**
 * Hashes a layer's blob (it must match its digest) and counts the bytes of the tar inside it, stopping
 * at once past `left`: a layer that would unpack to more (a decompression bomb) is refused here,
 * before anything is written. Answers the tar's bytes.
 */
async function checkLayer(dataDir, layer, left, bound, tar) {
    const hash = (0,external_node_crypto_.createHash)('sha256');
    let tarBytes = 0;
    tar.nextTar();
    const hashing = new external_node_stream_.Transform({
        transform(chunk, _encoding, done) {
            hash.update(chunk);
            done(null, chunk);
        }
    });
    const counting = new external_node_stream_.Writable({
        write(chunk, _encoding, done) {
            tarBytes += chunk.length;
            try {
                tar.feed(chunk);
            }
            catch (error) {
                done(error);
                return;
            }
            if (tarBytes > left)
                done(new ImageError(`its layers unpack to more than ${bound} bytes (workspaces.cache_size); expected a smaller image or a larger cache_size`));
            else
                done();
        }
    });
    const type = layer.mediaType;
    const steps = [hashing];
    if (/gzip/.test(type))
        steps.push(external_node_zlib_.createGunzip());
    else if (/zstd/.test(type)) {
        const zstd = external_node_zlib_.createZstdDecompress;
        if (!zstd)
            throw new ImageError(`its layer ${layer.digest} is zstd-compressed, which this Node cannot read`);
        steps.push(zstd());
    }
    else if (!/tar$/.test(type) && !/diff\.tar$/.test(type))
        throw new ImageError(`its layer ${layer.digest} has media type ${JSON.stringify(type).slice(0, 100)}; expected a tar, tar+gzip or tar+zstd layer`);
    const fd = openLayoutFile(dataDir, blobPath(layer.digest));
    await (0,external_node_stream_promises_.pipeline)([(0,external_node_fs_.createReadStream)('', { fd }), ...steps, counting]);
    const actual = `sha256:${hash.digest('hex')}`;
    if (actual !== layer.digest)
        throw new ImageError(`its layer ${layer.digest} does not match its digest (it is ${actual})`);
    return tarBytes;
}
/**
 * The layout, made the image user's: skopeo writes it as that user, never as root. A layout left by
 * an older executor (skopeo ran as root then: root's files) is removed first; it is only a cache.
 */
function ownLayout(dataDir) {
    const layout = layoutDir(dataDir);
    const user = imageUser();
    (0,external_node_fs_.mkdirSync)(imagesDir(dataDir), { recursive: true, mode: 0o755 });
    if ((0,external_node_fs_.existsSync)(layout) && user && (0,external_node_fs_.lstatSync)(layout).uid !== user.uid)
        (0,external_node_fs_.rmSync)(layout, { recursive: true, force: true });
    if (!(0,external_node_fs_.existsSync)(layout)) {
        (0,external_node_fs_.mkdirSync)(layout, { mode: 0o755 });
        if (user)
            (0,external_node_fs_.chownSync)(layout, user.uid, user.gid);
    }
}
/**
 * `program args` under the layout's lock (`flock`, as the image user): several executor processes
 * may share the data dir, and a copy (which rewrites the index), a collection (which removes blobs
 * no tag names yet) and an unpack (which reads them) of two of them must not interleave. Copies and
 * collections take it alone; unpacks together.
 */
function underLock(dataDir, mode, program, args) {
    return {
        program: systemProgram('flock'),
        args: [`--${mode}`, (0,external_node_path_.join)(layoutDir(dataDir), '.lock'), program, ...args]
    };
}
/** What the copy's sandbox must show of the host for `ref`: the file or folder of a local source. */
function sourcePaths(ref) {
    const local = /^(oci|oci-archive|docker-archive):(\/[^:]*)/.exec(ref);
    if (!local)
        return [];
    if (!(0,external_node_fs_.existsSync)(local[2]))
        throw new ImageError(`skopeo could not copy it: ${local[2]} does not exist`);
    return [local[2]];
}
/** Runs skopeo as the image user, with no capability, in a reader sandbox (no file past `bound`). */
async function skopeo(dataDir, ref, args, bound, maxStdout = 64 * 1024) {
    if (/^(containers-storage|docker-daemon):/.test(ref))
        throw new ImageError(`skopeo copies as ${IMAGE_USER}, in a sandbox that does not reach the host's container storage or Docker daemon; expected the image saved first (\`skopeo copy ${ref.split(':')[0]}:… oci:/srv/images/NAME:TAG\`) and named as oci:/srv/images/NAME:TAG`);
    if (!(0,external_node_fs_.existsSync)(systemProgram('skopeo')))
        throw new ImageError('skopeo is not installed; install it with `sudo apt-get install -y skopeo umoci`');
    const network = ref.startsWith('docker://');
    // A resolver behind a link out of /etc (systemd-resolved's stub) is shown too.
    const resolver = ['/run/systemd/resolve'].filter(dir => network && (0,external_node_fs_.existsSync)(dir));
    const result = await asRunUser({ user: imageUser(), confined: true }, {
        read: [...sourcePaths(ref), ...resolver],
        write: [layoutDir(dataDir)],
        ...(args[0] === 'copy'
            ? underLock(dataDir, 'exclusive', systemProgram('skopeo'), args)
            : { program: systemProgram('skopeo'), args }),
        network,
        maxStdout,
        stopPastMax: true,
        timeoutMs: STEP_TIMEOUT_MS,
        fileSizeKb: Math.ceil(bound / 1024)
    }).catch((error) => {
        throw new ImageError(`skopeo could not start (${error.code ?? error.message}); install it with \`sudo apt-get install -y skopeo umoci\``);
    });
    if (result.code === 0 && result.stdoutBytes <= maxStdout)
        return result.stdout;
    if (result.stdoutBytes > maxStdout)
        throw new ImageError(`its manifest is larger than ${maxStdout} bytes`);
    if (result.timedOut)
        throw new ImageError(`skopeo could not copy it: it ran longer than ${STEP_TIMEOUT_MS / 60000} minutes`);
    // Go ignores SIGXFSZ: skopeo sees EFBIG (`file too large`) past `ulimit -f`.
    if (result.signal === 'SIGXFSZ' || result.code === 128 + 25 || /file too large/i.test(result.stderr))
        throw new ImageError(`skopeo could not copy it: a blob of it is larger than ${bound} bytes (workspaces.cache_size); expected a smaller image or a larger cache_size`);
    const why = result.stderr.trim().split('\n').slice(-1)[0] ?? '';
    const local = sourcePaths(ref)[0];
    const hint = local && /permission denied/i.test(why)
        ? `; expected ${local} readable by ${IMAGE_USER}, who copies it (for example \`chmod -R a+rX ${local}\`)`
        : '';
    throw new ImageError(`skopeo could not copy it: ${why.replace(CONTROL, '?').slice(0, 300) || `exit code ${result.code ?? result.signal}`}${hint}`);
}
/**
 * Copies `ref` into the layout under `tag`, as the image user. Its manifest is read first (`skopeo
 * inspect --raw`): a manifest whose layers declare more bytes than `bound` in all is refused before
 * any blob is fetched; a reference pinned by digest must match it. Each blob written is bounded
 * by `bound` too (a source that lies about sizes), and the copy by time.
 */
async function skopeoCopy(dataDir, ref, tag, bound) {
    ownLayout(dataDir);
    const raw = await skopeo(dataDir, ref, ['inspect', '--raw', ref], bound, MAX_JSON_BYTES);
    const pinned = /@(sha256:[0-9a-f]{64})$/.exec(ref)?.[1];
    const actual = `sha256:${(0,external_node_crypto_.createHash)('sha256').update(raw).digest('hex')}`;
    if (pinned && pinned !== actual)
        throw new ImageError(`its manifest does not match the digest it is pinned to, ${pinned} (it is ${actual})`);
    let manifest;
    try {
        manifest = JSON.parse(raw.toString('utf8'));
    }
    catch {
        throw new ImageError('its manifest is not JSON');
    }
    // An index (several platforms) names its manifests only: skopeo picks one, each blob bounded.
    if (Array.isArray(manifest.layers)) {
        let declared = typeof manifest.config?.size === 'number' ? manifest.config.size : 0;
        for (const layer of manifest.layers)
            declared += typeof layer?.size === 'number' && layer.size > 0 ? layer.size : 0;
        if (declared > bound)
            throw new ImageError(`its layers weigh ${declared} bytes as its manifest declares them, more than ${bound} bytes (workspaces.cache_size); expected a smaller image or a larger cache_size`);
    }
    await skopeo(dataDir, ref, ['copy', '--quiet', '--insecure-policy', ref, `oci:${layoutDir(dataDir)}:${tag}`], bound);
}
/** `KEY=VALUE` lines of the image config's Env, as a record (malformed ones skipped). */
function envOf(config) {
    const inner = config.config;
    const env = {};
    if (!inner || !Array.isArray(inner.Env))
        return env;
    for (const line of inner.Env) {
        if (typeof line !== 'string')
            continue;
        const at = line.indexOf('=');
        if (at > 0 && /^[A-Za-z_][A-Za-z0-9_]*$/.test(line.slice(0, at)))
            env[line.slice(0, at)] = line.slice(at + 1);
    }
    return env;
}
/**
 * The unpacked root of `image`, copied and unpacked when missing (with `pull: always`, copied
 * again first: a moved tag is picked up). `bound`: the most its layers may unpack to.
 */
async function prepareImage(dataDir, image, bound) {
    const key = `${dataDir}\0${image.ref}`;
    const known = image.pull === 'missing' ? cache_resolved.get(key) : undefined;
    if (known) {
        const dir = (0,external_node_path_.join)(rootsDir(dataDir), DIGEST.exec(known)[1]);
        while (cache_building.has(dir))
            await cache_building.get(dir)?.catch(() => undefined);
        const ready = cache_readReady(dir);
        if (ready)
            return cached(dir, image.ref, ready, false);
    }
    return exclusive(dataDir, async () => {
        const tag = tagOf(image.ref);
        let copied = false;
        let digest = image.pull === 'missing' ? taggedDigest(dataDir, tag) : undefined;
        if (!digest) {
            await skopeoCopy(dataDir, image.ref, tag, bound);
            copied = true;
            digest = taggedDigest(dataDir, tag);
            if (!digest)
                throw new ImageError('skopeo copied it but the layout does not name it');
        }
        const manifest = verifiedJson(dataDir, digest, 'manifest');
        const config = manifest.config;
        const layers = manifest.layers;
        if (typeof config?.digest !== 'string' || !Array.isArray(layers))
            throw new ImageError('its manifest is not an OCI image manifest (no config or layers)');
        const configJson = verifiedJson(dataDir, config.digest, 'config');
        const dir = (0,external_node_path_.join)(rootsDir(dataDir), DIGEST.exec(digest)[1]);
        const ready = cache_readReady(dir);
        if (ready) {
            cache_resolved.set(key, digest);
            return cached(dir, image.ref, ready, copied);
        }
        const making = (async () => {
            const started = Date.now();
            let left = bound;
            const tar = new TarEntries(MAX_IMAGE_ENTRIES, why => new ImageError(`its layers hold ${why}; refused`));
            for (const layer of layers) {
                if (typeof layer?.digest !== 'string' || typeof layer.mediaType !== 'string')
                    throw new ImageError('its manifest names a layer without a digest or media type');
                left -= await checkLayer(dataDir, { digest: layer.digest, mediaType: layer.mediaType }, left, bound, tar);
            }
            const env = envOf(configJson);
            const bytes = await unpack(dataDir, dir, tag, digest, bound);
            (0,external_node_fs_.writeFileSync)((0,external_node_path_.join)(`${dir}.making-${process.pid}`, 'ready'), JSON.stringify({ digest, ref: image.ref, bytes, env }));
            try {
                (0,external_node_fs_.renameSync)(`${dir}.making-${process.pid}`, dir);
            }
            catch (error) {
                // Another process sharing the data dir made it first: its root is as good as ours.
                if (!cache_readReady(dir))
                    throw error;
                (0,external_node_fs_.rmSync)(`${dir}.making-${process.pid}`, { recursive: true, force: true });
            }
            return Date.now() - started;
        })();
        cache_building.set(dir, making);
        const release = holdImage(dir);
        try {
            const unpackMs = await making;
            cache_resolved.set(key, digest);
            const made = cache_readReady(dir);
            return { ...cached(dir, image.ref, made, copied), unpacked: true, unpackMs };
        }
        finally {
            cache_building.delete(dir);
            release();
        }
    });
}
function cached(dir, ref, ready, copied) {
    try {
        // The last use, for the least-recently-used order of sweepImages.
        const now = new Date();
        (0,external_node_fs_.utimesSync)((0,external_node_path_.join)(dir, 'ready'), now, now);
    }
    catch {
        // collected meanwhile: the caller's hold came too late; the next run makes it again
    }
    return {
        ref,
        digest: ready.digest,
        dir,
        rootfs: rootfsOf(dir),
        env: ready.env ?? {},
        bytes: ready.bytes,
        unpacked: false,
        copied
    };
}
/**
 * umoci unpack --rootless, as the image user in a reader sandbox that shows the layout read-only
 * and the new root's folder writable; no file larger than `bound`. Answers the root's bytes.
 */
async function unpack(dataDir, dir, tag, digest, bound) {
    if (!(0,external_node_fs_.existsSync)(systemProgram('umoci')))
        throw new ImageError('umoci is not installed; install it with `sudo apt-get install -y skopeo umoci`');
    const making = `${dir}.making-${process.pid}`;
    (0,external_node_fs_.rmSync)(making, { recursive: true, force: true });
    (0,external_node_fs_.mkdirSync)(making, { recursive: true, mode: 0o755 });
    const own = (0,external_node_path_.join)(making, 'u');
    (0,external_node_fs_.mkdirSync)(own, { mode: 0o755 });
    const user = imageUser();
    if (user)
        (0,external_node_fs_.chownSync)(own, user.uid, user.gid);
    const identity = { user, confined: true };
    const layout = layoutDir(dataDir);
    const result = await asRunUser(identity, {
        read: [layout],
        write: [own],
        ...underLock(dataDir, 'shared', systemProgram('umoci'), [
            'unpack',
            '--rootless',
            '--image',
            `${layout}:${tag}`,
            (0,external_node_path_.join)(own, 'bundle')
        ]),
        timeoutMs: STEP_TIMEOUT_MS,
        fileSizeKb: Math.ceil(bound / 1024)
    }).catch((error) => {
        throw new ImageError(`umoci could not start (${error.code ?? error.message}); install it with \`sudo apt-get install -y skopeo umoci\``);
    });
    if (result.code !== 0) {
        (0,external_node_fs_.rmSync)(making, { recursive: true, force: true });
        throw new ImageError(`umoci could not unpack it: ${readerReason(result)}`);
    }
    // umoci names the manifest it unpacked: it must be the one whose digest was verified.
    const hex = DIGEST.exec(digest)[1];
    const bundle = (0,external_node_path_.join)(own, 'bundle');
    if (!(0,external_node_fs_.existsSync)((0,external_node_path_.join)(bundle, `sha256_${hex}.mtree`)) || !(0,external_node_fs_.lstatSync)((0,external_node_path_.join)(bundle, 'rootfs')).isDirectory()) {
        (0,external_node_fs_.rmSync)(making, { recursive: true, force: true });
        throw new ImageError(`umoci unpacked another manifest than ${digest}`);
    }
    const measured = await asRunUser(identity, {
        read: [own],
        program: systemProgram('du'),
        args: ['-s', '--block-size=1', (0,external_node_path_.join)(bundle, 'rootfs')],
        timeoutMs: STEP_TIMEOUT_MS
    });
    const bytes = Number(measured.stdout.toString('utf8').split('\t')[0]);
    // A folder the image user cannot read (mode 000) hides its bytes from du, which then fails: a root
    // that cannot be measured is not kept, or the sweep would never count it.
    if (measured.code !== 0 || !Number.isSafeInteger(bytes)) {
        (0,external_node_fs_.rmSync)(making, { recursive: true, force: true });
        throw new ImageError(`its unpacked root could not be measured (du: ${readerReason(measured)}); expected every folder of the image readable by its owner`);
    }
    return bytes;
}
/**
 * Lists a directory of an unpacked root (an image's: written once by the unpacker, then by no one;
 * no run can write it): entry kinds read without following a link, a link's target as written.
 */
function lister(rootfs) {
    const seen = new Map();
    return rel => {
        if (seen.has(rel))
            return seen.get(rel);
        let entries;
        try {
            const dir = (0,external_node_path_.join)(rootfs, rel);
            if (!(0,external_node_fs_.lstatSync)(dir).isDirectory())
                throw new Error('not a directory');
            const items = (0,external_node_fs_.readdirSync)(dir, { withFileTypes: true });
            if (items.length > MAX_DIR_ENTRIES)
                throw new ImageError(`its directory /${rel} holds more than ${MAX_DIR_ENTRIES} entries`);
            entries = [];
            for (const item of items) {
                if (item.isDirectory())
                    entries.push({ name: item.name, type: 'dir' });
                else if (item.isFile())
                    entries.push({ name: item.name, type: 'file' });
                else if (item.isSymbolicLink())
                    entries.push({ name: item.name, type: 'link', target: (0,external_node_fs_.readlinkSync)((0,external_node_path_.join)(dir, item.name)) });
                // FIFOs, sockets and device nodes are not shown.
            }
        }
        catch (error) {
            if (error instanceof ImageError)
                throw error;
            entries = undefined;
        }
        seen.set(rel, entries);
        return entries;
    };
}
/** The sandbox's view of a prepared image, held against collection until the run's sandbox closes. */
function imageRoot(image, keep) {
    return {
        ref: image.ref,
        rootfs: image.rootfs,
        list: lister(image.rootfs),
        env: image.env,
        keep,
        release: holdImage(image.dir)
    };
}
/**
 * Where `program` is found in the image as a run would start it (on the image's PATH unless the
 * environment passes its own): its path inside the image, following links inside it; undefined
 * when it is not an executable file there.
 */
function findInImage(image, program, path) {
    const list = lister(image.rootfs);
    const lookup = (absolute, hops) => {
        const names = absolute.split('/').filter(part => part !== '' && part !== '.');
        const at = [];
        for (let i = 0; i < names.length; i++) {
            const name = names[i];
            if (name === '..') {
                at.pop();
                continue;
            }
            const entry = list(at.join('/'))?.find(item => item.name === name);
            if (!entry)
                return undefined;
            if (entry.type === 'link') {
                if (hops > 40)
                    return undefined;
                const target = entry.target ?? '';
                const base = target.startsWith('/') ? target : `/${[...at, target].join('/')}`;
                return lookup([base, ...names.slice(i + 1)].join('/'), hops + 1);
            }
            at.push(name);
            if (i < names.length - 1 && entry.type !== 'dir')
                return undefined;
            if (i === names.length - 1) {
                if (entry.type !== 'file')
                    return undefined;
                const mode = (0,external_node_fs_.lstatSync)((0,external_node_path_.join)(image.rootfs, ...at)).mode;
                return (mode & 0o111) !== 0 ? `/${at.join('/')}` : undefined;
            }
        }
        return undefined;
    };
    if (program.includes('/'))
        return program.startsWith('/') ? lookup(program, 0) : undefined;
    for (const dir of path.split(':').filter(d => d.startsWith('/'))) {
        const found = lookup(`${dir}/${program}`, 0);
        if (found)
            return found;
    }
    return undefined;
}
/** The unpacked roots that are whole, after removing those half made by a process that is gone. */
function listRoots(dataDir) {
    const roots = rootsDir(dataDir);
    if (!(0,external_node_fs_.existsSync)(roots))
        return [];
    const all = [];
    for (const name of (0,external_node_fs_.readdirSync)(roots)) {
        const dir = (0,external_node_path_.join)(roots, name);
        if (name.includes('.making-')) {
            if (makingLeftOver(dir, made => cache_building.has(made)))
                (0,external_node_fs_.rmSync)(dir, { recursive: true, force: true });
            continue;
        }
        const ready = cache_readReady(dir);
        if (!ready) {
            if (!cache_building.has(dir) && !held.has(dir))
                (0,external_node_fs_.rmSync)(dir, { recursive: true, force: true });
            continue;
        }
        all.push({ dir, ready, used: (0,external_node_fs_.statSync)((0,external_node_path_.join)(dir, 'ready')).mtimeMs });
    }
    return all;
}
/** Removes unused roots of `all`, least recently used first, until `enough` says so. */
function removeRoots(all, enough) {
    const freed = [];
    let freedBytes = 0;
    for (const entry of all.sort((a, b) => a.used - b.used)) {
        if (enough(freedBytes))
            break;
        if (held.has(entry.dir) || cache_building.has(entry.dir))
            continue;
        (0,external_node_fs_.rmSync)(entry.dir, { recursive: true, force: true });
        for (const [key, digest] of cache_resolved)
            if (digest === entry.ready.digest)
                cache_resolved.delete(key);
        freedBytes += entry.ready.bytes;
        freed.push({ digest: entry.ready.digest, bytes: entry.ready.bytes });
    }
    return freed;
}
/**
 * Removes unused unpacked roots, least recently used first, while together they weigh more than
 * `cacheBytes`; and roots half made by a process that is gone. A root held by a run is never removed.
 */
function sweepImages(dataDir, cacheBytes) {
    const all = listRoots(dataDir);
    const total = all.reduce((sum, entry) => sum + entry.ready.bytes, 0);
    return removeRoots(all, freedBytes => total - freedBytes <= cacheBytes);
}
/**
 * Under workspaces.min_free or min_free_inodes (maintenance.ts): removes unused unpacked roots, least
 * recently used first, until `enough` (an unpacked root gives back its bytes and every inode of
 * its files). A root held by a run is never removed.
 */
function freeImageRoots(dataDir, enough) {
    return removeRoots(listRoots(dataDir), () => enough());
}
/**
 * Collects the layout's blobs: while the images weigh more than `cacheBytes` (unpacked roots, and
 * the layout's blobs as their manifests declare them), the tags of references no environment of
 * the current configuration names (`refs`), least recently used first, leave the layout's index,
 * unless a run holds their root; then `umoci gc`, as the image user, removes every blob no tag
 * left references. Answers the digests of the manifests untagged.
 */
function collectImageLayout(dataDir, refs, cacheBytes) {
    return exclusive(dataDir, async () => {
        const layout = layoutDir(dataDir);
        if (!(0,external_node_fs_.existsSync)((0,external_node_path_.join)(layout, 'index.json')))
            return [];
        const tags = layoutTags(dataDir);
        const wanted = new Set(refs.map(tagOf));
        const blobs = new Map();
        const entries = [];
        for (const [tag, digest] of tags) {
            const hex = DIGEST.exec(digest)?.[1];
            if (!hex)
                continue;
            const own = [digest];
            try {
                const manifest = verifiedJson(dataDir, digest, 'manifest');
                blobs.set(digest, blobs.get(digest) ?? 0);
                for (const blob of [manifest.config, ...(Array.isArray(manifest.layers) ? manifest.layers : [])])
                    if (typeof blob?.digest === 'string') {
                        own.push(blob.digest);
                        blobs.set(blob.digest, typeof blob.size === 'number' && blob.size > 0 ? blob.size : 0);
                    }
            }
            catch {
                // a manifest that cannot be read references nothing: its blobs go with the rest
            }
            const dir = (0,external_node_path_.join)(rootsDir(dataDir), hex);
            let used = 0;
            try {
                used = (0,external_node_fs_.statSync)((0,external_node_path_.join)(dir, 'ready')).mtimeMs;
            }
            catch {
                // never unpacked here, or swept: the oldest
            }
            entries.push({ tag, digest, blobs: own, used, busy: held.has(dir) || cache_building.has(dir) });
        }
        let total = listRoots(dataDir).reduce((sum, root) => sum + root.ready.bytes, 0) +
            [...blobs.values()].reduce((sum, size) => sum + size, 0);
        const dropped = [];
        for (const entry of entries.sort((a, b) => a.used - b.used)) {
            if (total <= cacheBytes)
                break;
            if (wanted.has(entry.tag) || entry.busy)
                continue;
            dropped.push(entry);
            const kept = new Set(entries.filter(other => !dropped.includes(other)).flatMap(other => other.blobs));
            for (const blob of entry.blobs)
                if (!kept.has(blob))
                    total -= blobs.get(blob) ?? 0;
        }
        if (dropped.length === 0)
            return [];
        const result = await asRunUser({ user: imageUser(), confined: true }, {
            write: [layout],
            ...underLock(dataDir, 'exclusive', '/bin/sh', [
                '-c',
                'layout=$1; shift; for tag; do umoci rm --image "$layout:$tag" || exit 1; done; exec umoci gc --layout "$layout"',
                'sh',
                layout,
                ...dropped.map(entry => entry.tag)
            ]),
            timeoutMs: STEP_TIMEOUT_MS
        });
        if (result.code !== 0)
            throw new ImageError(`umoci could not collect the image cache: ${readerReason(result)}`);
        const gone = new Set(dropped.map(entry => entry.tag));
        for (const key of [...cache_resolved.keys()])
            if (gone.has(tagOf(key.slice(key.indexOf('\0') + 1))))
                cache_resolved.delete(key);
        return dropped.map(entry => entry.digest);
    });
}

;// CONCATENATED MODULE: ./src/executor/node/image-startup.ts
// The start-up look at each environment that names a container image, for a node that runs work:
// the image is copied and unpacked into the cache now (its first run then starts from the cache),
// a sandbox of the image is made once as the run's user (the nested sandbox needs user namespaces
// for that user), and the agent's command is found in the image (its harness CLI also prints its
// version there). Anything missing refuses the node, naming the environment, the image and the
// command. A machine without skopeo or umoci refuses only image environments, saying how to install them.










/** The PATH a program is looked up on in an image without one in its Env. */
const DEFAULT_PATH = '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin';
/** A program no image has: a sandbox that gets as far as looking for it was made whole. */
const PROBE = '/.agent-run-probe-absent';
/** The agent's program as a run would start it, and the names harness kinds use by default. */
function image_startup_programOf(environment) {
    const agent = environment.agent;
    if (agent.kind === 'simulated')
        return undefined;
    const kind = agentKindOf(agent.kind);
    const defaults = { 'claude-code': 'claude', codex: 'codex', gemini: 'gemini' };
    const program = agent.command?.[0] ?? defaults[agent.kind];
    if (!program || program.includes('{prompt}'))
        return undefined;
    return { program, version: kind?.harnessType ? ['--version'] : undefined };
}
/** Runs `argv` in a sandbox of `image` shaped like a run of `environment`; answers how it ended. */
async function runInImage(config, environment, image, argv) {
    const workspace = (0,external_node_fs_.mkdtempSync)((0,external_node_path_.join)((0,external_node_os_.tmpdir)(), 'agent-run-image-check-'));
    (0,external_node_fs_.chmodSync)(workspace, 0o755);
    const sandbox = await RunSandbox.create({
        runId: `image-check-${environment.id}`,
        sandbox: { ...environment.sandbox, network: 'none' },
        dataDir: config.dataDir,
        configFile: config.configFile,
        workspace,
        read: [],
        user: runUser(environment.sandbox.user),
        image: imageRoot(image, environment.env)
    });
    try {
        const pathVar = environment.env.includes('PATH') ? process.env.PATH : undefined;
        const wrapped = sandbox.wrap(argv[0], argv.slice(1), workspace, {
            ...(pathVar ? { PATH: pathVar } : {}),
            LANG: 'C.UTF-8'
        });
        const result = (0,external_node_child_process_.spawnSync)(wrapped.program, wrapped.args, {
            env: wrapped.env,
            encoding: 'utf8',
            timeout: 30_000
        });
        return {
            status: result.status,
            stdout: result.stdout ?? '',
            stderr: result.stderr ?? '',
            error: result.error
        };
    }
    finally {
        await sandbox.close();
        (0,external_node_fs_.rmSync)(workspace, { recursive: true, force: true });
    }
}
/** Prepares every image environment's image and checks its command; throws a StartupCheckError on a refusal. */
async function checkImages(config) {
    const notes = [];
    const problems = [];
    for (const environment of config.environments) {
        if (!environment.image)
            continue;
        const at = `environment ${show(environment.id)}: image ${environment.image.ref}`;
        let image;
        try {
            image = await prepareImage(config.dataDir, environment.image, config.workspaces.cacheBytes);
        }
        catch (error) {
            if (!(error instanceof ImageError))
                throw error;
            problems.push(`${at}: ${error.message}`);
            continue;
        }
        const how = image.unpacked ? `unpacked in ${image.unpackMs} ms` : 'from the cache';
        const probe = await runInImage(config, environment, image, [PROBE]);
        if (!`${probe.stderr}`.includes(PROBE)) {
            const why = probe.error?.message ??
                (probe.stderr.trim().split('\n').slice(-2).join(' ') || `exit code ${probe.status}`);
            problems.push(`${at}: its sandbox cannot be made here (${why}); image environments need user namespaces for the runs' user (\`sudo sysctl -w kernel.unprivileged_userns_clone=1\`, or on Ubuntu 23.10+ \`sudo sysctl -w kernel.apparmor_restrict_unprivileged_userns=0\`)`);
            continue;
        }
        const command = image_startup_programOf(environment);
        if (!command) {
            notes.push(`${at} (${image.digest}, ${image.bytes} bytes, ${how}) is the root of its runs`);
            continue;
        }
        const path = environment.env.includes('PATH')
            ? (process.env.PATH ?? '')
            : (image.env.PATH ?? DEFAULT_PATH);
        const found = findInImage(image, command.program, path);
        if (!found) {
            problems.push(`${at}: its command ${show(command.program)} is not an executable file of the image (looked on the image's PATH ${path}); expected an image that has it, or its absolute path inside the image`);
            continue;
        }
        let version = '';
        if (command.version) {
            const ran = await runInImage(config, environment, image, [found, ...command.version]);
            if (ran.status !== 0) {
                const why = ran.error?.message ??
                    (ran.stderr.trim().split('\n').slice(-2).join(' ') || `exit code ${ran.status}`);
                problems.push(`${at}: its command ${show(command.program)} (${found}) does not run in the image (${why})`);
                continue;
            }
            version = `, version ${ran.stdout.trim().split('\n')[0] ?? ''}`;
        }
        notes.push(`${at} (${image.digest}, ${image.bytes} bytes, ${how}): its command ${found} is there${version}`);
    }
    if (problems.length > 0)
        throw new StartupCheckError(`refusing to start:${problems.length === 1 ? ` ${problems[0]}` : `\n- ${problems.join('\n- ')}`}`);
    return notes;
}

// EXTERNAL MODULE: ./node_modules/pg/esm/index.mjs
var esm = __webpack_require__(83849);
;// CONCATENATED MODULE: ./src/executor/store/postgres/connection.ts
// The PostgreSQL store's connections: the pool and its settings, named queries, transactions, and
// the classification of failures. A failure that means the database cannot be reached (down,
// restarting, failed over, the network gone) becomes StoreUnavailableError, so requests answer 503
// and workers pause; any other error is a bug and stays as it is.



/** No statement of this store takes long; one without an answer this late means the server is gone. */
const QUERY_TIMEOUT_MS = 30_000;
/** Any number that fits in a JavaScript number comes back as one (ids, counts, epoch ms). */
const TYPES = {
    getTypeParser(oid, format) {
        if (oid === 20 && format !== 'binary')
            return (value) => Number(value);
        // bytea columns hold user text as UTF-8 (see the migration): read back as strings.
        if (oid === 17 && format !== 'binary') {
            const parse = esm/* default.types */.Ay.types.getTypeParser(17, 'text');
            return (value) => parse(value).toString('utf8');
        }
        return esm/* default.types */.Ay.types.getTypeParser(oid, format);
    }
};
/** Connection-level failures: the database is down, restarting, or unreachable. */
function isUnavailable(error) {
    const e = error;
    if (!e)
        return false;
    if (typeof e.code === 'string') {
        // 08 (but 08P01, a protocol violation: a bug, not an outage): connection exception;
        // 57P01-57P03: admin shutdown, crash shutdown, cannot connect now; 57014: statement timeout;
        // 53300: too many connections; 25006: read-only (a primary demoted by a failover).
        if (e.code !== '08P01' && /^08|^57P0[1-3]$|^57014$|^53300$|^25006$/.test(e.code))
            return true;
        const network = ['ECONNREFUSED', 'ECONNRESET', 'EPIPE', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENETUNREACH'];
        if ([...network, 'ENOTFOUND', 'EAI_AGAIN'].includes(e.code))
            return true;
    }
    // pg's own: a connection lost or never made, every pooled connection busy past the wait, a
    // query with no answer in time.
    return /Connection terminated|connection timeout|timeout exceeded when trying to connect|Query read timeout|Client has encountered a connection error|not queryable/i.test(e.message ?? '');
}
/** The error to throw for a failure: StoreUnavailableError for an outage, else the error itself. */
function wrap(error) {
    if (error instanceof StoreUnavailableError || !isUnavailable(error))
        return error;
    // The message says nothing of the address or the driver: it can reach a run's status message.
    // The cause (in the log) has the details.
    return new StoreUnavailableError('the PostgreSQL store is unavailable', { cause: error });
}
/** A pool of `size` connections to `url`. */
function createPool(url, size) {
    const pool = new esm/* default.Pool */.Ay.Pool({
        connectionString: url,
        max: size,
        connectionTimeoutMillis: 5000,
        // A silent network partition must end in an error (then 503), not a request that hangs.
        keepAlive: true,
        query_timeout: QUERY_TIMEOUT_MS,
        idleTimeoutMillis: 30_000,
        types: TYPES,
        application_name: 'agent-executor'
    });
    // An idle connection that breaks (the server restarting) must not crash the process.
    pool.on('error', () => undefined);
    return pool;
}
/** Runs a query on the pool (or a client), turning connection failures into StoreUnavailableError. */
async function query(on, text, values) {
    try {
        return await on.query(named(text, values));
    }
    catch (error) {
        throw wrap(error);
    }
}
/** Runs `work` in one transaction on a pooled connection; a broken connection is not reused. */
async function transaction(pool, work) {
    let client;
    try {
        client = await pool.connect();
    }
    catch (error) {
        throw wrap(error);
    }
    let broken = false;
    // A connection that dies between two statements reports it as an event: without a listener
    // that would end the process. The next statement fails with the same error and is handled.
    const onError = () => (broken = true);
    client.on('error', onError);
    try {
        await client.query('BEGIN');
        const result = await work({
            query: (text, values) => client.query(named(text, values))
        });
        await client.query('COMMIT');
        return result;
    }
    catch (error) {
        broken = isUnavailable(error);
        if (!broken)
            await client.query('ROLLBACK').catch(() => (broken = true));
        throw wrap(error);
    }
    finally {
        client.off('error', onError);
        client.release(broken);
    }
}
/** The error `open` throws when the store cannot be opened, the address without its password. */
function openError(url, error) {
    return new Error(`cannot open the PostgreSQL store at ${redactUrl(url)}: ${error.message}`, {
        cause: error
    });
}
const names = new Map();
/**
 * A named query: each connection parses and plans it once, then only binds and runs it (the hot
 * reads spend less time in the server than without a name).
 */
function named(text, values) {
    // Without values, the simple protocol: it alone runs several statements (the migrations).
    if (values === undefined)
        return { text };
    let name = names.get(text);
    if (!name)
        names.set(text, (name = `q${names.size + 1}`));
    return { name, text, values };
}
/** User text as UTF-8 bytes, for the bytea columns. */
function bytes(text) {
    return text === null ? null : Buffer.from(text, 'utf8');
}
/** `?` placeholders as PostgreSQL's `$1`, `$2`, … (the store's SQL has no `?` of its own). */
const numbered = new Map();
function numberPlaceholders(text) {
    let converted = numbered.get(text);
    if (converted === undefined) {
        let n = 0;
        converted = text.replace(/\?/g, () => `$${++n}`);
        numbered.set(text, converted);
    }
    return converted;
}

;// CONCATENATED MODULE: ./src/executor/store/dialect.ts
// What the SQL store (sql-store.ts) needs from a database, and nothing more: the few pieces of SQL
// the two dialects write differently (the clock, skipping locked rows, user text as bytes, appending
// to a JSON list, reading bytes back), how a statement runs, and the two things each does its own way
// because its engine differs: numbering a run's transcript events and telling other processes of a
// change. Every statement is written once, with `?` placeholders; a dialect turns them into its own.
// sqlite/dialect.ts and postgres/dialect.ts implement it.
/** A statement: `sql('… ? …', value)`. */
function sql(text, ...values) {
    return { text, values };
}

// EXTERNAL MODULE: external "node:events"
var external_node_events_ = __webpack_require__(78474);
;// CONCATENATED MODULE: ./src/executor/store/postgres/notify.ts
// How one PostgreSQL node hears the others' changes: LISTEN on a connection of its own (reconnected
// with backoff when it drops), and a slow fallback poll of recently changed runs behind it, for
// notifications missed while that connection was down. Writers send pg_notify in the transaction
// that makes a change, so a notification never announces what did not commit.
// Key changes (create, revoke) are announced on the same channel: the key cache trusts itself only
// while this connection listens, and is emptied by each key notification and each reconnect.




const CHANNEL = 'agent_executor_runs';
/** The payload of a key change: no run, only "empty your key cache". */
const KEYS_CHANGED = JSON.stringify({ k: 1 });
class ChangeFeed {
    pool;
    url;
    fallbackPollMs;
    keysChanged;
    /** This process's name in notifications, so it skips its own (it already told its listeners). */
    node = (0,external_node_crypto_.randomUUID)();
    changes = new external_node_events_.EventEmitter();
    listener;
    listening = false;
    closed = false;
    pollTimer;
    reconnectTimer;
    /** Database time of the last successful fallback poll. */
    polledUpTo;
    /** run_id → the newest version this process has announced, to skip the poll's repeats. */
    heard = new Map();
    polling = false;
    constructor(pool, url, fallbackPollMs, 
    /** Called when keys may have changed elsewhere (a key notification, or one possibly missed). */
    keysChanged) {
        this.pool = pool;
        this.url = url;
        this.fallbackPollMs = fallbackPollMs;
        this.keysChanged = keysChanged;
        this.changes.setMaxListeners(0);
    }
    /** Whether notifications are being received now (so a cache may trust them). */
    get connected() {
        return this.listener !== undefined && !this.closed;
    }
    /** Tells the listeners of a change, unless this process already told them of that version. */
    tell(run) {
        if (!this.remember(run))
            return;
        try {
            this.changes.emit('change', { run_id: run.run_id, state: run.state, version: run.version });
        }
        catch {
            // a listener failed; the change is stored, and timers catch up
        }
    }
    remember(run) {
        const seen = this.heard.get(run.run_id);
        if (seen && seen.version >= run.version)
            return false;
        this.heard.set(run.run_id, { version: run.version, at: Date.now() });
        return true;
    }
    /** Tells the listeners of a transcript event (held transcript reads). */
    tellEvent(runId, seq) {
        try {
            this.changes.emit('event', runId, seq);
        }
        catch {
            // a listener failed; held transcript reads re-read on their own
        }
    }
    onEvent(listener) {
        this.changes.on('event', listener);
        this.start();
        return () => this.changes.off('event', listener);
    }
    onChange(listener) {
        this.changes.on('change', listener);
        this.start();
        return () => this.changes.off('change', listener);
    }
    /** Other nodes' changes: LISTEN on a connection of its own, reconnecting with backoff. */
    start() {
        if (this.listening)
            return;
        this.listening = true;
        void this.connectListener(100);
        this.pollTimer = setInterval(() => void this.poll(), this.fallbackPollMs);
        this.pollTimer.unref();
    }
    async connectListener(delayMs) {
        if (this.closed)
            return;
        const client = new esm/* default.Client */.Ay.Client({
            connectionString: this.url,
            types: TYPES,
            keepAlive: true,
            connectionTimeoutMillis: 5000
        });
        client.on('notification', message => this.onNotification(message.payload));
        let retried = false;
        const retry = () => {
            if (retried || this.closed)
                return;
            retried = true;
            if (this.listener === client)
                this.listener = undefined;
            this.keysChanged();
            client.end().catch(() => undefined);
            this.reconnectTimer = setTimeout(() => void this.connectListener(Math.min(delayMs * 2, 2000)), delayMs);
            this.reconnectTimer.unref();
        };
        client.on('error', retry);
        client.on('end', retry);
        try {
            await client.connect();
            await client.query(`LISTEN ${CHANNEL}`);
            if (this.closed) {
                await client.end();
                return;
            }
            // A key revoked while no one listened is not in the cache after this.
            this.keysChanged();
            this.listener = client;
            // Whatever changed while no one listened is found by the next poll (it starts where the last
            // successful one ended); run it now rather than wait for the timer.
            void this.poll();
        }
        catch {
            retry();
        }
    }
    onNotification(payload) {
        if (!payload)
            return;
        let message;
        try {
            message = JSON.parse(payload);
        }
        catch {
            return;
        }
        if (message.k !== undefined)
            return this.keysChanged();
        if (message.n === this.node)
            return;
        if (typeof message.e === 'number')
            return this.tellEvent(message.r, message.e);
        this.tell({ run_id: message.r, state: message.s, version: message.v });
    }
    /**
     * The fallback: runs changed since the last poll (on the database's clock, with a margin for
     * transactions that committed late), announced unless this process already heard that version.
     */
    async poll() {
        if (this.polling || this.closed)
            return;
        this.polling = true;
        try {
            const result = await this.pool.query(`SELECT run_id, state, version, NULL AS now FROM runs
         WHERE $1::timestamptz IS NOT NULL AND changed_at > $1::timestamptz - interval '5 seconds'
         UNION ALL SELECT NULL, NULL, NULL, clock_timestamp()::text`, [this.polledUpTo ?? null]);
            const rows = result.rows;
            this.polledUpTo = rows.find(row => row.run_id === null).now;
            for (const row of rows)
                if (row.run_id !== null)
                    this.tell(row);
            const forget = Date.now() - 60_000;
            for (const [runId, seen] of this.heard)
                if (seen.at < forget)
                    this.heard.delete(runId);
        }
        catch {
            // unreachable: the next poll starts where the last good one ended
        }
        finally {
            this.polling = false;
        }
    }
    async close() {
        if (this.closed)
            return;
        this.closed = true;
        clearInterval(this.pollTimer);
        clearTimeout(this.reconnectTimer);
        const listener = this.listener;
        this.listener = undefined;
        await listener?.end().catch(() => undefined);
    }
}

;// CONCATENATED MODULE: ./src/executor/store/postgres/dialect.ts
// The SQL store's dialect on PostgreSQL, shared by every executor node on one database:
// - leases are stamped and checked with the database's clock, so nodes' clocks may disagree;
// - claims and sweeps pick rows with FOR UPDATE SKIP LOCKED, so two nodes never take one run;
// - a run's row hands out its event numbers (runs.event_seq), so writers on different nodes never
//   collide;
// - a change, its state event and its pg_notify are one statement, so one round trip and one commit;
//   the notification is sent at commit, and notify.ts hears other nodes' (LISTEN, fallback poll).
// Connections, transactions and outage classification are connection.ts.




/** The transaction-scoped advisory lock follow-ups that queue an ended run again take in turn. */
const FOLLOWUP_QUEUE_LOCK = 0x61726671; // 'arfq'
class PostgresDialect {
    pool;
    kind = 'postgres';
    shared = true;
    clockMs = `(extract(epoch from clock_timestamp()) * 1000)::bigint`;
    changedAt = 'clock_timestamp()';
    skipLocked = 'FOR UPDATE SKIP LOCKED';
    numberEvent = ', event_seq = event_seq + 1';
    textType = 'bytea';
    noLimit = null;
    feed;
    keysListener;
    constructor(pool, url, fallbackPollMs) {
        this.pool = pool;
        this.feed = new ChangeFeed(pool, url, fallbackPollMs, () => this.keysListener?.());
    }
    bytes(text) {
        return bytes(text);
    }
    listHas(json, key, value) {
        return `((${json})::jsonb -> '${key}') @> to_jsonb(${value})`;
    }
    appendJson(column) {
        return `(COALESCE(${column}, '[]')::jsonb || jsonb_build_array(?::jsonb))::text`;
    }
    /** bytea is read back as text elsewhere in this store (see TYPES in connection.ts): these come as base64. */
    selectBytes(column) {
        return `encode(${column}, 'base64') AS ${column}`;
    }
    readBytes(value) {
        return Buffer.from(value, 'base64');
    }
    async all(statement) {
        return (await query(this.pool, numberPlaceholders(statement.text), statement.values)).rows;
    }
    async run(statement) {
        return (await query(this.pool, numberPlaceholders(statement.text), statement.values)).rowCount ?? 0;
    }
    batch(statements) {
        return transaction(this.pool, async (client) => {
            const counts = [];
            for (const s of statements)
                counts.push((await client.query(numberPlaceholders(s.text), s.values)).rowCount ?? 0);
            return counts;
        });
    }
    /** Other nodes' commits are heard only by notification, later: no marker. */
    changeStamp() {
        return undefined;
    }
    /** The rows come whole from the server; `stopAfter` is left to the caller's cut. */
    list(statement) {
        return this.all(statement);
    }
    /** The queue counts are sub-selects of the insert's condition: one statement, counted at the insert. */
    create({ insert, queues, event, follow }) {
        const room = sql(queues.map(queue => `(${queue.count.text}) < ?`).join(' AND ') || '1 = 1', ...queues.flatMap(queue => [...queue.count.values, queue.limit]));
        return this.change(insert(room), event, { follow });
    }
    /**
     * One transaction. Follow-ups that queue an ended run again take the queue lock first (a
     * transaction-scoped advisory lock), so they count one after another, each seeing the runs the
     * one before it queued: N at once cannot pass a limit by N. The message and the requeue follow
     * in the same transaction, or neither when a queue is full.
     */
    async followup({ runId, at, data, ended, queues, requeue, event }) {
        const written = await transaction(this.pool, async (client) => {
            const run = async (made) => (await client.query(numberPlaceholders(made.text), made.values)).rows;
            // Looked at again once locked: a follow-up just before may have queued the run already.
            if ((await run(ended)).length > 0)
                await run(sql('SELECT pg_advisory_xact_lock(?)', FOLLOWUP_QUEUE_LOCK));
            if ((await run(ended)).length > 0) {
                for (const queue of queues) {
                    const [row] = await run(queue.count);
                    if (Number(row?.n ?? 0) >= queue.limit)
                        return { full: queue.name };
                }
            }
            const [added] = await run(this.appending(runId, 'followup', data, at));
            if (added === undefined)
                throw new Error(`run ${runId} does not exist`);
            const runs = await run(this.changing(requeue, event));
            return { seq: added.seq, runs };
        });
        if ('full' in written)
            return written;
        const strip = ({ event_seq: _seq, notified: _notified, ...run }) => run;
        this.feed.tellEvent(runId, written.seq);
        const runs = written.runs.map(strip);
        for (const changed of runs)
            this.feed.tell(changed);
        return { seq: written.seq, runs };
    }
    /** A change with its state event and its notification, as one statement. */
    changing(statement, event) {
        return sql(`WITH changed AS (${statement.text} RETURNING ${RUN_COLUMNS}, event_seq),
       event AS (INSERT INTO events (run_id, seq, at, kind, data)
         SELECT run_id, event_seq, updated_at, 'state', ? FROM changed)
       SELECT changed.*, pg_notify(?, json_build_object('n', ?::text, 'r', run_id, 's', state, 'v', version)::text)
         AS notified
       FROM changed`, ...statement.values, event, CHANNEL, this.feed.node);
    }
    async change(statement, event, options = {}) {
        const { follow, then } = options;
        const changing = this.changing(statement, event);
        const told = [];
        // A statement to follow or a change after makes it a transaction of its own (one round trip more each way).
        const rows = !follow && !then
            ? await this.all(changing)
            : await transaction(this.pool, async (client) => {
                const run = async (made) => (await client.query(numberPlaceholders(made.text), made.values)).rows;
                const rows = await run(changing);
                told.push(...rows);
                for (const row of rows) {
                    for (const more of follow?.(row) ?? [])
                        await run(more);
                    if (then)
                        told.push(...(await run(this.changing(then.statement(row), then.event))));
                }
                return rows;
            });
        const strip = ({ event_seq: _seq, notified: _notified, ...run }) => run;
        // This process's listeners now; other nodes hear the pg_notify sent at commit.
        for (const run of told.length > 0 ? told : rows)
            this.feed.tell(strip(run));
        return rows.map(strip);
    }
    async appendEvent(runId, kind, data, at) {
        // Other nodes hear of the event by a notification sent at commit (held transcript reads).
        const [row] = await this.all(this.appending(runId, kind, data, at));
        if (row === undefined)
            throw new Error(`run ${runId} does not exist`);
        this.feed.tellEvent(runId, row.seq);
        return row.seq;
    }
    /** An event appended to a run's transcript, numbered on the run's row, with its notification. */
    appending(runId, kind, data, at) {
        return sql(`WITH next AS (UPDATE runs SET event_seq = event_seq + 1 WHERE run_id = ? RETURNING run_id, event_seq),
         added AS (INSERT INTO events (run_id, seq, at, kind, data) SELECT run_id, event_seq, ?, ?, ? FROM next
           RETURNING run_id, seq)
       SELECT seq, pg_notify(?, json_build_object('n', ?::text, 'r', run_id, 'e', seq)::text) FROM added`, runId, at, kind, data, CHANNEL, this.feed.node);
    }
    keysChanged() {
        return sql('SELECT pg_notify(?, ?)', CHANNEL, KEYS_CHANGED);
    }
    /** Trusted while notifications are heard (a key change on any node empties the cache). */
    keyCacheState() {
        return this.feed.connected ? 'fresh' : 'untrusted';
    }
    onKeysChanged(listener) {
        this.keysListener = listener;
    }
    onChange(listener) {
        return this.feed.onChange(listener);
    }
    onEvent(listener) {
        return this.feed.onEvent(listener);
    }
    async close() {
        await this.feed.close();
        await this.pool.end();
    }
}

;// CONCATENATED MODULE: ./src/executor/store/migrations.ts
// Versioned schema migrations, one list per store. Each runs once, in its own transaction; the applied versions are
// recorded in schema_migrations (SQLite) or agent_executor_migrations (PostgreSQL, where the database
// may be shared with other tools' tables). Never edit a released migration: add the next one.
const SQLITE_MIGRATIONS = [
    {
        version: 1,
        name: 'keys, runs, transcript events, secrets',
        sql: `
      CREATE TABLE api_keys (
        id TEXT PRIMARY KEY,
        team TEXT NOT NULL,
        kind TEXT NOT NULL CHECK (kind IN ('personal', 'agent')),
        name TEXT NOT NULL,
        hash TEXT NOT NULL UNIQUE,
        hint TEXT NOT NULL,
        created_at TEXT NOT NULL,
        revoked_at TEXT
      );
      CREATE TABLE runs (
        seq INTEGER PRIMARY KEY AUTOINCREMENT,
        run_id TEXT NOT NULL UNIQUE,
        team TEXT NOT NULL,
        environment_id TEXT NOT NULL,
        state TEXT NOT NULL,
        title TEXT,
        prompt TEXT NOT NULL,
        config TEXT NOT NULL,
        extra TEXT NOT NULL,
        creator_type TEXT NOT NULL,
        creator_uid TEXT NOT NULL,
        creator_name TEXT NOT NULL,
        status_message TEXT,
        error_code TEXT,
        created_at TEXT NOT NULL,
        updated_at TEXT NOT NULL,
        started_at TEXT,
        completed_at TEXT,
        version INTEGER NOT NULL DEFAULT 1,
        lease_owner TEXT,
        lease_expires_at INTEGER,
        idempotency_key TEXT,
        idempotency_hash TEXT
      );
      CREATE INDEX runs_team_seq ON runs (team, seq);
      CREATE INDEX runs_state_seq ON runs (state, seq);
      CREATE UNIQUE INDEX runs_idempotency ON runs (team, idempotency_key) WHERE idempotency_key IS NOT NULL;
      CREATE TABLE events (
        run_id TEXT NOT NULL,
        seq INTEGER NOT NULL,
        at TEXT NOT NULL,
        kind TEXT NOT NULL,
        data TEXT NOT NULL,
        PRIMARY KEY (run_id, seq)
      ) WITHOUT ROWID;
      CREATE TABLE secrets (name TEXT PRIMARY KEY, value TEXT NOT NULL);
    `
    },
    {
        version: 2,
        name: 'runs.changed_at, for processes sharing the file to find what others changed',
        sql: `
      ALTER TABLE runs ADD COLUMN changed_at INTEGER NOT NULL DEFAULT 0;
      CREATE INDEX runs_changed_at ON runs (changed_at);
    `
    },
    {
        version: 3,
        name: 'artifacts and request usage',
        sql: `
      ALTER TABLE runs ADD COLUMN artifacts TEXT;
      ALTER TABLE runs ADD COLUMN request_usage TEXT;
      CREATE TABLE artifacts (
        artifact_uid TEXT PRIMARY KEY,
        run_id TEXT NOT NULL,
        team TEXT NOT NULL,
        artifact_type TEXT NOT NULL,
        filepath TEXT NOT NULL,
        filename TEXT NOT NULL,
        mime_type TEXT NOT NULL,
        size INTEGER NOT NULL,
        description TEXT,
        created_at TEXT NOT NULL,
        data BLOB NOT NULL
      );
      CREATE INDEX artifacts_run ON artifacts (run_id);
    `
    },
    {
        version: 4,
        name: 'dashboard sign-in sessions, node heartbeats',
        sql: `
      CREATE TABLE web_sessions (
        id_hash TEXT PRIMARY KEY,
        key_id TEXT NOT NULL,
        team TEXT NOT NULL,
        created_at TEXT NOT NULL,
        expires_at INTEGER NOT NULL
      );
      CREATE INDEX web_sessions_expires ON web_sessions (expires_at);
      CREATE TABLE nodes (
        node_id TEXT PRIMARY KEY,
        role TEXT NOT NULL,
        workers INTEGER NOT NULL,
        busy INTEGER NOT NULL,
        started_at TEXT NOT NULL,
        seen_at INTEGER NOT NULL
      );
    `
    },
    {
        version: 5,
        name: 'scheduled agents',
        sql: `
      CREATE TABLE schedules (
        id TEXT PRIMARY KEY,
        team TEXT NOT NULL,
        spec TEXT NOT NULL,
        enabled INTEGER NOT NULL,
        next_run_ms INTEGER,
        last_ran TEXT,
        last_run_id TEXT,
        last_spawn_error TEXT,
        created_by TEXT NOT NULL,
        created_at TEXT NOT NULL,
        updated_at TEXT NOT NULL
      );
      CREATE INDEX schedules_team ON schedules (team);
      CREATE INDEX schedules_due ON schedules (next_run_ms) WHERE enabled = 1;
    `
    },
    {
        version: 6,
        name: 'fair claims across teams (a claim moves its team to the back), run holds',
        sql: `
      CREATE INDEX runs_team_queued ON runs (team, seq) WHERE state = 'QUEUED';
      CREATE INDEX runs_team_running ON runs (team) WHERE state = 'INPROGRESS';
      ALTER TABLE runs ADD COLUMN held_by TEXT;
      ALTER TABLE runs ADD COLUMN held_until INTEGER;
      CREATE INDEX runs_held ON runs (held_until) WHERE held_by IS NOT NULL;
      CREATE TABLE team_turns (team TEXT PRIMARY KEY, turn INTEGER NOT NULL);
      CREATE INDEX team_turns_turn ON team_turns (turn);
      CREATE TRIGGER runs_team_served AFTER UPDATE OF state ON runs
        WHEN NEW.state = 'INPROGRESS' AND OLD.state <> 'INPROGRESS'
      BEGIN
        INSERT INTO team_turns (team, turn) VALUES (NEW.team, (SELECT COALESCE(MAX(turn), 0) + 1 FROM team_turns))
          ON CONFLICT (team) DO UPDATE SET turn = excluded.turn;
      END;
    `
    },
    {
        version: 7,
        name: "run_metadata: a run's metadata pairs as rows, so a metadata[k]=v filter is an index lookup",
        sql: `
      CREATE TABLE run_metadata (
        run_id TEXT NOT NULL REFERENCES runs (run_id) ON DELETE CASCADE,
        team TEXT NOT NULL,
        key TEXT NOT NULL,
        value TEXT NOT NULL,
        PRIMARY KEY (run_id, key)
      ) WITHOUT ROWID;
      CREATE INDEX run_metadata_pair ON run_metadata (team, key, value, run_id);
      INSERT INTO run_metadata (run_id, team, key, value)
        SELECT runs.run_id, runs.team, pair.key, pair.value
        FROM runs, json_each(runs.extra, '$.metadata') AS pair
        WHERE json_valid(runs.extra) AND json_type(runs.extra, '$.metadata') = 'object' AND pair.type = 'text';
    `
    },
    {
        version: 8,
        name: 'webhook endpoints and their deliveries, written by triggers in the transaction of each change (an outbox)',
        sql: `
      CREATE TABLE webhook_endpoints (
        id TEXT PRIMARY KEY,
        team TEXT NOT NULL,
        url TEXT NOT NULL,
        events TEXT,
        description TEXT NOT NULL,
        secret TEXT NOT NULL,
        previous_secret TEXT,
        previous_until INTEGER,
        source TEXT NOT NULL,
        created_at TEXT NOT NULL,
        disabled_at TEXT,
        disabled_reason TEXT
      );
      CREATE INDEX webhook_endpoints_team ON webhook_endpoints (team) WHERE disabled_at IS NULL;
      CREATE TABLE webhook_deliveries (
        id TEXT PRIMARY KEY,
        endpoint_id TEXT NOT NULL,
        team TEXT NOT NULL,
        run_id TEXT NOT NULL,
        event_type TEXT NOT NULL,
        state TEXT NOT NULL,
        previous_state TEXT,
        status_message TEXT,
        error_code TEXT,
        created_at TEXT NOT NULL,
        created_ms INTEGER NOT NULL,
        body TEXT,
        status TEXT NOT NULL,
        attempts INTEGER NOT NULL DEFAULT 0,
        next_attempt_ms INTEGER,
        last_status INTEGER,
        last_error TEXT,
        last_attempt_at TEXT,
        lease_owner TEXT,
        lease_expires_at INTEGER
      );
      CREATE INDEX webhook_deliveries_due ON webhook_deliveries (next_attempt_ms) WHERE status = 'pending';
      CREATE INDEX webhook_deliveries_endpoint ON webhook_deliveries (endpoint_id, created_ms);
      CREATE INDEX webhook_deliveries_leased ON webhook_deliveries (endpoint_id, lease_expires_at)
        WHERE status = 'pending';
      CREATE INDEX webhook_deliveries_team_leased ON webhook_deliveries (team, lease_expires_at)
        WHERE status = 'pending';
      CREATE TRIGGER runs_webhook_created AFTER INSERT ON runs
      BEGIN
        INSERT INTO webhook_deliveries (id, endpoint_id, team, run_id, event_type, state, previous_state,
            status_message, error_code, created_at, created_ms, status, next_attempt_ms)
          SELECT 'msg_' || lower(hex(randomblob(16))), e.id, NEW.team, NEW.run_id, 'run.queued', NEW.state, NULL,
            NULL, NULL, NEW.updated_at, CAST(unixepoch('subsec') * 1000 AS INTEGER), 'pending',
            CAST(unixepoch('subsec') * 1000 AS INTEGER)
          FROM webhook_endpoints e
          WHERE e.team = NEW.team AND e.disabled_at IS NULL
            AND (e.events IS NULL OR instr(e.events, ',run.queued,') > 0);
      END;
      CREATE TRIGGER runs_webhook_changed AFTER UPDATE OF state ON runs WHEN NEW.state <> OLD.state
      BEGIN
        INSERT INTO webhook_deliveries (id, endpoint_id, team, run_id, event_type, state, previous_state,
            status_message, error_code, created_at, created_ms, status, next_attempt_ms)
          SELECT 'msg_' || lower(hex(randomblob(16))), e.id, NEW.team, NEW.run_id, kind.type, NEW.state, OLD.state,
            NEW.status_message, NEW.error_code, NEW.updated_at, CAST(unixepoch('subsec') * 1000 AS INTEGER),
            'pending', CAST(unixepoch('subsec') * 1000 AS INTEGER)
          FROM webhook_endpoints e,
            (SELECT CASE NEW.state WHEN 'QUEUED' THEN 'run.queued' WHEN 'INPROGRESS' THEN 'run.in_progress'
              WHEN 'BLOCKED' THEN 'run.blocked' WHEN 'SUCCEEDED' THEN 'run.succeeded' WHEN 'FAILED' THEN 'run.failed'
              WHEN 'ERROR' THEN 'run.error' WHEN 'CANCELLED' THEN 'run.cancelled'
              ELSE 'run.' || lower(NEW.state) END AS type) AS kind
          WHERE e.team = NEW.team AND e.disabled_at IS NULL
            AND (e.events IS NULL OR instr(e.events, ',' || kind.type || ',') > 0);
      END;
      CREATE TRIGGER events_webhook_followup AFTER INSERT ON events WHEN NEW.kind = 'followup'
      BEGIN
        INSERT INTO webhook_deliveries (id, endpoint_id, team, run_id, event_type, state, previous_state,
            status_message, error_code, created_at, created_ms, status, next_attempt_ms)
          SELECT 'msg_' || lower(hex(randomblob(16))), e.id, r.team, r.run_id, 'run.followup', r.state, r.state,
            NULL, NULL, NEW.at, CAST(unixepoch('subsec') * 1000 AS INTEGER), 'pending',
            CAST(unixepoch('subsec') * 1000 AS INTEGER)
          FROM runs r JOIN webhook_endpoints e ON e.team = r.team
          WHERE r.run_id = NEW.run_id AND e.disabled_at IS NULL
            AND (e.events IS NULL OR instr(e.events, ',run.followup,') > 0);
      END;
    `
    },
    {
        version: 9,
        name: "run_ancestors: a child run's parent and the parent's own ancestors as rows, so ancestor_run_id is an index lookup",
        sql: `
      CREATE TABLE run_ancestors (
        run_id TEXT NOT NULL REFERENCES runs (run_id) ON DELETE CASCADE,
        team TEXT NOT NULL,
        ancestor_run_id TEXT NOT NULL,
        depth INTEGER NOT NULL,
        PRIMARY KEY (run_id, ancestor_run_id)
      ) WITHOUT ROWID;
      CREATE INDEX run_ancestors_of ON run_ancestors (team, ancestor_run_id, run_id);
    `
    },
    {
        version: 10,
        name: 'runs.workload: the claims of the OIDC token that created a run (repository, ref, workflow_ref, run_id)',
        sql: `ALTER TABLE runs ADD COLUMN workload TEXT;`
    },
    {
        version: 11,
        name: "run_state_events: each run's changes of state, numbered by one sequence, for the events cursor",
        // A trigger writes the row in the transaction that changes the state, so no change is missed and
        // none is told before it is committed. SQLite has one writer: the sequence is the commit order.
        sql: `
      CREATE TABLE run_state_events (
        sequence INTEGER PRIMARY KEY AUTOINCREMENT,
        team TEXT NOT NULL,
        run_id TEXT NOT NULL,
        state TEXT NOT NULL,
        at TEXT NOT NULL
      );
      CREATE INDEX run_state_events_run ON run_state_events (run_id, sequence);
      CREATE TRIGGER runs_state_event AFTER UPDATE OF state ON runs
        WHEN NEW.state <> OLD.state
          AND NEW.state IN ('INPROGRESS', 'SUCCEEDED', 'FAILED', 'ERROR', 'BLOCKED', 'CANCELLED')
      BEGIN
        INSERT INTO run_state_events (team, run_id, state, at)
          VALUES (NEW.team, NEW.run_id, NEW.state, NEW.updated_at);
      END;
      CREATE TRIGGER runs_state_events_pruned AFTER DELETE ON runs
      BEGIN
        DELETE FROM run_state_events WHERE run_id = OLD.run_id;
      END;
    `
    },
    {
        version: 12,
        name: "run_tokens: the SHA-256 of each orchestrate turn's credential and of its proxy's secret",
        sql: `
      CREATE TABLE run_tokens (
        hash TEXT PRIMARY KEY,
        via_hash TEXT NOT NULL,
        run_id TEXT NOT NULL REFERENCES runs (run_id) ON DELETE CASCADE,
        team TEXT NOT NULL,
        environment_id TEXT NOT NULL,
        created_at TEXT NOT NULL
      );
      CREATE INDEX run_tokens_run ON run_tokens (run_id);
    `
    },
    {
        version: 13,
        name: 'key_changes: a counter every write to api_keys moves, so key caches outlive commits that touch no key',
        // Triggers, so every writer moves it (the CLI's keys commands, another process, an older
        // executor sharing the file) in the transaction of the key write itself. PostgreSQL needs none:
        // its key writes are told to every node by notification (postgres/dialect.ts).
        sql: `
      CREATE TABLE key_changes (id INTEGER PRIMARY KEY CHECK (id = 1), changes INTEGER NOT NULL);
      INSERT INTO key_changes (id, changes) VALUES (1, 0);
      CREATE TRIGGER api_keys_inserted AFTER INSERT ON api_keys
      BEGIN
        UPDATE key_changes SET changes = changes + 1 WHERE id = 1;
      END;
      CREATE TRIGGER api_keys_updated AFTER UPDATE ON api_keys
      BEGIN
        UPDATE key_changes SET changes = changes + 1 WHERE id = 1;
      END;
      CREATE TRIGGER api_keys_deleted AFTER DELETE ON api_keys
      BEGIN
        UPDATE key_changes SET changes = changes + 1 WHERE id = 1;
      END;
    `
    }
];
/**
 * The same schema on PostgreSQL, plus what several nodes need: a per-run event counter (writers on
 * different nodes number transcript events without colliding) and changed_at on the database's
 * clock (for the fallback poll). Timestamps stay ISO-8601 text, as the API shows them. Prompt, title
 * and status message are UTF-8 bytes: PostgreSQL text cannot hold NUL, and a prompt must come back
 * exactly as sent.
 */
const POSTGRES_MIGRATIONS = [
    {
        version: 1,
        name: 'keys, runs, transcript events, secrets',
        sql: `
      CREATE TABLE api_keys (
        id TEXT PRIMARY KEY,
        team TEXT NOT NULL,
        kind TEXT NOT NULL CHECK (kind IN ('personal', 'agent')),
        name TEXT NOT NULL,
        hash TEXT NOT NULL UNIQUE,
        hint TEXT NOT NULL,
        created_at TEXT NOT NULL,
        revoked_at TEXT
      );
      CREATE TABLE runs (
        seq BIGSERIAL PRIMARY KEY,
        run_id TEXT NOT NULL UNIQUE,
        team TEXT NOT NULL,
        environment_id TEXT NOT NULL,
        state TEXT NOT NULL,
        title BYTEA,
        prompt BYTEA NOT NULL,
        config TEXT NOT NULL,
        extra TEXT NOT NULL,
        creator_type TEXT NOT NULL,
        creator_uid TEXT NOT NULL,
        creator_name TEXT NOT NULL,
        status_message BYTEA,
        error_code TEXT,
        created_at TEXT NOT NULL,
        updated_at TEXT NOT NULL,
        started_at TEXT,
        completed_at TEXT,
        version INTEGER NOT NULL DEFAULT 1,
        lease_owner TEXT,
        lease_expires_at BIGINT,
        idempotency_key TEXT,
        idempotency_hash TEXT,
        event_seq INTEGER NOT NULL DEFAULT 1,
        changed_at TIMESTAMPTZ NOT NULL DEFAULT clock_timestamp()
      );
      CREATE INDEX runs_team_seq ON runs (team, seq);
      CREATE INDEX runs_queued ON runs (seq) WHERE state = 'QUEUED';
      CREATE INDEX runs_in_progress ON runs (lease_expires_at) WHERE state = 'INPROGRESS';
      CREATE INDEX runs_changed_at ON runs (changed_at);
      CREATE UNIQUE INDEX runs_idempotency ON runs (team, idempotency_key) WHERE idempotency_key IS NOT NULL;
      CREATE TABLE events (
        run_id TEXT NOT NULL,
        seq INTEGER NOT NULL,
        at TEXT NOT NULL,
        kind TEXT NOT NULL,
        data TEXT NOT NULL,
        PRIMARY KEY (run_id, seq)
      );
      CREATE TABLE secrets (name TEXT PRIMARY KEY, value TEXT NOT NULL);
    `
    },
    {
        version: 2,
        name: 'artifacts and request usage',
        sql: `
      ALTER TABLE runs ADD COLUMN artifacts TEXT;
      ALTER TABLE runs ADD COLUMN request_usage TEXT;
      CREATE TABLE artifacts (
        artifact_uid TEXT PRIMARY KEY,
        run_id TEXT NOT NULL,
        team TEXT NOT NULL,
        artifact_type TEXT NOT NULL,
        filepath TEXT NOT NULL,
        filename TEXT NOT NULL,
        mime_type TEXT NOT NULL,
        size BIGINT NOT NULL,
        description TEXT,
        created_at TEXT NOT NULL,
        data BYTEA NOT NULL
      );
      CREATE INDEX artifacts_run ON artifacts (run_id);
    `
    },
    {
        version: 3,
        name: 'dashboard sign-in sessions, node heartbeats',
        sql: `
      CREATE TABLE web_sessions (
        id_hash TEXT PRIMARY KEY,
        key_id TEXT NOT NULL,
        team TEXT NOT NULL,
        created_at TEXT NOT NULL,
        expires_at BIGINT NOT NULL
      );
      CREATE INDEX web_sessions_expires ON web_sessions (expires_at);
      CREATE TABLE nodes (
        node_id TEXT PRIMARY KEY,
        role TEXT NOT NULL,
        workers INTEGER NOT NULL,
        busy INTEGER NOT NULL,
        started_at TEXT NOT NULL,
        seen_at BIGINT NOT NULL
      );
    `
    },
    {
        version: 4,
        name: 'scheduled agents',
        sql: `
      CREATE TABLE schedules (
        id TEXT PRIMARY KEY,
        team TEXT NOT NULL,
        spec TEXT NOT NULL,
        enabled INTEGER NOT NULL,
        next_run_ms BIGINT,
        last_ran TEXT,
        last_run_id TEXT,
        last_spawn_error TEXT,
        created_by TEXT NOT NULL,
        created_at TEXT NOT NULL,
        updated_at TEXT NOT NULL
      );
      CREATE INDEX schedules_team ON schedules (team);
      CREATE INDEX schedules_due ON schedules (next_run_ms) WHERE enabled = 1;
    `
    },
    {
        version: 5,
        name: 'fair claims across teams (a claim moves its team to the back), run holds',
        sql: `
      CREATE INDEX runs_team_queued ON runs (team, seq) WHERE state = 'QUEUED';
      CREATE INDEX runs_team_running ON runs (team) WHERE state = 'INPROGRESS';
      ALTER TABLE runs ADD COLUMN held_by TEXT;
      ALTER TABLE runs ADD COLUMN held_until BIGINT;
      CREATE INDEX runs_held ON runs (held_until) WHERE held_by IS NOT NULL;
      CREATE TABLE team_turns (team TEXT PRIMARY KEY, turn BIGINT NOT NULL);
      CREATE INDEX team_turns_turn ON team_turns (turn);
      CREATE FUNCTION agent_executor_team_served() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        INSERT INTO team_turns (team, turn) VALUES (NEW.team, (SELECT COALESCE(MAX(turn), 0) + 1 FROM team_turns))
          ON CONFLICT (team) DO UPDATE SET turn = excluded.turn;
        RETURN NULL;
      END $$;
      CREATE TRIGGER runs_team_served AFTER UPDATE OF state ON runs FOR EACH ROW
        WHEN (NEW.state = 'INPROGRESS' AND OLD.state <> 'INPROGRESS')
        EXECUTE FUNCTION agent_executor_team_served();
    `
    },
    {
        version: 6,
        name: "run_metadata: a run's metadata pairs as rows, so a metadata[k]=v filter is an index lookup",
        // Runs whose extra holds an escaped NUL are left out: PostgreSQL text cannot hold one (and the
        // list's old filter, which cast extra to jsonb, failed on them).
        sql: `
      CREATE TABLE run_metadata (
        run_id TEXT NOT NULL REFERENCES runs (run_id) ON DELETE CASCADE,
        team TEXT NOT NULL,
        key TEXT NOT NULL,
        value TEXT NOT NULL,
        PRIMARY KEY (run_id, key)
      );
      CREATE INDEX run_metadata_pair ON run_metadata (team, key, value, run_id);
      INSERT INTO run_metadata (run_id, team, key, value)
        SELECT kept.run_id, kept.team, pair.key, pair.value #>> '{}'
        FROM (
          SELECT run_id, team, extra::json -> 'metadata' AS metadata FROM runs
          WHERE position('\\u0000' in extra) = 0
        ) AS kept
        CROSS JOIN LATERAL json_each(
          CASE WHEN json_typeof(kept.metadata) = 'object' THEN kept.metadata ELSE '{}'::json END
        ) AS pair
        WHERE json_typeof(pair.value) = 'string';
    `
    },
    {
        version: 7,
        name: 'webhook endpoints and their deliveries, written by triggers in the transaction of each change (an outbox)',
        // status_message is bytea like the run's (it may hold a NUL), copied as it is.
        sql: `
      CREATE TABLE webhook_endpoints (
        id TEXT PRIMARY KEY,
        team TEXT NOT NULL,
        url TEXT NOT NULL,
        events TEXT,
        description TEXT NOT NULL,
        secret TEXT NOT NULL,
        previous_secret TEXT,
        previous_until BIGINT,
        source TEXT NOT NULL,
        created_at TEXT NOT NULL,
        disabled_at TEXT,
        disabled_reason TEXT
      );
      CREATE INDEX webhook_endpoints_team ON webhook_endpoints (team) WHERE disabled_at IS NULL;
      CREATE TABLE webhook_deliveries (
        id TEXT PRIMARY KEY,
        endpoint_id TEXT NOT NULL,
        team TEXT NOT NULL,
        run_id TEXT NOT NULL,
        event_type TEXT NOT NULL,
        state TEXT NOT NULL,
        previous_state TEXT,
        status_message BYTEA,
        error_code TEXT,
        created_at TEXT NOT NULL,
        created_ms BIGINT NOT NULL,
        body TEXT,
        status TEXT NOT NULL,
        attempts INTEGER NOT NULL DEFAULT 0,
        next_attempt_ms BIGINT,
        last_status INTEGER,
        last_error TEXT,
        last_attempt_at TEXT,
        lease_owner TEXT,
        lease_expires_at BIGINT
      );
      CREATE INDEX webhook_deliveries_due ON webhook_deliveries (next_attempt_ms) WHERE status = 'pending';
      CREATE INDEX webhook_deliveries_endpoint ON webhook_deliveries (endpoint_id, created_ms);
      CREATE INDEX webhook_deliveries_leased ON webhook_deliveries (endpoint_id, lease_expires_at)
        WHERE status = 'pending';
      CREATE INDEX webhook_deliveries_team_leased ON webhook_deliveries (team, lease_expires_at)
        WHERE status = 'pending';
      CREATE FUNCTION agent_executor_webhook_outbox() RETURNS trigger LANGUAGE plpgsql AS $$
      DECLARE
        kind TEXT;
        previous TEXT := NULL;
        now_ms BIGINT := (extract(epoch from clock_timestamp()) * 1000)::bigint;
      BEGIN
        IF NOT EXISTS (SELECT 1 FROM webhook_endpoints WHERE team = NEW.team AND disabled_at IS NULL) THEN
          RETURN NULL;
        END IF;
        IF TG_OP = 'UPDATE' THEN previous := OLD.state; END IF;
        kind := CASE NEW.state WHEN 'QUEUED' THEN 'run.queued' WHEN 'INPROGRESS' THEN 'run.in_progress'
          WHEN 'BLOCKED' THEN 'run.blocked' WHEN 'SUCCEEDED' THEN 'run.succeeded' WHEN 'FAILED' THEN 'run.failed'
          WHEN 'ERROR' THEN 'run.error' WHEN 'CANCELLED' THEN 'run.cancelled' ELSE 'run.' || lower(NEW.state) END;
        INSERT INTO webhook_deliveries (id, endpoint_id, team, run_id, event_type, state, previous_state,
            status_message, error_code, created_at, created_ms, status, next_attempt_ms)
          SELECT 'msg_' || replace(gen_random_uuid()::text, '-', ''), e.id, NEW.team, NEW.run_id, kind, NEW.state,
            previous, CASE WHEN TG_OP = 'UPDATE' THEN NEW.status_message END, NEW.error_code, NEW.updated_at,
            now_ms, 'pending', now_ms
          FROM webhook_endpoints e
          WHERE e.team = NEW.team AND e.disabled_at IS NULL
            AND (e.events IS NULL OR position(',' || kind || ',' in e.events) > 0);
        RETURN NULL;
      END $$;
      CREATE TRIGGER runs_webhook_created AFTER INSERT ON runs FOR EACH ROW
        EXECUTE FUNCTION agent_executor_webhook_outbox();
      CREATE TRIGGER runs_webhook_changed AFTER UPDATE OF state ON runs FOR EACH ROW
        WHEN (NEW.state <> OLD.state) EXECUTE FUNCTION agent_executor_webhook_outbox();
      CREATE FUNCTION agent_executor_webhook_followup() RETURNS trigger LANGUAGE plpgsql AS $$
      DECLARE now_ms BIGINT := (extract(epoch from clock_timestamp()) * 1000)::bigint;
      BEGIN
        INSERT INTO webhook_deliveries (id, endpoint_id, team, run_id, event_type, state, previous_state,
            status_message, error_code, created_at, created_ms, status, next_attempt_ms)
          SELECT 'msg_' || replace(gen_random_uuid()::text, '-', ''), e.id, r.team, r.run_id, 'run.followup',
            r.state, r.state, NULL, NULL, NEW.at, now_ms, 'pending', now_ms
          FROM runs r JOIN webhook_endpoints e ON e.team = r.team
          WHERE r.run_id = NEW.run_id AND e.disabled_at IS NULL
            AND (e.events IS NULL OR position(',run.followup,' in e.events) > 0);
        RETURN NULL;
      END $$;
      CREATE TRIGGER events_webhook_followup AFTER INSERT ON events FOR EACH ROW
        WHEN (NEW.kind = 'followup') EXECUTE FUNCTION agent_executor_webhook_followup();
    `
    },
    {
        version: 8,
        name: "run_ancestors: a child run's parent and the parent's own ancestors as rows, so ancestor_run_id is an index lookup",
        sql: `
      CREATE TABLE run_ancestors (
        run_id TEXT NOT NULL REFERENCES runs (run_id) ON DELETE CASCADE,
        team TEXT NOT NULL,
        ancestor_run_id TEXT NOT NULL,
        depth INTEGER NOT NULL,
        PRIMARY KEY (run_id, ancestor_run_id)
      );
      CREATE INDEX run_ancestors_of ON run_ancestors (team, ancestor_run_id, run_id);
    `
    },
    {
        version: 9,
        name: 'runs.workload: the claims of the OIDC token that created a run (repository, ref, workflow_ref, run_id)',
        sql: `ALTER TABLE runs ADD COLUMN workload TEXT;`
    },
    {
        version: 10,
        name: "run_state_events: each run's changes of state, numbered per team, for the events cursor",
        // Numbered by a per-team counter row, taken in the transaction that changes the state: the row
        // stays locked until that commit, so a reader that sees number n of a team has every number
        // below it committed too (a shared sequence would hand out numbers out of commit order).
        sql: `
      CREATE TABLE team_event_sequence (team TEXT PRIMARY KEY, sequence BIGINT NOT NULL);
      CREATE TABLE run_state_events (
        team TEXT NOT NULL,
        sequence BIGINT NOT NULL,
        run_id TEXT NOT NULL,
        state TEXT NOT NULL,
        at TEXT NOT NULL,
        PRIMARY KEY (team, sequence)
      );
      CREATE INDEX run_state_events_run ON run_state_events (run_id, sequence);
      CREATE FUNCTION agent_executor_state_event() RETURNS trigger LANGUAGE plpgsql AS $$
      DECLARE numbered BIGINT;
      BEGIN
        INSERT INTO team_event_sequence (team, sequence) VALUES (NEW.team, 1)
          ON CONFLICT (team) DO UPDATE SET sequence = team_event_sequence.sequence + 1
          RETURNING sequence INTO numbered;
        INSERT INTO run_state_events (team, sequence, run_id, state, at)
          VALUES (NEW.team, numbered, NEW.run_id, NEW.state, NEW.updated_at);
        RETURN NULL;
      END $$;
      CREATE TRIGGER runs_state_event AFTER UPDATE OF state ON runs FOR EACH ROW
        WHEN (NEW.state <> OLD.state
          AND NEW.state IN ('INPROGRESS', 'SUCCEEDED', 'FAILED', 'ERROR', 'BLOCKED', 'CANCELLED'))
        EXECUTE FUNCTION agent_executor_state_event();
      CREATE FUNCTION agent_executor_state_events_pruned() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        DELETE FROM run_state_events WHERE run_id = OLD.run_id;
        RETURN NULL;
      END $$;
      CREATE TRIGGER runs_state_events_pruned AFTER DELETE ON runs FOR EACH ROW
        EXECUTE FUNCTION agent_executor_state_events_pruned();
    `
    },
    {
        version: 11,
        name: "run_tokens: the SHA-256 of each orchestrate turn's credential and of its proxy's secret",
        sql: `
      CREATE TABLE run_tokens (
        hash TEXT PRIMARY KEY,
        via_hash TEXT NOT NULL,
        run_id TEXT NOT NULL REFERENCES runs (run_id) ON DELETE CASCADE,
        team TEXT NOT NULL,
        environment_id TEXT NOT NULL,
        created_at TEXT NOT NULL
      );
      CREATE INDEX run_tokens_run ON run_tokens (run_id);
    `
    }
];

;// CONCATENATED MODULE: ./src/executor/store/postgres/migrate.ts
// Brings a PostgreSQL database's schema up to date at open: the migrations it lacks, all in one
// transaction, under an advisory lock so nodes starting at once apply each exactly once. A database
// that has them all is only read, so a role without the right to create tables can open it.


async function migrate(pool) {
    await transaction(pool, async (client) => {
        // One lock for every node of every version: the second node waits, then finds nothing to do.
        await client.query(`SELECT pg_advisory_xact_lock(hashtext('agent-executor schema'))`);
        const exists = await client.query(`SELECT to_regclass('agent_executor_migrations')::text AS table`);
        if (exists.rows[0].table === null) {
            await client.query('CREATE TABLE agent_executor_migrations (version INTEGER PRIMARY KEY, name TEXT, applied_at TEXT)');
        }
        const applied = await client.query('SELECT version FROM agent_executor_migrations');
        const done = new Set(applied.rows.map(row => row.version));
        for (const migration of POSTGRES_MIGRATIONS) {
            if (done.has(migration.version))
                continue;
            await client.query(migration.sql);
            await client.query('INSERT INTO agent_executor_migrations (version, name, applied_at) VALUES ($1, $2, $3)', [migration.version, migration.name, new Date().toISOString()]);
        }
    });
}

;// CONCATENATED MODULE: ./src/executor/store/change-sql.ts
// A change of a run as one SQL statement, built from the lifecycle table (runs/lifecycle.ts): the
// SET list from the columns the change writes (and the store's bookkeeping when the transcript
// records it), the WHERE from the states it may start from. Each change's SET list is built once.


/** `state IN (…)` for a change's starting states; they are the code's own constants, written as literals. */
function stateIn(states) {
    return states.length === 1
        ? `state = '${states[0]}'`
        : `state IN (${states.map(s => `'${s}'`).join(', ')})`;
}
class ChangeSql {
    d;
    setLists = new Map();
    constructor(d) {
        this.d = d;
    }
    /** `UPDATE runs …` for a change of the runs `where` picks, among those in a state it may start from. */
    update(name, inputs, where) {
        return sql(`UPDATE runs SET ${this.setList(name)} WHERE ${stateIn(LIFECYCLE[name].from)} AND ${where.text}`, ...this.setValues(name, inputs), ...where.values);
    }
    /** The state event's JSON for a transition. */
    event(transition) {
        return JSON.stringify(stateEvent(transition));
    }
    /** The SET list of a change: the columns it writes, and the store's bookkeeping for a recorded one. */
    setList(name) {
        let text = this.setLists.get(name);
        if (text === undefined) {
            const items = Object.entries(LIFECYCLE[name].writes).map(([column, source]) => {
                if (source === 'null')
                    return `${column} = NULL`;
                if (source === 'next')
                    return `${column} = ${column} + 1`;
                if (source === 'lease')
                    return `${column} = ${this.d.clockMs} + ?`;
                return `${column} = ?`;
            });
            if (LIFECYCLE[name].recorded)
                items.push(`changed_at = ${this.d.changedAt}${this.d.numberEvent}`);
            this.setLists.set(name, (text = items.join(', ')));
        }
        return text;
    }
    /** The values of a change's SET list, in its order. */
    setValues(name, inputs) {
        const values = [];
        for (const source of Object.values(LIFECYCLE[name].writes)) {
            if (source === 'state')
                values.push(inputs.transition.state);
            else if (source === 'message')
                values.push(this.d.bytes(inputs.transition.status_message));
            else if (source === 'code')
                values.push(inputs.transition.error_code);
            else if (source === 'at')
                values.push(inputs.at);
            else if (source === 'owner')
                values.push(inputs.owner);
            else if (source === 'lease')
                values.push(inputs.leaseMs);
        }
        return values;
    }
}

;// CONCATENATED MODULE: ./src/executor/store/claim-sql.ts
// The statements of a fair claim and of a run's hold, for both databases (sql-store.ts runs them).
//
// Fair claim: teams take turns. team_turns keeps, per team, the number of the claim that last took
// one of its runs; a trigger of the migration moves it as a run becomes INPROGRESS, inside the
// claim's own transaction (no second statement, no second commit). The teams with a queued run
// that may go (its environment has room, no live hold is on it, the team is below its running cap)
// come in the order of that number, oldest first (a team never served first of all; a tie goes to
// the team with the older such run), and the claim takes the first team's oldest such run. The
// teams with queued runs are found by a skip over the (team, seq) index of queued runs, one probe
// per team, so a claim costs the number of teams waiting, not the length of the queue.
//
// Hold: a run whose files another run reads (a run created with its `conversation_id`) is held by
// that reader under a lease: only an ended run can be held, and a queued run (a follow-up of it)
// is not claimed while a live hold is on it. Hold and claim both change the run's row, guarded by
// its state, so on PostgreSQL the row lock orders them: whichever commits first, the other sees it.



/** At most this many teams are tried by one claim (another node may take each one's run first). */
const CLAIM_CANDIDATES = 16;
const QUEUED = stateIn([CREATED_STATE]);
const RUNNING = stateIn([CLAIMED_STATE]);
class ClaimSql {
    d;
    constructor(d) {
        this.d = d;
    }
    /** A queued run's row may be claimed: its environment has room and no live hold is on it. */
    eligible(excluded) {
        const skip = excluded.length > 0 ? `AND environment_id NOT IN (${excluded.map(() => '?').join(', ')})` : '';
        return sql(`${skip} AND (held_by IS NULL OR held_until < ${this.d.clockMs})`, ...excluded);
    }
    /** Below the team's running cap (`team` is SQL naming the team); no condition when 0 (no cap). */
    belowCap(team, maxRunning, teamValue) {
        if (maxRunning <= 0)
            return sql('');
        return sql(`AND (SELECT COUNT(*) FROM (SELECT 1 FROM runs WHERE team = ${team} AND ${RUNNING} LIMIT ?)
        AS running) < ?`, ...(teamValue === undefined ? [] : [teamValue]), maxRunning, maxRunning);
    }
    /**
     * The team's queued runs, oldest first, as a range over the (team, seq) index rather than `team =`:
     * PostgreSQL plans a lookup correlated to the outer team once for every team, and with `=` it may
     * walk the whole queue in seq order to find a small team's run; over the range it walks only the
     * team's own queued runs, whatever the planner thinks of the team's size.
     */
    ofTeam(team) {
        return `${QUEUED} AND team >= ${team} AND team <= ${team}`;
    }
    /** The teams whose turn it is, in order: each has a queued run that may go now. */
    candidates(excluded, maxRunning) {
        const eligible = this.eligible(excluded);
        const cap = this.belowCap('queued.team', maxRunning);
        return sql(`WITH RECURSIVE queued(team) AS (
         SELECT (SELECT team FROM runs WHERE ${QUEUED} ORDER BY team LIMIT 1)
         UNION ALL
         SELECT (SELECT team FROM runs WHERE ${QUEUED} AND team > queued.team ORDER BY team LIMIT 1)
           FROM queued WHERE queued.team IS NOT NULL
       ),
       waiting AS (
         SELECT queued.team AS team,
           (SELECT seq FROM runs WHERE ${this.ofTeam('queued.team')} ${eligible.text} ORDER BY team, seq LIMIT 1)
             AS first_seq
         FROM queued WHERE queued.team IS NOT NULL ${cap.text}
       )
       SELECT waiting.team AS team FROM waiting LEFT JOIN team_turns ON team_turns.team = waiting.team
       WHERE waiting.first_seq IS NOT NULL
       ORDER BY COALESCE(team_turns.turn, 0), waiting.first_seq
       LIMIT ?`, ...eligible.values, ...cap.values, CLAIM_CANDIDATES);
    }
    /** The WHERE of a claim of the team's oldest queued run that may go (rows others lock are skipped). */
    oldestOf(team, excluded, maxRunning) {
        const eligible = this.eligible(excluded);
        const cap = this.belowCap('?', maxRunning, team);
        return sql(`seq = (SELECT seq FROM runs WHERE ${this.ofTeam('?')} ${eligible.text} ${cap.text}
         ORDER BY team, seq LIMIT 1 ${this.d.skipLocked})`, team, team, ...eligible.values, ...cap.values);
    }
    /** Holds an ended run of the team for `holder`, unless another live hold is on it. */
    hold(team, runId, holder, leaseMs) {
        const now = this.d.clockMs;
        return sql(`UPDATE runs SET held_by = ?, held_until = ${now} + ?
       WHERE run_id = ? AND team = ? AND ${stateIn(TERMINAL_STATES)}
         AND (held_by IS NULL OR held_by = ? OR held_until < ${now})`, holder, leaseMs, runId, team, holder);
    }
    /** Gives up `holder`'s hold of a run (one that expired and was taken by another stays theirs). */
    release(runId, holder) {
        return sql('UPDATE runs SET held_by = NULL, held_until = NULL WHERE run_id = ? AND held_by = ?', runId, holder);
    }
    /** The runs a live hold is on. */
    held() {
        return sql(
        // No ORDER BY: SQLite would walk the whole table in run_id order rather than sort the few
        // held runs the partial index finds (the caller sorts them).
        `SELECT run_id FROM runs WHERE held_by IS NOT NULL AND held_until >= ${this.d.clockMs}`);
    }
}

;// CONCATENATED MODULE: ./src/executor/store/list-query.ts
// The list query's WHERE and ORDER BY, for both SQL dialects: one place says what each filter and
// sort means, so SQLite and PostgreSQL answer a list the same way.
/** Conditions and order for `SELECT … FROM runs WHERE ${where} ORDER BY ${order} LIMIT ?`. */
function listRunsSql(dialect, team, query) {
    const values = [];
    // `?` on both: the dialect numbers them where it must (postgres/connection.ts).
    const p = (value) => {
        values.push(value);
        return '?';
    };
    const where = [`team = ${p(team)}`];
    if (query.beforeSeq !== undefined)
        where.push(`seq < ${p(query.beforeSeq)}`);
    if (query.states && query.states.length > 0) {
        where.push(dialect === 'postgres'
            ? `state = ANY(${p(query.states)}::text[])`
            : `state IN (${query.states.map(state => p(state)).join(', ')})`);
    }
    if (query.environmentId !== undefined)
        where.push(`environment_id = ${p(query.environmentId)}`);
    if (query.createdAfter !== undefined)
        where.push(`created_at > ${p(query.createdAfter)}`);
    if (query.createdBefore !== undefined)
        where.push(`created_at < ${p(query.createdBefore)}`);
    if (query.updatedAfter !== undefined)
        where.push(`updated_at > ${p(query.updatedAfter)}`);
    if (query.creatorUid !== undefined)
        where.push(`creator_uid = ${p(query.creatorUid)}`);
    for (const [field, value] of [
        ['name', query.name],
        ['model_id', query.modelId]
    ]) {
        if (value === undefined)
            continue;
        where.push(dialect === 'postgres'
            ? `(config::json ->> '${field}') = ${p(value)}`
            : `json_extract(config, '$.${field}') = ${p(value)}`);
    }
    if (query.scheduleId !== undefined) {
        where.push(dialect === 'postgres'
            ? `(extra::json ->> 'schedule_id') = ${p(query.scheduleId)}`
            : `json_extract(extra, '$.schedule_id') = ${p(query.scheduleId)}`);
    }
    if (query.search !== undefined)
        where.push(searchCondition(dialect, query.search, p));
    // The create request's metadata pairs are rows of run_metadata, indexed by (team, key, value).
    for (const [key, value] of query.metadata ?? []) {
        where.push(`run_id IN (SELECT run_id FROM run_metadata WHERE team = ${p(team)} AND key = ${p(key)} AND value = ${p(value)})`);
    }
    if (query.ancestorRunId !== undefined)
        where.push(`run_id IN (SELECT run_id FROM run_ancestors WHERE team = ${p(team)} AND ancestor_run_id = ${p(query.ancestorRunId)})`);
    if (query.artifactType !== undefined) {
        where.push(`EXISTS (SELECT 1 FROM artifacts WHERE artifacts.run_id = runs.run_id AND artifacts.artifact_type = ${p(query.artifactType)})`);
    }
    const desc = (query.sortOrder ?? 'desc') === 'desc';
    const cmp = desc ? '<' : '>';
    const dir = desc ? 'DESC' : 'ASC';
    const after = query.after;
    if ((query.sortBy ?? 'created_at') === 'updated_at') {
        if (after) {
            const at = after.updatedAt ?? '';
            where.push(`(updated_at ${cmp} ${p(at)} OR (updated_at = ${p(at)} AND seq ${cmp} ${p(after.seq)}))`);
        }
        return { where: where.join(' AND '), order: `updated_at ${dir}, seq ${dir}`, values };
    }
    if (after)
        where.push(`seq ${cmp} ${p(after.seq)}`);
    return { where: where.join(' AND '), order: `seq ${dir}`, values };
}
/**
 * Title or prompt contains the text, ASCII letters in either case, the same in both stores:
 * SQLite's lower() folds only ASCII; PostgreSQL keeps title and prompt as bytes (they may hold NUL),
 * so there the bytes are matched as hex at a byte boundary, letters as either case's byte.
 */
function searchCondition(dialect, text, p) {
    if (dialect === 'sqlite') {
        return `(instr(lower(coalesce(title, '')), lower(${p(text)})) > 0 OR instr(lower(prompt), lower(${p(text)})) > 0)`;
    }
    let pattern = '';
    for (const byte of Buffer.from(text)) {
        const hex = (b) => b.toString(16).padStart(2, '0');
        const letter = (byte | 0x20) >= 0x61 && (byte | 0x20) <= 0x7a;
        pattern += letter ? `(?:${hex(byte & ~0x20)}|${hex(byte | 0x20)})` : hex(byte);
    }
    const regex = `^(?:..)*?${pattern}`;
    return `(encode(coalesce(title, ''::bytea), 'hex') ~ ${p(regex)} OR encode(prompt, 'hex') ~ ${p(regex)})`;
}

;// CONCATENATED MODULE: ./src/executor/store/key-cache.ts
// API keys held in memory, so an authenticated request does not read the keys table each time.
// Correctness over speed: the store says when the cache may be trusted (SQLite: no key was written
// since it was filled, by any connection, by the key_changes counter that triggers on api_keys move;
// PostgreSQL: the notification connection is up and no key notification came), and empties it on
// every key write of its own. A lookup that
// was in flight while the cache was emptied is not kept, so a revocation is never undone by it.
// Only keys that exist are kept: made-up keys cannot grow it, and their lookups go to the table.
const MAX_KEYS = 10_000;
class KeyCache {
    keys = new Map();
    generation = 0;
    /** Forgets every key (a key was created or revoked, here or possibly elsewhere). */
    clear() {
        this.keys.clear();
        this.generation++;
    }
    /** The key with this hash, from memory when there, else from `load` (kept when found). */
    async find(hash, load) {
        const cached = this.keys.get(hash);
        if (cached)
            return cached;
        const generation = this.generation;
        const record = await load();
        if (record && generation === this.generation) {
            if (this.keys.size >= MAX_KEYS)
                this.keys.delete(this.keys.keys().next().value);
            this.keys.set(hash, record);
        }
        return record;
    }
}

;// CONCATENATED MODULE: ./src/executor/store/sql-accounts.ts
// The parts of the SQL store that are not a run's: API keys (with their cache), dashboard sessions,
// node heartbeats and the store's secrets. Written once for both databases, like the runs
// (sql-store.ts, which extends this class); a dialect (dialect.ts) runs the statements.


class SqlAccountStore {
    d;
    kind;
    shared;
    keys = new KeyCache();
    constructor(d) {
        this.d = d;
        this.kind = d.kind;
        this.shared = d.shared;
        d.onKeysChanged(() => this.keys.clear());
    }
    // keys
    async createKey(key) {
        this.keys.clear();
        await this.withKeysChanged(sql(`INSERT INTO api_keys (id, team, kind, name, hash, hint, created_at, revoked_at)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?)`, key.id, key.team, key.kind, key.name, key.hash, key.hint, key.created_at, key.revoked_at));
    }
    /** From the key cache while the dialect says it may be trusted. */
    async findKeyByHash(hash) {
        const load = async () => (await this.d.all(sql('SELECT * FROM api_keys WHERE hash = ?', hash)))[0];
        const state = this.d.keyCacheState();
        if (state === 'untrusted')
            return load();
        if (state === 'stale')
            this.keys.clear();
        return this.keys.find(hash, load);
    }
    async listKeys() {
        return this.d.all(sql('SELECT * FROM api_keys ORDER BY created_at, id'));
    }
    async revokeKey(id, at) {
        this.keys.clear();
        const changed = await this.withKeysChanged(sql('UPDATE api_keys SET revoked_at = ? WHERE id = ? AND revoked_at IS NULL', at, id));
        this.keys.clear();
        return changed > 0;
    }
    // run tokens: never cached, so a token removed (its turn ended) is refused at once on every node
    async createRunToken(token) {
        await this.d.run(sql(`INSERT INTO run_tokens (hash, via_hash, run_id, team, environment_id, created_at)
         VALUES (?, ?, ?, ?, ?, ?)`, token.hash, token.via_hash, token.run_id, token.team, token.environment_id, token.created_at));
    }
    async findRunToken(hash) {
        return (await this.d.all(sql('SELECT * FROM run_tokens WHERE hash = ?', hash)))[0];
    }
    async deleteRunTokens(runId) {
        await this.d.run(sql('DELETE FROM run_tokens WHERE run_id = ?', runId));
    }
    /** A key write, and the dialect's word to other processes in the same transaction. */
    async withKeysChanged(write) {
        const tell = this.d.keysChanged();
        if (!tell)
            return this.d.run(write);
        return (await this.d.batch([write, tell]))[0];
    }
    // dashboard sessions
    async createWebSession(session) {
        await this.d.run(sql('DELETE FROM web_sessions WHERE expires_at <= ?', Date.now()));
        await this.d.run(sql('INSERT INTO web_sessions (id_hash, key_id, team, created_at, expires_at) VALUES (?, ?, ?, ?, ?)', session.id_hash, session.key_id, session.team, session.created_at, session.expires_at));
    }
    async findWebSession(idHash, now) {
        const row = (await this.d.all(sql(`SELECT s.*, k.name AS key_name FROM web_sessions s JOIN api_keys k ON k.id = s.key_id
           WHERE s.id_hash = ? AND s.expires_at > ? AND k.revoked_at IS NULL AND k.team = s.team`, idHash, now)))[0];
        return row && { ...row, expires_at: Number(row.expires_at) };
    }
    async deleteWebSession(idHash) {
        await this.d.run(sql('DELETE FROM web_sessions WHERE id_hash = ?', idHash));
    }
    // node heartbeats
    async reportNode(node, forgetBefore) {
        await this.d.run(sql('DELETE FROM nodes WHERE seen_at < ?', forgetBefore));
        await this.d.run(sql(`INSERT INTO nodes (node_id, role, workers, busy, started_at, seen_at) VALUES (?, ?, ?, ?, ?, ?)
         ON CONFLICT (node_id) DO UPDATE SET workers = excluded.workers, busy = excluded.busy, seen_at = excluded.seen_at`, node.node_id, node.role, node.workers, node.busy, node.started_at, node.seen_at));
    }
    async listNodes() {
        const rows = await this.d.all(sql('SELECT * FROM nodes ORDER BY started_at, node_id'));
        return rows.map(row => ({ ...row, seen_at: Number(row.seen_at) }));
    }
    async removeNode(nodeId) {
        await this.d.run(sql('DELETE FROM nodes WHERE node_id = ?', nodeId));
    }
    /** The first process to ask makes it; every other one reads the same. */
    async getSecret(name, create) {
        await this.d.run(sql('INSERT INTO secrets (name, value) VALUES (?, ?) ON CONFLICT (name) DO NOTHING', name, create()));
        const [row] = await this.d.all(sql('SELECT value FROM secrets WHERE name = ?', name));
        return row.value;
    }
    async ping() {
        await this.d.all(sql('SELECT 1 AS one'));
    }
}

;// CONCATENATED MODULE: ./src/executor/store/sql-schedules.ts
// The schedules table, for both databases: a schedule's settings as one JSON column (`spec`), its
// state (enabled, the next due time in ms) and its history (last fire, last run, last spawn
// error). Every read and write a team makes is scoped to the team; the scheduler reads due
// schedules of every team. A due time is moved on by a guarded UPDATE (`WHERE next_run_ms = the
// due time`), so of several nodes handling the same fire only one records it; the run itself is
// made exactly once by the runs table's idempotency index (scheduler.ts).

const COLUMNS = `id, team, spec, enabled, next_run_ms, last_ran, last_run_id, last_spawn_error, created_by,
  created_at, updated_at`;
function scheduleOf(row) {
    return {
        ...row,
        spec: JSON.parse(row.spec),
        enabled: Number(row.enabled) === 1,
        next_run_ms: row.next_run_ms === null ? null : Number(row.next_run_ms),
        created_by: JSON.parse(row.created_by)
    };
}
class SqlScheduleStore {
    d;
    constructor(d) {
        this.d = d;
    }
    /** One statement counts the team's schedules and inserts (several nodes may pass it by creates in flight). */
    async createSchedule(s, maxPerTeam = Number.MAX_SAFE_INTEGER) {
        const inserted = await this.d.run(sql(`INSERT INTO schedules (${COLUMNS}) SELECT ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?
         WHERE (SELECT COUNT(*) FROM (SELECT 1 FROM schedules WHERE team = ? LIMIT ?) AS kept) < ?`, s.id, s.team, JSON.stringify(s.spec), s.enabled ? 1 : 0, s.next_run_ms, s.last_ran, s.last_run_id, s.last_spawn_error, JSON.stringify(s.created_by), s.created_at, s.updated_at, s.team, maxPerTeam, maxPerTeam));
        return inserted > 0;
    }
    async getSchedule(team, id) {
        const [row] = await this.d.all(sql(`SELECT ${COLUMNS} FROM schedules WHERE id = ? AND team = ?`, id, team));
        return row && scheduleOf(row);
    }
    async listSchedules(team) {
        const rows = await this.d.all(sql(`SELECT ${COLUMNS} FROM schedules WHERE team = ?`, team));
        return rows
            .map(scheduleOf)
            .sort((a, b) => a.spec.name.localeCompare(b.spec.name) || a.id.localeCompare(b.id));
    }
    async updateSchedule(team, id, change) {
        const changed = await this.d.run(sql('UPDATE schedules SET spec = ?, enabled = ?, next_run_ms = ?, updated_at = ? WHERE id = ? AND team = ?', JSON.stringify(change.spec), change.enabled ? 1 : 0, change.nextRunMs, change.at, id, team));
        return changed > 0;
    }
    async deleteSchedule(team, id) {
        return (await this.d.run(sql('DELETE FROM schedules WHERE id = ? AND team = ?', id, team))) > 0;
    }
    async dueSchedules(nowMs, limit) {
        const rows = await this.d.all(sql(`SELECT ${COLUMNS} FROM schedules WHERE enabled = 1 AND next_run_ms <= ? ORDER BY next_run_ms LIMIT ?`, nowMs, limit));
        return rows.map(scheduleOf);
    }
    async recordFire(id, dueMs, record) {
        const sets = ['next_run_ms = ?'];
        const values = [record.nextRunMs];
        if (record.ran) {
            sets.push('last_ran = ?', 'last_run_id = ?');
            values.push(record.ran.at, record.ran.runId);
        }
        if (record.error !== undefined) {
            sets.push('last_spawn_error = ?');
            values.push(record.error);
        }
        const changed = await this.d.run(sql(`UPDATE schedules SET ${sets.join(', ')} WHERE id = ? AND enabled = 1 AND next_run_ms = ?`, ...values, id, dueMs));
        return changed > 0;
    }
}

;// CONCATENATED MODULE: ./src/executor/store/sql-webhooks.ts
// The webhook tables, for both databases: a team's endpoints (url, the event types it takes, its
// signing secret and the one before the last rotation) and the deliveries to them. A delivery row
// is written by the database's triggers (migrations.ts) in the same transaction as the change it
// tells of: a change committed always has its deliveries, and a crash loses none. The deliverer
// (webhooks/deliverer.ts) takes a due delivery under a lease, as a worker takes a run: on
// PostgreSQL the pick skips rows another node locks, so exactly one node attempts a delivery at a
// time; a lease left by a node that stopped expires and another takes it.

const ENDPOINT_COLUMNS = `id, team, url, events, description, secret, previous_secret, previous_until, source,
  created_at, disabled_at, disabled_reason`;
const DELIVERY_COLUMNS = `id, endpoint_id, team, run_id, event_type, state, previous_state, status_message,
  error_code, created_at, created_ms, body, status, attempts, next_attempt_ms, last_status, last_error,
  last_attempt_at`;
/** The event types as the triggers look them up: `,run.queued,run.failed,` (null: all). */
function eventsColumn(events) {
    return events === null ? null : `,${events.join(',')},`;
}
function webhookOf(row) {
    const { previous_until, events, source, ...rest } = row;
    return {
        ...rest,
        events: events === null ? null : events.split(',').filter(Boolean),
        source: source === 'config' ? 'config' : 'api',
        previous_until_ms: previous_until === null ? null : Number(previous_until)
    };
}
const numberOrNull = (value) => (value === null || value === undefined ? null : Number(value));
function deliveryOf(row) {
    return {
        ...row,
        status: row.status,
        created_ms: Number(row.created_ms),
        attempts: Number(row.attempts),
        next_attempt_ms: numberOrNull(row.next_attempt_ms),
        last_status: numberOrNull(row.last_status)
    };
}
class SqlWebhookStore {
    d;
    constructor(d) {
        this.d = d;
    }
    /** One statement counts the team's endpoints and inserts (creates in flight on other nodes may pass it). */
    async createWebhook(w, maxPerTeam) {
        const inserted = await this.d.run(sql(`INSERT INTO webhook_endpoints (${ENDPOINT_COLUMNS}) SELECT ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?
         WHERE (SELECT COUNT(*) FROM (SELECT 1 FROM webhook_endpoints WHERE team = ? LIMIT ?) AS kept) < ?`, w.id, w.team, w.url, eventsColumn(w.events), w.description, w.secret, w.previous_secret, w.previous_until_ms, w.source, w.created_at, w.disabled_at, w.disabled_reason, w.team, maxPerTeam, maxPerTeam));
        return inserted > 0;
    }
    async getWebhook(team, id) {
        const [row] = await this.d.all(sql(`SELECT ${ENDPOINT_COLUMNS} FROM webhook_endpoints WHERE id = ? AND team = ?`, id, team));
        return row && webhookOf(row);
    }
    async webhookById(id) {
        const [row] = await this.d.all(sql(`SELECT ${ENDPOINT_COLUMNS} FROM webhook_endpoints WHERE id = ?`, id));
        return row && webhookOf(row);
    }
    async listWebhooks(team) {
        const rows = await this.d.all(sql(`SELECT ${ENDPOINT_COLUMNS} FROM webhook_endpoints WHERE team = ? ORDER BY created_at, id`, team));
        return rows.map(webhookOf);
    }
    async deleteWebhook(team, id) {
        const [, deleted] = await this.d.batch([
            sql('DELETE FROM webhook_deliveries WHERE endpoint_id IN (SELECT id FROM webhook_endpoints WHERE id = ? AND team = ?)', id, team),
            sql('DELETE FROM webhook_endpoints WHERE id = ? AND team = ?', id, team)
        ]);
        return (deleted ?? 0) > 0;
    }
    async rotateSecret(team, id, secret, previousUntilMs) {
        const changed = await this.d.run(sql(`UPDATE webhook_endpoints SET previous_secret = secret, previous_until = ?, secret = ?
         WHERE id = ? AND team = ?`, previousUntilMs, secret, id, team));
        return changed > 0;
    }
    async disableWebhook(id, at, reason) {
        await this.d.batch([
            sql('UPDATE webhook_endpoints SET disabled_at = ?, disabled_reason = ? WHERE id = ? AND disabled_at IS NULL', at, reason, id),
            sql(`UPDATE webhook_deliveries SET status = 'failed', next_attempt_ms = NULL, last_error = ?
         WHERE endpoint_id = ? AND status = 'pending' AND lease_owner IS NULL`, `not sent: the endpoint was disabled (${reason})`, id)
        ]);
    }
    async syncDeclared(declared) {
        const statements = declared.map(w => sql(`INSERT INTO webhook_endpoints (${ENDPOINT_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, NULL, NULL)
         ON CONFLICT (id) DO UPDATE SET url = excluded.url, events = excluded.events,
           description = excluded.description, secret = excluded.secret, previous_secret = NULL,
           previous_until = NULL, disabled_at = NULL, disabled_reason = NULL
         WHERE webhook_endpoints.url <> excluded.url OR webhook_endpoints.secret <> excluded.secret
           OR COALESCE(webhook_endpoints.events, '') <> COALESCE(excluded.events, '')
           OR webhook_endpoints.description <> excluded.description`, w.id, w.team, w.url, eventsColumn(w.events), w.description, w.secret, null, null, 'config', w.created_at));
        const kept = declared.map(w => w.id);
        const others = kept.length > 0 ? `AND id NOT IN (${kept.map(() => '?').join(', ')})` : '';
        const gone = `SELECT id FROM webhook_endpoints WHERE source = 'config' ${others}`;
        statements.push(sql(`DELETE FROM webhook_deliveries WHERE endpoint_id IN (${gone})`, ...kept));
        statements.push(sql(`DELETE FROM webhook_endpoints WHERE source = 'config' ${others}`, ...kept));
        await this.d.batch(statements);
    }
    async anyWebhooks() {
        const rows = await this.d.all(sql('SELECT 1 AS one FROM webhook_endpoints WHERE disabled_at IS NULL LIMIT 1'));
        return rows.length > 0;
    }
    async listDeliveries(endpointId, limit) {
        const rows = await this.d.all(sql(`SELECT ${DELIVERY_COLUMNS} FROM webhook_deliveries WHERE endpoint_id = ?
         ORDER BY created_ms DESC, id DESC LIMIT ?`, endpointId, limit));
        return rows.map(deliveryOf);
    }
    async getDelivery(endpointId, id) {
        const [row] = await this.d.all(sql(`SELECT ${DELIVERY_COLUMNS} FROM webhook_deliveries WHERE id = ? AND endpoint_id = ?`, id, endpointId));
        return row && deliveryOf(row);
    }
    async retryDelivery(team, endpointId, id) {
        const [, changed] = await this.d.batch([
            sql(`UPDATE webhook_endpoints SET disabled_at = NULL, disabled_reason = NULL
         WHERE id = ? AND team = ? AND EXISTS (SELECT 1 FROM webhook_deliveries WHERE id = ? AND endpoint_id = ?)`, endpointId, team, id, endpointId),
            sql(`UPDATE webhook_deliveries SET status = 'pending', next_attempt_ms = ${this.d.clockMs}
         WHERE id = ? AND endpoint_id = ? AND team = ? AND lease_owner IS NULL`, id, endpointId, team)
        ]);
        if ((changed ?? 0) > 0)
            return true;
        // One under way now is retried by its own schedule if it fails.
        return (await this.getDelivery(endpointId, id))?.team === team;
    }
    async claimDelivery(owner, leaseMs, perEndpoint, perTeam) {
        const now = this.d.clockMs;
        const [row] = await this.d.all(sql(`UPDATE webhook_deliveries SET lease_owner = ?, lease_expires_at = ${now} + ?, attempts = attempts + 1
         WHERE id = (
           SELECT d.id FROM webhook_deliveries d
           WHERE d.status = 'pending' AND d.next_attempt_ms <= ${now}
             AND (d.lease_owner IS NULL OR d.lease_expires_at < ${now})
             AND (SELECT COUNT(*) FROM (SELECT 1 FROM webhook_deliveries o WHERE o.endpoint_id = d.endpoint_id
               AND o.status = 'pending' AND o.lease_expires_at >= ${now} LIMIT ?) AS busy) < ?
             AND (SELECT COUNT(*) FROM (SELECT 1 FROM webhook_deliveries t WHERE t.team = d.team
               AND t.status = 'pending' AND t.lease_expires_at >= ${now} LIMIT ?) AS team_busy) < ?
           ORDER BY d.next_attempt_ms LIMIT 1 ${this.d.skipLocked})
         RETURNING ${DELIVERY_COLUMNS}`, owner, leaseMs, perEndpoint, perEndpoint, perTeam, perTeam));
        return row && deliveryOf(row);
    }
    async setBody(id, owner, body) {
        await this.d.run(sql('UPDATE webhook_deliveries SET body = ? WHERE id = ? AND lease_owner = ?', body, id, owner));
    }
    async finishAttempt(id, owner, result) {
        const next = result.retryInMs === undefined ? 'NULL' : `${this.d.clockMs} + ?`;
        const changed = await this.d.run(sql(`UPDATE webhook_deliveries SET status = ?, last_status = ?, last_error = ?, last_attempt_at = ?,
           next_attempt_ms = ${next}, lease_owner = NULL, lease_expires_at = NULL
         WHERE id = ? AND lease_owner = ?`, result.outcome, result.status, result.error, result.at, ...(result.retryInMs === undefined ? [] : [Math.round(result.retryInMs)]), id, owner));
        return changed > 0;
    }
    async pruneDeliveries(beforeMs) {
        return this.d.run(sql(`DELETE FROM webhook_deliveries WHERE status <> 'pending' AND created_ms < ?`, beforeMs));
    }
}

;// CONCATENATED MODULE: ./src/executor/store/sql-store.ts
// RunStore, written once for both databases: a run's statements, each change of a run built from
// the lifecycle table (runs/lifecycle.ts, through change-sql.ts), its transcript and its artifacts.
// Keys, sessions, heartbeats and secrets are sql-accounts.ts, which this class extends. A dialect
// (dialect.ts) supplies the few pieces of SQL the databases write differently and runs the
// statements; sqlite.ts and postgres.ts open one.












/**
 * The create request's metadata pairs (kept in its extra fields) as rows of run_metadata, written
 * with the run in its transaction: the list's metadata filter looks them up by index, never parsing
 * a run's JSON. Undefined when there are none.
 */
function metadataRows(extra) {
    const metadata = extra.metadata;
    if (metadata === null || typeof metadata !== 'object' || Array.isArray(metadata))
        return undefined;
    const pairs = Object.entries(metadata).filter(([, value]) => typeof value === 'string');
    if (pairs.length === 0)
        return undefined;
    return run => sql(`INSERT INTO run_metadata (run_id, team, key, value) VALUES ${pairs.map(() => '(?, ?, ?, ?)').join(', ')}`, ...pairs.flatMap(([key, value]) => [run.run_id, run.team, key, value]));
}
/**
 * A child run's ancestors as rows of run_ancestors (its parent at depth 1, the parent's ancestors
 * one deeper), written with the run: the list's ancestor_run_id filter and a cancel's cascade look
 * them up by index. The route has checked the parent is the team's. Undefined for a root run.
 */
function ancestorRows(extra) {
    const parent = extra.parent_run_id;
    if (typeof parent !== 'string')
        return undefined;
    return run => sql(`INSERT INTO run_ancestors (run_id, team, ancestor_run_id, depth)
       SELECT ?, ?, ?, 1
       UNION ALL SELECT ?, ?, ancestor_run_id, depth + 1 FROM run_ancestors WHERE run_id = ? AND team = ?`, run.run_id, run.team, parent, run.run_id, run.team, parent, run.team);
}
/** The statements a create writes beside the run; undefined when there are none (no transaction needed). */
function createRows(extraJson) {
    const extra = JSON.parse(extraJson);
    const makers = [metadataRows(extra), ancestorRows(extra)].filter(make => make !== undefined);
    if (makers.length === 0)
        return undefined;
    return run => makers.map(make => make(run));
}
/** Columns of an artifact without its bytes. */
const ARTIFACT_COLUMNS = `artifact_uid, run_id, team, artifact_type, filepath, filename, mime_type, size,
  description, created_at`;
class SqlRunStore extends SqlAccountStore {
    changes;
    claims;
    schedules;
    webhooks;
    constructor(d) {
        super(d);
        this.changes = new ChangeSql(d);
        this.claims = new ClaimSql(d);
        this.schedules = new SqlScheduleStore(d);
        this.webhooks = new SqlWebhookStore(d);
    }
    /** Applies a change to the runs `where` picks (among those in a state it may start from). */
    apply(name, inputs, where, options) {
        return this.d.change(this.changes.update(name, inputs, where), this.changes.event(inputs.transition), options);
    }
    /**
     * The one guard of the follow-up race (a follow-up recorded while the run's last turn ends): an
     * ended run is queued again while a follow-up of it waits that no turn took (a `turn` event lists
     * the seqs of the follow-ups it took). Both ways the race can go meet here: the follow-up's own
     * write looks after recording the message (submitFollowup), and a finish looks in its transaction
     * (finishRun), so whichever commits second queues the run, and a follow-up a turn took never does.
     */
    requeueWaiting(at, where) {
        const waits = `EXISTS (SELECT 1 FROM events f WHERE f.run_id = runs.run_id AND f.kind = 'followup'
      AND NOT EXISTS (SELECT 1 FROM events t WHERE t.run_id = f.run_id AND t.kind = 'turn' AND t.seq > f.seq
        AND ${this.d.listHas('t.data', 'followups', 'f.seq')}))`;
        const inputs = { transition: followup(), at };
        return {
            statement: this.changes.update('followup', inputs, sql(`${where.text} AND ${waits}`, ...where.values)),
            event: this.changes.event(inputs.transition)
        };
    }
    /** Moves whenever a write is committed here or by another process (SQLite); undefined on PostgreSQL. */
    changeStamp() {
        return this.d.changeStamp();
    }
    // runs, as the API sees them
    /**
     * The insert, admitted while the node's queue and the team's are under their limits (the dialect
     * counts them: in the statement on PostgreSQL, once per group commit on SQLite), with the state
     * event; the unique index settles concurrent creates with one key. A look for an earlier run with
     * the key comes first, so a replay is answered even when the queue is full.
     */
    async createRun(run, idempotency, maxQueued, maxQueuedPerTeam = maxQueued) {
        if (idempotency) {
            const replay = await this.replay(run.team, idempotency);
            if (replay)
                return replay;
        }
        const rule = LIFECYCLE.create;
        const transition = lifecycle_create();
        const own = Object.keys(rule.writes);
        const ownValues = this.changes.setValues('create', { transition, at: run.created_at });
        const bytes = `CAST(? AS ${this.d.textType})`;
        // Counting stops at the limit, so a long queue does not make every create slower. Nodes count
        // at once, so on PostgreSQL the limit can be passed by the number of creates in flight.
        const { queued, teamQueued } = queueCounts(run.team, maxQueued, maxQueuedPerTeam);
        const [created] = await this.d.create({
            insert: room => sql(`INSERT INTO runs (run_id, team, environment_id, title, prompt, config, extra, creator_type, creator_uid,
             creator_name, workload, idempotency_key, idempotency_hash, changed_at, ${own.join(', ')})
           SELECT ?, ?, ?, ${bytes}, ${bytes}, ?, ?, ?, ?, ?, ?, ?, ?, ${this.d.changedAt}, ${own.map(() => '?').join(', ')}
           WHERE ${room.text}
           ON CONFLICT (team, idempotency_key) WHERE idempotency_key IS NOT NULL DO NOTHING`, run.run_id, run.team, run.environment_id, this.d.bytes(run.title), this.d.bytes(run.prompt), run.config, run.extra, run.creator_type, run.creator_uid, run.creator_name, run.workload ?? null, idempotency?.key ?? null, idempotency?.requestHash ?? null, ...ownValues, ...room.values),
            queues: [
                { name: 'queued', count: queued, limit: maxQueued },
                { name: `queued by team ${run.team}`, count: teamQueued, limit: maxQueuedPerTeam }
            ],
            event: this.changes.event(transition),
            follow: createRows(run.extra)
        });
        if (created)
            return { kind: 'created', run: created };
        // Nothing inserted: a run with this key was created after our look (the unique index
        // decided), or a queue is full: the node's when it holds its limit now, else the team's.
        const replay = idempotency && (await this.replay(run.team, idempotency));
        if (replay)
            return replay;
        const [count] = await this.d.all(queued);
        return Number(count?.n ?? 0) >= maxQueued ? { kind: 'queue_full' } : { kind: 'team_queue_full' };
    }
    async replay(team, idempotency) {
        const [row] = await this.d.all(sql(`SELECT ${RUN_COLUMNS}, idempotency_hash FROM runs WHERE team = ? AND idempotency_key = ?`, team, idempotency.key));
        if (!row)
            return undefined;
        return row.idempotency_hash === idempotency.requestHash
            ? { kind: 'replayed', run: strip(row) }
            : { kind: 'key_reused' };
    }
    async getRun(team, runId) {
        return (await this.d.all(sql(`SELECT ${RUN_COLUMNS} FROM runs WHERE run_id = ? AND team = ?`, runId, team)))[0];
    }
    async getRunAnyTeam(runId) {
        return (await this.d.all(sql(`SELECT ${RUN_COLUMNS} FROM runs WHERE run_id = ?`, runId)))[0];
    }
    async listRuns(team, query) {
        const { where, order, values } = listRunsSql(this.d.kind, team, query);
        const text = `SELECT ${RUN_COLUMNS} FROM runs WHERE ${where} ORDER BY ${order} LIMIT ?`;
        const max = query.maxWeight;
        if (max === undefined)
            return this.d.list(sql(text, ...values, query.limit));
        // Rows are read until their weight passes the page's and one more is seen (so the caller
        // knows there are more): large runs make short pages. The weight is in the text, so pages
        // kept for another weight are not taken for this one.
        let total = 0;
        let seen = 0;
        const weighed = sql(`${text} /* weight ${max} */`, ...values, query.limit);
        const rows = await this.d.list(weighed, run => {
            total += runWeight(run);
            return ++seen >= 2 && total > max;
        });
        return rows.slice(0, runsWithin(rows, max) + 1);
    }
    async countRunsByState(team) {
        const rows = await this.d.all(sql('SELECT state, COUNT(*) AS n FROM runs WHERE team = ? GROUP BY state', team));
        return Object.fromEntries(rows.map(row => [row.state, Number(row.n)]));
    }
    /**
     * One guarded statement: a run in a state cancel starts from ends; any other is told how it is.
     * A cancelled run's descendants that have not ended are cancelled with it, their status message
     * naming it.
     */
    async cancelRun(team, runId, at, reason) {
        const transition = lifecycle_cancelled(reason);
        const [cancelled] = await this.apply('cancel', { transition, at }, sql('run_id = ? AND team = ?', runId, team));
        if (cancelled) {
            await this.apply('cancel', { transition: finish(cancelledWithAncestor(runId)), at }, sql('run_id IN (SELECT run_id FROM run_ancestors WHERE team = ? AND ancestor_run_id = ?) AND team = ?', team, runId, team));
            return { kind: 'cancelled', run: cancelled };
        }
        const run = await this.getRun(team, runId);
        return run ? { kind: 'finished', run } : { kind: 'not_found' };
    }
    async ancestorCount(team, runId) {
        const [row] = await this.d.all(sql('SELECT COUNT(*) AS n FROM run_ancestors WHERE run_id = ? AND team = ?', runId, team));
        return Number(row?.n ?? 0);
    }
    async isDescendant(team, runId, ancestorRunId) {
        const rows = await this.d.all(sql('SELECT 1 AS one FROM run_ancestors WHERE run_id = ? AND team = ? AND ancestor_run_id = ?', runId, team, ancestorRunId));
        return rows.length > 0;
    }
    /**
     * The message is recorded and the run queued again if it has ended and the message still waits
     * (requeueWaiting), in one transaction: a worker that claims it finds the message there. A queued
     * run's first turn takes it, a running run's worker takes it after its turn (worker/turns.ts), or
     * its finish queues the run again. An ended run goes back to the queue: it takes a place there as
     * a create would, counted in that same transaction (Dialect.followup), so concurrent follow-ups of
     * ended runs cannot fill the node's queue or a team's past its limit; one refused so records
     * nothing (a message once recorded is never dropped).
     */
    async submitFollowup(team, runId, followup, at, continuableSince, queues) {
        const before = await this.getRun(team, runId);
        if (!before)
            return { kind: 'not_found' };
        if (allows('followup', before.state) &&
            (before.completed_at ?? before.updated_at) < continuableSince)
            return { kind: 'expired', run: before };
        const requeue = this.requeueWaiting(at, sql('run_id = ? AND team = ?', runId, team));
        const limits = queues ? queueCounts(team, queues.maxQueued, queues.maxQueuedPerTeam) : undefined;
        const written = await this.d.followup({
            runId,
            at,
            data: JSON.stringify({ message: followup.message, mode: followup.mode }),
            ended: sql(`SELECT 1 AS one FROM runs WHERE run_id = ? AND team = ? AND ${stateIn(LIFECYCLE.followup.from)}`, runId, team),
            queues: queues && limits
                ? [
                    { name: 'queued', count: limits.queued, limit: queues.maxQueued },
                    { name: `queued by team ${team}`, count: limits.teamQueued, limit: queues.maxQueuedPerTeam }
                ]
                : [],
            requeue: requeue.statement,
            event: requeue.event
        });
        if ('full' in written)
            return { kind: written.full === 'queued' ? 'queue_full' : 'team_queue_full' };
        const [run] = written.runs;
        return { kind: 'taken', run: run ?? (await this.getRun(team, runId)) ?? before };
    }
    // runs, as the worker sees them
    /**
     * Teams take turns (claim-sql.ts): the oldest claimable run of the first team in turn order. When
     * another node takes that run first (PostgreSQL skips rows others lock), the next team is tried.
     */
    async claimNext(owner, leaseMs, excluded, at, maxRunningPerTeam = 0) {
        const teams = await this.d.all(this.claims.candidates(excluded, maxRunningPerTeam));
        for (const { team } of teams) {
            const [run] = await this.apply('claim', { transition: claim(), at, owner, leaseMs }, this.claims.oldestOf(team, excluded, maxRunningPerTeam));
            if (run)
                return run;
        }
        return undefined;
    }
    async holdRun(team, runId, holder, leaseMs) {
        return (await this.d.run(this.claims.hold(team, runId, holder, leaseMs))) > 0;
    }
    async releaseRun(runId, holder) {
        return (await this.d.run(this.claims.release(runId, holder))) > 0;
    }
    async heldRuns() {
        return (await this.d.all(this.claims.held())).map(row => row.run_id).sort();
    }
    async findClaim(owner) {
        return (await this.d.all(sql(`SELECT ${RUN_COLUMNS} FROM runs WHERE state = '${CLAIMED_STATE}' AND lease_owner = ?`, owner)))[0];
    }
    async renewLease(runId, owner, leaseMs) {
        const changed = await this.d.run(this.changes.update('renew', { transition: claim(), at: '', leaseMs }, sql('run_id = ? AND lease_owner = ?', runId, owner)));
        return changed > 0;
    }
    async finishRun(runId, owner, outcome, at) {
        const transition = finish(outcome);
        // A run that ends other than cancelled is queued again at once if a follow-up waits.
        const requeue = this.requeueWaiting(at, sql('run_id = ?', runId));
        const [run] = await this.apply('finish', { transition, at }, sql('run_id = ? AND lease_owner = ?', runId, owner), outcome.state === 'CANCELLED'
            ? {}
            : { then: { statement: () => requeue.statement, event: requeue.event } });
        return run;
    }
    async failAbandoned(all, at, message) {
        const from = stateIn(LIFECYCLE.abandon.from);
        // Every node sweeps every second or so; almost always there is nothing to sweep, and one
        // indexed look is cheaper than the change.
        if (!all) {
            const expired = await this.d.all(sql(`SELECT 1 AS one FROM runs WHERE ${from} AND lease_expires_at < ${this.d.clockMs} LIMIT 1`));
            if (expired.length === 0)
                return [];
        }
        // Skipping locked rows: a run its worker is finishing right now is not abandoned, and two
        // nodes sweeping at once do not wait on each other.
        return this.apply('abandon', { transition: abandon(message), at }, sql(`seq IN (SELECT seq FROM runs WHERE ${from} AND (? = 1 OR lease_expires_at < ${this.d.clockMs}) ${this.d.skipLocked})`, all ? 1 : 0));
    }
    // transcript
    async appendEvent(runId, kind, data, at) {
        const seq = await this.d.appendEvent(runId, kind, JSON.stringify(data), at);
        return { ...data, seq, at, kind };
    }
    async listEvents(runId, page = {}) {
        const order = page.fromEnd ? 'DESC' : 'ASC';
        const kinds = page.kinds ?? [];
        const only = kinds.length > 0 ? `AND kind IN (${kinds.map(() => '?').join(', ')})` : '';
        const rows = await this.d.all(sql(`SELECT seq, at, kind, data FROM events WHERE run_id = ? AND seq > ? ${only} ORDER BY seq ${order} LIMIT ?`, runId, page.after ?? 0, ...kinds, page.limit ?? this.d.noLimit));
        if (page.fromEnd)
            rows.reverse();
        return rows.map(row => ({
            ...JSON.parse(row.data),
            seq: row.seq,
            at: row.at,
            kind: row.kind
        }));
    }
    async countEvents(runId, after) {
        const [row] = await this.d.all(sql('SELECT COUNT(*) AS n FROM events WHERE run_id = ? AND seq > ?', runId, after));
        return Number(row?.n ?? 0);
    }
    onEvent(listener) {
        return this.d.onEvent(listener);
    }
    async listStateEvents(team, runIds, since, limit) {
        if (runIds.length === 0)
            return [];
        const rows = await this.d.all(sql(`SELECT sequence, run_id, state, at FROM run_state_events
         WHERE run_id IN (${runIds.map(() => '?').join(', ')}) AND team = ? AND sequence > ?
         ORDER BY sequence LIMIT ?`, ...runIds, team, since, limit));
        return rows.map(row => ({ ...row, sequence: Number(row.sequence) }));
    }
    async runStates(team, runIds) {
        if (runIds.length === 0)
            return new Map();
        const rows = await this.d.all(sql(`SELECT run_id, state FROM runs WHERE run_id IN (${runIds.map(() => '?').join(', ')}) AND team = ?`, ...runIds, team));
        return new Map(rows.map(row => [row.run_id, row.state]));
    }
    // what a run produced
    async addArtifact(artifact, data, renamed = []) {
        const { run_id, team, artifact_type, created_at, ...file } = artifact;
        const entry = JSON.stringify(listEntryOf(artifact, data));
        await this.d.batch([
            sql(`INSERT INTO artifacts (artifact_uid, run_id, team, artifact_type, filepath, filename, mime_type, size,
           description, created_at, data) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`, artifact.artifact_uid, run_id, team, artifact_type, file.filepath, file.filename, file.mime_type, file.size, file.description ?? null, created_at, data),
            ...(renamed.length > 0
                ? await this.renames(run_id, renamed, entry)
                : [
                    sql(`UPDATE runs SET artifacts = ${this.d.appendJson('artifacts')} WHERE run_id = ?`, entry, run_id)
                ])
        ]);
    }
    async renameArtifacts(runId, renamed) {
        if (renamed.length > 0)
            await this.d.batch(await this.renames(runId, renamed));
    }
    /**
     * The statements that rename a run's artifacts, in their table and on the record's list (then
     * with `appended` added). The list is rewritten whole: only the worker that holds the run changes
     * it, so the list read here is the one the batch replaces.
     */
    async renames(runId, renamed, appended) {
        const [row] = await this.d.all(sql('SELECT artifacts FROM runs WHERE run_id = ?', runId));
        const list = parseList(row?.artifacts).map(item => renamedEntry(item, renamed));
        if (appended !== undefined)
            list.push(JSON.parse(appended));
        return [
            ...renamed.map(rename => sql('UPDATE artifacts SET filename = ?, filepath = ? WHERE artifact_uid = ? AND run_id = ?', rename.filename, rename.filename, rename.artifact_uid, runId)),
            sql('UPDATE runs SET artifacts = ? WHERE run_id = ?', JSON.stringify(list), runId)
        ];
    }
    async getArtifact(team, uid) {
        const [row] = await this.d.all(sql(`SELECT ${ARTIFACT_COLUMNS} FROM artifacts WHERE artifact_uid = ? AND team = ?`, uid, team));
        return row && artifactOf(row);
    }
    async readArtifact(uid) {
        const [row] = await this.d.all(sql(`SELECT ${ARTIFACT_COLUMNS}, ${this.d.selectBytes('data')} FROM artifacts WHERE artifact_uid = ?`, uid));
        if (!row)
            return undefined;
        const { data, ...artifact } = row;
        return { artifact: artifactOf(artifact), data: this.d.readBytes(data) };
    }
    async listArtifacts(team, runId) {
        const rows = await this.d.all(sql(`SELECT ${ARTIFACT_COLUMNS} FROM artifacts WHERE run_id = ? AND team = ? ORDER BY created_at, artifact_uid`, runId, team));
        return rows.map(artifactOf);
    }
    async setRequestUsage(runId, usage) {
        await this.d.run(sql('UPDATE runs SET request_usage = ? WHERE run_id = ?', usage, runId));
    }
    /** Deletes the runs prune may start from, completed before `before`, with their transcripts and artifacts. */
    async pruneFinished(before) {
        const filter = `${stateIn(LIFECYCLE.prune.from)} AND completed_at < ?`;
        const counts = await this.d.batch([
            sql(`DELETE FROM events WHERE run_id IN (SELECT run_id FROM runs WHERE ${filter})`, before),
            sql(`DELETE FROM artifacts WHERE run_id IN (SELECT run_id FROM runs WHERE ${filter})`, before),
            sql(`DELETE FROM runs WHERE ${filter}`, before)
        ]);
        return counts[2];
    }
    onChange(listener) {
        return this.d.onChange(listener);
    }
    close() {
        return this.d.close();
    }
}
/** The run record's artifacts column as a list (an empty or unreadable one as none). */
function parseList(value) {
    if (typeof value !== 'string')
        return [];
    try {
        const list = JSON.parse(value);
        return Array.isArray(list) ? list : [];
    }
    catch {
        return [];
    }
}
/** A record's artifact entry under its new name when `renamed` names it. */
function renamedEntry(item, renamed) {
    if (item === null || typeof item !== 'object')
        return item;
    const entry = item;
    const rename = renamed.find(r => r.artifact_uid === entry.artifact_uid);
    return rename ? { ...entry, filename: rename.filename, filepath: rename.filename } : item;
}
/** The statements counting the node's and a team's queued runs (each stops at its limit). */
function queueCounts(team, maxQueued, maxQueuedPerTeam) {
    const queuedStates = stateIn(LIFECYCLE.create.to);
    return {
        queued: sql(`SELECT COUNT(*) AS n FROM (SELECT 1 FROM runs WHERE ${queuedStates} LIMIT ?) AS queued`, maxQueued),
        teamQueued: sql(`SELECT COUNT(*) AS n FROM (SELECT 1 FROM runs WHERE team = ? AND ${queuedStates} LIMIT ?) AS team_queued`, team, maxQueuedPerTeam)
    };
}

;// CONCATENATED MODULE: ./src/executor/store/postgres.ts
// RunStore on PostgreSQL, shared by every executor node on one database: the SQL store
// (sql-store.ts) with the PostgreSQL dialect (postgres/). What makes several nodes safe together is
// said in postgres/dialect.ts; idempotency is a unique index, so concurrent creates with one key on
// two nodes give one run; migrations run under an advisory lock (postgres/migrate.ts).




class PostgresRunStore extends SqlRunStore {
    pool;
    closed = false;
    constructor(pool, url, fallbackPollMs) {
        super(new PostgresDialect(pool, url, fallbackPollMs));
        this.pool = pool;
    }
    /** Connects, and brings the schema up to date under an advisory lock. */
    static async open(url, options = {}) {
        const pool = createPool(url, options.poolSize ?? 10);
        try {
            await migrate(pool);
        }
        catch (error) {
            await pool.end().catch(() => undefined);
            throw openError(url, error);
        }
        return new PostgresRunStore(pool, url, options.fallbackPollMs ?? 2000);
    }
    async close() {
        if (this.closed)
            return;
        this.closed = true;
        await super.close();
    }
}

;// CONCATENATED MODULE: ./src/executor/store/sqlite/connection.ts
// The SQLite store's connection: the file opened with WAL and synchronous=FULL (a run id that was
// answered survives a power cut), its schema brought up to date, prepared statements kept, and
// transactions. node:sqlite is synchronous and JavaScript runs one thing at a time, so a
// transaction's work cannot interleave with other work of this process; BEGIN IMMEDIATE makes it
// atomic against other processes too (the CLI's `keys` commands write while a server runs, and
// `serve --role api` and `--role worker` can share one file). The file is 0600 before SQLite opens
// it, whatever the umask: SQLite gives the -wal and -shm files it makes the database file's mode,
// and ones an older executor left are made 0600 after the open (private-files.ts).




/**
 * Bytes of the WAL-index header at the start of the -shm file (https://www.sqlite.org/walformat.html):
 * its change counter and last committed frame move with every commit, by any connection.
 */
const WAL_INDEX_HEADER_BYTES = 48;
class SqliteConnection {
    db;
    path;
    statements = new Map();
    /** The -shm file, opened for commitStamp (undefined: not looked for yet; null: there is none). */
    walIndex;
    constructor(db, path) {
        this.db = db;
        this.path = path;
    }
    /** Opens (creating when needed) the database file and brings its schema up to date. */
    static async open(path) {
        const { DatabaseSync } = await Promise.resolve(/* import() */).then(__webpack_require__.t.bind(__webpack_require__, 80099, 23));
        const file = path !== ':memory:';
        if (file) {
            (0,external_node_fs_.mkdirSync)((0,external_node_path_.dirname)(path), { recursive: true, mode: PRIVATE_DIR_MODE });
            privateFile(path);
        }
        const db = new DatabaseSync(path);
        db.exec('PRAGMA busy_timeout = 10000');
        db.exec('PRAGMA journal_mode = WAL');
        if (file)
            for (const suffix of ['-wal', '-shm'])
                tightenFile(path + suffix);
        db.exec('PRAGMA synchronous = FULL');
        db.exec('PRAGMA foreign_keys = ON');
        const connection = new SqliteConnection(db, path);
        connection.migrate();
        return connection;
    }
    migrate() {
        this.db.exec('CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, name TEXT, applied_at TEXT)');
        for (const migration of SQLITE_MIGRATIONS) {
            this.transaction(() => {
                if (this.prepare('SELECT 1 FROM schema_migrations WHERE version = ?').get(migration.version))
                    return;
                this.db.exec(migration.sql);
                this.prepare('INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)').run(migration.version, migration.name, new Date().toISOString());
            });
        }
    }
    /** The prepared statement for `text`, prepared once. */
    prepare(text) {
        let statement = this.statements.get(text);
        if (!statement) {
            statement = this.db.prepare(text);
            this.statements.set(text, statement);
        }
        return statement;
    }
    all(text, values) {
        return this.prepare(text).all(...values);
    }
    /** The rows one at a time; leaving the loop early reads no more of them. */
    iterate(text, values) {
        return this.prepare(text).iterate(...values);
    }
    run(text, values) {
        return Number(this.prepare(text).run(...values).changes);
    }
    exec(text) {
        this.db.exec(text);
    }
    transaction(work) {
        this.db.exec('BEGIN IMMEDIATE');
        try {
            const result = work();
            this.db.exec('COMMIT');
            return result;
        }
        catch (error) {
            this.db.exec('ROLLBACK');
            throw error;
        }
    }
    /** Moves when another connection (another process) committed to the file. */
    dataVersion() {
        return this.prepare('PRAGMA data_version').get().data_version;
    }
    /**
     * Moves on every write: this connection's changed rows (inside its transactions too), and other
     * connections' commits. One statement.
     */
    writeStamp() {
        const row = this.prepare('SELECT total_changes() AS changes, data_version AS version FROM pragma_data_version').get();
        return `${row.changes}:${row.version}`;
    }
    /**
     * Moves on every commit to the file, this connection's and others' (not inside a transaction of
     * this one: see writeStamp). One read of the WAL-index header from the -shm file, where SQLite's
     * readers find the last commit too: a system call, where a statement takes and drops locks (three).
     * A header caught while a writer updates it reads as a new stamp, so the caches under it are
     * dropped once more than needed, never kept past a commit. Without a -shm file (an in-memory
     * database), writeStamp.
     */
    commitStamp() {
        if (this.walIndex === undefined)
            this.walIndex = this.openWalIndex();
        if (this.walIndex === null)
            return this.writeStamp();
        const { fd, header } = this.walIndex;
        if ((0,external_node_fs_.readSync)(fd, header, 0, WAL_INDEX_HEADER_BYTES, 0) !== WAL_INDEX_HEADER_BYTES)
            return this.writeStamp();
        return header.toString('latin1');
    }
    openWalIndex() {
        if (this.path === ':memory:')
            return null;
        // A read makes SQLite map the -shm file (made at the WAL switch in open()).
        this.dataVersion();
        try {
            return { fd: (0,external_node_fs_.openSync)(`${this.path}-shm`, 'r'), header: Buffer.alloc(WAL_INDEX_HEADER_BYTES) };
        }
        catch {
            return null;
        }
    }
    close() {
        if (this.walIndex)
            (0,external_node_fs_.closeSync)(this.walIndex.fd);
        this.walIndex = null;
        this.statements.clear();
        if (this.db.isOpen)
            this.db.close();
    }
}

;// CONCATENATED MODULE: ./src/executor/store/page-cache.ts
// List pages held in memory between writes. A page of runs costs node:sqlite about 3 µs a row to turn
// into objects, and clients poll the same page over and over while nothing changes. A page is kept
// only under a stamp that moves on every write: SQLite's total_changes() (rows this connection has
// inserted, updated or deleted) with PRAGMA data_version (moves when any other connection, in this
// process or another, committed). Any write anywhere therefore empties the cache before the next
// list is answered, so a cached page never shows anything an uncached read would not.
const MAX_PAGES = 256;
class PageCache {
    stamp = '';
    pages = new Map();
    /** The page for `key` read under this `stamp`, or the one `load` reads now (kept under it). */
    get(stamp, key, load) {
        if (stamp !== this.stamp) {
            this.pages.clear();
            this.stamp = stamp;
        }
        let page = this.pages.get(key);
        if (page === undefined) {
            page = load();
            if (this.pages.size >= MAX_PAGES)
                this.pages.delete(this.pages.keys().next().value);
            this.pages.set(key, page);
        }
        return page;
    }
}

;// CONCATENATED MODULE: ./src/executor/store/sqlite/changes.ts
// How a SQLite store tells its listeners of changes: at once for its own writes, and, when the file
// is shared with another process (`serve --role api` beside `--role worker`), by looking at PRAGMA
// data_version every 50 ms while anyone listens. The pragma is one cheap read that moves only when
// another connection committed; when it moved, the runs whose changed_at is recent are read and
// announced, each version at most once per process.

/** How often a shared store looks for other processes' commits while anyone listens. */
const POLL_MS = 50;
/** Changes are looked for this far behind the newest one seen: a commit can carry an older time. */
const MARGIN_MS = 2000;
class SqliteChanges {
    source;
    shared;
    emitter = new external_node_events_.EventEmitter();
    /** run_id → the newest version announced (kept only when shared, where repeats can happen). */
    heard = new Map();
    pollTimer;
    seenVersion = -1;
    changedUpTo = 0;
    constructor(source, shared) {
        this.source = source;
        this.shared = shared;
        this.emitter.setMaxListeners(0);
    }
    /** Tells the listeners of a change, unless this process already told them of that version. */
    tell(run) {
        const seen = this.heard.get(run.run_id);
        if (seen && seen.version >= run.version)
            return;
        if (this.shared)
            this.heard.set(run.run_id, { version: run.version, at: Date.now() });
        this.emitter.emit('change', { run_id: run.run_id, state: run.state, version: run.version });
    }
    onChange(listener) {
        this.emitter.on('change', listener);
        if (this.shared && !this.pollTimer) {
            this.seenVersion = this.source.dataVersion();
            this.changedUpTo = Date.now();
            this.pollTimer = setInterval(() => {
                try {
                    this.poll();
                }
                catch {
                    // busy or closing: the next tick looks again
                }
            }, POLL_MS);
            this.pollTimer.unref();
        }
        return () => {
            this.emitter.off('change', listener);
            if (this.emitter.listenerCount('change') === 0)
                this.close();
        };
    }
    poll() {
        const version = this.source.dataVersion();
        if (version === this.seenVersion)
            return;
        this.seenVersion = version;
        for (const row of this.source.changedSince(this.changedUpTo - MARGIN_MS)) {
            this.changedUpTo = Math.max(this.changedUpTo, row.changed_at);
            try {
                this.tell({ run_id: row.run_id, state: row.state, version: row.version });
            }
            catch {
                // a listener failed; the change is stored, and timers catch up
            }
        }
        const forget = Date.now() - 60_000;
        if (this.heard.size > 1000)
            for (const [runId, seen] of this.heard)
                if (seen.at < forget)
                    this.heard.delete(runId);
    }
    close() {
        clearInterval(this.pollTimer);
        this.pollTimer = undefined;
    }
}

;// CONCATENATED MODULE: ./src/executor/store/sqlite/group-commit.ts
// Creates on SQLite are group-committed: those that arrive in one turn of the event loop share one
// transaction and one fsync, and each is answered only after that commit, so an acknowledged run
// is as durable as with a commit of its own. A batch first runs without savepoints (two
// statements fewer a write); when one of its writes fails, the whole transaction is rolled back and
// the batch runs again with each write in a savepoint of its own, so one that fails does not undo
// the others. The work of a batch shares a memo (creates keep the queue counts
// there, so a queue is counted once, not once a create). It is kept from one batch to the next
// while nothing else wrote to the file in between: the connection's write stamp (its own changed
// rows and other connections' commits, connection.ts) read at the start of a batch's transaction
// is the one read at the end of the last batch's. Anything else, here or in another process, and
// the next batch starts with an empty memo.
/** Entries the memo holds at most (a queue count per team that created lately). */
const MAX_MEMO = 10_000;
class GroupCommit {
    connection;
    pending = [];
    memo = new Map();
    /** The write stamp after the last batch committed (undefined: the memo is not to be trusted). */
    memoStamp;
    constructor(connection) {
        this.connection = connection;
    }
    /** Runs `work` in the next shared transaction; its result once that committed. */
    add(work) {
        return new Promise((resolve, reject) => {
            this.pending.push({ work, resolve: resolve, reject });
            if (this.pending.length === 1)
                setImmediate(() => this.flush());
        });
    }
    flush() {
        const batch = this.pending;
        this.pending = [];
        let results;
        try {
            // Most batches fail nowhere: they run without savepoints. One that fails is rolled back whole
            // and run again with a savepoint for each write, so only the failing write is undone.
            results = this.attempt(batch, false) ?? this.attempt(batch, true);
        }
        catch (error) {
            this.memoStamp = undefined;
            for (const item of batch)
                item.reject(error);
            return;
        }
        batch.forEach((item, index) => {
            const result = results[index];
            if ('error' in result)
                item.reject(result.error);
            else
                item.resolve(result.value);
        });
    }
    /**
     * The batch in one transaction; each write's outcome once it committed. Without savepoints, the
     * first failure rolls everything back and gives undefined (nothing was kept, the memo is dropped).
     */
    attempt(batch, savepoints) {
        const results = [];
        let failed = false;
        try {
            this.connection.transaction(() => {
                if (savepoints || this.connection.writeStamp() !== this.memoStamp || this.memo.size > MAX_MEMO)
                    this.memo = new Map();
                const memo = this.memo;
                for (const item of batch) {
                    if (!savepoints) {
                        try {
                            results.push({ value: item.work(memo) });
                        }
                        catch (error) {
                            failed = true;
                            throw error;
                        }
                        continue;
                    }
                    this.connection.exec('SAVEPOINT one_write');
                    try {
                        results.push({ value: item.work(memo) });
                        this.connection.exec('RELEASE one_write');
                    }
                    catch (error) {
                        this.connection.exec('ROLLBACK TO one_write');
                        this.connection.exec('RELEASE one_write');
                        results.push({ error });
                    }
                }
                // Read before the commit, while no other connection can commit: one that commits after
                // ours moves the stamp the next batch reads.
                this.memoStamp = this.connection.writeStamp();
            });
        }
        catch (error) {
            if (!failed)
                throw error;
            this.memoStamp = undefined;
            return undefined;
        }
        return results;
    }
}

;// CONCATENATED MODULE: ./src/executor/store/sqlite/dialect.ts
// The SQL store's dialect on node:sqlite (one machine): the clock is SQLite's, writers are serial
// (BEGIN IMMEDIATE), so nothing is skipped; a run's events are numbered at insert, one past its
// last; and changes are told to this process's listeners after commit, and found by other processes
// sharing the file through PRAGMA data_version (changes.ts). List pages are kept between writes
// (page-cache.ts).






const INSERT_EVENT = `INSERT INTO events (run_id, seq, at, kind, data)
  VALUES (?, (SELECT COALESCE(MAX(seq), 0) + 1 FROM events WHERE run_id = ?), ?, ?, ?) RETURNING seq`;
/** The database's clock in milliseconds, as SQL. */
const SQLITE_CLOCK_MS = `CAST(unixepoch('subsec') * 1000 AS INTEGER)`;
class SqliteDialect {
    db;
    shared;
    kind = 'sqlite';
    clockMs = SQLITE_CLOCK_MS;
    changedAt = this.clockMs;
    skipLocked = '';
    numberEvent = '';
    textType = 'TEXT';
    noLimit = -1;
    changes;
    group;
    /** Transcript appends of this process, for held transcript reads (others' are found by re-reading). */
    events = new external_node_events_.EventEmitter().setMaxListeners(0);
    /** Recent list pages, until the next write (page-cache.ts). */
    pages = new PageCache();
    /** The commit stamp and key_changes counter when the key cache was last known good. */
    keysSeen;
    constructor(db, shared) {
        this.db = db;
        this.shared = shared;
        this.group = new GroupCommit(db);
        this.changes = new SqliteChanges({
            dataVersion: () => db.dataVersion(),
            changedSince: since => db.all('SELECT run_id, state, version, changed_at FROM runs WHERE changed_at > ? ORDER BY changed_at', [since])
        }, shared);
    }
    bytes(text) {
        return text;
    }
    listHas(json, key, value) {
        return `EXISTS (SELECT 1 FROM json_each(${json}, '$.${key}') WHERE json_each.value = ${value})`;
    }
    appendJson(column) {
        return `json_insert(COALESCE(${column}, '[]'), '$[#]', json(?))`;
    }
    selectBytes(column) {
        return column;
    }
    readBytes(value) {
        return Buffer.from(value);
    }
    async all(statement) {
        return this.db.all(statement.text, statement.values);
    }
    async run(statement) {
        return this.db.run(statement.text, statement.values);
    }
    async batch(statements) {
        return this.db.transaction(() => statements.map(s => this.db.run(s.text, s.values)));
    }
    /** The WAL-index header, which moves with every commit (connection.ts). */
    changeStamp() {
        return this.db.commitStamp();
    }
    /** Callers only read the rows (frozen, so a write to one fails loudly); they get their own array. */
    async list(statement, stopAfter) {
        const key = `${statement.text}\n${JSON.stringify(statement.values)}\n${stopAfter ? 'stops' : ''}`;
        const page = this.pages.get(this.changeStamp(), key, () => {
            const rows = [];
            // Rows are turned into objects one at a time, so a page of large runs stops being read early.
            for (const row of this.db.iterate(statement.text, statement.values)) {
                rows.push(Object.freeze(row));
                if (stopAfter?.(row))
                    break;
            }
            return Object.freeze(rows);
        });
        return page.slice();
    }
    async change(statement, event, options = {}) {
        const { then } = options;
        const told = [];
        const runs = this.db.transaction(() => {
            const runs = this.record(statement, event);
            told.push(...runs);
            if (then)
                for (const run of runs)
                    told.push(...this.record(then.statement(run), then.event));
            return runs;
        });
        this.told(told);
        return runs;
    }
    /**
     * In the turn's shared transaction (group-commit.ts): each queue is counted once a batch, and the
     * batch's memo adds the runs the batch inserted, so every create is checked against the queues as
     * they are at its insert, as a count of its own would find them.
     */
    async create({ insert, queues, event, follow }) {
        const runs = await this.group.add(memo => {
            const counts = queues.map(queue => this.queueCount(queue, memo));
            if (queues.some((queue, index) => counts[index] >= queue.limit))
                return [];
            const runs = this.record(insert(sql('1 = 1')), event, follow);
            queues.forEach((queue, index) => memo.set(queue.name, counts[index] + runs.length));
            return runs;
        });
        return this.told(runs);
    }
    /** A queue's runs now, counted once a batch (the memo keeps it, with the batch's own inserts). */
    queueCount(queue, memo) {
        const known = memo.get(queue.name);
        if (known !== undefined)
            return known;
        const [row] = this.db.all(queue.count.text, queue.count.values);
        const n = Number(row?.n ?? 0);
        memo.set(queue.name, n);
        return n;
    }
    /**
     * In the turn's shared transaction, as a create: the queues counted (or known from the batch's
     * memo) only when the run has ended, and the memo told of the run queued again, so the creates
     * and follow-ups of one batch all see each other.
     */
    async followup({ runId, at, data, ended, queues, requeue, event }) {
        const written = await this.group.add(memo => {
            if (this.db.all(ended.text, ended.values).length > 0) {
                const full = queues.find(queue => this.queueCount(queue, memo) >= queue.limit);
                if (full)
                    return { full: full.name };
            }
            const [added] = this.db.all(INSERT_EVENT, [runId, runId, at, 'followup', data]);
            const runs = this.record(requeue, event);
            // Counts the batch knows take the run queued again; the others are read afresh when needed.
            for (const queue of queues) {
                const known = memo.get(queue.name);
                if (known !== undefined)
                    memo.set(queue.name, known + runs.length);
            }
            return { seq: added.seq, runs };
        });
        if ('full' in written)
            return written;
        this.events.emit('event', runId, written.seq);
        this.told(written.runs);
        return written;
    }
    /** Runs a change of runs and records its state event on each (and `follow`'s rows), in the open transaction. */
    record(statement, event, follow) {
        const runs = this.db.all(`${statement.text} RETURNING ${RUN_COLUMNS}`, statement.values);
        for (const run of runs) {
            this.db.all(INSERT_EVENT, [run.run_id, run.run_id, run.updated_at, 'state', event]);
            for (const more of follow?.(run) ?? [])
                this.db.run(more.text, more.values);
        }
        return runs;
    }
    /** Tells this process's listeners (and, by the file, others) of committed changes. */
    told(runs) {
        for (const run of runs) {
            try {
                this.changes.tell(run);
            }
            catch {
                // a change listener failed; the change is stored, and timers catch up
            }
        }
        return runs;
    }
    async appendEvent(runId, kind, data, at) {
        const [row] = this.db.all(INSERT_EVENT, [runId, runId, at, kind, data]);
        this.events.emit('event', runId, row.seq);
        return row.seq;
    }
    keysChanged() {
        return undefined;
    }
    /**
     * Stale when a key was written since the last look, here or in another process: every write to
     * api_keys moves the key_changes counter (a trigger, migration 13). While nothing at all was
     * committed to the file (the commit stamp, one read of the -shm header) the counter is not read.
     * The stamp is read first: a commit between the two reads moves the stamp kept, so the next look
     * reads the counter again.
     */
    keyCacheState() {
        const stamp = this.db.commitStamp();
        const seen = this.keysSeen;
        if (seen?.stamp === stamp)
            return 'fresh';
        const [row] = this.db.all('SELECT changes FROM key_changes WHERE id = 1', []);
        const changes = Number(row?.changes ?? -1);
        this.keysSeen = { stamp, changes };
        return seen !== undefined && seen.changes === changes ? 'fresh' : 'stale';
    }
    onKeysChanged() {
        // other processes' key writes are found by keyCacheState
    }
    onChange(listener) {
        return this.changes.onChange(listener);
    }
    onEvent(listener) {
        this.events.on('event', listener);
        return () => this.events.off('event', listener);
    }
    async close() {
        this.changes.close();
        this.db.close();
    }
}

;// CONCATENATED MODULE: ./src/executor/store/sqlite.ts
// RunStore on node:sqlite, for one machine: the SQL store (sql-store.ts) with the SQLite dialect
// (sqlite/). What other processes commit to the file is noticed by PRAGMA data_version, which a
// shared store (opened by a split role) polls while anyone listens; the key cache is emptied by a
// key write anywhere (the key_changes counter, moved by triggers on api_keys).



class SqliteRunStore extends SqlRunStore {
    /** Opens (creating when needed) the database file and brings its schema up to date. */
    static async open(path, options = {}) {
        const connection = await SqliteConnection.open(path);
        return new SqliteRunStore(new SqliteDialect(connection, options.shared ?? false));
    }
}

;// CONCATENATED MODULE: ./src/executor/store/open.ts
// Opens the store a spec names. `shared` tells a SQLite store that other processes run work from
// the same file (split roles on one machine); a PostgreSQL store is always shared.


async function openStore(spec, options = {}) {
    return spec.kind === 'sqlite'
        ? SqliteRunStore.open(spec.path, { shared: options.shared })
        : PostgresRunStore.open(spec.url, options);
}

;// CONCATENATED MODULE: ./src/api/github-text.ts
// Text from a run or the service that reaches GitHub (a comment, a review, the job summary, a pull
// request's title and body, a commit message), made inert, for both sides of the contract: the
// action's comment and summary (src/action/markup.ts) and the executor's publishing
// (src/executor/publish/pr-text.ts) render every such field through these functions and nothing
// else. A run's answer, title, status message, plan and artifact names may carry words a stranger
// steered the agent into writing, and GitHub acts on some words wherever they appear: `@user` and
// `@org/team` notify people (even inside <pre>), `fixes #1` closes an issue once merged, a
// `<!-- … -->` could pass for the action's hidden marker, `![x](https://…)` or raw HTML loads remote
// content for every reader, and `</pre>` or `</details>` would let the rest escape its block.
/** `@name` or `@org/team` where GitHub would see a mention (not inside an e-mail address). */
const MENTION = /(^|[^\w@/`.-])@([A-Za-z0-9][A-Za-z0-9-]*(?:\/[A-Za-z0-9_.-]+)?)/g;
/**
 * A closing keyword then a reference, with or without a colon or space: `fixes:#1`, `Closes: owner/repo#2`,
 * `resolves GH-3`, a URL. The gap is `\s*(?::\s*)?`, never `\s*:?\s*`: two neighbouring `\s*` can split
 * a run of spaces in quadratically many ways, and an answer's `fixes` followed by a megabyte of
 * spaces then held the executor for about an hour.
 */
const CLOSING = /\b(close[sd]?|fix(?:e[sd])?|resolve[sd]?)(\s*(?::\s*)?)(?=(?:[\w.-]+\/[\w.-]+)?#\d|gh-\d|https?:\/\/)/gi;
/** Drops C0 and C1 controls other than tab and newline: nothing a title or message needs. */
function dropControls(text) {
    let out = '';
    for (const ch of text) {
        const code = ch.codePointAt(0);
        if (code === 9 || code === 10 || (code >= 32 && (code < 127 || code > 159)))
            out += ch;
    }
    return out;
}
/**
 * Plain text (a title, a commit message) with its mentions and closing keywords made harmless in
 * a way a reader still understands: `@ octocat`, `fixes issue #1`.
 */
function neutralizePlain(text) {
    return dropControls(text)
        .replace(MENTION, (_whole, before, name) => `${before}@ ${name}`)
        .replace(CLOSING, (_whole, keyword, gap) => `${keyword} issue${gap}`);
}
/** Characters HTML or Markdown (or GitHub's autolinks) give a meaning to. */
const MARKUP = /[&<>"'`*_[\]()!#@\\~|:{}=+-]/g;
/** Every character HTML or Markdown gives a meaning to, as a numeric character reference. */
function escapeMarkup(text) {
    return text
        .replace(MARKUP, ch => `&#${ch.charCodeAt(0)};`)
        .replace(/www\./gi, match => `${match.slice(0, 3)}&#46;`);
}
/** A short field inside Markdown: one line of inert text. */
function inlineText(text) {
    return escapeMarkup(neutralizePlain(text).replace(/[\r\n]+/g, ' '));
}
/**
 * A long field (an answer, a status message, a plan) inside Markdown or HTML: an escaped `<pre>`
 * block, so it shows as written (line breaks kept) and nothing in it is a link, an image, HTML, a
 * marker, a mention or a closing keyword. At most `max` characters of markup: the text is cut
 * after escaping, never inside a character reference; `cut` says whether all of it fitted.
 */
function textBlock(text, max = Infinity) {
    const escaped = escapeMarkup(neutralizePlain(text));
    const room = max - '<pre></pre>'.length - 1;
    if (escaped.length <= room)
        return { markup: `<pre>${escaped}</pre>`, cut: false };
    let end = Math.max(0, room);
    // Never end inside `&#NN;`: back up to the reference's start.
    const amp = escaped.lastIndexOf('&', end);
    if (amp !== -1 && escaped.indexOf(';', amp) >= end)
        end = amp;
    return { markup: `<pre>${escaped.slice(0, end)}…</pre>`, cut: true };
}
/**
 * Code shown as written inside a fenced block (a review's `suggestion`, which GitHub applies as
 * the new text of the commented lines): GitHub links no mention and loads no image inside it, so
 * the text is kept as it is, but without control characters (a lone carriage return would end a
 * line) and behind a fence longer than any run of backticks it holds, so no line of it can close
 * the block and let the rest be read as Markdown.
 */
function codeBlock(text, info = '') {
    const code = dropControls(text);
    let longest = 0;
    for (const run of code.match(/`+/g) ?? [])
        longest = Math.max(longest, run.length);
    const fence = '`'.repeat(Math.max(3, longest + 1));
    return `${fence}${info}\n${code}\n${fence}`;
}

;// CONCATENATED MODULE: ./src/executor/publish/pr-text.ts
// Text from a run that publishing writes into GitHub: the pull request's title and body and the
// commit message. A run's answer and title may carry words a stranger steered the agent into
// writing, and GitHub acts on some words wherever they appear: `@user` and `@org/team` notify
// people from the publishing account, `fixes #1` (or `closes owner/repo#2`, or an issue URL) closes
// an issue when the change is merged, and in a Markdown body `![x](https://…)` or raw HTML loads
// remote content for every reader. So each field taken from the run is neutralised before it is
// put into the operator's template; the template's own text stays exactly as written. The
// neutralising itself is shared with the action's comment and summary (src/api/github-text.ts).


/** A short field (the title) inside a Markdown body: one line of inert text. */
function inlineMarkdown(text) {
    return inlineText(text);
}
/**
 * A long field (the answer) inside a Markdown body: an escaped `<pre>` block, so it shows as the
 * agent wrote it (line breaks kept) and nothing in it is a link, an image, HTML or a mention.
 */
function quotedMarkdown(text) {
    if (text === '')
        return '';
    return textBlock(text).markup;
}
/** The fields that came from the run, made safe for plain text: the title and the commit message. */
function plainFields(fields, fromRun) {
    const safe = { ...fields };
    for (const name of fromRun)
        if (name in safe)
            safe[name] = neutralizePlain(safe[name]);
    return safe;
}
/** The same for a Markdown body: `result` quoted as a block, every other field from the run inline. */
function markdownFields(fields, fromRun) {
    const safe = { ...fields };
    for (const name of fromRun) {
        if (!(name in safe))
            continue;
        safe[name] = name === 'result' ? quotedMarkdown(safe[name]) : inlineMarkdown(safe[name]);
    }
    return safe;
}

;// CONCATENATED MODULE: ./src/executor/publish/pull-request.ts
// Opening a pull request through the GitHub REST API (github.com or a GitHub Enterprise Server's
// /api/v3), for publish.ts. Its own module because it speaks HTTP to GitHub while publish.ts
// drives git; a failure comes back in GitHub's own words (its message and its errors' messages).
/** owner/name of a GitHub URL (https, ssh or scp-like); the API's own web host counts too. */
function repositoryOf(url, apiUrl) {
    const hosts = new Set(['github.com', new URL(apiUrl).hostname.replace(/^api\./, '')]);
    const match = /^(?:https?|ssh|git):\/\/(?:[^@/]+@)?([^/:]+)(?::\d+)?\/([\w.-]+)\/([\w.-]+?)(?:\.git)?\/?$/.exec(url) ??
        /^[\w.-]+@([\w.-]+):([\w.-]+)\/([\w.-]+?)(?:\.git)?$/.exec(url);
    return match && hosts.has(match[1]) ? `${match[2]}/${match[3]}` : undefined;
}
/** POST /repos/{owner}/{repo}/pulls; answers the pull request's web URL and number. */
async function openPullRequest(request) {
    const endpoint = `${request.apiUrl}/repos/${request.repository}/pulls`;
    let response;
    try {
        response = await fetch(endpoint, {
            method: 'POST',
            headers: {
                accept: 'application/vnd.github+json',
                authorization: `Bearer ${request.token}`,
                'content-type': 'application/json',
                'user-agent': 'agent-executor',
                'x-github-api-version': '2022-11-28'
            },
            body: JSON.stringify({
                title: request.title,
                head: request.head,
                base: request.base,
                body: request.body,
                draft: request.draft
            }),
            signal: AbortSignal.timeout(30_000)
        });
    }
    catch (error) {
        throw new Error(`POST ${endpoint} failed: ${error.message}`);
    }
    const text = await response.text();
    let body = {};
    try {
        body = JSON.parse(text);
    }
    catch {
        // described below by its status and first characters
    }
    if (response.status === 201 && typeof body.html_url === 'string')
        return { url: body.html_url, number: typeof body.number === 'number' ? body.number : undefined };
    // 422 says {"message":"Validation Failed","errors":[{"message":"A pull request already exists for …"}]}
    const details = Array.isArray(body.errors)
        ? body.errors
            .map(e => typeof e === 'string'
            ? e
            : (e?.message ?? e?.field))
            .filter(Boolean)
        : [];
    const words = [typeof body.message === 'string' ? body.message : text.slice(0, 200), ...details].join(': ');
    throw new Error(`the GitHub API at ${endpoint} answered ${response.status} (${words})`);
}

;// CONCATENATED MODULE: ./src/executor/publish/publish.ts
// Publishing a run's changes after its agent succeeded: one commit of everything the agent changed
// on top of the workspace's start, pushed as a new branch of the run, then (when configured) a pull
// request through the GitHub REST API. The executor does it itself, so the work never depends on
// an agent remembering to push. The workspace's files were the agent's to write, its `.git` too:
// the commit is built in the run's private git dir (private-git.ts: the executor's own index,
// config and borrowed object stores), pushed from there, and the token only ever reaches git
// through the environment of that one push process, which reads no config the agent wrote.






/** A failure of one step, with the words of git or of the API (secrets already removed). */
class PublishError extends Error {
    step;
    constructor(step, why) {
        super(why);
        this.step = step;
    }
}
/** The run's title, or its prompt's first non-empty line. */
function titleOf(run) {
    const line = run.prompt.split(/\r?\n/).find(text => text.trim() !== '') ?? '';
    return (run.title ?? line).trim().slice(0, 200) || `Run ${run.run_id}`;
}
/** Fills `{field}`s of a template; unknown fields stay as written. */
function fillTemplate(template, fields) {
    return template.replace(/\{(\w+)\}/g, (whole, name) => fields[name] ?? whole);
}
function slug(text) {
    return (text
        .toLowerCase()
        .replace(/[^a-z0-9]+/g, '-')
        .slice(0, 40)
        .replace(/^-+|-+$/g, '') || 'run');
}
/**
 * Publishes the workspace's changes; answers the run's failure (`publish_failed`) when a step
 * fails, undefined when it published or there was nothing to publish.
 */
async function publishChanges(options) {
    const { config, env = process.env } = options;
    const token = config.tokenEnv ? env[config.tokenEnv] || undefined : undefined;
    const secrets = token ? [token, basicAuth(token)] : [];
    const hide = (text) => secrets.reduce((out, secret) => out.replaceAll(secret, '***'), redactUrls(text));
    try {
        if (config.tokenEnv && !token)
            throw new PublishError('token', `the executor's variable ${config.tokenEnv} (publish.token_env) is not set`);
        return await publish(options, token);
    }
    catch (error) {
        const step = error instanceof PublishError ? error.step : 'publish';
        return publishFailed(step, error.message, hide);
    }
}
function basicAuth(token) {
    return Buffer.from(`x-access-token:${token}`).toString('base64');
}
async function earlierPublish(options) {
    const events = await options.store.listEvents(options.run.run_id, { kinds: ['publish'] });
    const last = events.findLast(event => event.kind === 'publish' && typeof event.commit === 'string' && typeof event.branch === 'string');
    return last;
}
async function publish(options, token) {
    const { run, config, workspace, base, record } = options;
    if (workspace.kind !== 'repository' || !workspace.repository)
        throw new PublishError('commit', `the source ${options.source} is not a git repository`);
    // A run continued by a follow-up pushes one more commit on its own branch (a fast-forward, never
    // forced) and keeps its pull request, which shows the new commit: no second branch or request.
    const earlier = await earlierPublish(options);
    const commit = await commitChanges(options, earlier?.commit);
    if (!commit) {
        await record('notice', {
            text: earlier
                ? `This turn changed no files since the commit ${earlier.commit.slice(0, 12)} on ${earlier.branch}: nothing new was pushed.`
                : 'The run changed no files: nothing was committed or pushed.'
        });
        return undefined;
    }
    const fields = templateFields(options);
    const branch = earlier?.branch ?? fillTemplate(config.branch, fields);
    await privateGit(workspace.git, ['check-ref-format', '--branch', branch]).catch(() => {
        throw new PublishError('push', `the branch name ${JSON.stringify(branch)} (publish.branch) is not valid`);
    });
    const remote = await remoteUrl(options);
    // Whatever the pull request needs is checked before anything is pushed.
    const pr = config.pullRequest;
    const repository = pr && (pr.repository ?? repositoryOf(remote, pr.apiUrl));
    if (pr && !repository)
        throw new PublishError('pull request', `the remote ${redactUrls(remote)} is not a GitHub URL; set publish.pull_request.repository (owner/name)`);
    if (pr && !token)
        throw new PublishError('pull request', 'the GitHub API needs a token: set publish.token_env');
    if (pr && !workspace.baseBranch)
        throw new PublishError('pull request', "the source's HEAD is on no branch (detached); set publish.base to the branch pull requests target");
    await push(workspace.git, remote, commit, branch, token);
    const event = { commit, branch, remote: redactUrls(remote), base_commit: base };
    if (earlier?.pull_request_url !== undefined) {
        event.pull_request_url = earlier.pull_request_url;
        if (earlier.pull_request_number !== undefined)
            event.pull_request_number = earlier.pull_request_number;
    }
    else if (pr && repository && token && workspace.baseBranch) {
        let opened;
        try {
            opened = await openPullRequest({
                apiUrl: pr.apiUrl,
                repository,
                token,
                title: fillTemplate(pr.title, plainFields(fields, FROM_RUN)),
                head: branch,
                base: workspace.baseBranch,
                body: fillTemplate(pr.body, markdownFields(fields, FROM_RUN)),
                draft: pr.draft
            });
        }
        catch (error) {
            await record('publish', event);
            throw new PublishError('pull request', `${error.message}; the branch ${branch} was pushed`);
        }
        const { url, number } = opened;
        event.pull_request_url = url;
        event.pull_request_number = number;
        const data = Buffer.from(JSON.stringify({ url, branch }));
        const createdAt = new Date().toISOString();
        await options.store.addArtifact({
            artifact_uid: (0,external_node_crypto_.randomUUID)(),
            run_id: run.run_id,
            team: run.team,
            artifact_type: 'PULL_REQUEST',
            filepath: branch,
            filename: 'pull-request.json',
            mime_type: 'application/json',
            size: data.length,
            description: url,
            created_at: createdAt
        }, data);
    }
    await record('publish', event);
    return undefined;
}
/** Template fields whose text came from the run (its title or prompt, the agent's answer). */
const FROM_RUN = ['title', 'result'];
function templateFields(options) {
    const title = titleOf(options.run);
    return {
        run_id: options.run.run_id,
        short_id: options.run.run_id.replace(/-/g, '').slice(0, 8),
        title,
        title_slug: slug(title),
        session_link: options.sessionLink ?? '',
        result: (options.result ?? '').trim()
    };
}
/**
 * One commit of the whole working tree on top of the start commit (or of `parent`, the commit an
 * earlier turn of the run pushed), built in the run's private git
 * dir from its index as the diff left it (the agent has ended, so the work tree has not moved; a
 * second `git add` would look into the nested repositories the first one recorded). Undefined
 * when the tree is the start's.
 */
async function commitChanges(options, parent) {
    const { workspace, config } = options;
    const base = parent ?? options.base;
    try {
        const tree = await workspace.tree();
        const start = (await privateGit(workspace.git, ['rev-parse', `${base}^{tree}`])).trim();
        if (tree === start)
            return undefined;
        const message = fillTemplate(config.commitMessage, plainFields(templateFields(options), FROM_RUN));
        const author = ['-c', `user.name=${config.author.name}`, '-c', `user.email=${config.author.email}`];
        return (await privateGit(workspace.git, [...author, 'commit-tree', tree, '-p', base, '-m', message])).trim();
    }
    catch (error) {
        throw new PublishError('commit', error.message);
    }
}
/** A URL source is pushed to; a local source's `publish.remote` names where. */
async function remoteUrl({ source, config, workspace }) {
    if (isRemoteSource(source))
        return source;
    try {
        return (await sourceGit(['remote', 'get-url', config.remote], workspace.repository)).trim();
    }
    catch {
        throw new PublishError('push', `the source ${workspace.repository} has no remote ${JSON.stringify(config.remote)} (publish.remote)`);
    }
}
/** Transports a push may use (the workspace's git allows none by default; `ext::` stays off). */
const PUSH_PROTOCOLS = ['file', 'git', 'http', 'https', 'ssh'].flatMap(name => [
    '-c',
    `protocol.${name}.allow=always`
]);
/**
 * Pushes `commit` as the new branch, never forced: a branch of that name already there refuses
 * it. An https remote gets the token as an Authorization header set through GIT_CONFIG_* variables
 * of this one git process (never its command line, never a file).
 */
async function push(repository, remote, commit, branch, token) {
    const env = {};
    if (token && /^https?:\/\//i.test(remote)) {
        Object.assign(env, {
            GIT_CONFIG_COUNT: '1',
            GIT_CONFIG_KEY_0: 'http.extraHeader',
            GIT_CONFIG_VALUE_0: `Authorization: Basic ${basicAuth(token)}`
        });
    }
    try {
        await privateGit(repository, [
            ...PUSH_PROTOCOLS,
            '-c',
            'core.sshCommand=ssh',
            'push',
            '--no-verify',
            '--no-recurse-submodules',
            remote,
            `${commit}:refs/heads/${branch}`
        ], { env, push: true });
    }
    catch (error) {
        throw new PublishError('push', pushReason(error, branch));
    }
}
/** What the remote said (its hook's `remote:` lines, the refusal), else git's own line. */
function pushReason(error, branch) {
    const lines = String(error.stderr ?? '').split('\n');
    const remote = lines
        .map(line => /^remote:\s?(.*)$/.exec(line)?.[1]?.trim())
        .filter((line) => !!line);
    // ` ! [remote rejected] 1a2b -> agent/x (pre-receive hook declined)`
    const refused = lines.map(line => /^!\s+\[(.+?)\].*?(?:\(([^()]*)\))?$/.exec(line.trim())).find(Boolean);
    const words = [...remote];
    if (refused)
        words.push(refused[2] ? `${refused[1]} (${refused[2]})` : refused[1]);
    if (refused?.[1] === 'rejected')
        words.push(`a branch ${branch} already exists there and is never overwritten`);
    return words.length > 0
        ? `the remote refused the branch ${branch}: ${words.join('; ')}`
        : error.message;
}

;// CONCATENATED MODULE: ./src/executor/worker/orchestrate.ts
// An orchestrate turn's credential: minted when the turn starts, kept in the store only as the
// SHA-256 of the token (which the run's sandbox gets as AGENT_RUN_API_KEY) and of a second secret
// that only the run's proxy holds and adds to each request it forwards to the executor
// (sandbox/proxy.ts, VIA_HEADER). The server accepts the token only beside that secret and only
// while the run has not ended (server/run-token.ts); the worker removes it when the turn ends. The
// token is also one of the run's secrets: every event of its transcript, and its status message,
// have it replaced before they are stored.




/** What the sandbox of an orchestrate turn sees: the variables `agent-run` reads. */
const GATEWAY_URL = `http://${GATEWAY_HOST}`;
/**
 * Mints the turn's credential and stores its hashes; `apiUrl` is where this node's proxy reaches
 * the executor's API. The token is added to `secrets` before it is handed to anything.
 */
async function startOrchestrateTurn(store, run, apiUrl, secrets) {
    if (!apiUrl)
        throw new Error('mode orchestrate: this node serves no API its runs can reach (a --role worker node needs server.public_url, the address of the API nodes)');
    const token = generateKey(RUN_TOKEN_PREFIX);
    const via = (0,external_node_crypto_.randomBytes)(32).toString('base64url');
    secrets.add(token);
    secrets.add(via);
    await store.createRunToken({
        hash: hashKey(token),
        via_hash: hashKey(via),
        run_id: run.run_id,
        team: run.team,
        environment_id: run.environment_id,
        created_at: new Date().toISOString()
    });
    return {
        env: {
            AGENT_RUN_BASE_URL: GATEWAY_URL,
            AGENT_RUN_API_KEY: token,
            AGENT_RUN_ENVIRONMENT: run.environment_id
        },
        gateway: { target: apiUrl, secret: via },
        revoke: () => store.deleteRunTokens(run.run_id)
    };
}
/** Every string of `value`, keys included, with the secrets replaced. */
function orchestrate_redactAll(value, redact) {
    if (typeof value === 'string')
        return redact(value);
    if (Array.isArray(value))
        return value.map(item => orchestrate_redactAll(item, redact));
    if (value !== null && typeof value === 'object')
        return Object.fromEntries(Object.entries(value).map(([k, v]) => [redact(k), orchestrate_redactAll(v, redact)]));
    return value;
}
/** `text` with the run's secrets replaced (as it is when there are none). */
function redactSecrets(text, secrets) {
    return secrets.size === 0 ? text : secretRedactor([...secrets])(text);
}
/**
 * The recorder with the run's secrets replaced in every event before it is stored; while the run
 * has none (no orchestrate turn yet), events pass as they are.
 */
function redactingRecorder(record, secrets) {
    let redactor;
    const redacting = (kind, data) => {
        if (secrets.size === 0)
            return record(kind, data);
        if (redactor?.size !== secrets.size)
            redactor = { size: secrets.size, redact: secretRedactor([...secrets]) };
        return record(kind, orchestrate_redactAll(data, redactor.redact));
    };
    if (record.flush)
        redacting.flush = record.flush.bind(record);
    return redacting;
}

;// CONCATENATED MODULE: ./src/executor/worker/run-outputs.ts
// What a run hands back besides its state: the agent's final answer, its request usage and its
// changes as a patch. Each run gets an output folder under DATA_DIR/outputs/<run id>, outside the
// workspace (so nothing written there is part of the changes); a command agent finds it through
// AGENT_RESULT_FILE and AGENT_USAGE_FILE. The agent controls that folder, so the executor never
// opens it: its files are read by the run's own user in the reader sandbox (sandbox/run-files.ts),
// which shows that folder alone; they must be regular files with no other hard link and are read
// only up to a limit, so a link planted there cannot make the executor read (and publish) any
// other file of the machine.







/** A command agent's answer when it writes no result file: the end of its standard output. */
const STDOUT_TAIL_BYTES = 64 * 1024;
/** Longest answer kept from AGENT_RESULT_FILE (the action caps it further for its outputs). */
const MAX_RESULT_BYTES = 1024 * 1024;
const MAX_USAGE_BYTES = 64 * 1024;
const PATCH_NAME = 'changes.patch';
/** Makes the run's (empty) output folder, the run user's from the start. */
function prepareOutputs(dataDir, runId, identity) {
    const dir = (0,external_node_path_.join)(dataDir, 'outputs', runId);
    removeTree(dir);
    (0,external_node_fs_.mkdirSync)(dir, { recursive: true, mode: 0o700 });
    if (identity.user)
        (0,external_node_fs_.lchownSync)(dir, identity.user.uid, identity.user.gid);
    return {
        dir: (0,external_node_fs_.realpathSync)(dir),
        env: { AGENT_RESULT_FILE: (0,external_node_path_.join)(dir, 'result.md'), AGENT_USAGE_FILE: (0,external_node_path_.join)(dir, 'usage.json') },
        identity
    };
}
/**
 * What the reader says of each file before its bytes: the same refusals the executor made when it
 * opened the files itself (a link, not a regular file, a file with other names), now made by the
 * run's user in the reader sandbox, where a link could reach nothing of the host anyway. For each
 * `path max` pair it prints one line, `<verdict> <bytes that follow>`, then those bytes.
 */
const READ_SCRIPT = [
    'while [ $# -ge 2 ]; do',
    '  f=$1; max=$2; shift 2',
    '  if [ -L "$f" ]; then echo "link 0"',
    '  elif [ ! -e "$f" ]; then echo "absent 0"',
    '  elif [ ! -f "$f" ]; then echo "special 0"',
    '  elif [ "$(stat -c %h -- "$f")" -gt 1 ]; then echo "linked 0"',
    '  else',
    '    size=$(stat -c %s -- "$f") || exit 3',
    '    [ "$size" -gt "$max" ] && size=$max',
    '    echo "read $size"; head -c "$size" -- "$f" || exit 3',
    '  fi',
    'done'
].join('\n');
const REFUSALS = {
    link: 'it is a symbolic link',
    special: 'it is not a regular file',
    linked: 'it has other hard links'
};
/**
 * Reads files the agent may have written in its output folder, in one process as the run's user
 * in the reader sandbox (run-files.ts): never through a symbolic link, only a regular file with no
 * other name, at most `max` bytes of each (the rest is left out).
 */
async function readOutputFiles(outputs, files) {
    const result = await asRunUser(outputs.identity, {
        read: [outputs.dir],
        program: '/bin/sh',
        args: ['-c', READ_SCRIPT, 'sh', ...files.flatMap(file => [file.path, String(file.max)])],
        maxStdout: files.reduce((sum, file) => sum + file.max + 32, 0),
        // A FIFO planted as a file is refused before it is opened; nothing here can block for long.
        timeoutMs: 30_000
    });
    const failed = () => ({ kind: 'refused', why: `it cannot be read (${readerReason(result)})` });
    const reads = [];
    let at = 0;
    for (const _ of files) {
        const newline = result.stdout.indexOf(0x0a, at);
        if (newline < 0) {
            reads.push(failed());
            continue;
        }
        const [verdict = '', count = '0'] = result.stdout.toString('utf8', at, newline).split(' ');
        const bytes = Number(count);
        at = newline + 1;
        if (verdict === 'absent')
            reads.push({ kind: 'absent' });
        else if (REFUSALS[verdict])
            reads.push({ kind: 'refused', why: REFUSALS[verdict] });
        else if (verdict === 'read' && Number.isSafeInteger(bytes) && at + bytes <= result.stdout.length) {
            reads.push({ kind: 'read', data: result.stdout.subarray(at, at + bytes) });
            at += bytes;
        }
        else
            reads.push(failed());
    }
    return reads;
}
/** One file of the output folder (readOutputFiles for one). */
async function readOutputFile(outputs, path, max) {
    return (await readOutputFiles(outputs, [{ path, max }]))[0];
}
/**
 * After the agent: records its final answer (a `result` event), stores its usage and its changes
 * (the `changes.patch` artifact), then removes the output folder. Answers a failure when the
 * patch is over the limit.
 */
async function collectOutputs(options) {
    const { store, run, outputs, record } = options;
    try {
        // Both files in one reader: the answer, and the usage (one byte past its limit, to say so).
        const [result, usage] = (await readOutputFiles(outputs, [
            { path: outputs.env.AGENT_RESULT_FILE, max: MAX_RESULT_BYTES },
            { path: outputs.env.AGENT_USAGE_FILE, max: MAX_USAGE_BYTES + 1 }
        ]));
        await collectResult(options, result);
        if (usage.kind === 'refused')
            await record('notice', { text: `AGENT_USAGE_FILE was not read: ${usage.why}` });
        if (usage.kind === 'read') {
            const parsed = parseUsage(usage.data);
            if (typeof parsed === 'string')
                await record('notice', { text: `AGENT_USAGE_FILE ignored: ${parsed}` });
            else
                await store.setRequestUsage(run.run_id, parsed.json);
        }
        return options.workspace ? await collectPatch(options, options.workspace) : undefined;
    }
    finally {
        removeTree(outputs.dir);
    }
}
async function collectResult({ store, run, record }, file) {
    if (file.kind === 'refused') {
        await record('notice', { text: `AGENT_RESULT_FILE was not read: ${file.why}` });
    }
    if (file.kind === 'read') {
        await record('result', { text: file.data.toString('utf8'), source: 'result_file' });
        return;
    }
    // Page through the transcript keeping only the last STDOUT_TAIL_BYTES of stdout, so a long
    // transcript is never held whole.
    let bytes = Buffer.alloc(0);
    let printed = false;
    for (let after = 0;;) {
        const page = await store.listEvents(run.run_id, { after, limit: 50 });
        if (page.some(event => event.kind === 'result'))
            return;
        const text = page
            .filter(event => event.kind === 'output' && event.stream === 'stdout')
            .map(event => String(event.text ?? ''))
            .join('');
        printed ||= text.trim() !== '';
        bytes = Buffer.concat([bytes, Buffer.from(text, 'utf8')]);
        if (bytes.length > STDOUT_TAIL_BYTES)
            bytes = bytes.subarray(bytes.length - STDOUT_TAIL_BYTES);
        if (page.length < 50)
            break;
        after = page.at(-1).seq;
    }
    if (!printed)
        return;
    const tail = bytes;
    // A cut in the middle of a character leaves replacement characters at the start: drop them.
    await record('result', { text: tail.toString('utf8').replace(/^\uFFFD+/, ''), source: 'stdout' });
}
/**
 * The usage file's object as JSON to store, or why it was ignored. JSON.parse reads any depth but
 * JSON.stringify overflows the stack past a few thousand levels: such a file is refused here, where
 * before the error skipped the rest of the outputs step (the patch, and workspaces.max_patch with it).
 */
function parseUsage(data) {
    if (data.length > MAX_USAGE_BYTES)
        return `it is over ${MAX_USAGE_BYTES} bytes`;
    let value;
    try {
        value = JSON.parse(data.toString('utf8'));
    }
    catch {
        return 'it is not valid JSON; expected a JSON object such as {"inference_cost": 0.12}';
    }
    if (value === null || typeof value !== 'object' || Array.isArray(value))
        return 'expected a JSON object such as {"inference_cost": 0.12}';
    try {
        return { json: JSON.stringify(value) };
    }
    catch {
        return 'it is nested too deep to store';
    }
}
/**
 * The full `git diff --binary` from the start commit to everything in the workspace now (agent
 * commits, staged, unstaged and new files), printed by git as the run's user (never cut: past
 * the limit it is only counted, and the run fails saying its size).
 */
async function collectPatch({ store, run, maxPatchBytes, record, secrets }, workspace) {
    const renamed = await earlierPatches(store, run);
    // No changes since the start commit (a later turn undid them): no `changes.patch` is right.
    const made = workspace.changed ? await workspace.patch(maxPatchBytes) : { bytes: Buffer.alloc(0), size: 0 };
    // A secret the agent wrote into a file is replaced in the patch too (one line's text changes, no
    // line is added or removed, so the patch still applies).
    const bytes = secrets && [...secrets].some(secret => made.bytes.includes(secret))
        ? Buffer.from(redactSecrets(made.bytes.toString('utf8'), secrets))
        : made.bytes;
    const size = bytes === made.bytes ? made.size : bytes.length;
    if (size === 0 || size > maxPatchBytes) {
        await store.renameArtifacts(run.run_id, renamed);
        return size === 0 ? undefined : patchTooLarge(size, maxPatchBytes);
    }
    const uid = (0,external_node_crypto_.randomUUID)();
    await store.addArtifact({
        artifact_uid: uid,
        run_id: run.run_id,
        team: run.team,
        artifact_type: 'FILE',
        filepath: PATCH_NAME,
        filename: PATCH_NAME,
        mime_type: 'text/x-diff',
        size,
        description: 'Every change of the run since its start commit: `git apply changes.patch` in a checkout of the source',
        created_at: new Date().toISOString()
    }, bytes, renamed);
    await record('artifact', { artifact_uid: uid, filename: PATCH_NAME, mime_type: 'text/x-diff', size });
    return undefined;
}
/**
 * The run's earlier `changes.patch` (a run continued by follow-ups makes one each time it ends),
 * each renamed `changes-turn-N.patch` after the last turn it covered (the `turn` event before its
 * `artifact` event; turn 1 when none): the run keeps one `changes.patch`, always the newest, which
 * covers everything since the start commit.
 */
async function earlierPatches(store, run) {
    const earlier = (await store.listArtifacts(run.team, run.run_id)).filter(artifact => artifact.artifact_type === 'FILE' && artifact.filename === PATCH_NAME);
    if (earlier.length === 0)
        return [];
    const events = await store.listEvents(run.run_id, { kinds: ['turn', 'artifact'] });
    return earlier.map(artifact => {
        let turn = 1;
        for (const event of events) {
            if (event.kind === 'turn' && typeof event.turn === 'number')
                turn = event.turn;
            if (event.kind === 'artifact' && event.artifact_uid === artifact.artifact_uid)
                break;
        }
        return { artifact_uid: artifact.artifact_uid, filename: `changes-turn-${turn}.patch` };
    });
}

;// CONCATENATED MODULE: ./src/executor/worker/plan-artifact.ts
// A plan-mode turn's product: its final answer kept as a PLAN artifact. The run record lists it as
// `{artifact_type: "PLAN", data: {document_uid, artifact_uid, title}}`, and GET /agent/artifacts/{uid}
// answers its markdown as `data.content` (the service's shape), besides the usual download link.

/** The plan's title: its first heading, else the run's title, else "Plan"; at most 200 characters. */
function planTitle(markdown, runTitle) {
    return (firstHeading(markdown) ?? runTitle ?? 'Plan').slice(0, 200);
}
/**
 * The text of the answer's first heading line (`# Title`, `## Title ##`), read line by line with
 * no regular expression over a line: the answer is the agent's, and a pattern with neighbouring
 * quantifiers (`(.+?)\s*#*\s*$`) backtracks in cubic time over a long run of spaces, so 50,000
 * spaces in a plan held the executor's event loop (every run, every request) for hours.
 */
function firstHeading(markdown) {
    for (let start = 0; start < markdown.length;) {
        const newline = markdown.indexOf('\n', start);
        const end = newline < 0 ? markdown.length : newline;
        const line = markdown.slice(start, end);
        start = end + 1;
        let level = 0;
        while (level < line.length && line[level] === '#')
            level++;
        if (level < 1 || level > 6 || (line[level] !== ' ' && line[level] !== '\t'))
            continue;
        const text = line.slice(level).trim();
        // A closing run of `#` (after a space) is not part of the title: `## Title ##`.
        let cut = text.length;
        while (cut > 0 && text[cut - 1] === '#')
            cut--;
        const title = cut === 0 || /\s/.test(text[cut - 1]) ? text.slice(0, cut).trimEnd() : text;
        if (title !== '')
            return title;
    }
    return undefined;
}
/** Keeps the run's last answer as its PLAN artifact; nothing when the turn gave no answer. */
async function keepPlan(store, run) {
    const events = await store.listEvents(run.run_id, { fromEnd: true, limit: 200 });
    const answer = events.findLast(event => event.kind === 'result')?.text;
    if (typeof answer !== 'string' || answer.trim() === '')
        return;
    const data = Buffer.from(answer, 'utf8');
    await store.addArtifact({
        artifact_uid: (0,external_node_crypto_.randomUUID)(),
        run_id: run.run_id,
        team: run.team,
        artifact_type: 'PLAN',
        filepath: 'plan.md',
        filename: 'plan.md',
        mime_type: 'text/markdown; charset=utf-8',
        size: data.length,
        description: planTitle(answer, run.title),
        created_at: new Date().toISOString()
    }, data);
}

;// CONCATENATED MODULE: ./src/executor/worker/turns.ts
// The turns of a run's conversation, and the one place that decides what a follow-up does. A
// follow-up is a `followup` event in the run's transcript; then:
// - a queued run waits, and its first turn takes the prompt with every follow-up sent meanwhile;
// - a running run continues: after a turn that succeeds, its worker takes the follow-ups that
//   arrived during it as one more turn in the same workspace (followingTurn);
// - an ended run starts a new turn: the store queues it again, and the claim's first turn
//   (firstTurn) takes the follow-ups.
// The race between a follow-up and a turn's end (recorded after the worker's last look, before
// the finish) is guarded once, in the store: the follow-up's write and the finish each queue an
// ended run while a follow-up waits untaken (store/sql-store.ts requeueWaiting).
//
// Turns are read back from the transcript: each later turn takes the follow-ups no earlier turn
// took (a `turn` event names the seqs of those it took; a plain first turn, with no follow-up,
// records none, so a run never continued has the transcript it always had). A turn after the first
// continues in the same workspace and, where the harness can, the same CLI session (its last
// `agent_session` event). The conversation so far is also written out as text for agents that
// cannot resume a session (AGENT_CONVERSATION_FILE).
const modeOf = (value) => (value === 'plan' || value === 'orchestrate' ? value : 'normal');
/**
 * The next turn of a run, from its create request's prompt and mode and its transcript; undefined
 * when an earlier turn ran and no follow-up is left to take (a running run with nothing new).
 * `done`: turns the caller knows ran besides those the transcript names (see turnsBefore).
 */
function nextTurn(run, events, done = 0) {
    const taken = new Set();
    let last = done;
    let session;
    const pending = [];
    const followups = new Map();
    const lines = [`## user\n\n${run.prompt}`];
    for (const event of events) {
        if (event.kind === 'turn') {
            last = Math.max(last, Number(event.turn) || 0);
            const seqs = Array.isArray(event.followups) ? event.followups : [];
            for (const seq of seqs)
                taken.add(seq);
            if (Number(event.turn) > 1)
                lines.push(`## user\n\n${seqs.map(seq => followups.get(seq) ?? '').join('\n\n')}`);
        }
        else if (event.kind === 'followup') {
            followups.set(event.seq, String(event.message ?? ''));
            pending.push(event);
        }
        else if (event.kind === 'result' && typeof event.text === 'string') {
            lines.push(`## assistant\n\n${event.text}`);
        }
        else if (event.kind === 'agent_session' && typeof event.session_id === 'string') {
            session = event.session_id;
        }
    }
    const fresh = pending.filter(event => !taken.has(event.seq));
    if (last > 0 && fresh.length === 0)
        return undefined;
    const messages = fresh.map(event => String(event.message ?? ''));
    const createdMode = modeOf(parseExtra(run.extra).mode);
    const mode = fresh.length > 0 ? modeOf(fresh.at(-1).mode) : createdMode;
    const prompt = last === 0 ? [run.prompt, ...messages].join('\n\n') : messages.join('\n\n');
    if (last > 0)
        lines.push(`## user\n\n${prompt}`);
    const turn = {
        number: last + 1,
        prompt,
        mode,
        followups: fresh.map(event => event.seq),
        continuing: last > 0,
        conversation: `${lines.join('\n\n')}\n`
    };
    if (last > 0 && session !== undefined)
        turn.resumeSession = session;
    const from = parseExtra(run.extra).conversation_id;
    if (last === 0 && typeof from === 'string')
        turn.startFrom = from;
    return turn;
}
/** The first turn of a run that continues an earlier run's conversation: that run's session and words. */
function continuedFrom(turn, earlier, events) {
    const before = nextTurn(earlier, [
        ...events,
        { seq: Number.MAX_SAFE_INTEGER, at: '', kind: 'followup', message: turn.prompt, mode: turn.mode }
    ], 1);
    const session = events.findLast(event => event.kind === 'agent_session')?.session_id;
    const continued = { ...turn, conversation: before?.conversation ?? turn.conversation };
    if (typeof session === 'string')
        continued.resumeSession = session;
    return continued;
}
/**
 * Turns a run had before the claim that is running it now: each claim records an INPROGRESS state
 * event, so a run claimed before (then ended and followed up) had at least its first turn.
 */
function turnsBefore(events) {
    const claims = events.filter(event => event.kind === 'state' && event.state === 'INPROGRESS').length;
    return claims >= 2 ? 1 : 0;
}
/** Whether a turn is recorded: every one after the first, and a first that took follow-ups. */
function recordsTurn(turn) {
    return turn.number > 1 || turn.followups.length > 0;
}
/** The kinds that say which follow-ups are left to take (a cheap look: no output read). */
const FOLLOWUP_KINDS = ['followup', 'turn'];
/**
 * The first turn of a claim: the next one the transcript asks for (the prompt, or the follow-ups
 * that queued the run again), the first turn of a run continuing an earlier run's conversation
 * starting from that run's session and words.
 */
async function firstTurn(store, run) {
    const events = await store.listEvents(run.run_id);
    // A run claimed again with nothing new to take (its follow-up was taken by a turn that was then
    // cut short): it goes on with the prompt, in what the earlier turns left.
    let turn = nextTurn(run, events, turnsBefore(events)) ?? {
        ...nextTurn(run, []),
        number: 2,
        continuing: true
    };
    if (turn.startFrom && !turn.continuing) {
        const earlier = await store.getRun(run.team, turn.startFrom);
        if (earlier)
            turn = continuedFrom(turn, earlier, await store.listEvents(earlier.run_id));
    }
    return turn;
}
/**
 * After `turn` succeeded: the turn that takes the follow-ups which arrived during it, or undefined
 * when none did (the run ends; one arriving from now on is the store's to take).
 */
async function followingTurn(store, run, turn) {
    // A cheap look for follow-ups first; the whole transcript only when there is one to take.
    if (!nextTurn(run, await store.listEvents(run.run_id, { kinds: FOLLOWUP_KINDS }), turn.number))
        return undefined;
    return nextTurn(run, await store.listEvents(run.run_id), turn.number);
}
/** Records that `turn` begins, naming the follow-ups it takes (a plain first turn records nothing). */
async function beginTurn(store, run, turn, flush) {
    if (!recordsTurn(turn))
        return;
    await flush();
    await store.appendEvent(run.run_id, 'turn', { turn: turn.number, mode: turn.mode, followups: turn.followups }, new Date().toISOString());
}
function parseExtra(extra) {
    try {
        const value = JSON.parse(extra);
        return value !== null && typeof value === 'object' ? value : {};
    }
    catch {
        return {};
    }
}

;// CONCATENATED MODULE: ./src/executor/worker/run-temp.ts
// The TMPDIR of an unconfined harness turn: DATA_DIR/tmp/t<pid>.<random>, short because a socket's
// path inside it must be (a longer one sends Claude Code back to the machine's /tmp). The turn
// removes it when it ends; an executor killed first (SIGKILL, a crash) leaves it, and the start-up
// and maintenance sweep removes every such folder no live turn of this process holds and every one
// of a process that is gone (several executor processes may share a data dir: a live one's folders
// are its own). The sweep reads
// only the names in DATA_DIR/tmp (a folder of the executor's, which no run can write) and never
// looks inside a run's folder: it goes through the removal primitive (workspace/remove.ts).




/** The temp folders live turns of this process hold. */
const run_temp_held = new Set();
function tempsDir(dataDir) {
    return (0,external_node_path_.join)(dataDir, 'tmp');
}
/** Makes a turn's temp folder and holds it until `releaseRunTemp`. */
function makeRunTemp(dataDir) {
    (0,external_node_fs_.mkdirSync)(tempsDir(dataDir), { recursive: true, mode: 0o700 });
    // Made and held in one synchronous step: a sweep never sees it unheld.
    const path = (0,external_node_fs_.mkdtempSync)((0,external_node_path_.join)(tempsDir(dataDir), `t${process.pid}.`));
    run_temp_held.add(path);
    return path;
}
/** Removes a turn's temp folder and lets it go. */
function releaseRunTemp(path) {
    try {
        removeTree(path);
    }
    finally {
        run_temp_held.delete(path);
    }
}
/** Whether a temp folder is left over: this process's and held by no turn, or a dead process's. */
function leftOver(name, path) {
    if (!name.startsWith('t'))
        return false;
    const pid = /^t(\d+)\./.exec(name)?.[1];
    // A name without a pid was made before folders carried one: nobody holds it.
    if (pid === undefined)
        return true;
    return Number(pid) === process.pid ? !run_temp_held.has(path) : !processAlive(Number(pid));
}
/**
 * Removes the temp folders no live turn holds (left by a killed process); answers how many went.
 * One that cannot go stays for the next sweep.
 */
function sweepRunTemps(dataDir) {
    const dir = tempsDir(dataDir);
    let removed = 0;
    for (const name of (0,external_node_fs_.existsSync)(dir) ? (0,external_node_fs_.readdirSync)(dir) : []) {
        const path = (0,external_node_path_.join)(dir, name);
        if (!leftOver(name, path))
            continue;
        try {
            removeTree(path);
            removed++;
        }
        catch {
            continue;
        }
    }
    return removed;
}

;// CONCATENATED MODULE: ./src/executor/worker/start-from.ts
// A run that continues an earlier run's conversation (its create request's conversation_id)
// starts where that run ended: the earlier run's changes since its start commit are applied on the
// new workspace's start (so the new run's diff and patch include them), and a harness's HOME is
// copied, so its CLI resumes the earlier session.
//
// Everything read here was written by the earlier run, so two rules hold. Nothing of the earlier
// run may run meanwhile: the store holds that run (a follow-up of it stays queued, on every node,
// until the hold is released), so no agent swaps a directory for a link mid-copy. And nothing of it
// is read by root: the diff, the patch, its application and the HOME copy each run as the run's
// user in the reader sandbox (sandbox/run-files.ts), which shows only the two runs' trees. A start
// that fails half way leaves nothing: the new HOME is emptied and the workspace marked as one no
// follow-up may continue.






/** Largest patch of an earlier run's changes carried over (its own max_patch bounded it already). */
const MAX_CARRIED_PATCH = 1024 ** 3;
/**
 * Starts a run from the earlier run's final tree (its changes since its start commit, applied on
 * this workspace's start) and, for a harness, a copy of its HOME (the CLI session it resumes).
 */
async function startFrom(options) {
    const { dataDir, runId, earlierId, workspace, home } = options;
    const release = await options.hold();
    if (!release)
        throw new Error(`conversation_id ${earlierId}: that run is running again (a follow-up); start this run when it has ended`);
    try {
        const earlier = reopenWorkspace(dataDir, earlierId, workspace.identity);
        if (!earlier)
            throw new Error(`conversation_id ${earlierId}: that run's workspace is gone (removed after workspaces.continue_for); start without conversation_id`);
        await carryChanges(earlierId, earlier, workspace, options.limits.quotaBytes);
        const earlierHome = (0,external_node_path_.join)(dataDir, 'homes', earlierId);
        if (home && (0,external_node_fs_.existsSync)(earlierHome)) {
            await copyHome(earlierHome, home, workspace);
            // What the copy made counts as the run's own (hard links stay links, but a copy is checked).
            const usage = await treeUsage(workspace.identity, [home]);
            const over = overLimits(usage, options.limits);
            if (over)
                throw new Error(`the HOME of the run being continued ${over}`);
        }
    }
    catch (error) {
        // Nothing half made is kept: a follow-up of this run must not go on over a partial copy.
        if (home)
            emptyHome(home, workspace);
        markUnusable(dataDir, runId, `its start from run ${earlierId} failed: ${error.message}`);
        throw error;
    }
    finally {
        await release();
    }
}
/** Why `usage` is past what a run may write, or undefined. */
function overLimits(usage, limits) {
    if (usage.bytes > limits.quotaBytes)
        return `is larger than the disk quota (${limits.quotaBytes} bytes)`;
    if (usage.files > limits.maxFiles)
        return `holds more than workspaces.max_files (${limits.maxFiles}) entries`;
    if (usage.unreadable)
        return `could not be measured: ${usage.unreadable}`;
    return undefined;
}
/** The earlier run's changes, read and applied as the runs' user. */
async function carryChanges(earlierId, earlier, workspace, quotaBytes) {
    const { files } = await earlier.diff();
    if (files.length === 0)
        return;
    // Applied, the changes write every name anew (git knows no hard links): bounded before a byte is.
    const bytes = await earlier.changedBytes();
    if (bytes > quotaBytes)
        throw new Error(`conversation_id ${earlierId}: that run's changes hold ${bytes} bytes of files, more than the disk quota (${quotaBytes} bytes) a run may write`);
    // A patch larger than the quota could only write more than the run may.
    const max = Math.min(MAX_CARRIED_PATCH, quotaBytes);
    const patch = await earlier.patch(max);
    if (patch.size > max)
        throw new Error(`conversation_id ${earlierId}: that run's changes are over ${max} bytes`);
    await runTreeGit({ repository: workspace.git, borrowed: workspace.borrowed, identity: workspace.identity }, [['apply', '--index', '--binary', '--whitespace=nowarn', '-']], { writeTree: true, stdin: patch.bytes }).catch(error => {
        throw new Error(`conversation_id ${earlierId}: that run's changes do not apply to this workspace's start: ${gitReason(error)}`);
    });
}
/**
 * Copies the earlier run's HOME (what its agent left: links copied as links, never followed) with
 * the system's `cp` as the run's user, in a sandbox that shows the two HOMEs only: whatever the
 * earlier agent left there, the copy can reach nothing else (and, unlike Node's cpSync, no depth
 * of nesting can abort the executor).
 */
async function copyHome(from, to, workspace) {
    const result = await asRunUser(workspace.identity, {
        read: [from],
        write: [to],
        program: 'cp',
        // Hard links stay links: a file linked a thousand times is copied once, as du counted it.
        args: ['-R', '-P', '--preserve=mode,timestamps,links', '--', `${from}/.`, to]
    }).catch(error => {
        // The earlier run's HOME is gone (it ran no harness, or was swept): nothing to copy.
        throw new Error(`the HOME of the run being continued could not be copied: ${error.message}`);
    });
    if (result.code !== 0)
        throw new Error(`the HOME of the run being continued could not be copied: ${readerReason(result)}`);
}
/** Empties a run's HOME again (made anew, the run user's). */
function emptyHome(home, workspace) {
    removeTree(home);
    (0,external_node_fs_.mkdirSync)(home, { recursive: true, mode: 0o700 });
    const user = workspace.identity.user;
    if (user)
        (0,external_node_fs_.lchownSync)(home, user.uid, user.gid);
}

;// CONCATENATED MODULE: ./src/executor/worker/steps.ts
// A turn of a run up to its agent's end: the workspace (made, or reopened for a follow-up), the
// run's HOME and output folder, the sandbox, the disk quota watch (one `du` every 2 s over what the
// run may write), the environment's setup commands (or the kept result of them), then the agent.
// It gathers what happened and never decides the run's outcome: execute.ts takes it from here
// (the diff, the outputs, publishing) and runs/outcomes.ts decides.
















const QUOTA_CHECK_MS = 2000;
/**
 * What a run has written to disk: its workspace (only its own layer when the workspace is a
 * copy-on-write view of a shared checkout), its output folder (AGENT_RESULT_FILE's) and a harness's
 * HOME, all on the data dir's disk and all under the one quota; counted by `du` as the run's user
 * in the reader sandbox (workspace.ts treeUsage), in bytes and in entries.
 */
function runUsage(workspace, outputs, home) {
    return treeUsage(workspace.identity, [workspace.counted, outputs.dir, ...(home ? [home] : [])]);
}
/** Why a run's files are over what it may write, or undefined while they are within it. */
function overQuota(usage, limits) {
    if (usage.bytes > limits.quotaBytes)
        return 'bytes';
    if (usage.files > limits.maxFiles)
        return `holds more than ${limits.maxFiles} files and directories (workspaces.max_files)`;
    if (usage.unreadable)
        return `holds files its own user cannot read, which the quota cannot count (${usage.unreadable})`;
    if (usage.uncounted)
        return `could not be counted: ${usage.uncounted}`;
    return undefined;
}
/** Aborts `controller` with 'quota' once the run's files are over its limits; returns the stopper. */
function watchQuota(measure, limits, controller, note, onError) {
    let measuring = false;
    const timer = setInterval(() => {
        if (measuring)
            return;
        measuring = true;
        measure()
            .then(usage => {
            const why = overQuota(usage, limits);
            if (why === undefined)
                return;
            if (why !== 'bytes')
                note.why = why;
            controller.abort('quota');
        })
            .catch(onError)
            .finally(() => (measuring = false));
    }, QUOTA_CHECK_MS);
    return () => clearInterval(timer);
}
/**
 * The environment's setup commands, in order, with the workspace writable whatever the turn's mode;
 * the first that exits non-zero fails the run.
 */
async function setup(environment, processes, env, signal, record, mode) {
    for (const command of environment.setup) {
        if (signal.aborted)
            break;
        const result = await processes.shell(command, { env });
        await record('setup', {
            command,
            exit_code: result.exitCode,
            output: result.output,
            duration_ms: result.durationMs
        });
        if (result.exitCode !== 0)
            return setupFailed(command, result.exitCode, mode);
    }
    return succeeded();
}
/** The run's create config as an object (an unreadable one as empty). */
function runConfigOf(run) {
    try {
        const value = JSON.parse(run.config);
        return value !== null && typeof value === 'object' ? value : {};
    }
    catch {
        return {};
    }
}
/** The variables the environment passes from the executor's environment, by name. */
function passedVariables(environment) {
    return Object.fromEntries(environment.env.filter(name => process.env[name] !== undefined).map(name => [name, process.env[name]]));
}
/**
 * The run's workspace, sandbox, setup and agent, until the agent ends or the controller is
 * aborted; answers what the steps said (a step that throws fails the run as one that could not run).
 */
async function runSteps(options, turn) {
    const { run, environment, config, controller, record, log } = options;
    const timeout = setTimeout(() => controller.abort('timeout'), environment.timeoutMs);
    let stopWatch;
    let orchestrate;
    const ran = {};
    // A harness (claude-code, …) keeps its CLI's settings and sessions in a HOME of the run's own,
    // shown as HOME in the sandbox; other kinds get an empty HOME per process.
    const home = agentKindOf(environment.agent.kind)?.harnessType
        ? (0,external_node_path_.join)(config.dataDir, 'homes', run.run_id)
        : undefined;
    ran.home = home;
    let tmp;
    try {
        // A later turn (a follow-up) continues in what the earlier turns left: HOME and workspace.
        // Plan mode is enforced by the sandbox's read-only workspace: without a sandbox it is refused.
        if (turn.mode === 'plan' && !environment.sandbox.enabled)
            throw new Error(`mode plan: environment ${environment.id} has sandbox: off, so its workspace cannot be made read-only; use mode normal or an environment with a sandbox`);
        // A root executor's runs are an unprivileged host user, who owns what the run may write: its
        // directories are made empty and given to that user here (a shared checkout's files are theirs
        // from the start); nothing a run wrote is ever given away again on a later turn.
        const user = environment.sandbox.enabled ? runUser(environment.sandbox.user) : undefined;
        const identity = { user, confined: environment.sandbox.enabled };
        if (home && (!turn.continuing || !(0,external_node_fs_.existsSync)(home))) {
            removeTree(home);
            (0,external_node_fs_.mkdirSync)(home, { recursive: true, mode: 0o700 });
            if (user)
                (0,external_node_fs_.lchownSync)(home, user.uid, user.gid);
        }
        const reopened = turn.continuing ? reopenWorkspace(config.dataDir, run.run_id, identity) : undefined;
        if (turn.continuing && !reopened)
            throw new Error(`the workspace of run ${run.run_id} is gone (removed after workspaces.continue_for); it cannot be continued`);
        const workspace = reopened ??
            (await createWorkspace(environment, config.dataDir, run.run_id, config.workspaces.quotaBytes, user, cachesSetup(environment, turn)));
        ran.workspace = workspace;
        const startAt = turn.startFrom;
        if (startAt && !turn.continuing)
            await startFrom({
                dataDir: config.dataDir,
                runId: run.run_id,
                earlierId: startAt,
                workspace,
                home,
                limits: { quotaBytes: config.workspaces.quotaBytes, maxFiles: config.workspaces.maxFiles },
                hold: () => holdEarlier(options.store, run, startAt, controller.signal)
            });
        // An orchestrate turn's credential, reachable only through the run's proxy (its gateway).
        if (turn.mode === 'orchestrate') {
            const problem = orchestrateProblem(environment);
            if (problem)
                throw new Error(problem);
            orchestrate = await startOrchestrateTurn(options.store, run, options.apiUrl?.(), options.secrets ?? new Set());
        }
        const outputs = prepareOutputs(config.dataDir, run.run_id, identity);
        ran.outputs = outputs;
        // An unconfined harness CLI's TMPDIR: short, as a socket's path inside it must be (a longer one
        // sends Claude Code back to the machine's /tmp).
        if (home && !environment.sandbox.enabled)
            tmp = makeRunTemp(config.dataDir);
        const conversationFile = (0,external_node_path_.join)(outputs.dir, 'conversation.md');
        (0,external_node_fs_.writeFileSync)(conversationFile, turn.conversation, { mode: 0o644, flag: 'wx' });
        if (user)
            (0,external_node_fs_.lchownSync)(conversationFile, user.uid, user.gid);
        // An image's root: from the cache (copied first with image_pull: always), held until the sandbox closes.
        const image = environment.image
            ? imageRoot(await prepareImage(config.dataDir, environment.image, config.workspaces.cacheBytes), environment.env)
            : undefined;
        const confined = await confineRun({
            runId: run.run_id,
            image,
            sandbox: environment.sandbox,
            dataDir: config.dataDir,
            configFile: config.configFile,
            workspace: workspace.root,
            read: workspace.borrowed,
            write: [outputs.dir],
            user,
            home,
            gateway: orchestrate?.gateway
        }, { signal: controller.signal, cwd: workspace.path });
        ran.sandbox = confined.sandbox;
        for (const message of confined.warnings)
            await record('warning', { message });
        const sandbox = confined.sandbox;
        const measure = async () => {
            const usage = await runUsage(workspace, outputs, home);
            const hidden = sandbox?.deletedOpenBytes() ?? 0;
            if (hidden === undefined)
                return { ...usage, uncounted: `its processes hold more than ${MAX_OPEN_FILES} files open` };
            return { ...usage, bytes: usage.bytes + hidden };
        };
        ran.measure = measure;
        const note = {};
        ran.quota = note;
        const limits = { quotaBytes: config.workspaces.quotaBytes, maxFiles: config.workspaces.maxFiles };
        stopWatch = watchQuota(measure, limits, controller, note, error => log.warn({ err: error, run_id: run.run_id }, 'could not measure a workspace'));
        const env = passedVariables(environment);
        // The environment's setup ran in the first turn; its effects are in the workspace already.
        // With setup_cache, a kept result of the same commands for the same commit stands for them.
        const layer = turn.continuing ? undefined : workspace.setupLayer;
        if (layer?.cached)
            await record('notice', {
                text: 'setup commands skipped: their result for this commit is kept (setup_cache)'
            });
        const setupEnded = turn.continuing || layer?.cached
            ? succeeded()
            : await setup(environment, confined.processes, env, controller.signal, record, turn.mode);
        if (layer && !layer.cached)
            await layer.finish(setupEnded.state === 'SUCCEEDED' && !controller.signal.aborted);
        if (setupEnded.state !== 'SUCCEEDED' || controller.signal.aborted)
            return { ...ran, ended: setupEnded };
        // A plan turn's agent reads the workspace and changes nothing: from here on every process of the
        // run sees it read-only. The setup before it wrote as in any run (its writes are the environment).
        if (turn.mode === 'plan')
            sandbox?.protectWorkspace();
        const agent = agentKindOf(environment.agent.kind);
        if (!agent)
            throw new Error(`agent kind ${environment.agent.kind} is not available in this executor`);
        const ended = await agent.run({
            runId: run.run_id,
            environmentId: run.environment_id,
            prompt: turn.prompt,
            workspace: workspace.path,
            agent: environment.agent,
            env: { ...env, ...outputs.env, AGENT_CONVERSATION_FILE: conversationFile, ...orchestrate?.env },
            ...(environment.image ? { image: environment.image.ref } : {}),
            resumeSession: turn.resumeSession,
            turn: turn.number,
            mode: turn.mode,
            signal: controller.signal,
            record,
            runConfig: runConfigOf(run),
            home,
            tmp,
            processes: confined.processes
        });
        return { ...ran, ended, usage: ended.request_usage };
    }
    catch (error) {
        log.error({ err: error, run_id: run.run_id }, 'agent failed to run');
        // An error that knows its outcome says so (a source over the quota); any other could not run.
        const known = error.outcome;
        return { ...ran, ended: known ?? agentCouldNotRun(error.message) };
    }
    finally {
        clearTimeout(timeout);
        stopWatch?.();
        if (tmp)
            releaseRunTemp(tmp);
        // The turn's agent ended: its credential goes now (the server also refuses it once the run ended).
        await orchestrate
            ?.revoke()
            .catch(error => log.warn({ err: error, run_id: run.run_id }, 'could not remove a run token'));
        // A build of a setup layer cut short by an error is never kept; the runs waiting on it go on.
        await ran.workspace?.setupLayer?.finish(false).catch(() => undefined);
    }
}
/** How long a hold on an earlier run lasts unless renewed (it lapses if this node dies). */
const HOLD_LEASE_MS = 60_000;
/** How often a hold is renewed, and a hold of another new run on the same earlier run retried. */
const HOLD_RENEW_MS = 20_000;
const HOLD_RETRY_MS = 250;
/**
 * Holds the earlier run of a conversation_id start in the store while its files are read: a
 * follow-up of it stays queued, on every node, until the release. Undefined when the earlier run is
 * not (or no longer) ended; while another new run holds it (continuing the same conversation), this
 * waits for that hold to end.
 */
async function holdEarlier(store, run, earlierId, signal) {
    for (;;) {
        if (await store.holdRun(run.team, earlierId, run.run_id, HOLD_LEASE_MS))
            break;
        const earlier = await store.getRun(run.team, earlierId);
        if (!earlier || !run_isTerminalState(earlier.state) || signal.aborted)
            return undefined;
        await new Promise(resolve => setTimeout(resolve, HOLD_RETRY_MS));
    }
    const renew = setInterval(() => void store.holdRun(run.team, earlierId, run.run_id, HOLD_LEASE_MS).catch(() => undefined), HOLD_RENEW_MS);
    renew.unref();
    return async () => {
        clearInterval(renew);
        await store.releaseRun(earlierId, run.run_id).catch(() => undefined);
    };
}
/**
 * Whether a run may use or make a kept setup layer: the environment asks for it, has setup
 * commands and a sandbox, and the run does not start from another run's changes (the commands
 * then run over those changes, a result of its own).
 */
function cachesSetup(environment, turn) {
    return (environment.setupCache && environment.setup.length > 0 && environment.sandbox.enabled && !turn.startFrom);
}

;// CONCATENATED MODULE: ./src/executor/worker/execute.ts
// Executing one claimed run, start to end: its turns (steps.ts runs each up to its agent's end:
// workspace, sandbox, quota watch, setup, agent), then the diff of what it changed, its outputs and
// plan, and publishing it (publish/publish.ts) when the environment says so. The claim loop and
// the lease belong to pool.ts; this module only gathers what happened to the run, and
// runs/outcomes.ts decides its outcome, which the pool writes.






/** Whether the run's create request left publishing on (`config.publish: false` turns it off). */
function publishes(run) {
    try {
        return JSON.parse(run.config).publish !== false;
    }
    catch {
        return true;
    }
}
/**
 * Runs `run` in `environment` until its agent ends or `controller` is aborted (cancel, lease lost,
 * shutdown; the time limit and the quota abort it from here), keeps its changes and outputs,
 * publishes them after a success, and returns its outcome as outcomes.ts decides it.
 */
async function executeRun(options) {
    const { run, environment, config, controller, record, log, store } = options;
    const { ended, workspace, outputs, sandbox, measure, quota, usage, mode } = await runTurns(options);
    await record
        .flush?.()
        .catch(error => log.warn({ err: error, run_id: run.run_id }, 'could not write the tail'));
    // A run that wrote past the quota between two looks and ended is caught here (only a run that
    // started a process can have written: a simulated answer costs no measure).
    if (measure && sandbox?.started && !controller.signal.aborted) {
        // A count that fails stops the run: the quota never fails open.
        const why = await measure().then(written => overQuota(written, config.workspaces), (error) => `could not be counted: ${error.message}`);
        if (why) {
            if (why !== 'bytes' && quota)
                quota.why = why;
            controller.abort('quota');
        }
    }
    const happened = {
        stop: controller.signal.aborted ? controller.signal.reason : undefined,
        timeoutMs: environment.timeoutMs,
        quotaBytes: config.workspaces.quotaBytes,
        quotaWhy: quota?.why,
        ended,
        limit: sandbox?.exceeded()
    };
    await sandbox?.close();
    // The work tree read through the run's private git dir. When even that fails (the run left files
    // git refuses to record, say), nothing of the workspace is kept or published.
    let changed = true;
    if (workspace) {
        try {
            // How the changes were found (`walked`) is the executor's business, not the transcript's.
            const { nested, walked: _walked, ...changes } = await workspace.diff();
            if (nested.length > 0) {
                const shown = nested.slice(0, 20).map(path => `${path}/`);
                const more = nested.length > shown.length ? ` and ${nested.length - shown.length} more` : '';
                await record('notice', {
                    text: `nested repositories left out of the changes: ${shown.join(', ')}${more}`
                });
            }
            changed = changes.files.length > 0;
            if (changed)
                await record('diff', changes);
        }
        catch (error) {
            happened.unreadable = error.message;
            log.warn({ err: error, run_id: run.run_id }, 'could not read the workspace');
        }
    }
    const readable = workspace !== undefined && happened.unreadable === undefined;
    if (outputs) {
        happened.outputs = await collectOutputs({
            store,
            run,
            outputs,
            workspace: workspace && readable ? { changed, patch: max => workspace.patch(max) } : undefined,
            maxPatchBytes: config.workspaces.maxPatchBytes,
            record,
            secrets: options.secrets
        }).catch(error => {
            log.warn({ err: error, run_id: run.run_id }, 'could not collect the outputs');
            return undefined;
        });
    }
    // A plan-mode turn's final answer is its plan: a PLAN artifact whose content GET /agent/artifacts returns.
    if (mode === 'plan' && decideOutcome(happened).outcome.state === 'SUCCEEDED')
        await keepPlan(store, run).catch(error => log.warn({ err: error, run_id: run.run_id }, 'could not keep the plan'));
    // What the harness measured from the CLI's own stream outranks a file the agent could write.
    if (usage)
        await store
            .setRequestUsage(run.run_id, JSON.stringify(usage))
            .catch(error => log.warn({ err: error, run_id: run.run_id }, 'could not store the usage'));
    // A harness's HOME (its CLI session) stays with the workspace while the run can be continued;
    // the workspace sweep removes both (workspaces.continue_for).
    // After a success only: its changes as a branch and a pull request, unless the create request
    // said `config.publish: false` (it may turn publishing off, never choose where to).
    const base = workspace?.base;
    // A cancel (or a lost lease, a shutdown) that came while the changes and outputs were gathered
    // wins too: the run is no longer one to publish.
    if (controller.signal.aborted)
        happened.stop ??= controller.signal.reason;
    if (environment.publish &&
        workspace &&
        readable &&
        base &&
        decideOutcome(happened).outcome.state === 'SUCCEEDED' &&
        mode !== 'plan' &&
        publishes(run)) {
        happened.publish = await execute_publish(options, environment.publish, workspace, base);
    }
    workspace?.release();
    return decideOutcome(happened).outcome;
}
/**
 * The run's turns: the first one of this claim, then, while the agent succeeds, each follow-up
 * that arrived during a turn as one more turn in the same workspace (turns.ts decides which). What
 * the last turn left is what the run reports (its answer, outputs; the changes since the start commit).
 */
async function runTurns(options) {
    const { run, store, record, controller } = options;
    let turn = await firstTurn(store, run);
    for (;;) {
        await beginTurn(store, run, turn, () => record.flush?.());
        const ran = { ...(await runSteps(options, turn)), mode: turn.mode };
        if (ran.ended.state !== 'SUCCEEDED' || controller.signal.aborted)
            return ran;
        const next = await followingTurn(store, run, turn);
        if (!next)
            return ran;
        await ran.sandbox?.close();
        turn = next;
    }
}
/** Publishes the run's changes; answers the failure, if any. */
async function execute_publish({ run, environment, store, record, sessionLink }, config, workspace, base) {
    const events = await store.listEvents(run.run_id);
    const answer = events.findLast(event => event.kind === 'result')?.text;
    return publishChanges({
        run,
        config,
        workspace,
        source: environment.source,
        // Remembered from the workspace's making, never read back from the agent's .git.
        base,
        sessionLink: sessionLink?.({
            ...run,
            state: 'SUCCEEDED',
            started_at: run.started_at ?? run.created_at
        }),
        result: typeof answer === 'string' ? answer : undefined,
        store,
        record
    });
}

;// CONCATENATED MODULE: ./src/executor/worker/maintenance.ts
// The store's and the disk's housekeeping, on timers of the pool: failing runs whose worker died
// (at start-up, and whenever a lease expires), pruning finished runs past retention, and removing
// finished workspaces past theirs. Every node does the first two, API-only nodes too: the node
// that held a lease may never come back. Under workspaces.min_free (or min_free_inodes) it also
// frees the shared checkouts and setup layers no workspace uses, looking again only when something
// could have become unused (or after LOOK_AGAIN_MS), not on every claim attempt.









function now() {
    return new Date().toISOString();
}
/**
 * Fails the runs left INPROGRESS by a previous process. On a store of its own, whatever is
 * INPROGRESS was this data dir's previous process's; on a shared store other nodes are running
 * theirs, so only expired leases are abandoned.
 */
async function failOrphans(store, log) {
    const orphans = await store.failAbandoned(!store.shared, now(), RESTARTED_MESSAGE);
    if (orphans.length > 0)
        log.warn({ runs: orphans.length }, 'failed runs left in progress by a previous process');
}
/** Fails the runs whose lease expired: their worker stopped renewing it. */
async function reapExpiredLeases(store, log) {
    const failed = await store.failAbandoned(false, now(), LEASE_EXPIRED_MESSAGE);
    if (failed.length > 0)
        log.warn({ runs: failed.map(run => run.run_id) }, 'failed runs whose worker stopped renewing its lease');
}
/** Deletes finished runs older than the retention in days. */
async function pruneFinishedRuns(store, config, log) {
    const before = new Date(Date.now() - config.limits.retentionDays * 86_400_000).toISOString();
    const pruned = await store.pruneFinished(before);
    if (pruned > 0)
        log.info({ pruned }, 'pruned finished runs past retention');
}
/**
 * Removes finished runs' workspaces (and harness HOMEs) past the workspace retention, and never
 * before workspaces.continue_for (a follow-up continues in them); `active` ones are never touched.
 */
async function sweepFinishedWorkspaces(config, active, log) {
    const removed = await sweepWorkspaces(config.dataDir, config.environments, Math.max(config.workspaces.retentionMs, config.workspaces.continueForMs), active, config.workspaces.cacheBytes);
    if (removed > 0) {
        // Their shared checkouts and setup layers may be unused now: worth a look under min_free.
        removals.set(config.dataDir, (removals.get(config.dataDir) ?? 0) + removed);
        log.info({ removed }, 'removed workspaces past retention');
    }
    // Unpacked container images no run holds, least recently used first, past workspaces.cache_size.
    const images = sweepImages(config.dataDir, config.workspaces.cacheBytes);
    if (images.length > 0)
        log.info({ images: images.map(image => image.digest) }, 'removed unused unpacked images past cache_size');
    // The layout's blobs of images no environment names any more, past workspaces.cache_size.
    try {
        const refs = config.environments.flatMap(environment => environment.image ? [environment.image.ref] : []);
        const untagged = await collectImageLayout(config.dataDir, refs, config.workspaces.cacheBytes);
        if (untagged.length > 0)
            log.info({ images: untagged }, 'removed copied images no environment names from the image cache past cache_size');
    }
    catch (error) {
        log.warn({ err: error }, 'could not collect the image cache');
    }
    const homes = sweepLeftHomes(config.dataDir, Math.max(config.workspaces.retentionMs, config.workspaces.continueForMs), active);
    if (homes > 0)
        log.info({ removed: homes }, 'removed harness HOMEs left by runs that did not end here');
    // Unconfined harness turns' TMPDIRs a killed process left (DATA_DIR/tmp/t*): none is held then.
    const temps = sweepRunTemps(config.dataDir);
    if (temps > 0)
        log.info({ removed: temps }, 'removed temp folders left by turns that did not end here');
}
/**
 * A harness run's HOME (DATA_DIR/homes/<run id>, its MCP configuration and the CLI's files, secrets
 * included) is removed when the run ends; one whose executor was killed first is left behind, and
 * goes here once it is older than the workspace retention and its run is not running on this node.
 */
function sweepLeftHomes(dataDir, retentionMs, active) {
    const dir = (0,external_node_path_.join)(dataDir, 'homes');
    let removed = 0;
    for (const name of (0,external_node_fs_.existsSync)(dir) ? (0,external_node_fs_.readdirSync)(dir) : []) {
        const path = (0,external_node_path_.join)(dir, name);
        if (active.has(name) || Date.now() - (0,external_node_fs_.statSync)(path).mtimeMs < retentionMs)
            continue;
        try {
            // Any depth the run made it (remove.ts); one that cannot go stays for the next sweep.
            removeTree(path);
            removed++;
        }
        catch {
            continue;
        }
    }
    return removed;
}
/** How long the pool waits before it looks again for something to free, when nothing was left. */
const LOOK_AGAIN_MS = 60_000;
/** Workspaces the retention sweep removed, per data dir (a count that only grows). */
const removals = new Map();
/**
 * Per data dir, while free space stays under min_free: when the last look found nothing left to
 * free, the runs running then and the removals counted then. Something can become unused only
 * when one of those runs ends or a workspace is removed; until then (or LOOK_AGAIN_MS) the pool
 * does not look again. Free space coming back needs no look: the claim check reads it each time.
 */
const nothingLeft = new Map();
/**
 * When the data dir's file system has less free space than workspaces.min_free (or fewer free
 * inodes than workspaces.min_free_inodes: a checkout of many files gives back as many), removes
 * unused shared checkouts and kept setup layers (no run mounted on them, no retained workspace
 * over them), least recently used first, until it has enough again; logs what it freed, and once
 * (until space is back) that nothing is left to free. The pool calls it before it decides
 * whether to claim runs, so the cache gives way before the node stops.
 */
async function freeSpaceForRuns(config, active, log) {
    const { dataDir } = config;
    const { minFreeBytes, minFreeInodes } = config.workspaces;
    const shortOf = () => [
        (freeBytes(dataDir) ?? Infinity) < minFreeBytes && 'less free space than workspaces.min_free',
        (freeInodes(dataDir) ?? Infinity) < minFreeInodes && 'fewer free inodes than workspaces.min_free_inodes'
    ]
        .filter(Boolean)
        .join(' and ');
    const enough = () => shortOf() === '';
    const short = shortOf();
    if (!short) {
        nothingLeft.delete(dataDir);
        return;
    }
    const last = nothingLeft.get(dataDir);
    const removed = removals.get(dataDir) ?? 0;
    if (last &&
        Date.now() - last.at < LOOK_AGAIN_MS &&
        last.removals === removed &&
        [...last.active].every(runId => active.has(runId)))
        return;
    const freed = await freeSharedLayers(dataDir, active, enough);
    // Then unpacked container images no run holds: an image's root gives back every inode of its files.
    if (!enough())
        for (const image of freeImageRoots(dataDir, enough))
            freed.push({ name: `image ${image.digest}`, bytes: image.bytes });
    const after = enough();
    const later = `looking again when a run ends or a workspace is removed, or in ${LOOK_AGAIN_MS / 1000} s`;
    if (freed.length > 0)
        log.warn({
            freed: freed.map(entry => entry.name),
            freed_bytes: freed.reduce((sum, entry) => sum + entry.bytes, 0),
            free_bytes: freeBytes(dataDir),
            free_inodes: freeInodes(dataDir)
        }, `${short}: removed ${freed.length} unused shared checkout(s), setup layer(s) and unpacked image(s): ${freed.map(entry => entry.name).join(', ')}${after ? '' : `; none left unused, ${later}`}`);
    else if (!last)
        log.warn({ data_dir: dataDir, free_bytes: freeBytes(dataDir), free_inodes: freeInodes(dataDir) }, `${short} and no unused shared checkout, setup layer or unpacked image left to remove: ${later}`);
    if (after)
        nothingLeft.delete(dataDir);
    else
        nothingLeft.set(dataDir, { at: Date.now(), active: new Set(active), removals: removed });
}

;// CONCATENATED MODULE: ./src/executor/worker/transcript-budget.ts
// A run's stored transcript is bounded by `limits.transcript`, whatever its agent prints. Output
// events fill the first half of the budget (the head); past it, output is held in a ring that
// keeps only the newest events that fit the second half (the tail), and what falls out of the ring
// is counted, never stored. The ring is written, after one `truncated` event that says how many
// bytes, events and lines were dropped, as soon as any other event comes (a command agent's exit)
// or the run's agent ends, so the transcript still reads in order: head, note, tail, the rest.
// A harness's stream (messages, tool calls and results, file edits, session ids) comes as often
// as its CLI likes: those events are written while the transcript holds less than the whole
// budget, and past it dropped, with one notice. Other kinds (state, diff, result, artifacts) are
// few and bounded on their own: never dropped.
// The run is not failed for any of this. One output event is cut into pieces of at most
// MAX_EVENT_TEXT_BYTES, so no single event (and no single read of one) is large.
/** The largest `text` of one output event, in UTF-8 bytes. */
const MAX_EVENT_TEXT_BYTES = 64 * 1024;
/** Room kept for the notes about the cut and for an event's own fields (seq, at, kind). */
const NOTE_BYTES = 1024;
const EVENT_OVERHEAD = 64;
/** The kinds an agent's own stream makes as often as it likes (a harness CLI's), besides output. */
const STREAM_KINDS = new Set(['message', 'action', 'action_result', 'file', 'agent_session']);
/** Pieces of at most `max` UTF-8 bytes, never splitting a character. */
function splitText(text, max = MAX_EVENT_TEXT_BYTES) {
    if (Buffer.byteLength(text, 'utf8') <= max)
        return [text];
    const bytes = Buffer.from(text, 'utf8');
    const pieces = [];
    let start = 0;
    while (start < bytes.length) {
        let end = Math.min(start + max, bytes.length);
        // Back up to the start of a character (continuation bytes are 10xxxxxx).
        while (end < bytes.length && end > start && (bytes[end] & 0xc0) === 0x80)
            end--;
        pieces.push(bytes.subarray(start, end).toString('utf8'));
        start = end;
    }
    return pieces;
}
function transcript_budget_sizeOf(kind, data) {
    return Buffer.byteLength(JSON.stringify(data), 'utf8') + kind.length + EVENT_OVERHEAD;
}
function lineCount(text) {
    let lines = 0;
    for (let at = text.indexOf(10); at !== -1; at = text.indexOf(10, at + 1))
        lines++;
    return lines;
}
/** Wraps the run's event writer so that what it stores stays within `limitBytes` (plus small notes). */
function boundTranscript(write, limitBytes) {
    const headBytes = Math.floor(limitBytes / 2);
    const tailBytes = limitBytes - headBytes - NOTE_BYTES;
    let used = 0;
    let tailWritten = 0;
    let cutting = false;
    let full = false;
    let ring = [];
    let ringBytes = 0;
    const dropped = { bytes: 0, events: 0, lines: 0 };
    const hold = ({ text, ...data }, bytes) => {
        ring.push({ data, text: Buffer.from(typeof text === 'string' ? text : '', 'utf8'), bytes });
        ringBytes += bytes;
        while (ringBytes > Math.max(0, tailBytes - tailWritten) && ring.length > 0) {
            const old = ring.shift();
            ringBytes -= old.bytes;
            dropped.bytes += old.text.length;
            dropped.events++;
            dropped.lines += lineCount(old.text);
        }
    };
    const flush = async () => {
        const held = ring;
        const note = { ...dropped };
        ring = [];
        ringBytes = 0;
        Object.assign(dropped, { bytes: 0, events: 0, lines: 0 });
        if (note.events > 0) {
            await write('truncated', {
                dropped_bytes: note.bytes,
                dropped_events: note.events,
                dropped_lines: note.lines,
                limit_bytes: limitBytes,
                text: `… ${note.bytes} bytes of output (${note.events} events, ${note.lines} lines) were dropped here: ` +
                    `the transcript keeps the first and the last part of a run's output within limits.transcript`
            });
        }
        for (const event of held) {
            tailWritten += event.bytes;
            await write('output', { ...event.data, text: event.text.toString('utf8') });
            // A store that answers at once (SQLite) would otherwise write the whole tail without
            // letting a request in: give the event loop a turn between events.
            await new Promise(resolve => setImmediate(resolve));
        }
    };
    const recordOne = async (kind, data) => {
        const bytes = transcript_budget_sizeOf(kind, data);
        if (kind === 'output' && (cutting || used + bytes > headBytes)) {
            if (!cutting) {
                cutting = true;
                await write('notice', {
                    text: `The transcript reached half of limits.transcript (${limitBytes} bytes): ` +
                        'from here only the last part of the output is kept, written when the agent ends.'
                });
            }
            hold(data, bytes);
            return;
        }
        if (STREAM_KINDS.has(kind) && used + bytes > limitBytes) {
            if (!full) {
                full = true;
                await write('notice', {
                    text: `The transcript reached limits.transcript (${limitBytes} bytes): ` +
                        "the agent's further messages, tool calls and results are not kept."
                });
            }
            return;
        }
        if (kind !== 'output' && (ring.length > 0 || dropped.events > 0))
            await flush();
        used += bytes;
        await write(kind, data);
    };
    const record = async (kind, data) => {
        if (kind !== 'output' || typeof data.text !== 'string')
            return recordOne(kind, data);
        for (const text of splitText(data.text))
            await recordOne(kind, { ...data, text });
    };
    return Object.assign(record, { flush });
}

;// CONCATENATED MODULE: ./src/executor/worker/pool.ts
// The worker pool: the claim loop and the leases. It claims QUEUED runs up to the concurrency
// limits, holds a lease on each while execute.ts runs it, and writes its outcome. A run whose worker
// died (lease expired, or found INPROGRESS at start-up of a single-node store) becomes FAILED
// executor_restarted: never silently re-run, because agents have side effects; maintenance.ts does
// that and the pruning, on this pool's timers. While the store is unreachable the pool pauses and
// its writes retry.










const STOP_WAIT_MS = 10_000;
/** How long a finished run's outcome is retried while the store is unreachable. */
const FINISH_RETRY_MS = 10 * 60_000;
class WorkerPool {
    store;
    config;
    log;
    runsWork;
    sessionLink;
    apiUrl;
    owner = `node-${(0,external_node_crypto_.randomUUID)()}`;
    claims = 0;
    /**
     * Claims whose answer was lost (the store went away mid-claim): each may have committed. Every
     * claim has its own lease owner, so once the store is back the pool asks for the run leased to
     * it and runs it; without this the run would sit INPROGRESS until its lease expired, unrun.
     */
    uncertain = [];
    active = new Map();
    environments;
    /** What every run reads of the configuration, built once. */
    timers = [];
    unsubscribe;
    draining = false;
    pumping = false;
    pumpAgain = false;
    /** The pump and the sweep under way: either may launch a run or mount a workspace; stop waits for them. */
    underWay = new Set();
    /** On an exit without a stop (a second signal): no workspace stays mounted after the process. */
    unmountOnExit = () => unmountAllNow(this.config.dataDir);
    constructor(store, config, log, 
    /** False on API-only nodes: they sweep abandoned runs and prune, but run nothing. */
    runsWork = true, 
    /** The run's session link, for what publishing writes (commit message, pull request). */
    sessionLink, 
    /** Where this node's runs reach the executor's API (orchestrate turns); undefined: nowhere. */
    apiUrl) {
        this.store = store;
        this.config = config;
        this.log = log;
        this.runsWork = runsWork;
        this.sessionLink = sessionLink;
        this.apiUrl = apiUrl;
        this.environments = new Map(config.environments.map(env => [env.id, env]));
    }
    /** What a run reads of the configuration, as it is when the run starts. */
    get runSettings() {
        const { dataDir, configFile, workspaces } = this.config;
        return { dataDir, configFile, workspaces };
    }
    /** Fails runs left INPROGRESS by a previous process, then starts claiming. */
    async start() {
        // Processes a killed predecessor left running are stopped before their runs are failed.
        if (this.runsWork)
            await stopSurvivors(this.config.dataDir, this.log);
        if (this.runsWork)
            process.on('exit', this.unmountOnExit);
        await failOrphans(this.store, this.log);
        if (this.runsWork)
            this.unsubscribe = this.store.onChange(run => this.onChange(run));
        const every = (ms, work) => {
            const timer = setInterval(() => void work().then(() => (this.storeDown = false), error => this.timerFailed(error)), ms);
            timer.unref();
            this.timers.push(timer);
        };
        every(Math.max(200, Math.floor(this.config.leaseMs / 3)), () => this.heartbeat());
        // Expired leases are looked for often, so another node's runs fail soon after its lease ends.
        every(Math.max(100, Math.min(1000, Math.floor(this.config.leaseMs / 10))), () => this.reap());
        every(3_600_000, () => this.prune());
        if (this.runsWork) {
            // The fallback behind change notifications: a claim attempt a second when idle (every 5 s on
            // a shared store, whose own fallback poll re-announces changes a node missed).
            every(this.store.shared ? 5000 : 1000, () => this.pump());
            every(Math.min(60_000, Math.max(1000, this.config.workspaces.retentionMs / 2)), () => this.sweep());
            await this.sweep();
        }
        await this.prune();
        await this.pump();
    }
    storeDown = false;
    /** A timer's failure: one warning when the store goes away (not one a second), errors as errors. */
    timerFailed(error) {
        if (error instanceof StoreUnavailableError) {
            if (!this.storeDown)
                this.log.warn({ err: error }, 'store unavailable: the worker pauses until it is back');
            this.storeDown = true;
            return;
        }
        this.log.error({ err: error }, 'worker timer failed');
    }
    /** A write the run's outcome depends on: retried while the store is unreachable, up to `forMs`. */
    async persist(work, forMs) {
        const until = Date.now() + forMs;
        for (let delay = 100;; delay = Math.min(delay * 2, 1000)) {
            try {
                const result = await work();
                this.storeDown = false;
                return result;
            }
            catch (error) {
                if (!(error instanceof StoreUnavailableError) || Date.now() + delay > until)
                    throw error;
                this.timerFailed(error);
                await new Promise(resolve => setTimeout(resolve, delay));
            }
        }
    }
    get runningCount() {
        return this.active.size;
    }
    /** Stops claiming, lets running runs finish up to the grace period, then stops them. */
    async stop(graceMs) {
        this.draining = true;
        const all = () => Promise.all([...this.active.values()].map(active => active.done));
        const timer = new Promise(resolve => setTimeout(resolve, graceMs).unref());
        // A claim answered now still launches its run: that run gets the grace period like the others.
        await Promise.race([Promise.allSettled([...this.underWay]), timer]);
        await Promise.race([all(), timer]);
        for (const active of this.active.values())
            active.controller.abort('shutdown');
        await all();
        for (const timer of this.timers)
            clearInterval(timer);
        // What began meanwhile ends before the unmount: a sweep may mount a retained workspace again,
        // a pump launch a run whose claim was answered late (stopped at once).
        const settled = new Promise(resolve => setTimeout(resolve, STOP_WAIT_MS).unref());
        await Promise.race([Promise.allSettled([...this.underWay]), settled]);
        for (const active of this.active.values())
            active.controller.abort('shutdown');
        await all();
        // No copy-on-write workspace stays mounted after the node (the next start mounts retained ones).
        if (this.runsWork)
            await unmountAll(this.config.dataDir).catch(() => undefined);
        process.removeListener('exit', this.unmountOnExit);
        this.unsubscribe?.();
    }
    /** Runs `work` as one of the tasks stop waits for. */
    track(work) {
        this.underWay.add(work);
        const done = () => this.underWay.delete(work);
        work.then(done, done);
        return work;
    }
    onChange(run) {
        if (run.state === 'QUEUED')
            this.pumpSafely();
        const active = this.active.get(run.run_id);
        if (active && run.state === 'CANCELLED')
            active.controller.abort('cancelled');
    }
    /** A pump whose failure (the store being busy or full, say) is logged; the next tick tries again. */
    pumpSafely() {
        this.pump().catch(error => this.log.error({ err: error }, 'could not claim runs'));
    }
    /** Claims runs while there is capacity. Re-entrant calls coalesce into one more pass. */
    async pump() {
        if (!this.runsWork)
            return;
        if (this.pumping) {
            this.pumpAgain = true;
            return;
        }
        this.pumping = true;
        return this.track(this.claimWhileRoom());
    }
    async claimWhileRoom() {
        try {
            do {
                this.pumpAgain = false;
                await this.settleUncertainClaims();
                if (!this.draining && this.active.size < this.config.workers)
                    await freeSpaceForRuns(this.config, await this.inUse(), this.log);
                while (!this.draining &&
                    this.active.size < this.config.workers &&
                    !freeSpaceProblem(this.config, this.log)) {
                    const owner = `${this.owner}/${++this.claims}`;
                    let run;
                    try {
                        run = await this.store.claimNext(owner, this.config.leaseMs, this.fullEnvironments(), pool_now(), this.config.limits.maxRunningRunsPerTeam);
                    }
                    catch (error) {
                        if (error instanceof StoreUnavailableError)
                            this.uncertain.push(owner);
                        throw error;
                    }
                    if (!run)
                        break;
                    this.launch(run);
                }
            } while (this.pumpAgain);
        }
        finally {
            this.pumping = false;
        }
    }
    async settleUncertainClaims() {
        while (this.uncertain.length > 0) {
            const owner = this.uncertain[0];
            const run = await this.store.findClaim(owner);
            this.uncertain.shift();
            if (run && !this.active.has(run.run_id)) {
                this.log.info({ run_id: run.run_id }, 'a claim whose answer was lost had committed: running the run');
                this.launch(run);
            }
        }
    }
    fullEnvironments() {
        const counts = new Map();
        for (const { run } of this.active.values())
            counts.set(run.environment_id, (counts.get(run.environment_id) ?? 0) + 1);
        return [...this.environments.values()]
            .filter(env => (counts.get(env.id) ?? 0) >= env.maxConcurrentRuns)
            .map(env => env.id);
    }
    launch(run) {
        const controller = new AbortController();
        const active = { run, controller, done: Promise.resolve() };
        this.active.set(run.run_id, active);
        active.done = this.execute(run, controller)
            .catch(error => this.log.error({ err: error, run_id: run.run_id }, 'run execution failed'))
            .finally(() => {
            this.active.delete(run.run_id);
            this.pumpSafely();
        });
    }
    async execute(run, controller) {
        const environment = this.environments.get(run.environment_id);
        if (!environment) {
            await this.finish(run, environmentGone(run.environment_id));
            return;
        }
        // The run's secrets (an orchestrate turn's credential) never reach its transcript or status.
        const secrets = new Set();
        const record = redactingRecorder(boundTranscript((kind, data) => this.persist(() => this.store.appendEvent(run.run_id, kind, data, pool_now()), this.config.leaseMs).then(() => undefined), this.config.limits.transcriptBytes), secrets);
        const outcome = await executeRun({
            run,
            environment,
            config: this.runSettings,
            controller,
            record,
            log: this.log,
            store: this.store,
            sessionLink: this.sessionLink,
            apiUrl: this.apiUrl,
            secrets
        });
        if (outcome.status_message)
            outcome.status_message = redactSecrets(outcome.status_message, secrets);
        await this.finish(run, outcome);
    }
    async finish(run, outcome) {
        const at = pool_now();
        const finished = await this.persist(() => this.store.finishRun(run.run_id, run.lease_owner, outcome, at), FINISH_RETRY_MS);
        // A follow-up that arrived after the last turn looked is the store's to take: the finish queues
        // the run again in its transaction (store/sql-store.ts requeueWaiting).
        if (!finished) {
            // Cancelled meanwhile, failed as abandoned, or finished by an earlier try whose answer was lost.
            const stored = await this.store.getRunAnyTeam(run.run_id).catch(() => undefined);
            this.log.info({ run_id: run.run_id, state: stored?.state, error_code: stored?.error_code }, 'the run was no longer held by this worker when its agent stopped');
        }
    }
    heartbeating = false;
    /**
     * Renews every lease this pool holds. While the store is unreachable it keeps trying (every
     * second at most), so the leases are renewed as soon as the store is back: an outage of up to
     * about two thirds of a lease costs no run.
     */
    async heartbeat() {
        if (this.heartbeating)
            return;
        this.heartbeating = true;
        try {
            for (const [runId, active] of this.active) {
                const held = await this.persist(() => this.store.renewLease(runId, active.run.lease_owner, this.config.leaseMs), this.config.leaseMs);
                if (!held && !active.controller.signal.aborted)
                    active.controller.abort('lease_lost');
            }
        }
        finally {
            this.heartbeating = false;
        }
    }
    reap() {
        return reapExpiredLeases(this.store, this.log);
    }
    prune() {
        return pruneFinishedRuns(this.store, this.config, this.log);
    }
    sweep() {
        if (this.draining)
            return Promise.resolve();
        return this.track(this.inUse().then(inUse => sweepFinishedWorkspaces(this.config, inUse, this.log)));
    }
    /**
     * The runs whose files must stay as they are: those running here, and those a run (of any node)
     * holds while it reads them (a conversation_id start). Throws when the store cannot say, so no
     * sweep removes what a hold protects.
     */
    async inUse() {
        return new Set([...this.active.keys(), ...(await this.store.heldRuns())]);
    }
}
function pool_now() {
    return new Date().toISOString();
}

;// CONCATENATED MODULE: ./src/executor/schedules/scheduler.ts
// Fires the due schedules of every team: each node ticks about once a second and handles the
// schedules whose next due time has come. A fire is made exactly once however many nodes handle
// it at once, and across restarts: the run is created with the idempotency key
// `schedule:<id>:<due ms>`, so the runs table's unique index lets one create through and answers
// every other (another node, or this node again after a crash before it recorded the fire) with
// that same run; then a guarded UPDATE (`WHERE next_run_ms = due`) moves the schedule on, once.
//
// A fire time that passed while no node ran (earlier than this scheduler's start, by more than a
// grace) starts one run when a node comes back (catch_up, the default: a nightly job should not
// silently not happen because the machine rebooted at midnight; several missed times start one
// run, not a burst), or is skipped with `catch_up: false`, recorded in last_spawn_error. While a
// previous run of the schedule is still active, `overlap` decides: `skip` the fire (recorded),
// `queue` it (it stays due and starts once that run ended; times passing meanwhile merge into
// it), or `cancel_previous` (cancel that run, then start).



const BATCH = 50;
class Scheduler {
    store;
    config;
    options;
    now;
    startedAt;
    graceMs;
    intervalMs;
    timer;
    ticking;
    constructor(store, config, options = {}) {
        this.store = store;
        this.config = config;
        this.options = options;
        this.now = options.now ?? Date.now;
        this.startedAt = this.now();
        this.graceMs = options.graceMs ?? 60_000;
        this.intervalMs = options.intervalMs ?? 1_000;
    }
    start() {
        if (this.timer)
            return;
        this.timer = setInterval(() => void this.tick().catch(() => undefined), this.intervalMs);
        this.timer.unref();
    }
    /** Stops ticking and waits for a tick under way. */
    async stop() {
        if (this.timer)
            clearInterval(this.timer);
        this.timer = undefined;
        await this.ticking?.catch(() => undefined);
    }
    /** Handles every schedule due now (one tick at a time in this process). */
    tick() {
        this.ticking ??= this.handleDue().finally(() => (this.ticking = undefined));
        return this.ticking;
    }
    async handleDue() {
        const nowMs = this.now();
        const handled = new Set();
        for (;;) {
            const due = (await this.store.schedules.dueSchedules(nowMs, BATCH + handled.size)).filter(s => !handled.has(s.id));
            if (due.length === 0)
                return;
            for (const schedule of due) {
                handled.add(schedule.id);
                try {
                    await this.fire(schedule, nowMs);
                }
                catch (error) {
                    this.options.log?.warn({ err: error, schedule_id: schedule.id }, 'schedule fire failed');
                }
            }
        }
    }
    async fire(schedule, nowMs) {
        const { id, team, spec } = schedule;
        const due = schedule.next_run_ms;
        const dueAt = new Date(due).toISOString();
        const next = nextFire(spec.cron_schedule, spec.time_zone, Math.max(due, nowMs));
        const record = (error) => this.store.schedules.recordFire(id, due, { nextRunMs: next, error });
        if (due < this.startedAt - this.graceMs && !spec.catch_up) {
            await record(`the fire at ${dueAt} passed while no executor ran; skipped (catch_up: false)`);
            return;
        }
        const environment = spec.agent_config.environment_id;
        if (!this.config.environments.some(env => env.id === environment)) {
            await record(`the fire at ${dueAt} started no run: environment ${JSON.stringify(environment)} is not served`);
            return;
        }
        // Runs of earlier fires that are still active (a run of this very fire is not "previous":
        // another node may have just started it).
        const active = (await this.store.listRuns(team, { limit: 100, scheduleId: id })).filter(run => !run_isTerminalState(run.state) && scheduledFor(run) < due);
        if (active.length > 0) {
            const previous = active[0];
            if (spec.overlap === 'skip') {
                await record(`skipped the fire at ${dueAt}: run ${previous.run_id} of this schedule is still ${previous.state} (overlap: skip)`);
                return;
            }
            if (spec.overlap === 'queue')
                return; // stays due; starts once the previous run ended
            const at = new Date(nowMs).toISOString();
            for (const run of active)
                await this.store.cancelRun(team, run.run_id, at, `superseded by the schedule's fire at ${dueAt}`);
        }
        // Paused, changed or handled by another node since it was read: leave it.
        const current = await this.store.schedules.getSchedule(team, id);
        if (!current?.enabled || current.next_run_ms !== due)
            return;
        const key = `schedule:${id}:${due}`;
        const result = await this.store.createRun({
            run_id: (0,external_node_crypto_.randomUUID)(),
            team,
            environment_id: environment,
            title: spec.name,
            prompt: spec.prompt,
            config: JSON.stringify(spec.agent_config),
            extra: JSON.stringify({ schedule_id: id, scheduled_for: dueAt }),
            creator_type: schedule.created_by.type,
            creator_uid: schedule.created_by.uid,
            creator_name: schedule.created_by.display_name,
            created_at: new Date(nowMs).toISOString()
        }, { key, requestHash: key }, this.config.limits.maxQueuedRuns, this.config.limits.maxQueuedRunsPerTeam);
        if (result.kind === 'created' || result.kind === 'replayed') {
            await this.store.schedules.recordFire(id, due, {
                nextRunMs: next,
                ran: { at: result.run.created_at, runId: result.run.run_id },
                error: null
            });
            return;
        }
        const { maxQueuedRuns, maxQueuedRunsPerTeam } = this.config.limits;
        await record(result.kind === 'queue_full'
            ? `the fire at ${dueAt} started no run: the queue holds ${maxQueuedRuns} runs, its limit`
            : result.kind === 'team_queue_full'
                ? `the fire at ${dueAt} started no run: the team's queued runs reached its limit, limits.max_queued_runs_per_team: ${maxQueuedRunsPerTeam}`
                : `the fire at ${dueAt} started no run: its idempotency key ${key} was used by another request`);
    }
}
/** The due time (ms) of the fire that started a run; 0 for runs no schedule started. */
function scheduledFor(run) {
    const extra = JSON.parse(run.extra);
    return typeof extra.scheduled_for === 'string' ? Date.parse(extra.scheduled_for) : 0;
}

;// CONCATENATED MODULE: ./src/executor/webhooks/declared.ts
// The endpoints the operator declares in the configuration file (webhooks.endpoints), as the store
// keeps them: each has a fixed id made from its team and URL (so a restart finds the same one, and
// its delivery log stays) and the secret read from the variable it names.



function declaredWebhooks(config, env = process.env) {
    const problems = [];
    const seen = new Set();
    const declared = config.webhooks.endpoints.map((entry, index) => {
        const at = `webhooks.endpoints[${index}]`;
        const id = `wh_config_${(0,external_node_crypto_.createHash)('sha256').update(`${entry.team}\0${entry.url}`).digest('hex').slice(0, 24)}`;
        if (seen.has(id))
            problems.push(`${at}: team ${entry.team} declares ${entry.url} twice`);
        seen.add(id);
        const secret = env[entry.secretEnv];
        if (secret === undefined || secret === '')
            problems.push(`${at}.secret_env: the variable ${entry.secretEnv} is not set; expected it to hold a secret such as whsec_… (24 or more random bytes in base64)`);
        else if (!isSecret(secret))
            problems.push(`${at}.secret_env: the variable ${entry.secretEnv} does not hold a secret of the form whsec_ and base64 of at least 16 bytes`);
        const webhook = {
            id,
            team: entry.team,
            url: entry.url,
            events: entry.events,
            description: entry.description,
            secret: secret ?? '',
            previous_secret: null,
            previous_until_ms: null,
            source: 'config',
            created_at: new Date().toISOString(),
            disabled_at: null,
            disabled_reason: null
        };
        return webhook;
    });
    if (problems.length > 0)
        throw new ConfigError(`config: ${problems.length === 1 ? problems[0] : `\n- ${problems.join('\n- ')}`}`);
    return declared;
}

;// CONCATENATED MODULE: ./src/executor/webhooks/payload.ts
// The thin payload of a webhook: what changed and what a receiver needs to find the run, never the
// prompt, the transcript or the run's config. It stays under 20 KB: long text is cut, and metadata
// that would not fit is left out (the receiver reads the run for it).
const MAX_PAYLOAD_BYTES = 20 * 1024;
const MAX_TITLE = 1000;
const MAX_MESSAGE = 2000;
function cut(text, max) {
    return text.length <= max ? text : `${text.slice(0, max - 1)}…`;
}
/**
 * The payload of a delivery; `run` is the run as it is now (its title, environment and metadata
 * never change), undefined when it was pruned. `link` makes a run's session link.
 */
function payloadOf(delivery, run, link) {
    const extra = run ? JSON.parse(run.extra) : {};
    const metadata = extra.metadata !== null && typeof extra.metadata === 'object' && !Array.isArray(extra.metadata)
        ? extra.metadata
        : {};
    const payload = {
        type: delivery.event_type,
        timestamp: delivery.created_at,
        data: {
            run_id: delivery.run_id,
            state: delivery.state,
            previous_state: delivery.previous_state,
            title: run?.title === null || run?.title === undefined ? null : cut(run.title, MAX_TITLE),
            environment_id: run?.environment_id ?? '',
            metadata
        }
    };
    const ended = ['FAILED', 'CANCELLED', 'ERROR'].includes(delivery.state);
    if (ended && delivery.status_message !== null)
        payload.data.status_message = cut(delivery.status_message, MAX_MESSAGE);
    if (delivery.error_code !== null)
        payload.data.error_code = delivery.error_code;
    const session = run && delivery.state !== 'QUEUED' ? link(run) : undefined;
    if (session)
        payload.data.session_link = session;
    if (typeof extra.schedule_id === 'string')
        payload.data.schedule_id = extra.schedule_id;
    let body = JSON.stringify(payload);
    if (Buffer.byteLength(body) > MAX_PAYLOAD_BYTES) {
        payload.data.metadata = {};
        body = JSON.stringify(payload);
    }
    return body;
}

;// CONCATENATED MODULE: ./src/executor/webhooks/send.ts
// One attempt of a webhook delivery: a POST of the signed body to the endpoint, connected to the
// address resolve-and-check chose (address.ts), never following a redirect, within a time limit for
// the whole exchange, and reading nothing of the receiver's answer but its status line and headers
// (a receiver that sends a gigabyte, or trickles, costs the executor nothing).



/** A Retry-After value (seconds, or an HTTP date) in ms from now; undefined when unreadable. */
function retryAfterMs(value, nowMs = Date.now()) {
    if (value === undefined)
        return undefined;
    const trimmed = value.trim();
    if (/^\d+$/.test(trimmed))
        return Number(trimmed) * 1000;
    const date = Date.parse(trimmed);
    return Number.isNaN(date) ? undefined : Math.max(0, date - nowMs);
}
async function send(url, headers, body, options) {
    const target = new URL(url);
    const deadline = Date.now() + options.timeoutMs;
    let resolved;
    try {
        resolved = await withDeadline(resolveHost(hostOf(target), options.allowPrivate), deadline);
    }
    catch (error) {
        if (error instanceof AddressRefused)
            return { status: null, error: `refused: ${error.message}` };
        return { status: null, error: `the host ${hostOf(target)} did not resolve (${send_describe(error)})` };
    }
    // The connection goes to the checked address whatever the name resolves to by then; TLS still
    // checks the certificate against the name.
    const pinned = (_host, opts, callback) => {
        if (opts.all)
            callback(null, [{ address: resolved.address, family: resolved.family }]);
        else
            callback(null, resolved.address, resolved.family);
    };
    const client = target.protocol === 'https:' ? (external_node_https_default()) : (external_node_http_default());
    return new Promise(resolve => {
        let settled = false;
        const finish = (result) => {
            if (settled)
                return;
            settled = true;
            clearTimeout(timer);
            request.destroy();
            resolve(result);
        };
        const request = client.request(target, {
            method: 'POST',
            headers: { ...headers, 'content-length': String(Buffer.byteLength(body)) },
            lookup: pinned,
            agent: false
        }, 
        // The status and headers are the answer: the body is never read (the socket is closed at
        // once), so a receiver that sends a gigabyte, or trickles it, holds nothing.
        response => finish({
            status: response.statusCode ?? 0,
            error: null,
            retryAfterMs: retryAfterMs(response.headers['retry-after'])
        }));
        const timer = setTimeout(() => finish({ status: null, error: `no answer within ${options.timeoutMs} ms (webhooks.timeout)` }), Math.max(0, deadline - Date.now()));
        request.on('error', error => finish({ status: null, error: `connection failed (${send_describe(error)})` }));
        options.signal?.addEventListener('abort', () => finish({ status: null, error: 'the node stopped' }), {
            once: true
        });
        request.end(body);
    });
}
function send_describe(error) {
    const code = error.code;
    return code ?? error.message ?? String(error);
}
function withDeadline(promise, deadline) {
    let timer;
    return Promise.race([
        promise,
        new Promise((_resolve, reject) => {
            timer = setTimeout(() => reject(new Error('timed out')), Math.max(0, deadline - Date.now()));
        })
    ]).finally(() => clearTimeout(timer));
}

;// CONCATENATED MODULE: ./src/executor/webhooks/deliverer.ts
// Sends the deliveries the store's triggers queue (store/sql-webhooks.ts): each node takes due
// deliveries under a lease, as a worker takes runs, and attempts them in the background, so a slow
// receiver holds one of a bounded number of slots and never the executor. An endpoint has at most
// `concurrency_per_endpoint` attempts under way across the nodes, a team at most
// `concurrency_per_team`, a node at most `concurrency`. It wakes when a run changes (here or, heard
// by notification, on another node) and every half second for retries that fall due; with no
// endpoint anywhere, a change wakes nothing and it looks only every 30 s (an endpoint made on this
// node wakes it at once; one made on another node is served by that node meanwhile).
//
// An attempt: 2xx is delivered; 410 disables the endpoint; anything else (3xx, 4xx, 5xx, a timeout,
// a refused address) is retried on webhooks.retry_schedule with ±10 % jitter, and 429/502/503/504
// wait at least what Retry-After asks. After the last retry the delivery is failed; POST …/retry
// queues one more attempt.




const deliverer_POLL_MS = 500;
/** How often a node that saw no endpoint anywhere looks again. */
const IDLE_POLL_MS = 30_000;
/**
 * A delivery's lease is the attempt's time limit and this much more, for the reads and writes
 * around it on a loaded database: a lease that ran out while its attempt went on would send the
 * delivery twice.
 */
const LEASE_MARGIN_MS = 60_000;
const PRUNE_EVERY_MS = 3_600_000;
/** Retry-After is honoured up to a day. */
const MAX_RETRY_AFTER_MS = 86_400_000;
const THROTTLED = new Set([429, 502, 503, 504]);
const USER_AGENT = 'agent-executor-webhooks/1 (+https://www.standardwebhooks.com/)';
class Deliverer {
    store;
    config;
    options;
    owner = `webhooks-${(0,external_node_crypto_.randomBytes)(6).toString('hex')}`;
    inFlight = new Set();
    abort = new AbortController();
    running = false;
    again = false;
    stopped = true;
    anyEndpoints = false;
    timer;
    lastPrune = 0;
    unsubscribe = [];
    constructor(store, config, options) {
        this.store = store;
        this.config = config;
        this.options = options;
    }
    start() {
        this.stopped = false;
        const onChange = () => {
            if (this.anyEndpoints)
                this.wake();
        };
        this.unsubscribe.push(this.store.onChange(onChange), this.store.onEvent(onChange));
        this.schedule(0);
    }
    /** Looks for due deliveries now (an endpoint was made, a retry asked for). */
    wake() {
        if (this.stopped)
            return;
        this.anyEndpoints = true;
        if (this.running) {
            this.again = true;
            return;
        }
        this.schedule(0);
    }
    async stop() {
        this.stopped = true;
        clearTimeout(this.timer);
        for (const off of this.unsubscribe)
            off();
        this.abort.abort();
        await Promise.allSettled([...this.inFlight]);
    }
    /** One look for due deliveries (tests and the poll call it); starts what it takes. */
    async tick() {
        if (this.running) {
            this.again = true;
            return;
        }
        this.running = true;
        try {
            do {
                this.again = false;
                await this.claimAll();
            } while (this.again && !this.stopped);
            await this.maybePrune();
        }
        catch (error) {
            this.options.log?.warn({ err: error }, 'webhook deliveries could not be read');
        }
        finally {
            this.running = false;
        }
    }
    schedule(ms) {
        clearTimeout(this.timer);
        this.timer = setTimeout(() => {
            void this.tick().finally(() => {
                if (!this.stopped)
                    this.schedule(this.anyEndpoints ? deliverer_POLL_MS : IDLE_POLL_MS);
            });
        }, ms);
        this.timer.unref();
    }
    async claimAll() {
        const { webhooks } = this.config;
        this.anyEndpoints = await this.store.webhooks.anyWebhooks();
        while (!this.stopped && this.inFlight.size < webhooks.concurrency) {
            const delivery = await this.store.webhooks.claimDelivery(this.owner, webhooks.timeoutMs + LEASE_MARGIN_MS, webhooks.concurrencyPerEndpoint, webhooks.concurrencyPerTeam);
            if (!delivery)
                return;
            const attempt = this.attempt(delivery)
                .catch(error => this.options.log?.warn({ err: error, delivery: delivery.id }, 'webhook attempt failed'))
                .finally(() => {
                this.inFlight.delete(attempt);
                // A slot is free: take the next due one.
                if (!this.stopped)
                    this.wake();
            });
            this.inFlight.add(attempt);
        }
    }
    async attempt(delivery) {
        const webhooks = this.store.webhooks;
        const endpoint = await webhooks.webhookById(delivery.endpoint_id);
        const at = () => new Date().toISOString();
        if (!endpoint || endpoint.disabled_at !== null) {
            await webhooks.finishAttempt(delivery.id, this.owner, {
                status: null,
                error: `not sent: the endpoint ${endpoint ? 'is disabled' : 'was deleted'}`,
                at: at(),
                outcome: 'failed'
            });
            return;
        }
        let body = delivery.body;
        if (body === null) {
            const run = await this.store.getRunAnyTeam(delivery.run_id);
            body = payloadOf(delivery, run, this.options.link);
            await webhooks.setBody(delivery.id, this.owner, body);
        }
        const timestamp = Math.floor(Date.now() / 1000);
        const secrets = [endpoint.secret];
        if (endpoint.previous_secret !== null && (endpoint.previous_until_ms ?? 0) > Date.now())
            secrets.push(endpoint.previous_secret);
        const sent = await send(endpoint.url, {
            'content-type': 'application/json',
            'user-agent': USER_AGENT,
            'webhook-id': delivery.id,
            'webhook-timestamp': String(timestamp),
            'webhook-signature': signatureHeader(secrets, delivery.id, timestamp, body)
        }, body, {
            timeoutMs: this.config.webhooks.timeoutMs,
            allowPrivate: this.config.webhooks.allowPrivateNetworks,
            signal: this.abort.signal
        });
        if (this.stopped)
            return; // the lease runs out and another attempt is made
        const result = this.outcome(delivery, sent.status, sent.error, sent.retryAfterMs, at());
        // The endpoint is disabled before the delivery is recorded: whoever sees the failed delivery
        // sees the endpoint disabled.
        if (sent.status === 410)
            await webhooks.disableWebhook(endpoint.id, result.at, 'the receiver answered 410 Gone');
        await webhooks.finishAttempt(delivery.id, this.owner, result);
    }
    /** What an attempt's answer means for the delivery. */
    outcome(delivery, status, error, retryAfter, at) {
        if (status !== null && status >= 200 && status < 300)
            return { status, error: null, at, outcome: 'succeeded' };
        const why = error ??
            (status !== null && status >= 300 && status < 400
                ? `the receiver answered ${status} (redirects are not followed)`
                : `the receiver answered ${status}`);
        if (status === 410)
            return { status, error: `${why}: the endpoint is disabled`, at, outcome: 'failed' };
        const schedule = this.config.webhooks.retryScheduleMs;
        const retry = delivery.attempts - 1;
        if (retry >= schedule.length)
            return { status, error: why, at, outcome: 'failed' };
        let delay = schedule[retry] * (0.9 + Math.random() * 0.2);
        if (status !== null && THROTTLED.has(status) && retryAfter !== undefined)
            delay = Math.max(delay, Math.min(retryAfter, MAX_RETRY_AFTER_MS));
        return { status, error: why, at, outcome: 'pending', retryInMs: delay };
    }
    async maybePrune() {
        const now = Date.now();
        if (now - this.lastPrune < PRUNE_EVERY_MS)
            return;
        this.lastPrune = now;
        await this.store.webhooks.pruneDeliveries(now - this.config.limits.retentionDays * 86_400_000);
    }
}

;// CONCATENATED MODULE: ./src/executor/node/serve.ts
// The executor as one process, wired in one place: the start-up checks (startup.ts), the data
// dir made private (private-files.ts) and its lock (one process per role and data dir), the store,
// the server (server/app.ts) listening on its port, the worker pool and the heartbeat, and the
// order they stop in. A node's role picks the parts: `all` (both), `api` (the API; it runs
// nothing), `worker` (runs work; it serves only /healthz, /readyz and the API's description).
// The CLI's `serve` and the tests' in-process executors both start here.


















/** The context the routes share, from a config and an open store. */
async function serverContext(config, store, publicUrl) {
    const secret = await store.getSecret('session-hmac', () => (0,external_node_crypto_.randomBytes)(32).toString('base64url'));
    return {
        store,
        config,
        links: new SessionLinks(secret, publicUrl),
        hub: new ChangeHub(store),
        limiter: new RateLimiter(config.limits.rateLimitPerMinute),
        oidc: new OidcVerifier(config.auth.oidc),
        draining: false,
        wakeDeliveries: () => undefined
    };
}
/**
 * Starts a node: checks, store, server, pool, heartbeat. A refused check throws a
 * StartupCheckError before the store is opened; a later failure closes the store opened here.
 */
async function startExecutor(config, options = {}) {
    const role = options.role ?? 'all';
    // No sandbox path may show runs the data dir, whatever the role.
    checkSandboxPaths(config);
    // A config file kept under /etc would show in every reader sandbox: it is hidden there, as in runs.
    if (config.configFile)
        hideFromReaders([config.configFile]);
    // Before anything is made in it (the checks' overlay probe, the store): under any umask, what
    // the executor makes there is in a directory no other user can enter.
    const tightened = privateDir(config.dataDir);
    // A node that runs work refuses configuration every run would fail on, and environments it
    // cannot confine (unless they say `sandbox: off`).
    const { warnings, notes } = checkStartup(config, role, { environments: options.checkEnvironments });
    // Each image environment's image: copied and unpacked now, its command found there.
    if (role !== 'api')
        notes.push(...(await checkImages(config)));
    if (tightened)
        warnings.unshift(tightened);
    const release = options.lockDataDir ? lockDataDir(config.dataDir, role) : () => undefined;
    let store;
    try {
        // A split role shares the store with the other role's process (on SQLite, one file on this
        // machine): start-up then fails only runs whose lease expired, never the other's live runs.
        store = options.store ?? (await openStore(config.store, { shared: role !== 'all' }));
        return await wire(config, store, role, warnings, notes, release, options.now);
    }
    catch (error) {
        if (!options.store)
            await store?.close().catch(() => undefined);
        release();
        throw error;
    }
}
/**
 * One process per role and data dir: `all` alone, or one `api` beside one `worker`. A second
 * server of a role would fail the first one's runs as abandoned, or claim beside it.
 */
function lockDataDir(dataDir, role) {
    const lockOf = (of) => (0,external_node_path_.join)(dataDir, of === 'all' ? 'executor.pid' : `executor-${of}.pid`);
    const conflicts = role === 'all' ? ['all', 'api', 'worker'] : ['all', role];
    for (const other of conflicts) {
        const path = lockOf(other);
        if (!(0,external_node_fs_.existsSync)(path))
            continue;
        const pid = Number((0,external_node_fs_.readFileSync)(path, 'utf8').trim());
        if (Number.isInteger(pid) && pid > 0 && pid !== process.pid && alive(pid)) {
            throw new Error(`another executor (pid ${pid}) is serving data dir ${dataDir} with --role ${other}; ` +
                'a data dir takes one --role all, or one --role api beside one --role worker; ' +
                'stop it or use another --data-dir');
        }
    }
    const path = lockOf(role);
    writePrivateFile(path, `${process.pid}\n`);
    // Also on an exit without a stop (a second Ctrl-C).
    const release = () => {
        process.removeListener('exit', release);
        (0,external_node_fs_.rmSync)(path, { force: true });
    };
    process.once('exit', release);
    return release;
}
function alive(pid) {
    try {
        process.kill(pid, 0);
        return true;
    }
    catch (error) {
        return error.code === 'EPERM';
    }
}
async function wire(config, store, role, warnings, notes, release, now) {
    let listening = `http://${config.host}:${config.port}`;
    const publicUrl = () => config.publicUrl ?? listening;
    const context = await serverContext(config, store, publicUrl);
    // The operator's endpoints, as the file declares them now (a missing secret variable stops here).
    await store.webhooks.syncDeclared(declaredWebhooks(config));
    const app = await buildApp(context, {
        role,
        publicUrl,
        requestPrefix: (0,external_node_crypto_.randomBytes)(4).toString('hex')
    });
    for (const warning of warnings)
        app.log.warn(warning);
    for (const note of notes)
        app.log.info(note);
    // An orchestrate turn's proxy forwards to this node's own API, or a worker node's to the API nodes.
    const apiUrl = () => (role === 'all' ? listening : config.publicUrl);
    const pool = new WorkerPool(store, config, app.log, role !== 'api', run => context.links.link(run), apiUrl);
    await app.listen({ host: config.host, port: config.port });
    const address = app.server.address();
    if (address && typeof address === 'object') {
        const host = address.family === 'IPv6' ? `[${address.address}]` : address.address;
        listening = `http://${host}:${address.port}`;
    }
    await pool.start();
    const scheduler = new Scheduler(store, config, { log: app.log, now });
    if (role !== 'api')
        scheduler.start();
    const deliverer = new Deliverer(store, config, { log: app.log, link: run => context.links.link(run) });
    if (role !== 'api') {
        deliverer.start();
        context.wakeDeliveries = () => deliverer.wake();
    }
    const heartbeat = startHeartbeat(store, role, role === 'api' ? 0 : config.workers, () => pool.runningCount, app.log);
    let stopping;
    return {
        app,
        pool,
        scheduler,
        deliverer,
        context,
        get url() {
            return listening;
        },
        stop(graceMs = config.shutdownGraceMs) {
            stopping ??= (async () => {
                context.draining = true;
                await scheduler.stop();
                await pool.stop(graceMs);
                await deliverer.stop();
                await heartbeat.stop();
                context.hub.close();
                await app.close();
                await store.close();
            })().finally(release);
            return stopping;
        }
    };
}

;// CONCATENATED MODULE: ./src/executor/node/cli.ts
// agent-executor: serve, keys, environments.











class UsageError extends Error {
}
const COMMON = {
    config: { type: 'string' },
    'data-dir': { type: 'string' },
    store: { type: 'string' },
    help: { type: 'boolean', short: 'h' },
    version: { type: 'boolean', short: 'V' }
};
async function main(argv) {
    const { command, args } = splitCommand(argv);
    const wantsHelp = args.includes('--help') || args.includes('-h');
    try {
        if (args.includes('--version') || args.includes('-V')) {
            console.log(`agent-executor ${VERSION}`);
            return 0;
        }
        switch (command) {
            case 'serve':
                return wantsHelp ? help('serve') : await serve(args);
            case 'keys':
                return wantsHelp ? help('keys') : await keys(args);
            case 'environments':
                return wantsHelp ? help('environments') : environments(args);
            case 'help': {
                const [topic] = args.filter(arg => !arg.startsWith('-'));
                if (topic !== undefined && !COMMANDS.includes(topic))
                    throw new UsageError(`help ${JSON.stringify(topic)}: expected serve, keys or environments`);
                return help(topic);
            }
            case undefined:
                if (!wantsHelp) {
                    // Flags alone are checked, so a typo is named rather than met with the usage.
                    cli_parse(args, {});
                    console.error(USAGE);
                    return 2;
                }
                return help();
            default:
                throw new UsageError(`unknown command ${JSON.stringify(command)}; expected serve, keys or environments`);
        }
    }
    catch (error) {
        if (error instanceof UsageError || error instanceof ConfigError) {
            console.error(`agent-executor: ${error.message}`);
            if (error instanceof UsageError)
                console.error('Run `agent-executor --help` for usage.');
            return 2;
        }
        console.error(`agent-executor: ${error.message}`);
        return 1;
    }
}
function cli_parse(args, options, positionals = 0) {
    try {
        const parsed = (0,external_node_util_.parseArgs)({
            args,
            options: { ...COMMON, ...options },
            allowPositionals: positionals > 0,
            strict: true
        });
        if (parsed.positionals.length > positionals)
            throw new UsageError(`unexpected argument ${JSON.stringify(parsed.positionals[positionals])}`);
        return parsed;
    }
    catch (error) {
        if (error instanceof UsageError)
            throw error;
        const message = error.message.replace(/\. To specify a positional.*$/s, '');
        const unknown = /^Unknown option '(--[^'=]+)'/.exec(message)?.[1];
        const names = Object.keys({ ...COMMON, ...options }).map(name => `--${name}`);
        throw new UsageError(`${message}${unknown ? didYouMean(unknown, names) : ''}`);
    }
}
function configFrom(values) {
    let port;
    if (values.port !== undefined) {
        port = Number(values.port);
        if (!/^\d+$/.test(String(values.port)) || port > 65535) {
            throw new UsageError(`--port ${JSON.stringify(values.port)}: expected a port number from 0 to 65535`);
        }
    }
    return loadConfig({
        config: values.config,
        dataDir: values['data-dir'],
        host: values.host,
        port,
        store: values.store
    });
}
async function serve(args) {
    const { values } = cli_parse(args, {
        host: { type: 'string' },
        port: { type: 'string' },
        role: { type: 'string' }
    });
    const role = (values.role ?? 'all');
    if (!['all', 'api', 'worker'].includes(role))
        throw new UsageError(`--role ${JSON.stringify(values.role)}: expected all, api or worker`);
    const config = configFrom(values);
    const executor = await startExecutor(config, { role, lockDataDir: true }).catch((error) => {
        if (error.code !== 'EADDRINUSE')
            throw error;
        throw new Error(`port ${config.port} of ${config.host} is already in use by another program (another executor?); ` +
            'stop that one, give another port with --port PORT (or server.port in agent-executor.yaml), ' +
            'or --port 0 for any free port (the address is printed on the "listening on" line)');
    });
    executor.app.log.info({ store: describeStore(config.store), role }, 'store opened');
    const unspecified = /^(0\.0\.0\.0|::|\[::\])$/.test(config.host);
    if (unspecified && config.publicUrl === undefined) {
        console.error(`warning: listening on every address (${config.host}), so session links start with ${executor.url}, ` +
            'which no browser can open; set server.public_url in agent-executor.yaml to the address clients use, ' +
            'e.g. public_url: https://agents.example.com');
    }
    return new Promise(resolve => {
        let signals = 0;
        const shutdown = (signal) => {
            if (++signals > 1) {
                executor.app.log.warn('second signal: exiting now');
                process.exit(1);
            }
            executor.app.log.info({ signal }, `stopping: running runs get up to ${config.shutdownGraceMs / 1000} s`);
            executor
                .stop()
                .then(() => {
                executor.app.log.info({ signal }, 'stopped');
                resolve(0);
            })
                .catch(error => {
                console.error(`agent-executor: stopping failed: ${error.message}`);
                resolve(1);
            });
        };
        process.on('SIGTERM', shutdown);
        process.on('SIGINT', shutdown);
        // Only now: a supervisor that signals as soon as it reads this line must find the handlers in place.
        console.log(`listening on ${executor.url}`);
    });
}
async function keys(args) {
    const parsed = cli_parse(args, { kind: { type: 'string' }, name: { type: 'string' }, team: { type: 'string' } }, 2);
    const { values } = parsed;
    const [action, ...positionals] = parsed.positionals;
    if (positionals.length > (action === 'revoke' ? 1 : 0))
        throw new UsageError(`unexpected argument ${JSON.stringify(positionals.at(-1))}`);
    const config = configFrom(values);
    const store = await openStore(config.store);
    try {
        switch (action) {
            case 'create': {
                // A person's key unless said otherwise: the usual first key, for the command line and the dashboard.
                const kind = (values.kind ?? 'personal');
                if (kind !== 'personal' && kind !== 'agent') {
                    throw new UsageError(`--kind ${JSON.stringify(values.kind)}: expected personal or agent${didYouMean(String(values.kind), ['personal', 'agent'])}`);
                }
                const name = (values.name ?? '').trim();
                if (name === '')
                    throw new UsageError('--name: expected a name for the key, e.g. --name ci');
                const team = (values.team ?? 'default').trim();
                if (!/^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/.test(team)) {
                    throw new UsageError(`--team ${JSON.stringify(team)}: expected 1–64 letters, digits, '.', '_' or '-'`);
                }
                const { raw, id } = await issueKey(store, { team, kind, name });
                console.log(`Created ${kind} key ${id} (${name}) for team ${team}. Copy it now: it is not shown again.`);
                console.log(raw);
                return 0;
            }
            case 'list': {
                const rows = await store.listKeys();
                if (rows.length === 0)
                    console.log('No keys. Create one with: agent-executor keys create --kind personal --name NAME');
                else
                    console.log(['ID', 'TEAM', 'KIND', 'NAME', 'HINT', 'CREATED', 'STATUS'].join('\t'));
                for (const key of rows) {
                    const status = key.revoked_at ? `revoked ${key.revoked_at}` : 'active';
                    console.log([key.id, key.team, key.kind, key.name, key.hint, key.created_at, status].join('\t'));
                }
                return 0;
            }
            case 'revoke': {
                const id = positionals[0];
                if (!id)
                    throw new UsageError('keys revoke: expected the key id, e.g. keys revoke key_abc123');
                if (!(await store.revokeKey(id, new Date().toISOString()))) {
                    throw new UsageError(`keys revoke: no active key with id ${JSON.stringify(id)} (see keys list)`);
                }
                console.log(`Revoked key ${id}.`);
                return 0;
            }
            default:
                throw new UsageError(`unknown keys command ${JSON.stringify(action ?? '')}; expected create, list or revoke`);
        }
    }
    finally {
        await store.close();
    }
}
function environments(args) {
    const { values, positionals } = cli_parse(args, {}, 1);
    const [action] = positionals;
    if (action !== 'list')
        throw new UsageError(`unknown environments command ${JSON.stringify(action ?? '')}; expected list`);
    const config = configFrom(values);
    const rows = config.environments.map(env => [
        env.id,
        env.name,
        env.source,
        agentKindOf(env.agent.kind)?.describe(env.agent) ?? env.agent.kind,
        formatDuration(env.timeoutMs),
        String(env.maxConcurrentRuns)
    ]);
    console.log(table(['ID', 'NAME', 'SOURCE', 'AGENT', 'TIMEOUT', 'CONCURRENCY'], rows));
    return 0;
}
function help(command) {
    console.log(command === undefined ? USAGE : commandHelp(command));
    return 0;
}


/***/ })

};
