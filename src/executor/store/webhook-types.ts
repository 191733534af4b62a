// What the store keeps of a team's webhook endpoints and of each delivery to them (WebhookStore),
// apart from the SQL (sql-webhooks.ts, sql-deliveries.ts) so that the Stores interface can name it without an import
// cycle. The deliveries themselves are written by the database's triggers (migrations.ts), in the
// transaction of the change they tell of.

export interface StoredWebhook {
  id: string;
  team: string;
  url: string;
  /** The event types sent; null: all. */
  events: string[] | null;
  description: string;
  secret: string;
  /** The secret before the last rotation, still signed with until `previous_until_ms`. */
  previous_secret: string | null;
  previous_until_ms: number | null;
  /** `api`, or `config` for an endpoint the operator declared. */
  source: 'api' | 'config';
  created_at: string;
  disabled_at: string | null;
  disabled_reason: string | null;
}

export type DeliveryStatus = 'pending' | 'succeeded' | 'failed';

export interface StoredDelivery {
  id: string;
  endpoint_id: string;
  team: string;
  run_id: string;
  event_type: string;
  state: string;
  previous_state: string | null;
  status_message: string | null;
  error_code: string | null;
  /** When the change happened (the run's updated_at, or the follow-up's time). */
  created_at: string;
  /** When the delivery row was written, in ms on the store's clock. */
  created_ms: number;
  /** The request body, kept from the first attempt on so every attempt sends the same bytes. */
  body: string | null;
  status: DeliveryStatus;
  attempts: number;
  next_attempt_ms: number | null;
  last_status: number | null;
  last_error: string | null;
  last_attempt_at: string | null;
}

/** How an attempt ended, as the deliverer records it. */
export interface AttemptResult {
  /** The receiver's status, if it answered. */
  status: number | null;
  error: string | null;
  at: string;
  /** When to try again (ms from now), or undefined: no more tries (`succeeded` or `failed`). */
  retryInMs?: number;
  outcome: DeliveryStatus;
}

export interface WebhookStore {
  /** Stores a new endpoint; false when its team has `maxPerTeam` already. */
  createWebhook(webhook: StoredWebhook, maxPerTeam: number): Promise<boolean>;
  getWebhook(team: string, id: string): Promise<StoredWebhook | undefined>;
  /** An endpoint of any team (the deliverer's look-up). */
  webhookById(id: string): Promise<StoredWebhook | undefined>;
  listWebhooks(team: string): Promise<StoredWebhook[]>;
  /** Deletes the endpoint and its deliveries; false when the team has none with this id. */
  deleteWebhook(team: string, id: string): Promise<boolean>;
  /** A new secret; the old one is still signed with until `previousUntilMs`. */
  rotateSecret(team: string, id: string, secret: string, previousUntilMs: number): Promise<boolean>;
  /** Stops deliveries to the endpoint (a 410 from it): its pending deliveries fail. */
  disableWebhook(id: string, at: string, reason: string): Promise<void>;
  /**
   * Makes the operator's endpoints (source `config`) exactly `declared`: new ones are added, changed
   * ones updated (a disabled one enabled again), those no longer declared deleted.
   */
  syncDeclared(declared: StoredWebhook[]): Promise<void>;
  /** Whether any team has an enabled endpoint. */
  anyWebhooks(): Promise<boolean>;
}

/** The deliveries to the endpoints: queued by the database's triggers, attempted under a lease (sql-deliveries.ts). */
export interface DeliveryStore {
  /** The endpoint's deliveries, newest first. */
  listDeliveries(endpointId: string, limit: number): Promise<StoredDelivery[]>;
  getDelivery(endpointId: string, id: string): Promise<StoredDelivery | undefined>;
  /** Queues one more attempt now (a disabled endpoint is enabled again); false when there is no such delivery. */
  retryDelivery(team: string, endpointId: string, id: string): Promise<boolean>;
  /**
   * Takes the oldest due delivery under a lease for `owner`, unless its endpoint has
   * `perEndpoint` attempts under way or its team `perTeam`; its attempt count goes up by one.
   */
  claimDelivery(
    owner: string,
    leaseMs: number,
    perEndpoint: number,
    perTeam: number
  ): Promise<StoredDelivery | undefined>;
  /** Keeps the body sent, so every later attempt sends the same bytes. */
  setBody(id: string, owner: string, body: string): Promise<void>;
  /** Records an attempt by the lease's holder; false when the lease was lost. */
  finishAttempt(id: string, owner: string, result: AttemptResult): Promise<boolean>;
  /** Deletes finished deliveries made before `beforeMs`; how many. */
  pruneDeliveries(beforeMs: number): Promise<number>;
}
