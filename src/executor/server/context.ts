// What the routes share: the store, the config, and the server's own moving parts.

import type { ExecutorConfig } from '../config/config.js';
import type { RunStore } from '../store/types.js';
import type { RateLimiter } from './auth.js';
import type { ChangeHub } from './changes.js';
import type { OidcVerifier } from './oidc.js';
import type { SessionLinks } from './records.js';

export interface ServerContext {
  store: RunStore;
  config: ExecutorConfig;
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
