// Every endpoint of the contract in one table: its method and path, the schemas of its path
// parameters, query, body and answer, who may call it, whether it counts against the key's rate
// limit, and the error codes it can answer. The executor registers its routes from this table, the
// OpenAPI document is generated from it, the client builds its paths from it and the contract test
// server routes by it: a new endpoint is one entry here plus its handler.

// Every endpoint of the contract in one table, each entry written once: its method and path, the
// names of the schemas of its path parameters, query, body and answer, who may call it, whether it
// counts against the key's rate limit, and the error codes it can answer. The executor registers
// its routes from this table, the OpenAPI document is generated from it, the client's resources
// take their methods and paths from it and the contract test server routes by it: a new endpoint
// is one entry here, its handler, its store method and one client line.
//
// Schemas are named (`'RunIdParamsSchema'`), not imported: the schema library stays out of the
// bundles that only call the API (the action, the CLI). ./schema-registry.ts looks the names up,
// and ./endpoint-specs.ts gives the executor and the OpenAPI document the table with its schemas.

import type { ErrorCode } from './error-codes.js';
import type { SchemaName } from './schema-registry.js';

export type HttpMethod = 'GET' | 'POST' | 'PUT' | 'DELETE';

/** The longest `Prefer: wait=N` held answer, in seconds. */
export const MAX_WAIT_SECONDS = 60;

/**
 * Who may call an endpoint: anyone (`none`), a bearer API key (`key`), the holder of a run's
 * session link (`session_token`, an HMAC of the run id in `?token=`), or the holder of a signed
 * download URL (`signed_download`, an HMAC of the artifact id and an expiry).
 */
export type EndpointAuth = 'none' | 'key' | 'session_token' | 'signed_download';

/** A request header an endpoint reads, for the OpenAPI document. */
export interface EndpointHeader {
  name: string;
  description: string;
  schema: Record<string, unknown>;
}

/** One entry of the table, its schemas named by their exports (./schema-registry.ts). */
export interface EndpointEntry {
  method: HttpMethod;
  /** The full path, parameters in braces: `/api/v1/agent/runs/{run_id}`. */
  path: string;
  summary: string;
  description?: string;
  auth: EndpointAuth;
  /** Whether each call takes a token from the key's bucket (limits.rate_limit_per_minute). */
  rateLimited: boolean;
  params?: SchemaName;
  querystring?: SchemaName;
  body?: SchemaName;
  /** A body schema with `acceptsNoBody: true` lets the request leave the body out. */
  headers?: readonly EndpointHeader[];
  /** The successful answer: 200 with this schema, or with `contentType` for what is not JSON. */
  response: { description: string; schema?: SchemaName; contentType?: string };
  /** Other answers that are not errors (a 304, say). */
  otherAnswers?: Readonly<Record<string, string>>;
  /**
   * The error codes this endpoint itself can answer. Those of its auth and rate limit, and the
   * ones any request can meet (store_unavailable, internal_error), are added by `errorCodesOf`.
   */
  errors: readonly ErrorCode[];
  deprecated?: boolean;
  /** Left out of the OpenAPI document (HTML for people, probes for orchestrators). */
  internal?: boolean;
}

const prefer: EndpointHeader = {
  name: 'Prefer',
  description: `wait=N (N ≤ ${MAX_WAIT_SECONDS}): hold the answer until there is something new.`,
  schema: { type: 'string', examples: ['wait=30'] }
};
const ifNoneMatch: EndpointHeader = {
  name: 'If-None-Match',
  description: 'The ETag of the record you have.',
  schema: { type: 'string' }
};
const acceptStream: EndpointHeader = {
  name: 'Accept',
  description:
    'text/event-stream: answer as a server-sent event stream that stays open (see the description).',
  schema: { type: 'string', examples: ['text/event-stream'] }
};
const lastEventId: EndpointHeader = {
  name: 'Last-Event-ID',
  description:
    'On a stream: resume after the event with this id (an EventSource sends it when it reconnects).',
  schema: { type: 'string', examples: ['42'] }
};
const idempotencyKey: EndpointHeader = {
  name: 'Idempotency-Key',
  description: 'Makes retries safe: the same key and body return the same run.',
  schema: { type: 'string', maxLength: 255 }
};

