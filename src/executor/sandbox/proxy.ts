// The filtering proxy of a run whose `network:` is a list of host:port. The run has no network of
// its own (direct connections fail); inside it a small forwarder listens on 127.0.0.1 and passes
// each connection through a Unix socket to this proxy, which answers CONNECT and plain-HTTP
// requests for the listed targets only (403 for anything else, said in the response).
// An orchestrate turn's proxy also has a gateway: requests for the reserved host GATEWAY_HOST (plain,
// or through a CONNECT tunnel to its port 80) go to the executor's own API, with the turn's proxy
// secret in VIA_HEADER; the executor accepts the turn's credential only beside that secret.

import { chownSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import {
  type IncomingHttpHeaders,
  type IncomingMessage,
  type Server,
  type ServerResponse,
  createServer,
  request as httpRequest
} from 'node:http';
import { request as httpsRequest } from 'node:https';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Duplex } from 'node:stream';
import type { NetworkTarget } from './config.js';
import type { RunUser } from './user.js';

/** Connections one run's proxy holds at once (a tunnel or a request each). */
export const MAX_PROXY_CONNECTIONS = 256;

/** Where the proxy's socket and forwarder appear inside the sandbox. */
const INSIDE_DIR = '/run/agent-proxy';
const INSIDE_PORT = 3128;

/** Runs inside the sandbox with the executor's own node: 127.0.0.1:PORT → the proxy's socket. */
const FORWARDER = `
const net = require('node:net');
const fs = require('node:fs');
const [port, socket, ready] = process.argv.slice(2);
net.createServer(client => {
  const upstream = net.connect(socket);
  client.pipe(upstream).pipe(client);
  const end = () => { client.destroy(); upstream.destroy(); };
  client.on('error', end); upstream.on('error', end);
}).listen(Number(port), '127.0.0.1', () => fs.writeFileSync(ready, ''));
`;

/** The host name a run's AGENT_RUN_BASE_URL names: only its proxy knows where it leads. */
export const GATEWAY_HOST = 'agent-run.internal';
/** The header the proxy adds to each request it forwards to the executor: the turn's proxy secret. */
export const VIA_HEADER = 'x-agent-run-via';

/** Where an orchestrate turn's gateway leads, and the secret it adds. */
export interface ProxyGateway {
  /** The executor API's base URL, e.g. http://127.0.0.1:8080. */
  target: string;
  secret: string;
}

/** Headers that belong to one connection, never forwarded (RFC 9110 §7.6.1), and the secret's own. */
const HOP_HEADERS = new Set([
  'connection',
  'keep-alive',
  'proxy-connection',
  'proxy-authorization',
  'te',
  'trailer',
  'transfer-encoding',
  'upgrade',
  VIA_HEADER
]);

/** Forwards one request of the run to the executor's API, with the turn's secret beside it. */
function forwardToExecutor(
  gateway: ProxyGateway,
  path: string,
  request: IncomingMessage,
  response: ServerResponse
): void {
  const target = new URL(gateway.target);
  const headers: IncomingHttpHeaders = {};
  for (const [name, value] of Object.entries(request.headers))
    if (!HOP_HEADERS.has(name.toLowerCase())) headers[name] = value;
  headers.host = target.host;
  headers[VIA_HEADER] = gateway.secret;
  // A body the run sent chunked goes on chunked: dropped with the other hop headers, a GET's body
  // would be written unframed and read by the API as the next request on the connection.
  if (request.headers['transfer-encoding'] !== undefined) headers['transfer-encoding'] = 'chunked';
  const send = target.protocol === 'https:' ? httpsRequest : httpRequest;
  const upstream = send(
    {
      host: target.hostname.replace(/^\[|\]$/g, ''),
      port: target.port || (target.protocol === 'https:' ? 443 : 80),
      method: request.method,
      path: path.startsWith('/') ? path : `/${path}`,
      headers,
      // A connection of its own, never one pooled with other runs' requests (other teams' tokens).
      agent: false
    },
    reply => {
      response.writeHead(reply.statusCode ?? 502, reply.headers);
      reply.pipe(response);
    }
  );
  upstream.on('error', () => {
    if (!response.headersSent) response.writeHead(502, { 'content-type': 'text/plain' });
    response.end('agent-run proxy: the executor could not be reached\n');
  });
  // The run's side gone (its client gave up): the request to the executor goes with it.
  response.once('close', () => upstream.destroy());
  request.pipe(upstream);
}

