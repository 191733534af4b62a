// Each executor process reports itself in the store every few seconds (its role, workers and how
// many are busy), so the dashboard of any node can show every node and which went silent. A node
// that stops cleanly removes its report; one that died stops reporting and shows as silent, and
// its report is forgotten after a day.

import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import type { FastifyBaseLogger } from 'fastify';
import type { NodeReport, NodeStore } from '../store/types.js';

/** How often a node reports itself. */
export const HEARTBEAT_MS = 5_000;
/** A node unheard for this long is shown as silent. */
export const SILENT_AFTER_MS = 3 * HEARTBEAT_MS;
const FORGET_AFTER_MS = 24 * 60 * 60 * 1000;

export interface Heartbeat {
  nodeId: string;
  stop(): Promise<void>;
}

export function startHeartbeat(
  store: NodeStore,
  role: string,
  workers: number,
  busy: () => number,
  log: FastifyBaseLogger
): Heartbeat {
  const nodeId = `${hostname().slice(0, 60)}-${process.pid}-${randomBytes(3).toString('hex')}`;
  const startedAt = new Date().toISOString();
  let failing = false;
  const report = async () => {
    const now = Date.now();
    const node: NodeReport = {
      node_id: nodeId,
      role,
      workers,
      busy: busy(),
      started_at: startedAt,
      seen_at: now
    };
    try {
      await store.reportNode(node, now - FORGET_AFTER_MS);
      failing = false;
    } catch (error) {
      // The store being away is reported by /readyz and the worker; say it here once.
      if (!failing) log.warn({ err: error }, 'node heartbeat failed');
      failing = true;
    }
  };
  let last = report();
  const timer = setInterval(() => {
    last = last.then(report);
  }, HEARTBEAT_MS);
  timer.unref();
  return {
    nodeId,
    async stop() {
      clearInterval(timer);
      await last;
      await store.removeNode(nodeId).catch(() => undefined);
    }
  };
}
