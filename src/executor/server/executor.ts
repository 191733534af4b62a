// The executor as one process: the app (app.ts) listening on its port and the worker pool over one
// store. A node's role picks the parts: `all` (both), `api` (the API; it runs nothing), `worker`
// (runs work; it serves only /healthz, /readyz and the API's description).

import { randomBytes } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import type { ExecutorConfig } from '../config.js';
import type { RunStore } from '../store/types.js';
import { checkHarnessClis } from '../agents/harness/startup.js';
import { checkSandboxes } from '../sandbox/startup.js';
import { StartupCheckError } from '../worker/preflight.js';
import { WorkerPool } from '../worker/pool.js';
import { type Role, buildApp } from './app.js';
import { RateLimiter } from './auth.js';
import { ChangeHub } from './changes.js';
import { startHeartbeat } from './heartbeat.js';
import type { ServerContext } from './context.js';
import { SessionLinks } from './records.js';

export type { Role } from './app.js';

export interface Executor {
  app: FastifyInstance;
  pool: WorkerPool;
  context: ServerContext;
  /** Where the server listens, e.g. http://127.0.0.1:8080 (set once listening). */
  url: string;
  /** Graceful stop: no new runs, running ones get the grace period, then everything closes. */
  stop(graceMs?: number): Promise<void>;
}

/** The context the routes share, from a config and an open store. */
export async function serverContext(
  config: ExecutorConfig,
  store: RunStore,
  publicUrl: () => string
): Promise<ServerContext> {
  const secret = await store.getSecret('session-hmac', () => randomBytes(32).toString('base64url'));
  return {
    store,
    config,
    links: new SessionLinks(secret, publicUrl),
    hub: new ChangeHub(store),
    limiter: new RateLimiter(config.limits.rateLimitPerMinute),
    draining: false
  };
}

export async function startExecutor(
  config: ExecutorConfig,
  store: RunStore,
  role: Role = 'all'
): Promise<Executor> {
  // A node that runs work refuses environments it cannot confine (unless they say `sandbox: off`).
  const sandboxNotes: string[] = [];
  const sandboxWarnings = role === 'api' ? [] : checkSandboxes(config, sandboxNotes);
  // Each harness's CLI (claude, …): found, runnable in the sandbox, its version stated.
  const clis = role === 'api' ? { notes: [], problems: [] } : checkHarnessClis(config.environments);
  if (clis.problems.length > 0) throw new StartupCheckError(`refusing to start: ${clis.problems.join('; ')}`);
  sandboxNotes.push(...clis.notes);
  let listening = `http://${config.host}:${config.port}`;
  const publicUrl = () => config.publicUrl ?? listening;
  const context = await serverContext(config, store, publicUrl);
  const app = await buildApp(context, {
    role,
    publicUrl,
    requestPrefix: randomBytes(4).toString('hex')
  });

  for (const warning of sandboxWarnings) app.log.warn(warning);
  for (const note of sandboxNotes) app.log.info(note);
  const pool = new WorkerPool(store, config, app.log, role !== 'api', run => context.links.link(run));
  await app.listen({ host: config.host, port: config.port });
  const address = app.server.address();
  if (address && typeof address === 'object') {
    const host = address.family === 'IPv6' ? `[${address.address}]` : address.address;
    listening = `http://${host}:${address.port}`;
  }
  await pool.start();
  const heartbeat = startHeartbeat(
    store,
    role,
    role === 'api' ? 0 : config.workers,
    () => pool.runningCount,
    app.log
  );

  let stopping: Promise<void> | undefined;
  return {
    app,
    pool,
    context,
    get url() {
      return listening;
    },
    stop(graceMs = config.shutdownGraceMs) {
      stopping ??= (async () => {
        context.draining = true;
        await pool.stop(graceMs);
        await heartbeat.stop();
        context.hub.close();
        await app.close();
        await store.close();
      })();
      return stopping;
    }
  };
}