function isGateway(host: string, port: number): boolean {
  return host.replace(/^\[|\]$/g, '').toLowerCase() === GATEWAY_HOST && port === 80;
}

export interface ProxyHandle {
  /** [host path, path inside] of files the sandbox must see. */
  files: [string, string][];
  env: Record<string, string>;
  /** The command that starts the forwarder, waits until it listens, then execs the program. */
  command(program: string, args: string[]): string[];
  close(): Promise<void>;
}

function allowed(targets: NetworkTarget[], host: string, port: number): boolean {
  const name = host.replace(/^\[|\]$/g, '').toLowerCase();
  return targets.some(target => target.host === name && target.port === port);
}

/** The 403 body for a host and port the environment's sandbox.network list does not name. */
function refusal(targets: NetworkTarget[], what: string): string {
  return `agent-run proxy: ${what} is not in this environment's sandbox.network list (${targets.map(t => `${t.host}:${t.port}`).join(', ')})\n`;
}

/**
 * A plain HTTP request through the proxy (an absolute URL): to the executor when it names the
 * gateway, else to an allowed target as it is, else refused.
 */
function forwardPlain(
  targets: NetworkTarget[],
  gateway: ProxyGateway | undefined,
  request: IncomingMessage,
  response: ServerResponse
): void {
  let url: URL;
  try {
    url = new URL(request.url ?? '');
  } catch {
    response.writeHead(400).end('agent-run proxy: expected an absolute http:// URL\n');
    return;
  }
  const port = Number(url.port || 80);
  if (gateway && url.protocol === 'http:' && isGateway(url.hostname, port)) {
    forwardToExecutor(gateway, url.pathname + url.search, request, response);
    return;
  }
  if (url.protocol !== 'http:' || !allowed(targets, url.hostname, port)) {
    response
      .writeHead(403, { 'content-type': 'text/plain' })
      .end(refusal(targets, `${url.hostname}:${port}`));
    return;
  }
  const upstream = httpRequest(
    {
      host: url.hostname,
      port,
      method: request.method,
      path: url.pathname + url.search,
      headers: request.headers,
      // Not pooled across runs: one run's bytes never share a connection with another's.
      agent: false
    },
    reply => {
      response.writeHead(reply.statusCode ?? 502, reply.headers);
      reply.pipe(response);
    }
  );
  upstream.on('error', error => response.writeHead(502).end(`agent-run proxy: ${error.message}\n`));
  request.pipe(upstream);
}

/**
 * A CONNECT tunnel: to the gateway's server (which reads its bytes as HTTP requests), to an
 * allowed target, or refused.
 */
function tunnel(
  targets: NetworkTarget[],
  gatewayServer: Server | undefined,
  request: IncomingMessage,
  client: Duplex,
  head: Buffer
): void {
  const match = /^(\[[^\]]+\]|[^:]+):(\d+)$/.exec(request.url ?? '');
  const host = match?.[1] ?? '';
  const port = Number(match?.[2]);
  client.on('error', () => undefined);
  if (match && gatewayServer && isGateway(host, port)) {
    // A client that tunnels even plain HTTP (as @actions/http-client does): the tunnel's bytes
    // are read as HTTP requests here, each forwarded with the secret like a plain one.
    client.write('HTTP/1.1 200 Connection established\r\n\r\n');
    if (head.length > 0) client.unshift(head);
    gatewayServer.emit('connection', client);
    return;
  }
  if (!match || !allowed(targets, host, port)) {
    const body = refusal(targets, request.url ?? '?');
    client.end(
      `HTTP/1.1 403 Forbidden\r\ncontent-type: text/plain\r\ncontent-length: ${Buffer.byteLength(body)}\r\n\r\n${body}`
    );
    return;
  }
  const upstream = connect(port, host.replace(/^\[|\]$/g, ''), () => {
    client.write('HTTP/1.1 200 Connection established\r\n\r\n');
    if (head.length > 0) upstream.write(head);
    upstream.pipe(client).pipe(upstream);
  });
  upstream.on('error', error =>
    client.end(`HTTP/1.1 502 Bad Gateway\r\n\r\nagent-run proxy: ${error.message}\n`)
  );
  // The run's side gone (its program ended, or the proxy closed): the far side goes with it.
  client.once('close', () => upstream.destroy());
}

