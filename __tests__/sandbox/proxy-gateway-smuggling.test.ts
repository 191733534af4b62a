// An orchestrate turn's gateway (sandbox/proxy.ts) forwards a run's requests to the executor's API
// with the turn's secret. Every run's proxy lives in the executor's one process: were the
// connections to the API pooled across runs, a request whose body is written unframed (a chunked
// GET whose length marker the proxy dropped) could leave a half request on a pooled socket, and the
// next run's request (its token and secret) would be appended to it — one run acting with another
// team's credential. The attack is played here against two real proxies and a real HTTP server.

import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import { connect } from 'node:net';
import { join } from 'node:path';
import { type ProxyHandle, VIA_HEADER, startProxy } from '../../src/executor/sandbox/proxy.js';

interface Seen {
  method: string;
  path: string;
  via?: string;
  authorization?: string;
  body: string;
}

let api: Server;
let target = '';
const seen: Seen[] = [];
const proxies: ProxyHandle[] = [];

beforeAll(async () => {
  api = createServer((request: IncomingMessage, response) => {
    let body = '';
    request.on('data', chunk => (body += chunk));
    request.on('end', () => {
      seen.push({
        method: request.method!,
        path: request.url!,
        via: request.headers[VIA_HEADER] as string | undefined,
        authorization: request.headers.authorization,
        body
      });
      response.end(`answer to ${request.method} ${request.url}`);
    });
  });
  await new Promise<void>(resolve => api.listen(0, '127.0.0.1', resolve));
  target = `http://127.0.0.1:${(api.address() as { port: number }).port}`;
});

afterAll(async () => {
  for (const proxy of proxies) await proxy.close();
  api.closeAllConnections();
  await new Promise(resolve => api.close(resolve));
});

/** Sends raw bytes to a proxy's socket; resolves with what came back once the proxy has answered. */
function raw(proxy: ProxyHandle, bytes: string, until: RegExp): Promise<string> {
  const socket = join(proxy.files[0]![0], 'proxy.sock');
  return new Promise((resolve, reject) => {
    const client = connect(socket);
    let text = '';
    client.on('data', chunk => {
      text += chunk.toString();
      if (until.test(text)) {
        client.destroy();
        resolve(text);
      }
    });
    client.on('error', reject);
    client.write(bytes);
  });
}

describe("an orchestrate turn's gateway", () => {
  it("never lets one run's request swallow another run's: a chunked GET is forwarded framed, each on its own connection", async () => {
    const a = await startProxy([], 'run-a-000000', undefined, { target, secret: 'SECRET-A' });
    const b = await startProxy([], 'run-b-000000', undefined, { target, secret: 'SECRET-B' });
    proxies.push(a, b);
    const smuggled = 'GET /smuggled HTTP/1.1\r\nHost: x\r\nX-Absorb: ';
    const chunk = `${smuggled.length.toString(16)}\r\n${smuggled}\r\n0\r\n\r\n`;
    const first = await raw(
      a,
      `GET http://agent-run.internal/first HTTP/1.1\r\nHost: agent-run.internal\r\nAuthorization: Bearer art_attacker\r\n` +
        `Transfer-Encoding: chunked\r\n\r\n${chunk}`,
      /answer to GET \/first/
    );
    expect(first).toContain('answer to GET /first');
    const second = await raw(
      b,
      'GET http://agent-run.internal/victim HTTP/1.1\r\nHost: agent-run.internal\r\nAuthorization: Bearer art_victim\r\n\r\n',
      /answer to GET \/[a-z]+/
    );
    expect(second).toContain('answer to GET /victim');
    // The API saw exactly the two requests the runs sent, each with its own run's secret; the
    // smuggled text stayed the body of the first.
    expect(seen.map(({ path, via, authorization }) => ({ path, via, authorization }))).toEqual([
      { path: '/first', via: 'SECRET-A', authorization: 'Bearer art_attacker' },
      { path: '/victim', via: 'SECRET-B', authorization: 'Bearer art_victim' }
    ]);
    expect(seen[0]!.body).toBe(smuggled);
  });
});
