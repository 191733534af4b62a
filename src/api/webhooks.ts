// Schemas of the webhook endpoints: a team's endpoints (where the executor sends signed events, by
// the Standard Webhooks specification), their secrets (shown only when made), and their delivery
// logs. The event types and the payload a receiver gets are here too, so the docs, the executor
// and a client in TypeScript read them from one place.

import Type, { type Static } from 'typebox';

const Timestamp = Type.String({ format: 'date-time', description: 'RFC 3339 timestamp' });
const NullableString = Type.Unsafe<string | null>({ type: ['string', 'null'] });
const NullableTimestamp = Type.Unsafe<string | null>({
  type: ['string', 'null'],
  format: 'date-time',
  description: 'RFC 3339 timestamp, or null'
});

/** Every event a webhook endpoint can subscribe to: a run's state changes, and an accepted follow-up. */
export const WEBHOOK_EVENT_TYPES = [
  'run.queued',
  'run.in_progress',
  'run.blocked',
  'run.succeeded',
  'run.failed',
  'run.error',
  'run.cancelled',
  'run.followup'
] as const;
export type WebhookEventType = (typeof WEBHOOK_EVENT_TYPES)[number];

/** The event type of a change to a run's state (its record's value, e.g. INPROGRESS). */
export const STATE_EVENT_TYPES: Readonly<Record<string, WebhookEventType>> = {
  QUEUED: 'run.queued',
  INPROGRESS: 'run.in_progress',
  BLOCKED: 'run.blocked',
  SUCCEEDED: 'run.succeeded',
  FAILED: 'run.failed',
  ERROR: 'run.error',
  CANCELLED: 'run.cancelled'
};

export const WebhookEventTypeSchema = Type.Union(
  WEBHOOK_EVENT_TYPES.map(type => Type.Literal(type)),
  { expected: WEBHOOK_EVENT_TYPES.join(', ') }
);

export const CreateWebhookRequestSchema = Type.Object(
  {
    url: Type.String({
      maxLength: 2000,
      description: 'Where events are sent: an http or https URL.',
      expected: 'an http or https URL of at most 2000 characters'
    }),
    events: Type.Optional(
      Type.Array(WebhookEventTypeSchema, {
        minItems: 1,
        maxItems: WEBHOOK_EVENT_TYPES.length,
        description: 'The event types sent (default: all).',
        expected: `a non-empty list of ${WEBHOOK_EVENT_TYPES.join(', ')}`
      })
    ),
    description: Type.Optional(
      Type.String({ maxLength: 500, expected: 'a string of at most 500 characters' })
    )
  },
  { additionalProperties: false, expected: 'a JSON object with url, and optionally events and description' }
);

export const WebhookIdParamsSchema = Type.Object({
  webhook_id: Type.String({ description: 'The webhook endpoint id.' })
});

export const DeliveryParamsSchema = Type.Object({
  webhook_id: Type.String({ description: 'The webhook endpoint id.' }),
  delivery_id: Type.String({ description: 'The delivery id (its webhook-id header).' })
});

export const WebhookSchema = Type.Object(
  {
    id: Type.String(),
    url: Type.String(),
    events: Type.Array(Type.String(), { description: 'The event types sent.' }),
    description: Type.String(),
    created_at: Timestamp,
    source: Type.String({
      description: '`api`, or `config` for one the operator declared (read-only here).'
    }),
    disabled_at: Type.Optional(NullableTimestamp),
    disabled_reason: Type.Optional(NullableString)
  },
  { additionalProperties: true }
);

export const WebhookWithSecretSchema = Type.Object(
  {
    id: Type.String(),
    url: Type.String(),
    events: Type.Array(Type.String()),
    description: Type.String(),
    created_at: Timestamp,
    source: Type.String(),
    secret: Type.String({
      description: 'The signing secret, `whsec_` and base64; shown only here and on rotation.'
    })
  },
  { additionalProperties: true }
);

export const ListWebhooksResponseSchema = Type.Object({ webhooks: Type.Array(WebhookSchema) });
export const DeleteWebhookResponseSchema = Type.Object({ success: Type.Boolean() });

export const DeliverySchema = Type.Object(
  {
    id: Type.String({ description: 'The delivery id, sent as webhook-id on every attempt.' }),
    event_type: Type.String(),
    run_id: Type.String(),
    created_at: Timestamp,
    status: Type.String({ description: '`pending`, `succeeded` or `failed` (no retry left).' }),
    attempts: Type.Integer(),
    last_status: Type.Unsafe<number | null>({
      type: ['integer', 'null'],
      description: "The receiver's HTTP status at the last attempt, or null (none yet, or no answer)."
    }),
    last_error: NullableString,
    last_attempt_at: NullableTimestamp,
    next_attempt_at: NullableTimestamp
  },
  { additionalProperties: true }
);

export const ListDeliveriesResponseSchema = Type.Object({ deliveries: Type.Array(DeliverySchema) });

/** The thin payload a receiver gets: what changed, never the prompt or the transcript. */
export interface WebhookPayload {
  type: WebhookEventType;
  timestamp: string;
  data: {
    run_id: string;
    state: string;
    previous_state: string | null;
    title: string | null;
    environment_id: string;
    metadata: Record<string, unknown>;
    status_message?: string;
    error_code?: string;
    session_link?: string;
    schedule_id?: string;
  };
}

export type WebhookRecord = Static<typeof WebhookSchema>;
export type WebhookWithSecret = Static<typeof WebhookWithSecretSchema>;
export type CreateWebhookRequest = Static<typeof CreateWebhookRequestSchema>;
export type DeliveryRecord = Static<typeof DeliverySchema>;
