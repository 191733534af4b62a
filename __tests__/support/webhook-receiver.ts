// A webhook receiver on a real port: it verifies each request with the `standardwebhooks` package
// (a Standard Webhooks verifier from npm, not this project's code) and keeps what it got. What it
// answers is up to the test: a status (with headers), or `hang` (it never answers).
import { createServer, type IncomingHttpHeaders, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Webhook } from 'standardwebhooks';

export interface Received {
  headers: IncomingHttpHeaders;
  body: string;
  /** The payload as the verifier returned it, or undefined when it did not verify. */
  verified?: Record<string, unknown>;
  verifyError?: string;
  at: number;
}

export type Answer = { status: number; headers?: Record<string, string> } | 'hang';

export interface Receiver {
  url: string;
  port: number;
  received: Received[];
  /** Set once the endpoint exists: requests are verified with it (and any others added). */
  secrets: string[];
  answer: (request: Received, index: number) => Answer;
  close(): Promise<void>;
  /** Requests that verified with the secret `secret` alone. */
  verifiedWith(secret: string, request: Received): boolean;
}

export async function startReceiver(answer: Receiver['answer'] = () => ({ status: 200 })): Promise<Receiver> {
  const hanging = new Set<ServerResponse>();
  const receiver: Receiver = {
    url: '',
    port: 0,
    received: [],
    secrets: [],
    answer,
    close: () =>
      new Promise<void>(resolve => {
        for (const response of hanging) response.destroy();
        server.closeAllConnections();
        server.close(() => resolve());
      }),
    verifiedWith(secret, request) {
      try {
        new Webhook(secret).verify(request.body, request.headers as Record<string, string>);
        return true;
      } catch {
        return false;
      }
    }
  };
  const server: Server = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', chunk => chunks.push(chunk as Buffer));
    request.on('end', () => {
      const got: Received = {
        headers: request.headers,
        body: Buffer.concat(chunks).toString(),
        at: Date.now()
      };
      for (const secret of receiver.secrets) {
        try {
          got.verified = new Webhook(secret).verify(
            got.body,
            request.headers as Record<string, string>
          ) as Record<string, unknown>;
          break;
        } catch (error) {
          got.verifyError = (error as Error).message;
        }
      }
      receiver.received.push(got);
      const reply = receiver.answer(got, receiver.received.length - 1);
      if (reply === 'hang') {
        hanging.add(response);
        return;
      }
      response.writeHead(reply.status, reply.headers);
      response.end();
    });
  });
  await new Promise<void>(resolve => server.listen(0, '127.0.0.1', resolve));
  receiver.port = (server.address() as AddressInfo).port;
  receiver.url = `http://127.0.0.1:${receiver.port}/hooks`;
  return receiver;
}
