// Errors that say what is wrong (issue 25 items 11, 12): plain http at an https URL, a base URL whose
// routes do not exist, a rejected key named where the user set it, a refused local port that fails
// at once. Real servers on real ports.
import { afterEach, describe, expect, it } from '@jest/globals';
import { type Server, createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { AgentRunClient, ConnectionError, NotFoundError } from '../../src/client/index.js';
import { ContractServer } from '../support/contract-server.js';

const KEY = 'test-key-0123456789';
const servers: { stop(): Promise<void> | void }[] = [];
afterEach(async () => {
  for (const server of servers.splice(0)) await server.stop();
});

async function plainServer(handler: Parameters<typeof createServer>[1]): Promise<string> {
  const server: Server = createServer(handler);
  await new Promise<void>(resolve => server.listen(0, '127.0.0.1', resolve));
  servers.push({ stop: () => new Promise<void>(resolve => server.close(() => resolve())) });
  return `127.0.0.1:${(server.address() as AddressInfo).port}`;
}

/** Counts the retries a client makes, without waiting for them. */
function client(baseUrl: string, extra: Partial<ConstructorParameters<typeof AgentRunClient>[0]> = {}) {
  const retries: string[] = [];
  const made = new AgentRunClient({
    baseUrl,
    apiKey: KEY,
    sleep: () => Promise.resolve(),
    onRetry: info => retries.push(info.reason),
    ...extra
  });
  return { client: made, retries };
}

describe('client errors', () => {
  it('says the server does not speak TLS, once, when https:// meets a plain http server', async () => {
    const host = await plainServer((_req, res) => res.end('{}'));
    const { client: c, retries } = client(`https://${host}`);
    const error = await c.runs.get('r1').catch((e: unknown) => e);
    c.close();
    expect(error).toBeInstanceOf(ConnectionError);
    expect((error as Error).message).toContain(
      `the server does not speak TLS at ${host} — use http://${host}`
    );
    expect((error as Error).message).not.toMatch(/wrong version number|SSL routines/);
    expect(retries).toEqual([]);
  });

  it('says the base URL looks wrong when the route is unknown (route_not_found or a bare 404 page)', async () => {
    const contract = await new ContractServer({ apiKey: KEY }).start();
    servers.push(contract);
    const wrong = client(`${contract.url}/api/v2`);
    const routed = await wrong.client.runs.list().catch((e: unknown) => e);
    wrong.client.close();
    expect(routed).toBeInstanceOf(NotFoundError);
    expect((routed as Error).message).toContain(
      `no such route; the base URL looks wrong (requests go to ${contract.url}/api/v2/api/v1)`
    );
    expect((routed as Error).message).not.toContain('check the run id');

    const host = await plainServer((_req, res) => {
      res.writeHead(404, { 'content-type': 'text/html' });
      res.end('<html><body>Not Found</body></html>');
    });
    const page = client(`http://${host}`);
    const bare = await page.client.runs.get('r1').catch((e: unknown) => e);
    page.client.close();
    expect((bare as Error).message).toContain('the base URL looks wrong');

    // An unknown run on the right base URL keeps its own advice.
    const right = client(contract.url);
    const missing = await right.client.runs.get('no-such-run').catch((e: unknown) => e);
    // An unknown run or artifact is advised about as such: nothing of environments (issue 35).
    right.client.close();
    const served = await new ContractServer({ apiKey: KEY, conversation: true }).start();
    servers.push(served);
    const files = client(served.url);
    const artifact = await files.client.artifacts.get('no-such-artifact').catch((e: unknown) => e);
    files.client.close();
    expect((missing as Error).message).toContain(
      '404 from GET /api/v1/agent/runs/no-such-run: not found; check the run id and that the key belongs to its team'
    );
    expect((missing as Error).message).not.toContain('environment');
    expect((artifact as Error).message).toContain('not found; check the artifact id');
    expect((artifact as Error).message).not.toContain('environment');
  });

  it('names where the key came from when the service rejects it', async () => {
    const contract = await new ContractServer({ apiKey: 'another-key-0123456789' }).start();
    servers.push(contract);
    const named = client(contract.url, { keyName: 'AGENT_RUN_API_KEY' });
    const error = await named.client.runs.get('r1').catch((e: unknown) => e);
    named.client.close();
    expect((error as Error).message).toContain('the API key was rejected; check AGENT_RUN_API_KEY');
  });

  it('fails fast, with the address, when nothing listens on a local port', async () => {
    const host = await plainServer((_req, res) => res.end('{}'));
    await servers.pop()!.stop(); // the port is now closed
    const { client: c, retries } = client(`http://${host}`);
    const error = await c.runs
      .create({ prompt: 'p', config: { environment_id: 'e' } }, { maxRetries: 5 })
      .catch((e: unknown) => e);
    c.close();
    expect(error).toBeInstanceOf(ConnectionError);
    expect((error as Error).message).toContain(`connection refused at ${host}`);
    expect(retries).toHaveLength(1);
  });
});
