// The deliveries to webhook endpoints, for both databases. A delivery row is written by the
// database's triggers (migrations.ts) in the same transaction as the change it tells of: a change
// committed always has its deliveries, and a crash loses none. The deliverer (webhooks/deliverer.ts)
// takes a due delivery under a lease, as a worker takes a run: on PostgreSQL the pick skips rows
// another node locks, so exactly one node attempts a delivery at a time; a lease left by a node that
// stopped expires and another takes it.

import type { Dialect } from './dialect.js';
import { sql } from './dialect.js';
import type { AttemptResult, DeliveryStatus, DeliveryStore, StoredDelivery } from './webhook-types.js';

const DELIVERY_COLUMNS = `id, endpoint_id, team, run_id, event_type, state, previous_state, status_message,
  error_code, created_at, created_ms, body, status, attempts, next_attempt_ms, last_status, last_error,
  last_attempt_at`;

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

export class SqlDeliveryStore implements DeliveryStore {
  constructor(private readonly d: Dialect) {}

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
