// The `webhooks:` key: how deliveries are retried and bounded, whether private networks may be
// sent to, and the endpoints the operator declares for teams (their secrets read from variables of
// the executor's environment, never written in the file). Each mistake is named with its key and
// the expected form.

import Type, { type Static } from 'typebox';
import { WEBHOOK_EVENT_TYPES } from '../../api/webhooks.js';
import { show } from '../values/config-reader.js';
import { type Read, custom, duration, flag, int, readMapping, section, text } from './schema-kit.js';

/** The Standard Webhooks specification's schedule: 5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 14 h, 20 h, 24 h. */
export const DEFAULT_RETRY_SCHEDULE_MS = [5, 300, 1800, 7200, 18_000, 36_000, 50_400, 72_000, 86_400].map(
  seconds => seconds * 1000
);

const VARIABLE = /^[A-Za-z_][A-Za-z0-9_]*$/;

/** `retry_schedule`: at most 20 durations. */
const readSchedule: Read = (value, at, { r }) => {
  if (value === undefined || value === null) return DEFAULT_RETRY_SCHEDULE_MS;
  if (!Array.isArray(value) || value.length > 20) {
    r.problems.push(`${at} ${show(value)}: expected a list of at most 20 durations, such as [5s, 5m, 30m]`);
    return DEFAULT_RETRY_SCHEDULE_MS;
  }
  return value.map((item: unknown, index: number) => r.duration(item, `${at}[${index}]`, 5000));
};

/** An endpoint's `url`: required, an http(s) URL. */
const readUrl: Read = (value, at, { r }) => {
  const url = r.url(value, at) ?? '';
  if (value === undefined) r.problems.push(`${at}: required, expected an http(s) URL`);
  return value === undefined ? '' : url;
};

/** An endpoint's `events`: null (every type) unless a non-empty list of known types. */
const readEvents: Read = (value, at, { r }) => {
  if (value === undefined || value === null) return null;
  const events = r.strings(value, at);
  for (const event of events)
    if (!(WEBHOOK_EVENT_TYPES as readonly string[]).includes(event))
      r.problems.push(`${at} ${show(event)}: expected one of ${WEBHOOK_EVENT_TYPES.join(', ')}`);
  if (events.length === 0) r.problems.push(`${at}: expected a non-empty list of event types`);
  return events;
};

/** An endpoint's `secret_env`: required, a variable name. */
const readSecretEnv: Read = (value, at, { r }) => {
  const name = r.string(value, at, '');
  if (name !== '' && !VARIABLE.test(name))
    r.problems.push(`${at} ${show(name)}: expected a variable name such as ACME_WEBHOOK_SECRET`);
  return name;
};

/** One endpoint the operator declares for a team. */
export const DECLARED_WEBHOOK = Type.Object({
  team: text('team', 'the team the endpoint is for (required)', ''),
  url: custom<string>('url', 'where deliveries are sent (required)', 'an http(s) URL', readUrl),
  events: custom<string[] | null>(
    'events',
    'the event types sent; unset: every type',
    'a list of event types',
    readEvents
  ),
  description: custom<string>('description', 'shown with the endpoint', 'a string', (value, at, { r }) =>
    value === undefined ? '' : r.string(value, at, '')
  ),
  secretEnv: custom<string>(
    'secret_env',
    "the executor's variable holding the secret (whsec_…), never written in the file",
    'a variable name',
    readSecretEnv
  )
});

export type DeclaredWebhook = Static<typeof DECLARED_WEBHOOK>;

/** `endpoints`: a list of declared endpoints. */
const readEndpoints: Read = (value, at, ctx) => {
  if (value === undefined || value === null) return [];
  if (!Array.isArray(value)) {
    ctx.r.problems.push(`${at} ${show(value)}: expected a list of endpoints`);
    return [];
  }
  return value.map((item: unknown, index: number) =>
    readMapping(DECLARED_WEBHOOK, item, `${at}[${index}]`, ctx)
  );
};

/** The `webhooks:` mapping. */
export const WEBHOOKS = section('webhooks', "signed events of runs to teams' endpoints (docs/webhooks.md)", {
  retryScheduleMs: custom<number[]>(
    'retry_schedule',
    'the delays before each retry after the first, immediate attempt',
    'a list of at most 20 durations',
    readSchedule,
    { fallback: '[5s, 5m, 30m, 2h, 5h, 10h, 14h, 20h, 24h]' }
  ),
  timeoutMs: duration('timeout', 'how long one attempt may take, connection to answer', 15_000),
  allowPrivateNetworks: flag(
    'allow_private_networks',
    'whether loopback, private, link-local and metadata addresses may be sent to (local setups)'
  ),
  maxEndpointsPerTeam: int(
    'max_endpoints_per_team',
    'endpoints of one team; one more: 409 webhook_limit_reached',
    10,
    1,
    1000
  ),
  concurrencyPerEndpoint: int(
    'concurrency_per_endpoint',
    'attempts under way to one endpoint (across nodes)',
    4,
    1,
    100
  ),
  concurrencyPerTeam: int(
    'concurrency_per_team',
    'attempts under way for one team (across nodes)',
    16,
    1,
    1000
  ),
  concurrency: int('concurrency', 'attempts under way on one node', 64, 1, 10_000),
  rotationGraceMs: duration(
    'rotation_grace',
    'how long the secret before a rotation still signs',
    86_400_000,
    true
  ),
  endpoints: custom<DeclaredWebhook[]>(
    'endpoints',
    "the operator's endpoints, each {team, url, secret_env, events?, description?}",
    'a list of endpoints',
    readEndpoints,
    { fallback: '[]', inner: DECLARED_WEBHOOK, list: true }
  )
});

export type WebhooksConfig = Static<typeof WEBHOOKS>;
