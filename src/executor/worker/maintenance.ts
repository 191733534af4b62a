// The store's and the disk's housekeeping, on timers of the pool: failing runs whose worker died
// (at start-up, and whenever a lease expires), pruning finished runs past retention, and removing
// finished workspaces past theirs. Every node does the first two, API-only nodes too: the node
// that held a lease may never come back. Under workspaces.min_free (or min_free_inodes) it also
// frees the shared checkouts and setup layers no workspace uses, looking again only when something
// could have become unused (or after LOOK_AGAIN_MS), not on every claim attempt.

import { statSync } from 'node:fs';
import { join } from 'node:path';
import type { FastifyBaseLogger } from 'fastify';
import type { ExecutorConfig } from '../config/config.js';

/** What of the configuration maintenance reads: the retention, the workspace bounds, where files are. */
export type MaintenanceSettings = Pick<ExecutorConfig, 'dataDir' | 'environments' | 'limits' | 'workspaces'>;
import type { ClaimStore, RunRecordStore } from '../store/types.js';
import { collectImageLayout, freeImageRoots } from '../images/cache.js';
import { LEASE_EXPIRED_MESSAGE, RESTARTED_MESSAGE } from '../runs/outcomes.js';
import { freeBytes, freeInodes } from '../sandbox/processes.js';
import { freeSharedLayers, sweepWorkspaces } from '../workspace/workspace.js';
import { removeLeftovers } from '../workspace/remove.js';
import { sweepImages } from '../images/cache.js';
import { sweepRunTemps } from './run-temp.js';

function now(): string {
  return new Date().toISOString();
}

/**
 * Fails the runs left INPROGRESS by a previous process. On a store of its own, whatever is
 * INPROGRESS was this data dir's previous process's; on a shared store other nodes are running
 * theirs, so only expired leases are abandoned.
 */
export async function failOrphans(claims: ClaimStore, log: FastifyBaseLogger): Promise<void> {
  const orphans = await claims.failAbandoned(!claims.shared, now(), RESTARTED_MESSAGE);
  if (orphans.length > 0)
    log.warn({ runs: orphans.length }, 'failed runs left in progress by a previous process');
}

/** Fails the runs whose lease expired: their worker stopped renewing it. */
export async function reapExpiredLeases(claims: ClaimStore, log: FastifyBaseLogger): Promise<void> {
  const failed = await claims.failAbandoned(false, now(), LEASE_EXPIRED_MESSAGE);
  if (failed.length > 0)
    log.warn({ runs: failed.map(run => run.run_id) }, 'failed runs whose worker stopped renewing its lease');
}

/** Deletes finished runs older than the retention in days. */
export async function pruneFinishedRuns(
  runs: Pick<RunRecordStore, 'pruneFinished'>,
  config: MaintenanceSettings,
  log: FastifyBaseLogger
): Promise<void> {
  const before = new Date(Date.now() - config.limits.retentionDays * 86_400_000).toISOString();
  const pruned = await runs.pruneFinished(before);
  if (pruned > 0) log.info({ pruned }, 'pruned finished runs past retention');
}

/**
 * Removes finished runs' workspaces (and harness HOMEs) past the workspace retention, and never
 * before workspaces.continue_for (a follow-up continues in them); `active` ones are never touched.
 */
export async function sweepFinishedWorkspaces(
  config: MaintenanceSettings,
  active: Set<string>,
  log: FastifyBaseLogger
): Promise<void> {
  const removed = await sweepWorkspaces(
    config.dataDir,
    config.environments,
    Math.max(config.workspaces.retentionMs, config.workspaces.continueForMs),
    active,
    config.workspaces.cacheBytes
  );
  if (removed > 0) {
    // Their shared checkouts and setup layers may be unused now: worth a look under min_free.
    removals.set(config.dataDir, (removals.get(config.dataDir) ?? 0) + removed);
    log.info({ removed }, 'removed workspaces past retention');
  }
  // Unpacked container images no run holds, least recently used first, past workspaces.cache_size.
  const images = sweepImages(config.dataDir, config.workspaces.cacheBytes);
  if (images.length > 0)
    log.info({ images: images.map(image => image.digest) }, 'removed unused unpacked images past cache_size');
  // The layout's blobs of images no environment names any more, past workspaces.cache_size.
  try {
    const refs = config.environments.flatMap(environment =>
      environment.image ? [environment.image.ref] : []
    );
    const untagged = await collectImageLayout(config.dataDir, refs, config.workspaces.cacheBytes);
    if (untagged.length > 0)
      log.info(
        { images: untagged },
        'removed copied images no environment names from the image cache past cache_size'
      );
  } catch (error) {
    log.warn({ err: error }, 'could not collect the image cache');
  }
  const homes = sweepLeftHomes(
    config.dataDir,
    Math.max(config.workspaces.retentionMs, config.workspaces.continueForMs),
    active
  );
  if (homes > 0) log.info({ removed: homes }, 'removed harness HOMEs left by runs that did not end here');
  // Unconfined harness turns' TMPDIRs a killed process left (DATA_DIR/tmp/t*): none is held then.
  const temps = sweepRunTemps(config.dataDir);
  if (temps > 0) log.info({ removed: temps }, 'removed temp folders left by turns that did not end here');
}

