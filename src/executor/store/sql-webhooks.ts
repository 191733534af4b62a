// The webhook tables, for both databases: a team's endpoints (url, the event types it takes, its
// signing secret and the one before the last rotation) and the deliveries to them. A delivery row
// is written by the database's triggers (migrations.ts) in the same transaction as the change it
// tells of: a change committed always has its deliveries, and a crash loses none. The deliverer
// (webhooks/deliverer.ts) takes a due delivery under a lease, as a worker takes a run: on
// PostgreSQL the pick skips rows another node locks, so exactly one node attempts a delivery at a
// time; a lease left by a node that stopped expires and another takes it.

import type { Dialect } from './dialect.js';
import { sql } from './dialect.js';
import type {
  AttemptResult,
  DeliveryStatus,
  StoredDelivery,
  StoredWebhook,
  WebhookStore
} from './webhook-types.js';

export type { AttemptResult, StoredDelivery, StoredWebhook, WebhookStore };

const ENDPOINT_COLUMNS = `id, team, url, events, description, secret, previous_secret, previous_until, source,
  created_at, disabled_at, disabled_reason`;
const DELIVERY_COLUMNS = `id, endpoint_id, team, run_id, event_type, state, previous_state, status_message,
  error_code, created_at, created_ms, body, status, attempts, next_attempt_ms, last_status, last_error,
  last_attempt_at`;

interface EndpointRow {
  id: string;
  team: string;
  url: string;
  events: string | null;
  description: string;
  secret: string;
  previous_secret: string | null;
  previous_until: unknown;
  source: string;
  created_at: string;
  disabled_at: string | null;
  disabled_reason: string | null;
}

/** The event types as the triggers look them up: `,run.queued,run.failed,` (null: all). */
export function eventsColumn(events: readonly string[] | null): string | null {
  return events === null ? null : `,${events.join(',')},`;
}

function webhookOf(row: EndpointRow): StoredWebhook {
  const { previous_until, events, source, ...rest } = row;
  return {
    ...rest,
    events: events === null ? null : events.split(',').filter(Boolean),
    source: source === 'config' ? 'config' : 'api',
    previous_until_ms: previous_until === null ? null : Number(previous_until)
  };
}

type DeliveryRow = Omit<StoredDelivery, 'created_ms' | 'attempts' | 'next_attempt_ms' | 'last_status'> & {
  created_ms: unknown;
  attempts: unknown;
  next_attempt_ms: unknown;
  last_status: unknown;
};

const numberOrNull = (value: unknown) => (value === null || value === undefined ? null : Number(value));

function deliveryOf(row: DeliveryRow): StoredDelivery {
  return {
    ...row,
    status: row.status as DeliveryStatus,
    created_ms: Number(row.created_ms),
    attempts: Number(row.attempts),
    next_attempt_ms: numberOrNull(row.next_attempt_ms),
    last_status: numberOrNull(row.last_status)
  };
}

export class SqlWebhookStore implements WebhookStore {
  constructor(private readonly d: Dialect) {}

  /** One statement counts the team's endpoints and inserts (creates in flight on other nodes may pass it). */
  async createWebhook(w: StoredWebhook, maxPerTeam: number): Promise<boolean> {
    const inserted = await this.d.run(
      sql(
        `INSERT INTO webhook_endpoints (${ENDPOINT_COLUMNS}) SELECT ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?
         WHERE (SELECT COUNT(*) FROM (SELECT 1 FROM webhook_endpoints WHERE team = ? LIMIT ?) AS kept) < ?`,
        w.id,
        w.team,
        w.url,
        eventsColumn(w.events),
        w.description,
        w.secret,
        w.previous_secret,
        w.previous_until_ms,
        w.source,
        w.created_at,
        w.disabled_at,
        w.disabled_reason,
        w.team,
        maxPerTeam,
        maxPerTeam
      )
    );
    return inserted > 0;
  }

  async getWebhook(team: string, id: string): Promise<StoredWebhook | undefined> {
    const [row] = await this.d.all<EndpointRow>(
      sql(`SELECT ${ENDPOINT_COLUMNS} FROM webhook_endpoints WHERE id = ? AND team = ?`, id, team)
    );
    return row && webhookOf(row);
  }

