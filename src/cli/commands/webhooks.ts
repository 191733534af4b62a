// `agent-run webhooks list|create|get|delete|rotate|deliveries|retry`: the key's team's webhook
// endpoints, where the executor sends signed events of the team's runs. Tables for people, --json
// for scripts. A secret is printed only by create and rotate, the only answers that carry it.

import { WEBHOOK_EVENT_TYPES, type WebhookRecord, type WebhookWithSecret } from '../../api/webhooks.js';
import { EXIT, usage } from '../exit.js';
import { type Terminal, table } from '../terminal.js';
import type { Webhooks } from '../../client/index.js';
import { type Command, clientFor, onePositional, parse } from './common.js';

const SUBCOMMANDS = ['list', 'create', 'get', 'delete', 'rotate', 'deliveries', 'retry'] as const;
type Subcommand = (typeof SUBCOMMANDS)[number];

const OPTIONS = {
  url: { type: 'string' },
  events: { type: 'string' },
  description: { type: 'string' }
} as const;

function describe(webhook: WebhookRecord | WebhookWithSecret): string {
  const lines = [
    `${webhook.id}${webhook.source === 'config' ? ' (declared by the operator)' : ''}`,
    `  url:         ${webhook.url}`,
    `  events:      ${webhook.events.join(', ')}`,
    `  created:     ${webhook.created_at}`
  ];
  if (webhook.description) lines.push(`  description: ${webhook.description}`);
  const disabled = (webhook as WebhookRecord).disabled_at;
  if (disabled)
    lines.push(`  disabled:    ${disabled} (${(webhook as WebhookRecord).disabled_reason ?? ''})`);
  if ('secret' in webhook)
    lines.push(
      `  secret:      ${webhook.secret}`,
      '  (shown only now: keep it where your receiver reads it)'
    );
  return lines.join('\n');
}

export const webhooksCommand: Command = {
  name: 'webhooks',
  summary: "list and manage the team's webhook endpoints",
  help: `Usage: agent-run webhooks list|create|get|delete|rotate|deliveries|retry [ID] [options] [--json]

  list                   the team's endpoints: id, url, events, state
  create --url URL       an endpoint; prints its signing secret (whsec_…), shown only now
  get ID                 one endpoint
  delete ID              remove it and its delivery log
  rotate ID              a new secret (printed); the old one still signs for the grace period
  deliveries ID          its deliveries, newest first: event, run, attempts, last status, next attempt
  retry ID DELIVERY_ID   attempt a delivery once more, now

Options (create):
  --url URL              where events are sent (http or https)
  --events LIST          comma-separated event types (default: all): ${WEBHOOK_EVENT_TYPES.join(', ')}
  --description TEXT     a note for people

Requests are signed by the Standard Webhooks specification: verify webhook-signature with any of
its libraries and the secret.

Example:
  agent-run webhooks create --url https://ci.example.com/agent-runs --events run.succeeded,run.failed`,
  async run(argv, context) {
    const [sub, ...rest] = argv;
    if (!SUBCOMMANDS.includes(sub as Subcommand))
      throw usage(`webhooks ${JSON.stringify(sub ?? '')}: expected one of ${SUBCOMMANDS.join(', ')}`);
    const { values, positionals } = parse(rest, OPTIONS);
    const client = clientFor(values, context);
    const { terminal } = context;
    const json = values.json === true;
    const show = (webhook: WebhookRecord | WebhookWithSecret) =>
      values.json ? terminal.json(webhook, 2) : terminal.out(describe(webhook));
    try {
      switch (sub as Subcommand) {
        case 'list':
          if (positionals.length > 0) throw usage('webhooks list takes no arguments');
          showWebhooks(terminal, await client.webhooks.list(), json);
          return EXIT.ok;
        case 'create':
          show(await client.webhooks.create(createRequest(values, positionals)));
          return EXIT.ok;
        case 'get':
          show(await client.webhooks.get(onePositional(positionals, 'webhook ID')));
          return EXIT.ok;
        case 'rotate':
          show(await client.webhooks.rotateSecret(onePositional(positionals, 'webhook ID')));
          return EXIT.ok;
        case 'delete': {
          const id = onePositional(positionals, 'webhook ID');
          await client.webhooks.delete(id);
          if (values.json) terminal.json({ id, deleted: true }, 2);
          else terminal.out(`Deleted webhook ${id} and its delivery log.`);
          return EXIT.ok;
        }
        case 'deliveries':
          showDeliveries(
            terminal,
            await client.webhooks.deliveries(onePositional(positionals, 'webhook ID')),
            json
          );
          return EXIT.ok;
        case 'retry': {
          if (positionals.length !== 2) throw usage('webhooks retry takes ID DELIVERY_ID; see --help');
          const delivery = await client.webhooks.retryDelivery(positionals[0]!, positionals[1]!);
          if (values.json) terminal.json(delivery, 2);
          else
            terminal.out(
              `Delivery ${delivery.id} queued again (${delivery.event_type}, run ${delivery.run_id}).`
            );
          return EXIT.ok;
        }
      }
    } finally {
      client.close();
    }
  }
};

