// The writes of bench/throughput.mjs's `list-writes` target: another process committing to the
// executor's SQLite file at a steady rate, as a `--role worker` process sharing the file does when
// runs change state. Each commit is a one-row insert into a table of its own (`bench_writes`, which
// the executor never reads), with the executor's durability (WAL, synchronous=FULL). Any commit by
// another connection moves SQLite's data_version, which empties the executor's list page cache.
//
//   node bench/sqlite-writer.mjs <database file> <commits per second>
// Prints "ready" once the table exists; on SIGTERM prints the number of commits made and exits.

import { DatabaseSync } from 'node:sqlite';

const [file, rate] = process.argv.slice(2);
const perSecond = Number(rate);
if (!file || !(perSecond > 0))
  throw new Error(
    `usage: sqlite-writer.mjs <database file> <commits per second> (got ${JSON.stringify(rate)})`
  );

const db = new DatabaseSync(file);
db.exec('PRAGMA busy_timeout = 10000; PRAGMA synchronous = FULL;');
db.exec('CREATE TABLE IF NOT EXISTS bench_writes (n INTEGER NOT NULL, at INTEGER NOT NULL)');
const insert = db.prepare('INSERT INTO bench_writes (n, at) VALUES (?, ?)');

let commits = 0;
let stopping = false;
process.once('SIGTERM', () => (stopping = true));
console.log('ready');

// Paced against the clock, so a slow commit is caught up rather than lost.
const started = performance.now();
while (!stopping) {
  const due = started + (commits * 1000) / perSecond;
  const wait = due - performance.now();
  if (wait > 0) await new Promise(resolve => setTimeout(resolve, wait));
  else await new Promise(resolve => setImmediate(resolve));
  if (stopping) break;
  insert.run(commits, Date.now());
  commits++;
}
db.close();
console.log(commits);