  async webhookById(id: string): Promise<StoredWebhook | undefined> {
    const [row] = await this.d.all<EndpointRow>(
      sql(`SELECT ${ENDPOINT_COLUMNS} FROM webhook_endpoints WHERE id = ?`, id)
    );
    return row && webhookOf(row);
  }

  async listWebhooks(team: string): Promise<StoredWebhook[]> {
    const rows = await this.d.all<EndpointRow>(
      sql(`SELECT ${ENDPOINT_COLUMNS} FROM webhook_endpoints WHERE team = ? ORDER BY created_at, id`, team)
    );
    return rows.map(webhookOf);
  }

  async deleteWebhook(team: string, id: string): Promise<boolean> {
    const [, deleted] = await this.d.batch([
      sql(
        'DELETE FROM webhook_deliveries WHERE endpoint_id IN (SELECT id FROM webhook_endpoints WHERE id = ? AND team = ?)',
        id,
        team
      ),
      sql('DELETE FROM webhook_endpoints WHERE id = ? AND team = ?', id, team)
    ]);
    return (deleted ?? 0) > 0;
  }

  async rotateSecret(team: string, id: string, secret: string, previousUntilMs: number): Promise<boolean> {
    const changed = await this.d.run(
      sql(
        `UPDATE webhook_endpoints SET previous_secret = secret, previous_until = ?, secret = ?
         WHERE id = ? AND team = ?`,
        previousUntilMs,
        secret,
        id,
        team
      )
    );
    return changed > 0;
  }

  async disableWebhook(id: string, at: string, reason: string): Promise<void> {
    await this.d.batch([
      sql(
        'UPDATE webhook_endpoints SET disabled_at = ?, disabled_reason = ? WHERE id = ? AND disabled_at IS NULL',
        at,
        reason,
        id
      ),
      sql(
        `UPDATE webhook_deliveries SET status = 'failed', next_attempt_ms = NULL, last_error = ?
         WHERE endpoint_id = ? AND status = 'pending' AND lease_owner IS NULL`,
        `not sent: the endpoint was disabled (${reason})`,
        id
      )
    ]);
  }

  async syncDeclared(declared: StoredWebhook[]): Promise<void> {
    const statements = declared.map(w =>
      sql(
        `INSERT INTO webhook_endpoints (${ENDPOINT_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, NULL, NULL)
         ON CONFLICT (id) DO UPDATE SET url = excluded.url, events = excluded.events,
           description = excluded.description, secret = excluded.secret, previous_secret = NULL,
           previous_until = NULL, disabled_at = NULL, disabled_reason = NULL
         WHERE webhook_endpoints.url <> excluded.url OR webhook_endpoints.secret <> excluded.secret
           OR COALESCE(webhook_endpoints.events, '') <> COALESCE(excluded.events, '')
           OR webhook_endpoints.description <> excluded.description`,
        w.id,
        w.team,
        w.url,
        eventsColumn(w.events),
        w.description,
        w.secret,
        null,
        null,
        'config',
        w.created_at
      )
    );
    const kept = declared.map(w => w.id);
    const others = kept.length > 0 ? `AND id NOT IN (${kept.map(() => '?').join(', ')})` : '';
    const gone = `SELECT id FROM webhook_endpoints WHERE source = 'config' ${others}`;
    statements.push(sql(`DELETE FROM webhook_deliveries WHERE endpoint_id IN (${gone})`, ...kept));
    statements.push(sql(`DELETE FROM webhook_endpoints WHERE source = 'config' ${others}`, ...kept));
    await this.d.batch(statements);
  }

  async anyWebhooks(): Promise<boolean> {
    const rows = await this.d.all(
      sql('SELECT 1 AS one FROM webhook_endpoints WHERE disabled_at IS NULL LIMIT 1')
    );
    return rows.length > 0;
  }

  async listDeliveries(endpointId: string, limit: number): Promise<StoredDelivery[]> {
    const rows = await this.d.all<DeliveryRow>(
      sql(
        `SELECT ${DELIVERY_COLUMNS} FROM webhook_deliveries WHERE endpoint_id = ?
         ORDER BY created_ms DESC, id DESC LIMIT ?`,
        endpointId,
        limit
      )
    );
    return rows.map(deliveryOf);
  }

