// The durable baseline of bench/durable.mjs: a bare node:http server that does the durable work a
// create promises and nothing else. It parses the JSON body, inserts one row into a WAL database with
// synchronous=FULL, and answers {run_id, state} only after the commit, so an answered id survives a
// power cut, as the executor's does. No keys, no validation, no queue, no state events.
//
//   node bench/bare-create-server.mjs <database file> row|group
//
// `row`: one INSERT + COMMIT (one fsync) per request. `group`: the executor's group commit, where the
// requests that arrive in one turn of the event loop share one transaction and one fsync, each
// answered after it. Prints the port it listens on (127.0.0.1) on its first line.

import { randomUUID } from 'node:crypto';
import { createServer } from 'node:http';
import { DatabaseSync } from 'node:sqlite';

const [file, mode] = process.argv.slice(2);
if (!file || !['row', 'group'].includes(mode))
  throw new Error(`usage: bare-create-server.mjs <database file> row|group (got ${JSON.stringify(mode)})`);

const db = new DatabaseSync(file);
db.exec('PRAGMA journal_mode = WAL; PRAGMA synchronous = FULL;');
db.exec(`CREATE TABLE runs (seq INTEGER PRIMARY KEY AUTOINCREMENT, run_id TEXT UNIQUE NOT NULL,
  team TEXT NOT NULL, state TEXT NOT NULL, prompt TEXT NOT NULL, config TEXT NOT NULL, created_at TEXT NOT NULL)`);
db.exec('CREATE INDEX runs_team_seq ON runs (team, seq)');
const insert = db.prepare(
  "INSERT INTO runs (run_id, team, state, prompt, config, created_at) VALUES (?, 'default', 'QUEUED', ?, ?, ?)"
);

function insertOne(body) {
  const request = JSON.parse(body);
  const runId = randomUUID();
  insert.run(runId, String(request.prompt), JSON.stringify(request.config ?? {}), new Date().toISOString());
  return runId;
}

let pending = [];
function flush() {
  const batch = pending;
  pending = [];
  const ids = [];
  db.exec('BEGIN IMMEDIATE');
  try {
    for (const item of batch) ids.push(insertOne(item.body));
    db.exec('COMMIT');
  } catch (error) {
    db.exec('ROLLBACK');
    for (const item of batch) item.fail(error);
    return;
  }
  batch.forEach((item, index) => item.done(ids[index]));
}

function answer(res, status, value) {
  const text = JSON.stringify(value);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
  res.end(text);
}

const server = createServer((req, res) => {
  let body = '';
  req.setEncoding('utf8');
  req.on('data', chunk => (body += chunk));
  req.on('end', () => {
    const done = runId => answer(res, 200, { run_id: runId, state: 'QUEUED' });
    const fail = error => answer(res, 500, { error: String(error) });
    if (mode === 'row') {
      try {
        db.exec('BEGIN IMMEDIATE');
        const runId = insertOne(body);
        db.exec('COMMIT');
        done(runId);
      } catch (error) {
        if (db.isTransaction) db.exec('ROLLBACK');
        fail(error);
      }
      return;
    }
    pending.push({ body, done, fail });
    if (pending.length === 1) setImmediate(flush);
  });
});
server.listen(0, '127.0.0.1', () => console.log(server.address().port));
