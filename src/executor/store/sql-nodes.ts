// NodeStore (node-types.ts) for both databases: each node's last report, one row of `nodes`.

import type { Dialect, Row } from './dialect.js';
import { sql } from './dialect.js';
import type { NodeStore } from './node-types.js';
import type { NodeReport } from './records.js';

export class SqlNodeStore implements NodeStore {
  constructor(private readonly d: Dialect) {}

  async reportNode(node: NodeReport, forgetBefore: number): Promise<void> {
    await this.d.run(sql('DELETE FROM nodes WHERE seen_at < ?', forgetBefore));
    await this.d.run(
      sql(
        `INSERT INTO nodes (node_id, role, workers, busy, started_at, seen_at) VALUES (?, ?, ?, ?, ?, ?)
         ON CONFLICT (node_id) DO UPDATE SET workers = excluded.workers, busy = excluded.busy, seen_at = excluded.seen_at`,
        node.node_id,
        node.role,
        node.workers,
        node.busy,
        node.started_at,
        node.seen_at
      )
    );
  }

  async listNodes(): Promise<NodeReport[]> {
    const rows = await this.d.all<NodeReport & Row>(sql('SELECT * FROM nodes ORDER BY started_at, node_id'));
    return rows.map(row => ({ ...row, seen_at: Number(row.seen_at) }));
  }

  async removeNode(nodeId: string): Promise<void> {
    await this.d.run(sql('DELETE FROM nodes WHERE node_id = ?', nodeId));
  }
}
