// The team's webhook endpoints as a signed-in person sees them: each endpoint's URL, the events it
// takes, whether it is enabled (and why not), and its delivery log, newest first: the event, the
// run, the attempts, the receiver's last answer or error and when the next attempt is due. Secrets
// are never shown here.

import type { StoredDelivery, StoredWebhook } from '../../store/webhook-types.js';
import { type Viewer, esc, page, time } from './html.js';

const STATUS_CLASS: Record<string, string> = {
  succeeded: 's-succeeded',
  pending: 's-queued',
  failed: 's-failed'
};

function log(deliveries: StoredDelivery[]): string {
  if (deliveries.length === 0) return '<p class="muted">No deliveries yet.</p>';
  const rows = deliveries.map(
    d => `<tr>
<td data-label="Event"><code>${esc(d.event_type)}</code><br><code class="muted">${esc(d.id)}</code></td>
<td data-label="Run"><a href="/runs/${esc(encodeURIComponent(d.run_id))}">${esc(d.run_id)}</a></td>
<td data-label="Status"><span class="badge ${STATUS_CLASS[d.status] ?? ''}">${esc(d.status)}</span></td>
<td data-label="Attempts">${d.attempts}</td>
<td data-label="Last answer">${d.last_status === null ? '<span class="muted">none</span>' : esc(d.last_status)}${
      d.last_error ? `<br><span class="spawn-error">${esc(d.last_error)}</span>` : ''
    }</td>
<td data-label="Next attempt">${
      d.status === 'pending' && d.next_attempt_ms !== null
        ? time(new Date(d.next_attempt_ms).toISOString())
        : '<span class="muted">-</span>'
    }</td>
</tr>`
  );
  return `<table class="runs"><thead><tr><th scope="col">Event</th><th scope="col">Run</th><th scope="col">Status</th><th scope="col">Attempts</th><th scope="col">Last answer</th><th scope="col">Next attempt</th></tr></thead>
<tbody>${rows.join('\n')}</tbody></table>`;
}

export function renderWebhooks(
  viewer: Viewer,
  endpoints: { webhook: StoredWebhook; deliveries: StoredDelivery[] }[]
): string {
  const sections = endpoints.map(({ webhook, deliveries }) => {
    const state = webhook.disabled_at
      ? `<span class="badge s-failed">disabled</span> <span class="muted">${esc(webhook.disabled_reason ?? '')}, ${time(webhook.disabled_at)}</span>`
      : '<span class="badge s-succeeded">enabled</span>';
    return `<section id="webhook-${esc(webhook.id)}">
<h2><code>${esc(webhook.url)}</code></h2>
<p>${state} · <code class="muted">${esc(webhook.id)}</code>${webhook.source === 'config' ? ' · declared by the operator' : ''}${
      webhook.description ? ` · ${esc(webhook.description)}` : ''
    }</p>
<p class="muted">Events: ${esc(webhook.events === null ? 'all' : webhook.events.join(', '))}</p>
${log(deliveries)}
</section>`;
  });
  const body =
    sections.length === 0
      ? '<p class="muted">Your team has no webhook endpoints. Add one with <code>agent-run webhooks create --url URL</code> or <code>POST /api/v1/agent/webhooks</code>.</p>'
      : sections.join('\n');
  return page('Webhooks', `<h1>Webhooks</h1>\n${body}`, viewer, '/webhooks');
}
