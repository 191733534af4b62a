// The executor as one process, wired in one place: the start-up checks (startup.ts), the data
// dir made private (private-files.ts) and its lock (one process per role and data dir), the store,
// the server (server/app.ts) listening on its port, the worker pool and the heartbeat, and the
// order they stop in. A node's role picks the parts: `all` (both), `api` (the API; it runs
// nothing), `worker` (runs work; it serves only /healthz, /readyz and the API's description).
// The CLI's `serve` and the tests' in-process executors both start here.

import { randomBytes } from 'node:crypto';
import { existsSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import type { FastifyInstance } from 'fastify';
import type { ExecutorConfig } from '../config/config.js';
import { type Role, buildApp } from '../server/app.js';
import { RateLimiter } from '../server/auth.js';
import { OidcVerifier } from '../server/oidc.js';
import { ChangeHub } from '../server/changes.js';
import { type ServerContext, serverSettings } from '../server/context.js';
import { startHeartbeat } from '../telemetry/heartbeat.js';
import { SessionLinks } from '../server/records.js';
import { privateDir, writePrivateFile } from '../sandbox/private-files.js';
import { checkSandboxPaths, checkStartup } from './startup.js';
import { checkImages } from './image-startup.js';
import { hideFromReaders } from '../sandbox/run-files.js';
import { openStore } from '../store/open.js';
import type { Stores } from '../store/stores.js';
import { WorkerPool } from '../worker/pool.js';
import { Scheduler } from '../schedules/scheduler.js';
import { declaredWebhooks } from '../webhooks/declared.js';
import { Deliverer } from '../webhooks/deliverer.js';

export type { Role } from '../server/app.js';

export interface StartOptions {
  role?: Role;
  /** An open store to serve (tests bring their own); else the config's store is opened here. */
  store?: Stores;
  /**
   * Whether the environments' sources, variables and agent programs are checked before start
   * (the CLI does; tests whose runs are meant to fail on them turn it off). The sandbox is always checked.
   */
  checkEnvironments?: boolean;
  /** Takes the data dir's lock for the role (the CLI's serve), released when the node stops or the process exits. */
  lockDataDir?: boolean;
  /** The schedules' clock, ms since the epoch (tests move it instead of waiting for a due time). */
  now?: () => number;
}

export interface Executor {
  app: FastifyInstance;
  pool: WorkerPool;
  /** Fires the store's schedules (on `all` and `worker` nodes; an `api` node's never ticks). */
  scheduler: Scheduler;
  /** Sends webhook deliveries (on `all` and `worker` nodes). */
  deliverer: Deliverer;
  context: ServerContext;
  /** Where the server listens, e.g. http://127.0.0.1:8080 (set once listening). */
  url: string;
  /** Graceful stop: no new runs, running ones get the grace period, then everything closes. */
  stop(graceMs?: number): Promise<void>;
}

/** The context the routes share, from a config and an open store. */
export async function serverContext(
  config: ExecutorConfig,
  store: Stores,
  publicUrl: () => string
): Promise<ServerContext> {
  const secret = await store.accounts.getSecret('session-hmac', () => randomBytes(32).toString('base64url'));
  return {
    stores: store,
    settings: serverSettings(config),
    links: new SessionLinks(secret, publicUrl),
    hub: new ChangeHub(store),
    limiter: new RateLimiter(config.limits.rateLimitPerMinute),
    oidc: new OidcVerifier(config.auth.oidc, undefined, config.auth.oidcClockSkewMs),
    draining: false,
    wakeDeliveries: () => undefined
  };
}

/**
 * Starts a node: checks, store, server, pool, heartbeat. A refused check throws a
 * StartupCheckError before the store is opened; a later failure closes the store opened here.
 */
export async function startExecutor(config: ExecutorConfig, options: StartOptions = {}): Promise<Executor> {
  const role = options.role ?? 'all';
  // No sandbox path may show runs the data dir, whatever the role.
  checkSandboxPaths(config);
  // A config file kept under /etc would show in every reader sandbox: it is hidden there, as in runs.
  if (config.configFile) hideFromReaders([config.configFile]);
  // Before anything is made in it (the checks' overlay probe, the store): under any umask, what
  // the executor makes there is in a directory no other user can enter.
  const tightened = privateDir(config.dataDir);
  // A node that runs work refuses configuration every run would fail on, and environments it
  // cannot confine (unless they say `sandbox: off`).
  const { warnings, notes } = checkStartup(config, role, { environments: options.checkEnvironments });
  // Each image environment's image: copied and unpacked now, its command found there.
  if (role !== 'api') notes.push(...(await checkImages(config)));
  if (tightened) warnings.unshift(tightened);
  const release = options.lockDataDir ? lockDataDir(config.dataDir, role) : () => undefined;
  let store: Stores | undefined;
  try {
    // A split role shares the store with the other role's process (on SQLite, one file on this
    // machine): start-up then fails only runs whose lease expired, never the other's live runs.
    store = options.store ?? (await openStore(config.store, { shared: role !== 'all' }));
    return await wire(config, store, role, warnings, notes, release, options.now);
  } catch (error) {
    if (!options.store) await store?.close().catch(() => undefined);
    release();
    throw error;
  }
}
/**
 * One process per role and data dir: `all` alone, or one `api` beside one `worker`. A second
 * server of a role would fail the first one's runs as abandoned, or claim beside it.
 */
function lockDataDir(dataDir: string, role: Role): () => void {
  const lockOf = (of: Role) => join(dataDir, of === 'all' ? 'executor.pid' : `executor-${of}.pid`);
  const conflicts: Role[] = role === 'all' ? ['all', 'api', 'worker'] : ['all', role];
  for (const other of conflicts) {
    const path = lockOf(other);
    if (!existsSync(path)) continue;
    const pid = Number(readFileSync(path, 'utf8').trim());
    if (Number.isInteger(pid) && pid > 0 && pid !== process.pid && alive(pid)) {
      throw new Error(
        `another executor (pid ${pid}) is serving data dir ${dataDir} with --role ${other}; ` +
          'a data dir takes one --role all, or one --role api beside one --role worker; ' +
          'stop it or use another --data-dir'
      );
    }
  }
  const path = lockOf(role);
  writePrivateFile(path, `${process.pid}\n`);
  // Also on an exit without a stop (a second Ctrl-C).
  const release = () => {
    process.removeListener('exit', release);
    rmSync(path, { force: true });
  };
  process.once('exit', release);
  return release;
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

async function wire(
  config: ExecutorConfig,
  store: Stores,
  role: Role,
  warnings: string[],
  notes: string[],
  release: () => void,
  now?: () => number
): Promise<Executor> {
  let listening = `http://${config.host}:${config.port}`;
  const publicUrl = () => config.publicUrl ?? listening;
  const context = await serverContext(config, store, publicUrl);
  // The operator's endpoints, as the file declares them now (a missing secret variable stops here).
  await store.webhooks.syncDeclared(declaredWebhooks(config));
  const app = await buildApp(context, {
    role,
    publicUrl,
    requestPrefix: randomBytes(4).toString('hex')
  });

  for (const warning of warnings) app.log.warn(warning);
  for (const note of notes) app.log.info(note);
  // An orchestrate turn's proxy forwards to this node's own API, or a worker node's to the API nodes.
  const apiUrl = () => (role === 'all' ? listening : config.publicUrl);
  const pool = new WorkerPool(store, config, app.log, role !== 'api', run => context.links.link(run), apiUrl);
  await app.listen({ host: config.host, port: config.port });
  const address = app.server.address();
  if (address && typeof address === 'object') {
    const host = address.family === 'IPv6' ? `[${address.address}]` : address.address;
    listening = `http://${host}:${address.port}`;
  }
  await pool.start();
  const scheduler = new Scheduler(store, config, { log: app.log, now });
  if (role !== 'api') scheduler.start();
  const deliverer = new Deliverer(store, config, { log: app.log, link: run => context.links.link(run) });
  if (role !== 'api') {
    deliverer.start();
    context.wakeDeliveries = () => deliverer.wake();
  }
  const heartbeat = startHeartbeat(
    store.nodes,
    role,
    role === 'api' ? 0 : config.workers,
    () => pool.runningCount,
    app.log
  );

  let stopping: Promise<void> | undefined;
  return {
    app,
    pool,
    scheduler,
    deliverer,
    context,
    get url() {
      return listening;
    },
    stop(graceMs = config.shutdownGraceMs) {
      stopping ??= (async () => {
        context.draining = true;
        await scheduler.stop();
        await pool.stop(graceMs);
        await deliverer.stop();
        await heartbeat.stop();
        context.hub.close();
        await app.close();
        await store.close();
      })().finally(release);
      return stopping;
    }
  };
}
