// The method every benchmark shares, so that its figures can be reproduced and compared:
// targets measured in interleaved rounds (a, b, c, a, b, c, …) so that whatever else the machine
// is doing falls on all of them alike; ratios taken within a round, then reported as the median
// and the spread (min–max) of the rounds; and the state of the machine (uptime before and after,
// cores, Node, git commit, date) recorded with every result.

import { execFileSync } from 'node:child_process';
import { availableParallelism, loadavg } from 'node:os';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('..', import.meta.url));

/** `uptime` as the machine prints it, with the three load averages as numbers. */
export function uptime() {
  let text;
  try {
    text = execFileSync('uptime', { encoding: 'utf8' }).trim();
  } catch {
    text = `uptime unavailable; load average: ${loadavg()
      .map(n => n.toFixed(2))
      .join(', ')}`;
  }
  return { text, load: loadavg().map(n => Math.round(n * 100) / 100) };
}

/** The commit the working tree is at, with `-dirty` when tracked files differ from it. */
export function commit() {
  try {
    const head = execFileSync('git', ['rev-parse', '--short=12', 'HEAD'], {
      cwd: ROOT,
      encoding: 'utf8'
    }).trim();
    const dirty = execFileSync('git', ['status', '--porcelain', '--untracked-files=no'], {
      cwd: ROOT,
      encoding: 'utf8'
    }).trim();
    return dirty ? `${head}-dirty` : head;
  } catch {
    return 'unknown (not a git checkout)';
  }
}

/** What a figure needs beside its numbers: where, when and under what load it was taken. */
export function machineState() {
  return {
    date: new Date().toISOString(),
    commit: commit(),
    node: process.version,
    nproc: availableParallelism(),
    platform: `${process.platform} ${process.arch}`,
    uptime: uptime()
  };
}

/** The median, minimum and maximum of some numbers (the median of an even count is the mean of the middle two). */
export function spread(values, digits = 2) {
  const numbers = values.filter(v => typeof v === 'number' && Number.isFinite(v));
  if (numbers.length === 0) return { median: null, min: null, max: null, n: 0 };
  const sorted = [...numbers].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  const median = sorted.length % 2 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2;
  const round = n => Math.round(n * 10 ** digits) / 10 ** digits;
  return { median: round(median), min: round(sorted[0]), max: round(sorted.at(-1)), n: sorted.length };
}

/** "0.57 (0.40–0.61, 3 rounds)": a spread as a reader sees it. */
export function describe(figure, unit = '') {
  if (!figure || figure.median === null) return 'n/a';
  const { median, min, max, n } = figure;
  return n > 1 ? `${median}${unit} (${min}–${max}${unit}, ${n} rounds)` : `${median}${unit} (1 round)`;
}

/**
 * Runs `measure(target, round)` for every target in turn, `rounds` times (a, b, c, a, b, c, …), and
 * returns every row with its round and target. A target's measurement starts only after the
 * previous one ended, so no two targets ever share the machine.
 */
export async function interleave(rounds, targets, measure, log = console.log) {
  const rows = [];
  for (let round = 1; round <= rounds; round++) {
    for (const target of targets) {
      const row = { round, target, ...(await measure(target, round)) };
      rows.push(row);
      log(JSON.stringify(row));
    }
  }
  return rows;
}

/**
 * For each round, `field` of `target` divided by `field` of `base` in that same round; then the
 * median and spread of those per-round ratios, with the ratios themselves.
 */
export function ratio(rows, target, base, field = 'requestsPerSecond') {
  const rounds = [...new Set(rows.map(row => row.round))].sort((a, b) => a - b);
  const each = [];
  for (const round of rounds) {
    const top = rows.find(row => row.round === round && row.target === target);
    const bottom = rows.find(row => row.round === round && row.target === base);
    if (top && bottom && bottom[field] > 0) each.push(Math.round((top[field] / bottom[field]) * 100) / 100);
  }
  return { of: target, to: base, field, rounds: each, ...spread(each) };
}

/** The median and spread over rounds of each numeric field of each target. */
export function summarise(rows, fields) {
  const targets = [...new Set(rows.map(row => row.target))];
  return Object.fromEntries(
    targets.map(target => [
      target,
      Object.fromEntries(
        fields.map(field => [
          field,
          spread(
            rows.filter(row => row.target === target).map(row => row[field]),
            field.endsWith('Ms') ? 1 : 0
          )
        ])
      )
    ])
  );
}
