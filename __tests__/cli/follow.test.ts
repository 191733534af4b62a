// The client's live-progress follower (src/client/follow.ts) against a real contract server:
// one held request per event where the server holds transcript reads, reads only on state
// changes where it does not, and the conversation where there is no transcript.
import { afterEach, describe, expect, it } from '@jest/globals';
import { AgentRunClient, type ProgressItem, RunFollower } from '../../src/client/index.js';
import { ContractServer, type ContractServerOptions } from '../support/contract-server.js';
import { eventually } from '../support/eventually.js';
import { sleep } from '../support/wait.js';

const KEY = 'test-key-0123456789';
let server: ContractServer;
let client: AgentRunClient;

async function setUp(options: ContractServerOptions): Promise<string> {
  server = await new ContractServer({ apiKey: KEY, ...options }).start();
  client = new AgentRunClient({ baseUrl: server.url, apiKey: KEY });
  return (await client.runs.create({ prompt: 'p', config: { environment_id: 'e' } })).run_id;
}
afterEach(async () => {
  client.close();
  await server.stop();
});

const transcriptReads = () => server.requests.filter(r => r.path.includes('/transcript')).length;

describe('RunFollower', () => {
  it('long-polls a holding server: each event arrives at once, one request per event', async () => {
    const id = await setUp({ transcript: true });
    const seen: { item: ProgressItem; at: number }[] = [];
    const follower = new RunFollower(client, id, {
      onItems: items => seen.push(...items.map(item => ({ item, at: Date.now() })))
    });
    follower.start();
    await eventually(() => transcriptReads() >= 1, { what: 'the first transcript read' });
    // Each event arrives on the request the server was holding: one request per event, where a
    // poller would have made one per interval (speed is measured in bench/, not here).
    for (const text of ['one', 'two', 'three']) {
      server.addEvent(id, { kind: 'message', text });
      await eventually(() => seen.find(s => s.item.type === 'text' && s.item.text === text), {
        what: `the event "${text}"`,
        timeoutMs: 30_000
      });
    }
    expect(transcriptReads()).toBeLessThanOrEqual(4);
    const reads = transcriptReads();
    await sleep(1000);
    expect(transcriptReads()).toBe(reads);
    server.addEvent(id, { kind: 'command', command: 'npm test', exit_code: 1, output: 'boom' });
    server.update(id, { state: 'FAILED' });
    await follower.finish();
    expect(seen.map(s => s.item)).toContainEqual({
      type: 'command',
      command: 'npm test',
      exitCode: 1,
      output: 'boom'
    });
    expect(seen.filter(s => s.item.type === 'text')).toHaveLength(3);
    expect(server.requests.find(r => r.path.includes('after=2'))!.headers.prefer).toMatch(/^wait=\d+$/);
  });

  it('reads a server that does not hold only on state changes and at the end', async () => {
    const id = await setUp({ transcript: true, supportsWait: false });
    const seen: ProgressItem[] = [];
    const follower = new RunFollower(client, id, { onItems: items => seen.push(...items) });
    follower.start();
    server.addEvent(id, { kind: 'message', text: 'early' });
    await eventually(() => transcriptReads() >= 1, { what: 'the first transcript read' });
    // Nothing changes state for a while: no further read.
    await sleep(1500);
    expect(transcriptReads()).toBe(1);
    server.addEvent(id, { kind: 'message', text: 'later' });
    await follower.onStateChange();
    expect(transcriptReads()).toBe(2);
    server.addEvent(id, { kind: 'message', text: 'last' });
    await follower.finish();
    expect(transcriptReads()).toBe(3);
    expect(seen.filter(i => i.type === 'text').map(i => (i as { text: string }).text)).toEqual(
      expect.arrayContaining(['later', 'last'])
    );
    expect(new Set(seen.map(i => JSON.stringify(i))).size).toBe(seen.length);
  });

  it('falls back to the conversation, showing each block once', async () => {
    const id = await setUp({ conversation: true });
    const seen: ProgressItem[] = [];
    const follower = new RunFollower(client, id, { onItems: items => seen.push(...items) });
    const message = (text: string) => ({ role: 'assistant', content: [{ type: 'text', text }] });
    server.runs.get(id)!.conversation = { steps: [{ messages: [message('first')], steps: [] }] };
    follower.start();
    await sleep(200);
    server.runs.get(id)!.conversation = {
      steps: [{ messages: [message('first'), message('second')], steps: [] }]
    };
    await follower.onStateChange();
    await follower.finish();
    expect(seen).toEqual([
      { type: 'text', role: 'assistant', text: 'first' },
      { type: 'text', role: 'assistant', text: 'second' }
    ]);
  });

  it('rides out a failing read with one notice, and still reads at the end', async () => {
    const id = await setUp({ transcript: true });
    server.fault(`GET /api/v1/agent/runs/${id}/transcript`, { kind: 'status', status: 500 }, 3);
    const notices: string[] = [];
    const seen: ProgressItem[] = [];
    const follower = new RunFollower(client, id, {
      onItems: items => seen.push(...items),
      onNotice: notice => notices.push(notice)
    });
    follower.start();
    // The first read fails (three answers of 500, the client's own retries): one notice.
    await eventually(() => notices.length > 0, { what: 'the notice', timeoutMs: 60_000 });
    expect(notices).toHaveLength(1);
    expect(notices[0]).toMatch(/could not read the run's progress: 500 from GET/);
    server.addEvent(id, { kind: 'message', text: 'made it' });
    await follower.finish();
    expect(seen).toEqual([{ type: 'text', role: 'assistant', text: 'made it' }]);
  });
});
