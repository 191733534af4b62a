// A team's webhook endpoints, for both databases: the url, the event types it takes, its signing
// secret and the one before the last rotation. The deliveries to them are sql-deliveries.ts's.

import type { Dialect } from './dialect.js';
import { sql } from './dialect.js';
import type { StoredWebhook, WebhookStore } from './webhook-types.js';

export type { StoredWebhook, WebhookStore };

const ENDPOINT_COLUMNS = `id, team, url, events, description, secret, previous_secret, previous_until, source,
  created_at, disabled_at, disabled_reason`;
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
}
