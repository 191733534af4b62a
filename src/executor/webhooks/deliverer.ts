// Sends the deliveries the store's triggers queue (store/sql-deliveries.ts): each node takes due
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

import { randomBytes } from 'node:crypto';
import type { FastifyBaseLogger } from 'fastify';
import type { ExecutorConfig } from '../config/config.js';
import type { StoredRun, Stores } from '../store/types.js';
import type { AttemptResult, StoredDelivery } from '../store/webhook-types.js';
import { payloadOf } from './payload.js';
import { send } from './send.js';
import { signatureHeader } from './sign.js';

const POLL_MS = 500;
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
export const USER_AGENT = 'agent-executor-webhooks/1 (+https://www.standardwebhooks.com/)';

export interface DelivererOptions {
  log?: FastifyBaseLogger;
  /** A run's session link, for the payload. */
  link: (run: StoredRun) => string | undefined;
}

export class Deliverer {
  private readonly owner = `webhooks-${randomBytes(6).toString('hex')}`;
  private readonly inFlight = new Set<Promise<void>>();
  private readonly abort = new AbortController();
  private running = false;
  private again = false;
  private stopped = true;
  private anyEndpoints = false;
  private timer?: NodeJS.Timeout;
  private lastPrune = 0;
  private unsubscribe: (() => void)[] = [];

  constructor(
    private readonly stores: Pick<Stores, 'runs' | 'transcript' | 'webhooks' | 'deliveries'>,
    private readonly config: Pick<ExecutorConfig, 'webhooks' | 'limits'>,
    private readonly options: DelivererOptions
  ) {}

  start(): void {
    this.stopped = false;
    const onChange = () => {
      if (this.anyEndpoints) this.wake();
    };
    this.unsubscribe.push(this.stores.runs.onChange(onChange), this.stores.transcript.onEvent(onChange));
    this.schedule(0);
  }

  /** Looks for due deliveries now (an endpoint was made, a retry asked for). */
  wake(): void {
    if (this.stopped) return;
    this.anyEndpoints = true;
    if (this.running) {
      this.again = true;
      return;
    }
    this.schedule(0);
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    for (const off of this.unsubscribe) off();
    this.abort.abort();
    await Promise.allSettled([...this.inFlight]);
  }

  /** One look for due deliveries (tests and the poll call it); starts what it takes. */
  async tick(): Promise<void> {
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
    } catch (error) {
      this.options.log?.warn({ err: error }, 'webhook deliveries could not be read');
    } finally {
      this.running = false;
    }
  }

  private schedule(ms: number): void {
    clearTimeout(this.timer);
    this.timer = setTimeout(() => {
      void this.tick().finally(() => {
        if (!this.stopped) this.schedule(this.anyEndpoints ? POLL_MS : IDLE_POLL_MS);
      });
    }, ms);
    this.timer.unref();
  }

  private async claimAll(): Promise<void> {
    const { webhooks } = this.config;
    this.anyEndpoints = await this.stores.webhooks.anyWebhooks();
    while (!this.stopped && this.inFlight.size < webhooks.concurrency) {
      const delivery = await this.stores.deliveries.claimDelivery(
        this.owner,
        webhooks.timeoutMs + LEASE_MARGIN_MS,
        webhooks.concurrencyPerEndpoint,
        webhooks.concurrencyPerTeam
      );
      if (!delivery) return;
      const attempt = this.attempt(delivery)
        .catch(error =>
          this.options.log?.warn({ err: error, delivery: delivery.id }, 'webhook attempt failed')
        )
        .finally(() => {
          this.inFlight.delete(attempt);
          // A slot is free: take the next due one.
          if (!this.stopped) this.wake();
        });
      this.inFlight.add(attempt);
    }
  }

  private async attempt(delivery: StoredDelivery): Promise<void> {
    const { webhooks, deliveries } = this.stores;
    const endpoint = await webhooks.webhookById(delivery.endpoint_id);
    const at = () => new Date().toISOString();
    if (!endpoint || endpoint.disabled_at !== null) {
      await deliveries.finishAttempt(delivery.id, this.owner, {
        status: null,
        error: `not sent: the endpoint ${endpoint ? 'is disabled' : 'was deleted'}`,
        at: at(),
        outcome: 'failed'
      });
      return;
    }
    let body = delivery.body;
    if (body === null) {
      const run = await this.stores.runs.getRunAnyTeam(delivery.run_id);
      body = payloadOf(delivery, run, this.options.link);
      await deliveries.setBody(delivery.id, this.owner, body);
    }
    const timestamp = Math.floor(Date.now() / 1000);
    const secrets = [endpoint.secret];
    if (endpoint.previous_secret !== null && (endpoint.previous_until_ms ?? 0) > Date.now())
      secrets.push(endpoint.previous_secret);
    const sent = await send(
      endpoint.url,
      {
        'content-type': 'application/json',
        'user-agent': USER_AGENT,
        'webhook-id': delivery.id,
        'webhook-timestamp': String(timestamp),
        'webhook-signature': signatureHeader(secrets, delivery.id, timestamp, body)
      },
      body,
      {
        timeoutMs: this.config.webhooks.timeoutMs,
        allowPrivate: this.config.webhooks.allowPrivateNetworks,
        signal: this.abort.signal
      }
    );
    if (this.stopped) return; // the lease runs out and another attempt is made
    const result = this.outcome(delivery, sent.status, sent.error, sent.retryAfterMs, at());
    // The endpoint is disabled before the delivery is recorded: whoever sees the failed delivery
    // sees the endpoint disabled.
    if (sent.status === 410)
      await webhooks.disableWebhook(endpoint.id, result.at, 'the receiver answered 410 Gone');
    await deliveries.finishAttempt(delivery.id, this.owner, result);
  }

  /** What an attempt's answer means for the delivery. */
  private outcome(
    delivery: StoredDelivery,
    status: number | null,
    error: string | null,
    retryAfter: number | undefined,
    at: string
  ): AttemptResult {
    if (status !== null && status >= 200 && status < 300)
      return { status, error: null, at, outcome: 'succeeded' };
    const why =
      error ??
      (status !== null && status >= 300 && status < 400
        ? `the receiver answered ${status} (redirects are not followed)`
        : `the receiver answered ${status}`);
    if (status === 410) return { status, error: `${why}: the endpoint is disabled`, at, outcome: 'failed' };
    const schedule = this.config.webhooks.retryScheduleMs;
    const retry = delivery.attempts - 1;
    if (retry >= schedule.length) return { status, error: why, at, outcome: 'failed' };
    let delay = schedule[retry]! * (0.9 + Math.random() * 0.2);
    if (status !== null && THROTTLED.has(status) && retryAfter !== undefined)
      delay = Math.max(delay, Math.min(retryAfter, MAX_RETRY_AFTER_MS));
    return { status, error: why, at, outcome: 'pending', retryInMs: delay };
  }

  private async maybePrune(): Promise<void> {
    const now = Date.now();
    if (now - this.lastPrune < PRUNE_EVERY_MS) return;
    this.lastPrune = now;
    await this.stores.deliveries.pruneDeliveries(now - this.config.limits.retentionDays * 86_400_000);
  }
}
