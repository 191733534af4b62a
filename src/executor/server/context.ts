// What the routes share: the stores (one per concern), the settings the routes read, and the
// server's own moving parts. Each handler is a module-level function of (RouteContext, request,
// reply): routes/table.ts names the one for each endpoint.

import type { ExecutorConfig } from '../config/config.js';
import type { Stores } from '../store/stores.js';
import type { RateLimiter } from './auth.js';
import type { ChangeHub } from './changes.js';
import type { OidcVerifier } from './oidc.js';
import type { SessionLinks } from './records.js';

/**
 * The part of the configuration the server reads: its environments, limits, where it is reached,
 * how session pages, the workspace's continuation window and webhooks behave, and its log. The
 * rest (the sandbox, images, the store's location, publishing) is the worker's and the node's.
 */
export const SERVER_SETTINGS = [
  'environments',
  'limits',
  'workspaces',
  'publicUrl',
  'sessionPages',
  'workers',
  'logLevel',
  'logFormat',
  'dataDir',
  'webhooks'
] as const satisfies readonly (keyof ExecutorConfig)[];

export type ServerSettings = Pick<ExecutorConfig, (typeof SERVER_SETTINGS)[number]>;

/** The server's settings out of the whole configuration: only these keys reach a route. */
export function serverSettings(config: ExecutorConfig): ServerSettings {
  return Object.fromEntries(SERVER_SETTINGS.map(key => [key, config[key]])) as ServerSettings;
}

export interface ServerContext {
  stores: Stores;
  settings: ServerSettings;
  links: SessionLinks;
  hub: ChangeHub;
  limiter: RateLimiter;
  /** Checks workloads' OIDC tokens against the auth.oidc rules (and caches their issuers' keys). */
  oidc: OidcVerifier;
  /** True once shutdown began: no new runs, /readyz answers 503. */
  draining: boolean;
  /** Tells this node's webhook deliverer to look for due deliveries now (an endpoint made, a retry). */
  wakeDeliveries: () => void;
}