  async getDelivery(endpointId: string, id: string): Promise<StoredDelivery | undefined> {
    const [row] = await this.d.all<DeliveryRow>(
      sql(
        `SELECT ${DELIVERY_COLUMNS} FROM webhook_deliveries WHERE id = ? AND endpoint_id = ?`,
        id,
        endpointId
      )
    );
    return row && deliveryOf(row);
  }

  async retryDelivery(team: string, endpointId: string, id: string): Promise<boolean> {
    const [, changed] = await this.d.batch([
      sql(
        `UPDATE webhook_endpoints SET disabled_at = NULL, disabled_reason = NULL
         WHERE id = ? AND team = ? AND EXISTS (SELECT 1 FROM webhook_deliveries WHERE id = ? AND endpoint_id = ?)`,
        endpointId,
        team,
        id,
        endpointId
      ),
      sql(
        `UPDATE webhook_deliveries SET status = 'pending', next_attempt_ms = ${this.d.clockMs}
         WHERE id = ? AND endpoint_id = ? AND team = ? AND lease_owner IS NULL`,
        id,
        endpointId,
        team
      )
    ]);
    if ((changed ?? 0) > 0) return true;
    // One under way now is retried by its own schedule if it fails.
    return (await this.getDelivery(endpointId, id))?.team === team;
  }

  async claimDelivery(
    owner: string,
    leaseMs: number,
    perEndpoint: number,
    perTeam: number
  ): Promise<StoredDelivery | undefined> {
    const now = this.d.clockMs;
    const [row] = await this.d.all<DeliveryRow>(
      sql(
        `UPDATE webhook_deliveries SET lease_owner = ?, lease_expires_at = ${now} + ?, attempts = attempts + 1
         WHERE id = (
           SELECT d.id FROM webhook_deliveries d
           WHERE d.status = 'pending' AND d.next_attempt_ms <= ${now}
             AND (d.lease_owner IS NULL OR d.lease_expires_at < ${now})
             AND (SELECT COUNT(*) FROM (SELECT 1 FROM webhook_deliveries o WHERE o.endpoint_id = d.endpoint_id
               AND o.status = 'pending' AND o.lease_expires_at >= ${now} LIMIT ?) AS busy) < ?
             AND (SELECT COUNT(*) FROM (SELECT 1 FROM webhook_deliveries t WHERE t.team = d.team
               AND t.status = 'pending' AND t.lease_expires_at >= ${now} LIMIT ?) AS team_busy) < ?
           ORDER BY d.next_attempt_ms LIMIT 1 ${this.d.skipLocked})
         RETURNING ${DELIVERY_COLUMNS}`,
        owner,
        leaseMs,
        perEndpoint,
        perEndpoint,
        perTeam,
        perTeam
      )
    );
    return row && deliveryOf(row);
  }

  async setBody(id: string, owner: string, body: string): Promise<void> {
    await this.d.run(
      sql('UPDATE webhook_deliveries SET body = ? WHERE id = ? AND lease_owner = ?', body, id, owner)
    );
  }

  async finishAttempt(id: string, owner: string, result: AttemptResult): Promise<boolean> {
    const next = result.retryInMs === undefined ? 'NULL' : `${this.d.clockMs} + ?`;
    const changed = await this.d.run(
      sql(
        `UPDATE webhook_deliveries SET status = ?, last_status = ?, last_error = ?, last_attempt_at = ?,
           next_attempt_ms = ${next}, lease_owner = NULL, lease_expires_at = NULL
         WHERE id = ? AND lease_owner = ?`,
        result.outcome,
        result.status,
        result.error,
        result.at,
        ...(result.retryInMs === undefined ? [] : [Math.round(result.retryInMs)]),
        id,
        owner
      )
    );
    return changed > 0;
  }

  async pruneDeliveries(beforeMs: number): Promise<number> {
    return this.d.run(
      sql(`DELETE FROM webhook_deliveries WHERE status <> 'pending' AND created_ms < ?`, beforeMs)
    );
  }
}
