// Nodes' heartbeats (NodeStore): each executor process's report, for the dashboard's nodes page.
// sql-nodes.ts implements it.

import type { NodeReport } from './records.js';

export interface NodeStore {
  /** Records (or refreshes) a node's report, and forgets nodes silent since before `forgetBefore`. */
  reportNode(node: NodeReport, forgetBefore: number): Promise<void>;
  listNodes(): Promise<NodeReport[]>;
  removeNode(nodeId: string): Promise<void>;
}
