// The TMPDIR of an unconfined harness turn: DATA_DIR/tmp/t<pid>.<random>, short because a socket's
// path inside it must be (a longer one sends Claude Code back to the machine's /tmp). The turn
// removes it when it ends; an executor killed first (SIGKILL, a crash) leaves it, and the start-up
// and maintenance sweep removes every such folder no live turn of this process holds and every one
// of a process that is gone (several executor processes may share a data dir: a live one's folders
// are its own). The sweep reads
// only the names in DATA_DIR/tmp (a folder of the executor's, which no run can write) and never
// looks inside a run's folder: it goes through the removal primitive (workspace/remove.ts).

import { mkdirSync, mkdtempSync } from 'node:fs';
import { join } from 'node:path';
import { processAlive } from '../sandbox/processes.js';
import { removeLeftovers, removeTree } from '../workspace/remove.js';

/** The temp folders live turns of this process hold. */
const held = new Set<string>();

function tempsDir(dataDir: string): string {
  return join(dataDir, 'tmp');
}

/** Makes a turn's temp folder and holds it until `releaseRunTemp`. */
export function makeRunTemp(dataDir: string): string {
  mkdirSync(tempsDir(dataDir), { recursive: true, mode: 0o700 });
  // Made and held in one synchronous step: a sweep never sees it unheld.
  const path = mkdtempSync(join(tempsDir(dataDir), `t${process.pid}.`));
  held.add(path);
  return path;
}

/** Removes a turn's temp folder and lets it go. */
export function releaseRunTemp(path: string): void {
  try {
    removeTree(path);
  } finally {
    held.delete(path);
  }
}

/** Whether a temp folder is left over: this process's and held by no turn, or a dead process's. */
function leftOver(name: string, path: string): boolean {
  if (!name.startsWith('t')) return false;
  const pid = /^t(\d+)\./.exec(name)?.[1];
  // A name without a pid was made before folders carried one: nobody holds it.
  if (pid === undefined) return true;
  return Number(pid) === process.pid ? !held.has(path) : !processAlive(Number(pid));
}

/**
 * Removes the temp folders no live turn holds (left by a killed process); answers how many went.
 * One that cannot go stays for the next sweep.
 */
export function sweepRunTemps(dataDir: string): number {
  return removeLeftovers(tempsDir(dataDir), leftOver);
}
