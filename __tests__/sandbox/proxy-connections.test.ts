// A run whose sandbox.network is a list reaches those hosts through a proxy that lives in the
// executor's own process (sandbox/proxy.ts). Every connection a run opens to it costs the executor
// file descriptors (the run's side and, for an allowed host, the upstream one), and the run's own
// limits (processes, memory) do not count them: a run that held 900 tunnels open cost the executor
// 1,800 descriptors, and a few more runs exhaust its open-file limit (no API request accepted, no
// process spawned, for every run of the node). A real sandboxed run on an in-process executor: the
// descriptors are this process's own.

import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { chmodSync, existsSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { type Server, type Socket, createServer } from 'node:net';
import { join } from 'node:path';
import { type TestExecutor, startTestExecutor, tempDir } from '../support/executor.js';
import { eventually } from '../support/eventually.js';
import { waitForState } from '../support/wait.js';
import { createRun, requireBubblewrap } from './support.js';

const TUNNELS = 900;

let ex: TestExecutor;
let key: string;
let server: Server;
const held: Socket[] = [];
const shared = tempDir('proxy-connections-');
chmodSync(shared, 0o777);

beforeAll(async () => {
  requireBubblewrap();
  // An allowed host that keeps every connection open.
  server = createServer(socket => {
    held.push(socket);
    socket.on('error', () => undefined);
  });
  const port = await new Promise<number>(resolve =>
    server.listen(0, '127.0.0.1', () => resolve((server.address() as { port: number }).port))
  );
  const source = tempDir('proxy-connections-source-');
  writeFileSync(join(source, 'README.md'), 'hello\n');
  // Opens TUNNELS CONNECT tunnels on the proxy's socket, says how many were established, holds
  // them until told to stop.
  const script = `
import os, socket, time
ok = 0
conns = []
for _ in range(${TUNNELS}):
    try:
        s = socket.socket(socket.AF_UNIX)
        s.connect('/run/agent-proxy/proxy.sock')
        s.sendall(b'CONNECT 127.0.0.1:${port} HTTP/1.1\\r\\nHost: x\\r\\n\\r\\n')
        s.settimeout(5)
        if s.recv(64).startswith(b'HTTP/1.1 200'): ok += 1
        conns.append(s)
    except Exception:
        pass
open('${shared}/opened', 'w').write(str(ok))
for _ in range(600):
    if os.path.exists('${shared}/done'): break
    time.sleep(0.1)
`;
  writeFileSync(join(shared, 'tunnels.py'), script, { mode: 0o644 });
  ex = await startTestExecutor({
    environments: [
      {
        id: 'proxied',
        source,
        sandbox: { network: [`127.0.0.1:${port}`], read: [shared], write: [shared] }
      }
    ]
  });
  key = (await ex.key()).raw;
}, 120_000);

afterAll(async () => {
  writeFileSync(join(shared, 'done'), '');
  await ex?.stop(1000);
  for (const socket of held) socket.destroy();
  server?.close();
});

const descriptors = () => readdirSync('/proc/self/fd').length;

describe('the proxy of a run with a host list', () => {
  it('holds a bounded number of connections, however many the run opens', async () => {
    const before = descriptors();
    const id = await createRun(ex, key, 'proxied', `@sim run python3 ${join(shared, 'tunnels.py')}`);
    await eventually(() => existsSync(join(shared, 'opened')), {
      what: 'the run to have opened its tunnels',
      timeoutMs: 90_000
    });
    const opened = Number(readFileSync(join(shared, 'opened'), 'utf8'));
    // This process's descriptors, less the allowed host's own (it runs here too).
    const grown = descriptors() - before - held.filter(socket => !socket.destroyed).length;
    writeFileSync(join(shared, 'done'), '');
    expect((await waitForState({ on: ex, key, id })).state).toBe('SUCCEEDED');
    // At most 256 connections a run, each with its upstream: well under the 1,800 of 900 tunnels.
    expect(opened).toBeLessThanOrEqual(256);
    expect(grown).toBeLessThan(700);
  }, 180_000);
});