/** Most endpoints: an API key, each call taking a token from the key's bucket. */
const byKey = { auth: 'key', rateLimited: true } as const;

/** The two endpoints that answer an event stream: streams are bounded per key and node (too_many_streams). */
const streamed = { ...byKey, errors: ['invalid_request', 'not_found', 'too_many_streams'] } as const;

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
} as const satisfies Omit<EndpointEntry, 'path'>;

export const ENDPOINTS = {
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
    description:
      'The message is the next user turn of the same run. Queued: it joins the prompt. Running: the run goes on with it after the current turn. Ended: the run is QUEUED again and continues in the same workspace, while that workspace is kept (workspaces.continue_for); after that, 409 run_not_continuable; like a create, it takes a place in the queue (429 resource_unavailable when the node queue or the team queue is at its limit). The answer carries the state the run is in already (never the old terminal one).',
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
    description:
      "One page of events: with after=<seq>, only events newer than that one; at most limit events (default 100, max 1000) and about 512 KiB of them; has_more says more follow (read again with after=next_after). With Prefer: wait=N (max 60) as well, an empty answer is held until there is an event (or the run ended, or N seconds passed). A run whose output passed the executor's limits.transcript has a truncated event between the head and the tail of its output, saying how many bytes were dropped.",
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
    description:
      'Built from the transcript: the prompt as the user message, agent text and command output as assistant text, each command as an action with its action_result, everything else as events; the final answer is the last assistant text block.',
    ...byKey,
    params: 'RunIdParamsSchema',
    response: { description: 'The conversation.', schema: 'ConversationSchema' },
    errors: ['not_found']
  },
  checkSessionRedirect: {
    method: 'GET',
    path: '/api/v1/agent/sessions/{session_id}/redirect',
    summary: "Where a shared session goes once its run ended: the run's conversation",
    description:
      "Public, as the service's. Answers {conversation_id} once the run of this session has ended and its transcript is kept, else {}. A session id is only ever answered to a key of the run's team (by the conversation redirect), so an anonymous caller learns nothing it did not get from someone who could see the run; an id no run has answers {} too.",
    auth: 'none',
    rateLimited: false,
    params: 'SessionRedirectParamsSchema',
    response: { description: 'The redirect, or {}.', schema: 'SessionRedirectSchema' },
    errors: ['invalid_request']
  },
  checkConversationRedirect: {
    method: 'GET',
    path: '/api/v1/agent/conversations/{conversation_id}/redirect',
    summary: "Where a conversation goes while its run is live: the run's session",
    description:
      "Public, as the service's, but a run's session id is answered only to a key of the run's team sent in Authorization (a wrong key is refused with 401): {session_id} while the run has started and not ended, else {}. Without a key it answers {} for every id, so a run id alone tells a stranger nothing.",
    auth: 'none',
    rateLimited: false,
    params: 'ConversationRedirectParamsSchema',
    response: { description: 'The redirect, or {}.', schema: 'ConversationRedirectSchema' },
    errors: ['invalid_request', 'unauthenticated']
  },
  getRunEvents: {
    method: 'GET',
    path: '/api/v1/agent/runs/{run_id}/events',
    summary: "A run's events as they happen (a resumable event stream)",
    description:
      "With Accept: text/event-stream: a server-sent event stream of every transcript event after `after` (or the Last-Event-ID header), then each new one as it is written, state changes included: `id:` is the event's seq, `event:` its kind, `data:` the event as JSON (a `state` event carries the run's record as `run` when the record is in that state). A comment line is sent after each limits.stream_heartbeat (15 s) of silence. Once the run is terminal and its events are sent, an `event: done` message (data: run_id, state, last_seq, run) ends the stream. A reader too slow for limits.stream_buffer is cut between two messages; it resumes with Last-Event-ID. Streams are bounded per key (limits.max_streams_per_key) and per node (limits.max_streams): beyond, 429 too_many_streams with Retry-After. Without that Accept header: one JSON page, as the transcript answers it (after, limit, Prefer: wait).",
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
    description:
      "run_ids (comma-separated or repeated, 1–100 runs of this key's team; another team's run is 404 like a run that does not exist), since (the next_since of the previous page, 0 for all) and limit (1–500, default 100). Each event: sequence (the team's cursor), run_id, type (run_in_progress, run_succeeded, run_failed, run_errored, run_blocked, run_cancelled), state and timestamp; event_type and occurred_at repeat type and timestamp under the production service's names. With Accept: text/event-stream: the same events as a stream (`id:` the sequence, `event:` the type, resumable with Last-Event-ID), ending with `event: done` once every run is terminal and its events are sent; streams are bounded as for a run's events.",
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
    description:
      'A cron expression (read in time_zone, default UTC), a prompt and the config of the runs it starts; it fires at each due time exactly once across the executor nodes.',
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
    description:
      'All fields except agent_config, time_zone, overlap and catch_up are required; next_run is computed anew.',
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
    description:
      'Events follow the Standard Webhooks specification (webhook-id, webhook-timestamp, webhook-signature). The answer holds the signing secret; it is shown only here and on rotation.',
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
    description:
      'During webhooks.rotation_grace (default 24 h) every request carries two signatures, by the new and the old secret.',
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
      '503':
        "Shutting down, the store does not answer, or (on a node that runs work) the data dir's file system has less free space than workspaces.min_free or fewer free inodes than workspaces.min_free_inodes."
    },
    errors: [],
    internal: true
  }
} as const satisfies Record<string, EndpointEntry>;

