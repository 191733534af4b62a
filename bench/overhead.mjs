// Benchmark 2: what the action itself costs. Wall time of `node dist/index.js` from spawn to its
// first request, and from the moment the service answers with a terminal state to the process's
// exit; `node -e ''` is measured side by side as the floor of starting Node (bundle sizes:
// bundles.mjs).
//
//   node bench/overhead.mjs [--repeat 15]

import { spawn } from 'node:child_process';
import { createServer } from 'node:http';
import { parseArgs } from 'node:util';
import { ACTION, ROOT, actionEnv, median, percentile, saveResult } from './lib.mjs';

const { values } = parseArgs({ options: { repeat: { type: 'string', default: '15' } } });
const repeat = Number(values.repeat);

// A service that answers at once: create → QUEUED, read → SUCCEEDED.
let firstRequestAt = 0;
let terminalSentAt = 0;
const server = createServer((req, res) => {
  firstRequestAt ||= performance.now();
  res.setHeader('content-type', 'application/json');
  if (req.method === 'POST') return res.end('{"run_id":"r-1","state":"QUEUED"}');
  terminalSentAt = performance.now();
  res.end('{"run_id":"r-1","state":"SUCCEEDED","session_link":"http://x/s"}');
});
await new Promise(resolve => server.listen(0, '127.0.0.1', resolve));
const url = `http://127.0.0.1:${server.address().port}`;

function once(args, env) {
  return new Promise(resolve => {
    firstRequestAt = 0;
    terminalSentAt = 0;
    const started = performance.now();
    const child = spawn(process.execPath, args, { env, stdio: 'ignore', cwd: ROOT });
    child.on('exit', () => resolve({ started, exited: performance.now() }));
  });
}

const nodeFloor = [];
const toFirstRequest = [];
const terminalToExit = [];
for (let i = 0; i < repeat; i++) {
  const floor = await once(['-e', ''], { PATH: process.env.PATH });
  nodeFloor.push(floor.exited - floor.started);
  const env = actionEnv({ prompt: 'hi', 'environment-id': 'e', 'api-key': 'k', 'base-url': url });
  const run = await once([ACTION], env);
  toFirstRequest.push(firstRequestAt - run.started);
  terminalToExit.push(run.exited - terminalSentAt);
}
server.close();

const result = {
  command: `node bench/overhead.mjs --repeat ${repeat}`,
  medianNodeStartMs: Math.round(median(nodeFloor)),
  medianToFirstRequestMs: Math.round(median(toFirstRequest)),
  p90ToFirstRequestMs: Math.round(percentile(toFirstRequest, 90)),
  medianTerminalToExitMs: Math.round(median(terminalToExit))
};
console.log(result);
saveResult('overhead', result);
