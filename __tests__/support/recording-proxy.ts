// An HTTP proxy on loopback that passes everything through and records each destination asked for
// (CONNECT host:port, or the host:port of a plain-HTTP request), so a test can see every network
// destination an agent CLI contacts when given HTTPS_PROXY/HTTP_PROXY — the list a sandbox's
// `network:` must allow for it.

import { createServer, request as httpRequest } from 'node:http';
import type { AddressInfo } from 'node:net';
import { connect } from 'node:net';

export interface RecordingProxy {
  url: string;
  /** Each destination as host:port, in the order asked for. */
  destinations: string[];
  /** The variables that send a CLI through this proxy. */
  env: Record<string, string>;
  close(): Promise<void>;
}

export async function startRecordingProxy(): Promise<RecordingProxy> {
  const destinations: string[] = [];
  const server = createServer((request, response) => {
    const target = new URL(request.url ?? '/');
    destinations.push(`${target.hostname}:${target.port || '80'}`);
    const upstream = httpRequest(
      {
        host: target.hostname,
        port: target.port || 80,
        method: request.method,
        path: target.pathname + target.search,
        headers: request.headers
      },
      answer => {
        response.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(response);
      }
    );
    upstream.on('error', () => {
      response.writeHead(502);
      response.end();
    });
    request.pipe(upstream);
  });
  server.on('connect', (request, socket) => {
    const destination = request.url ?? '';
    destinations.push(destination);
    const colon = destination.lastIndexOf(':');
    const upstream = connect(Number(destination.slice(colon + 1)), destination.slice(0, colon), () => {
      socket.write('HTTP/1.1 200 Connection established\r\n\r\n');
      upstream.pipe(socket);
      socket.pipe(upstream);
    });
    const end = () => {
      upstream.destroy();
      socket.destroy();
    };
    upstream.on('error', end);
    socket.on('error', end);
  });
  await new Promise<void>(resolve => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    url,
    destinations,
    env: { HTTPS_PROXY: url, HTTP_PROXY: url, https_proxy: url, http_proxy: url, NO_PROXY: '', no_proxy: '' },
    close: () =>
      new Promise<void>(resolve => {
        server.closeAllConnections();
        server.close(() => resolve());
      })
  };
}