/**
 * A harness run's HOME (DATA_DIR/homes/<run id>, its MCP configuration and the CLI's files, secrets
 * included) is removed when the run ends; one whose executor was killed first is left behind, and
 * goes here once it is older than the workspace retention and its run is not running on this node.
 */
function sweepLeftHomes(dataDir: string, retentionMs: number, active: Set<string>): number {
  // Any depth the run made it (remove.ts).
  return removeLeftovers(
    join(dataDir, 'homes'),
    (name, path) => !active.has(name) && Date.now() - statSync(path).mtimeMs >= retentionMs
  );
}

/** How long the pool waits before it looks again for something to free, when nothing was left. */
export const LOOK_AGAIN_MS = 60_000;

/** Workspaces the retention sweep removed, per data dir (a count that only grows). */
const removals = new Map<string, number>();

/**
 * Per data dir, while free space stays under min_free: when the last look found nothing left to
 * free, the runs running then and the removals counted then. Something can become unused only
 * when one of those runs ends or a workspace is removed; until then (or LOOK_AGAIN_MS) the pool
 * does not look again. Free space coming back needs no look: the claim check reads it each time.
 */
const nothingLeft = new Map<string, { at: number; active: Set<string>; removals: number }>();

/**
 * When the data dir's file system has less free space than workspaces.min_free (or fewer free
 * inodes than workspaces.min_free_inodes: a checkout of many files gives back as many), removes
 * unused shared checkouts and kept setup layers (no run mounted on them, no retained workspace
 * over them), least recently used first, until it has enough again; logs what it freed, and once
 * (until space is back) that nothing is left to free. The pool calls it before it decides
 * whether to claim runs, so the cache gives way before the node stops.
 */
export async function freeSpaceForRuns(
  config: MaintenanceSettings,
  active: Set<string>,
  log: FastifyBaseLogger
): Promise<void> {
  const { dataDir } = config;
  const { minFreeBytes, minFreeInodes } = config.workspaces;
  const shortOf = () =>
    [
      (freeBytes(dataDir) ?? Infinity) < minFreeBytes && 'less free space than workspaces.min_free',
      (freeInodes(dataDir) ?? Infinity) < minFreeInodes && 'fewer free inodes than workspaces.min_free_inodes'
    ]
      .filter(Boolean)
      .join(' and ');
  const enough = () => shortOf() === '';
  const short = shortOf();
  if (!short) {
    nothingLeft.delete(dataDir);
    return;
  }
  const last = nothingLeft.get(dataDir);
  const removed = removals.get(dataDir) ?? 0;
  if (
    last &&
    Date.now() - last.at < LOOK_AGAIN_MS &&
    last.removals === removed &&
    [...last.active].every(runId => active.has(runId))
  )
    return;
  const freed: { name: string; bytes: number }[] = await freeSharedLayers(dataDir, active, enough);
  // Then unpacked container images no run holds: an image's root gives back every inode of its files.
  if (!enough())
    for (const image of freeImageRoots(dataDir, enough))
      freed.push({ name: `image ${image.digest}`, bytes: image.bytes });
  const after = enough();
  const later = `looking again when a run ends or a workspace is removed, or in ${LOOK_AGAIN_MS / 1000} s`;
  if (freed.length > 0)
    log.warn(
      {
        freed: freed.map(entry => entry.name),
        freed_bytes: freed.reduce((sum, entry) => sum + entry.bytes, 0),
        free_bytes: freeBytes(dataDir),
        free_inodes: freeInodes(dataDir)
      },
      `${short}: removed ${freed.length} unused shared checkout(s), setup layer(s) and unpacked image(s): ${freed.map(entry => entry.name).join(', ')}${after ? '' : `; none left unused, ${later}`}`
    );
  else if (!last)
    log.warn(
      { data_dir: dataDir, free_bytes: freeBytes(dataDir), free_inodes: freeInodes(dataDir) },
      `${short} and no unused shared checkout, setup layer or unpacked image left to remove: ${later}`
    );
  if (after) nothingLeft.delete(dataDir);
  else nothingLeft.set(dataDir, { at: Date.now(), active: new Set(active), removals: removed });
}