/** The parsed options of `webhooks`. */
type WebhooksValues = ReturnType<typeof parse<typeof OPTIONS>>['values'];

/** The body of `webhooks create` from --url, --events and --description, each checked. */
function createRequest(values: WebhooksValues, positionals: string[]): Parameters<Webhooks['create']>[0] {
  if (positionals.length > 0) throw usage('webhooks create takes options only; see --help');
  const url = values.url as string | undefined;
  if (url === undefined || url.trim() === '') throw usage('--url is required; see --help');
  const events = (values.events as string | undefined)
    ?.split(',')
    .map(event => event.trim())
    .filter(Boolean);
  for (const event of events ?? [])
    if (!(WEBHOOK_EVENT_TYPES as readonly string[]).includes(event))
      throw usage(`--events ${JSON.stringify(event)}: expected one of ${WEBHOOK_EVENT_TYPES.join(', ')}`);
  return {
    url: url.trim(),
    ...(events ? { events: events as WebhookRecord['events'] as never } : {}),
    ...(values.description !== undefined ? { description: values.description as string } : {})
  };
}

/** `webhooks list`: a table of the endpoints (--json: `{webhooks}`). */
function showWebhooks(terminal: Terminal, webhooks: WebhookRecord[], json: boolean): void {
  if (json) terminal.json({ webhooks }, 2);
  else if (webhooks.length === 0) terminal.out('No webhook endpoints.');
  else
    terminal.out(
      table(
        ['ID', 'URL', 'EVENTS', 'STATE'],
        webhooks.map(w => [
          w.id,
          w.url,
          w.events.length === WEBHOOK_EVENT_TYPES.length ? 'all' : w.events.join(','),
          w.disabled_at ? 'disabled' : w.source === 'config' ? 'enabled (config)' : 'enabled'
        ])
      )
    );
}

/** `webhooks deliveries ID`: a table of an endpoint's deliveries (--json: `{deliveries}`). */
function showDeliveries(
  terminal: Terminal,
  deliveries: Awaited<ReturnType<Webhooks['deliveries']>>,
  json: boolean
): void {
  if (json) terminal.json({ deliveries }, 2);
  else if (deliveries.length === 0) terminal.out('No deliveries.');
  else
    terminal.out(
      table(
        ['ID', 'EVENT', 'RUN', 'STATUS', 'ATTEMPTS', 'LAST', 'NEXT ATTEMPT'],
        deliveries.map(d => [
          d.id,
          d.event_type,
          d.run_id,
          d.status,
          String(d.attempts),
          d.last_status === null ? (d.last_error ? 'error' : '-') : String(d.last_status),
          d.next_attempt_at ?? '-'
        ])
      )
    );
}
