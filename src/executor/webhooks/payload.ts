// The thin payload of a webhook: what changed and what a receiver needs to find the run, never the
// prompt, the transcript or the run's config. It stays under 20 KB: long text is cut, and metadata
// that would not fit is left out (the receiver reads the run for it).

import type { WebhookEventType, WebhookPayload } from '../../api/webhooks.js';
import type { StoredRun } from '../store/types.js';
import type { StoredDelivery } from '../store/webhook-types.js';

export const MAX_PAYLOAD_BYTES = 20 * 1024;
const MAX_TITLE = 1000;
const MAX_MESSAGE = 2000;

function cut(text: string, max: number): string {
  return text.length <= max ? text : `${text.slice(0, max - 1)}…`;
}

/**
 * The payload of a delivery; `run` is the run as it is now (its title, environment and metadata
 * never change), undefined when it was pruned. `link` makes a run's session link.
 */
export function payloadOf(
  delivery: StoredDelivery,
  run: StoredRun | undefined,
  link: (run: StoredRun) => string | undefined
): string {
  const extra = run ? (JSON.parse(run.extra) as Record<string, unknown>) : {};
  const metadata =
    extra.metadata !== null && typeof extra.metadata === 'object' && !Array.isArray(extra.metadata)
      ? (extra.metadata as Record<string, unknown>)
      : {};
  const payload: WebhookPayload = {
    type: delivery.event_type as WebhookEventType,
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
  if (delivery.error_code !== null) payload.data.error_code = delivery.error_code;
  const session = run && delivery.state !== 'QUEUED' ? link(run) : undefined;
  if (session) payload.data.session_link = session;
  if (typeof extra.schedule_id === 'string') payload.data.schedule_id = extra.schedule_id;
  let body = JSON.stringify(payload);
  if (Buffer.byteLength(body) > MAX_PAYLOAD_BYTES) {
    payload.data.metadata = {};
    body = JSON.stringify(payload);
  }
  return body;
}
