// A reverse proxy on loopback in front of an executor: it passes every request through (streamed
// both ways, so event streams flow as they come), records each one, and can cut the connections
// it has open, as a network that drops them would.

import {
  type IncomingHttpHeaders,
  type ServerResponse,
  createServer,
  request as httpRequest
} from 'node:http';
import type { AddressInfo, Socket } from 'node:net';

export interface SeenRequest {
  method: string;
  /** The path and query. */
  url: string;
  headers: IncomingHttpHeaders;
}

export interface CountingProxy {
  url: string;
  requests: SeenRequest[];
  /** Destroys every connection open now, both sides. */
  cut(): void;
  /** Answers this status (with a problem body) instead of passing on the requests it matches. */
  refuse(match: (request: SeenRequest) => boolean, status: number): void;
  close(): Promise<void>;
}

export async function startCountingProxy(target: string): Promise<CountingProxy> {
  const upstream = new URL(target);
  const requests: SeenRequest[] = [];
  const open = new Set<Socket>();
  const refusals: { match: (request: SeenRequest) => boolean; status: number }[] = [];
  const server = createServer((request, response: ServerResponse) => {
    const seen = { method: request.method ?? 'GET', url: request.url ?? '/', headers: request.headers };
    requests.push(seen);
    const refusal = refusals.find(entry => entry.match(seen));
    if (refusal) {
      response.writeHead(refusal.status, { 'content-type': 'application/problem+json' });
      response.end(JSON.stringify({ status: refusal.status, title: 'refused by the test proxy' }));
      return;
    }
    const forward = httpRequest(
      {
        host: upstream.hostname,
        port: upstream.port,
        method: request.method,
        path: request.url,
        headers: request.headers
      },
      answer => {
        response.writeHead(answer.statusCode ?? 502, answer.headers);
        response.flushHeaders();
        answer.pipe(response);
        answer.on('error', () => response.destroy());
      }
    );
    forward.on('socket', socket => {
      open.add(socket);
      socket.once('close', () => open.delete(socket));
    });
    forward.on('error', () => response.destroy());
    request.pipe(forward);
  });
  server.on('connection', socket => {
    open.add(socket);
    socket.once('close', () => open.delete(socket));
  });
  await new Promise<void>(resolve => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    cut: () => {
      for (const socket of [...open]) socket.destroy();
    },
    refuse: (match, status) => refusals.push({ match, status }),
    close: () =>
      new Promise(resolve => {
        for (const socket of [...open]) socket.destroy();
        server.close(() => resolve());
      })
  };
}