export type EndpointName = keyof typeof ENDPOINTS;

/** @deprecated The table itself: each entry has its `method` and `path`. */
export const ROUTES: { readonly [N in EndpointName]: Pick<(typeof ENDPOINTS)[N], 'method' | 'path'> } =
  ENDPOINTS;

export const ENDPOINT_NAMES = Object.keys(ENDPOINTS) as EndpointName[];

/** Every error code an endpoint can answer: its own, then those of its auth, limit and any request. */
export function errorCodesOf(endpoint: Pick<EndpointEntry, 'errors' | 'auth' | 'rateLimited'>): ErrorCode[] {
  const codes = new Set<ErrorCode>(endpoint.errors);
  // A key-checked endpoint may meet an orchestrate run's credential, refused what it may not do.
  if (endpoint.auth === 'key') codes.add('unauthenticated').add('forbidden');
  if (endpoint.rateLimited) codes.add('rate_limited');
  if (endpoint.auth !== 'none') codes.add('store_unavailable');
  codes.add('internal_error');
  return [...codes];
}

/** The names of a path's parameters, in order: `/runs/{run_id}/cancel` → ['run_id']. */
export function pathParameters(path: string): string[] {
  return [...path.matchAll(/\{([a-z_]+)\}/g)].map(match => match[1]!);
}

/**
 * The endpoint's path with its parameters filled in (each percent-encoded as one segment). A
 * missing parameter is a programming error and throws, naming it.
 */
export function endpointPath(name: EndpointName, params: Readonly<Record<string, string>> = {}): string {
  return ENDPOINTS[name].path.replace(/\{([a-z_]+)\}/g, (_match, param: string) => {
    const value = params[param];
    if (value === undefined)
      throw new TypeError(`endpoint ${name}: missing path parameter ${param}; expected a string`);
    return encodeURIComponent(value);
  });
}

/** The path in Fastify's (and find-my-way's) form: `/api/v1/agent/runs/:run_id`. */
export function routePath(path: string): string {
  return path.replace(/\{([a-z_]+)\}/g, ':$1');
}