/**
 * Every connection, tunnels included: a CONNECT tunnel leaves the HTTP server's own tracking, so
 * `closeAllConnections()` misses it, and `close()` would wait for it for ever (a tunnel whose far
 * end stays open outlives the run). Closing the proxy destroys them all.
 * Each connection costs the executor's own file descriptors (two for a tunnel), which the run's
 * limits do not count: past this many at once, a new one is closed as it comes.
 */
function trackConnections(server: Server): Set<Duplex> {
  server.maxConnections = MAX_PROXY_CONNECTIONS;
  const sockets = new Set<Duplex>();
  server.on('connection', (connection: Duplex) => {
    sockets.add(connection);
    connection.once('close', () => sockets.delete(connection));
  });
  return sockets;
}

/** The command that starts the forwarder inside, waits until it listens, then execs `program`. */
function proxyCommand(program: string, args: string[]): string[] {
  const ready = '/tmp/.agent-run-proxy-ready';
  const script =
    `/run/agent-proxy-node ${INSIDE_DIR}/forwarder.cjs ${INSIDE_PORT} ${INSIDE_DIR}/proxy.sock ${ready} & ` +
    `i=0; while [ ! -e ${ready} ] && [ $i -lt 500 ]; do sleep 0.01; i=$((i+1)); done; exec "$0" "$@"`;
  return ['/bin/sh', '-c', script, program, ...args];
}

/**
 * `user`: the run's host user (a root executor), who must be able to reach the socket; `gateway`:
 * an orchestrate turn's way to the executor's API (GATEWAY_HOST).
 */
export async function startProxy(
  targets: NetworkTarget[],
  runId: string,
  user?: RunUser,
  gateway?: ProxyGateway
): Promise<ProxyHandle> {
  const dir = mkdtempSync(join(tmpdir(), `agent-run-proxy-${runId.slice(0, 12)}-`));
  const socket = join(dir, 'proxy.sock');
  writeFileSync(join(dir, 'forwarder.cjs'), FORWARDER, { mode: 0o644 });

  const gatewayServer = gateway
    ? createServer((request, response) => forwardToExecutor(gateway, request.url ?? '/', request, response))
    : undefined;
  const server = createServer((request: IncomingMessage, response: ServerResponse) =>
    forwardPlain(targets, gateway, request, response)
  );
  server.on('connect', (request: IncomingMessage, client: Duplex, head: Buffer) =>
    tunnel(targets, gatewayServer, request, client, head)
  );
  const sockets = trackConnections(server);
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(socket, () => resolve());
  });
  // The folder is bound read-only inside; its user only connects to the socket.
  if (user) for (const path of [dir, socket]) chownSync(path, user.uid, user.gid);

  const url = `http://127.0.0.1:${INSIDE_PORT}`;
  return {
    files: [
      [dir, INSIDE_DIR],
      [process.execPath, '/run/agent-proxy-node']
    ],
    env: { HTTPS_PROXY: url, HTTP_PROXY: url, https_proxy: url, http_proxy: url, NO_PROXY: '', no_proxy: '' },
    command: proxyCommand,
    async close() {
      const closed = new Promise(resolve => server.close(resolve));
      for (const connection of sockets) connection.destroy();
      server.closeAllConnections();
      await closed;
      rmSync(dir, { recursive: true, force: true });
    }
  };
}
