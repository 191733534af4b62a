// The `webhooks:` key: how deliveries are retried and bounded, whether private networks may be
// sent to, and the endpoints the operator declares for teams (their secrets read from variables of
// the executor's environment, never written in the file). Each mistake is named with its key and
// the expected form.

import { WEBHOOK_EVENT_TYPES } from '../../api/webhooks.js';
import { type ConfigReader, show } from '../values/config-reader.js';

export interface DeclaredWebhook {
  team: string;
  url: string;
  /** null: every event type. */
  events: string[] | null;
  description: string;
  /** The variable of the executor's environment holding the secret (`whsec_…`). */
  secretEnv: string;
}

export interface WebhooksConfig {
  /** The delays before each retry after the first, immediate attempt. */
  retryScheduleMs: number[];
  /** How long one attempt may take, connection to answer. */
  timeoutMs: number;
  /** Whether loopback, private, link-local and metadata addresses may be sent to. */
  allowPrivateNetworks: boolean;
  maxEndpointsPerTeam: number;
  /** Attempts under way at once: one endpoint's, one team's (across the nodes), one node's. */
  concurrencyPerEndpoint: number;
  concurrencyPerTeam: number;
  concurrency: number;
  /** How long the secret before a rotation still signs. */
  rotationGraceMs: number;
  endpoints: DeclaredWebhook[];
}

/** The Standard Webhooks specification's schedule: 5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 14 h, 20 h, 24 h. */
export const DEFAULT_RETRY_SCHEDULE_MS = [5, 300, 1800, 7200, 18_000, 36_000, 50_400, 72_000, 86_400].map(
  seconds => seconds * 1000
);

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

export function parseWebhooks(raw: unknown, r: ConfigReader): WebhooksConfig {
  const at = 'webhooks';
  const hooks = r.object(raw, at);
  r.known(hooks, at, KEYS);
  let retryScheduleMs = DEFAULT_RETRY_SCHEDULE_MS;
  if (hooks.retry_schedule !== undefined && hooks.retry_schedule !== null) {
    if (!Array.isArray(hooks.retry_schedule) || hooks.retry_schedule.length > 20) {
      r.problems.push(
        `${at}.retry_schedule ${show(hooks.retry_schedule)}: expected a list of at most 20 durations, such as [5s, 5m, 30m]`
      );
    } else {
      retryScheduleMs = hooks.retry_schedule.map((item: unknown, index: number) =>
        r.duration(item, `${at}.retry_schedule[${index}]`, 5000)
      );
    }
  }
  const allow = hooks.allow_private_networks;
  if (allow !== undefined && allow !== null && typeof allow !== 'boolean')
    r.problems.push(`${at}.allow_private_networks ${show(allow)}: expected true or false`);
  const config: WebhooksConfig = {
    retryScheduleMs,
    timeoutMs: r.duration(hooks.timeout, `${at}.timeout`, 15_000),
    allowPrivateNetworks: allow === true,
    maxEndpointsPerTeam: r.int(hooks.max_endpoints_per_team, `${at}.max_endpoints_per_team`, 10, 1, 1000),
    concurrencyPerEndpoint: r.int(
      hooks.concurrency_per_endpoint,
      `${at}.concurrency_per_endpoint`,
      4,
      1,
      100
    ),
    concurrencyPerTeam: r.int(hooks.concurrency_per_team, `${at}.concurrency_per_team`, 16, 1, 1000),
    concurrency: r.int(hooks.concurrency, `${at}.concurrency`, 64, 1, 10_000),
    rotationGraceMs: r.duration(hooks.rotation_grace, `${at}.rotation_grace`, 86_400_000, true),
    endpoints: []
  };
  if (hooks.endpoints !== undefined && hooks.endpoints !== null) {
    if (!Array.isArray(hooks.endpoints)) {
      r.problems.push(`${at}.endpoints ${show(hooks.endpoints)}: expected a list of endpoints`);
    } else {
      hooks.endpoints.forEach((item: unknown, index: number) => {
        config.endpoints.push(parseDeclared(item, `${at}.endpoints[${index}]`, r));
      });
    }
  }
  return config;
}

function parseDeclared(raw: unknown, at: string, r: ConfigReader): DeclaredWebhook {
  const entry = r.object(raw, at);
  r.known(entry, at, ['team', 'url', 'events', 'description', 'secret_env']);
  const url = r.url(entry.url, `${at}.url`) ?? '';
  if (entry.url === undefined) r.problems.push(`${at}.url: required, expected an http(s) URL`);
  const secretEnv = r.string(entry.secret_env, `${at}.secret_env`, '');
  if (secretEnv !== '' && !/^[A-Za-z_][A-Za-z0-9_]*$/.test(secretEnv))
    r.problems.push(
      `${at}.secret_env ${show(secretEnv)}: expected a variable name such as ACME_WEBHOOK_SECRET`
    );
  let events: string[] | null = null;
  if (entry.events !== undefined && entry.events !== null) {
    events = r.strings(entry.events, `${at}.events`);
    for (const event of events)
      if (!(WEBHOOK_EVENT_TYPES as readonly string[]).includes(event))
        r.problems.push(`${at}.events ${show(event)}: expected one of ${WEBHOOK_EVENT_TYPES.join(', ')}`);
    if (events.length === 0) r.problems.push(`${at}.events: expected a non-empty list of event types`);
  }
  return {
    team: r.string(entry.team, `${at}.team`, ''),
    url: entry.url === undefined ? '' : url,
    events,
    description: entry.description === undefined ? '' : r.string(entry.description, `${at}.description`, ''),
    secretEnv
  };
}
