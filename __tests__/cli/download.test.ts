// The client's artifact download (src/client/client.ts downloadArtifact) against real servers:
// redirects are followed, the key goes to the service's own origin and nowhere else, and the
// bytes arrive as they were.
import { afterEach, expect, it } from '@jest/globals';
import { type IncomingHttpHeaders, type Server, createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { AgentRunClient, NotFoundError } from '../../src/client/index.js';
import { ContractServer } from '../support/contract-server.js';

const KEY = 'test-key-0123456789';
let service: ContractServer;
let storage: Server;
const seen: IncomingHttpHeaders[] = [];

afterEach(async () => {
  await service.stop();
  storage.closeAllConnections();
  await new Promise(resolve => storage.close(resolve));
});

it('follows a redirect to storage elsewhere without the key, and keeps binary bytes intact', async () => {
  const bytes = Buffer.from([0, 1, 2, 255, 254, 10, 13, 0x80]);
  storage = createServer((req, res) => {
    seen.push(req.headers);
    res.writeHead(200, { 'content-type': 'application/octet-stream' });
    res.end(bytes);
  });
  await new Promise<void>(resolve => storage.listen(0, '127.0.0.1', resolve));
  const storageUrl = `http://127.0.0.1:${(storage.address() as AddressInfo).port}`;
  service = await new ContractServer({ apiKey: KEY, conversation: true }).start();
  // The details point at the service itself, which redirects to the storage host.
  service.artifactFiles.set('a-1', {
    details: { artifact_uid: 'a-1', download_url: `${service.url}/redirect/a-1` }
  });
  service.fault('GET /redirect/a-1', {
    kind: 'status',
    status: 302,
    headers: { location: `${storageUrl}/blob/a-1` }
  });

  const client = new AgentRunClient({ baseUrl: service.url, apiKey: KEY });
  try {
    const file = await client.artifacts.download('a-1');
    expect(file.bytes.equals(bytes)).toBe(true);
    expect(file.contentType).toBe('application/octet-stream');
    const redirect = service.requests.find(r => r.path === '/redirect/a-1')!;
    expect(redirect.headers.authorization).toBe(`Bearer ${KEY}`);
    expect(seen).toHaveLength(1);
    expect(seen[0]!.authorization).toBeUndefined();
    expect(JSON.stringify(seen[0])).not.toContain(KEY);
    await expect(client.artifacts.download('missing')).rejects.toBeInstanceOf(NotFoundError);
  } finally {
    client.close();
  }
});
