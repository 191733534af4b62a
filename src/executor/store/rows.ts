// How a run's row is read, on both stores: the columns the API and the worker see (not the store's
// own bookkeeping: idempotency hash, event counter, change time), and the removal of bookkeeping
// columns a query had to return alongside them. The two dialects agree on all of it.

import type { StoredRun } from './types.js';

/** Columns of a run as the API and the worker see them. */
export const RUN_COLUMNS = `seq, run_id, team, environment_id, state, title, prompt, config, extra, creator_type,
  creator_uid, creator_name, status_message, error_code, created_at, updated_at, started_at, completed_at,
  version, lease_owner, lease_expires_at, artifacts, request_usage, workload`;

/** RUN_COLUMNS qualified by a table alias, for statements that join. */
export function runColumnsOf(alias: string): string {
  return RUN_COLUMNS.split(',')
    .map(column => `${alias}.${column.trim()}`)
    .join(', ');
}

/**
 * How much a run weighs in a list page: the characters of what its record carries that a client
 * chose (prompt, title, config, kept fields) or its run made (status, artifacts, usage).
 */
export function runWeight(run: StoredRun): number {
  return (
    run.prompt.length +
    (run.title?.length ?? 0) +
    run.config.length +
    run.extra.length +
    (run.workload?.length ?? 0) +
    (run.status_message?.length ?? 0) +
    (run.artifacts?.length ?? 0) +
    (run.request_usage?.length ?? 0)
  );
}

/**
 * How many of `runs` (in page order) a page of at most `maxWeight` holds: those whose weights add
 * up to it, and at least one. A store reading a page may stop after the run that passes it.
 */
export function runsWithin(runs: readonly StoredRun[], maxWeight: number): number {
  let total = 0;
  for (let i = 0; i < runs.length; i++) {
    total += runWeight(runs[i]!);
    if (total > maxWeight) return Math.max(1, i);
  }
  return runs.length;
}

/** The run without the store's bookkeeping columns. */
export function strip<T extends StoredRun>(row: T): StoredRun {
  const {
    event_seq: _seq,
    idempotency_hash: _hash,
    ...run
  } = row as T & {
    event_seq?: number;
    idempotency_hash?: string;
  };
  return run;
}
