// The read cache's one look at the stamp a turn (read-cache.ts afterRefresh), attacked over one
// keep-alive socket: a request sent on it after another connection's write was acknowledged must
// see that write, also when it is pipelined behind a held read the server has not answered yet,
// and when its bytes arrive split over several packets; and clients that leave while their requests
// wait for the turn's look do not keep the others from an answer.
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { type Socket, connect } from 'node:net';
import type { Stores } from '../../src/executor/store/types.js';
import { type TestExecutor, startTestExecutor } from '../support/executor.js';

let ex: TestExecutor;
let key: string;
let other: Stores;

beforeAll(async () => {
  ex = await startTestExecutor({ workers: 1 });
  key = (await ex.key('team-a')).raw;
  other = await ex.openStore();
});
afterAll(async () => {
  await other.close();
  await ex.stop(1000);
});

const create = async (title: string) =>
  (
    (await (
      await ex.request('/api/v1/agent/runs', {
        method: 'POST',
        key,
        body: JSON.stringify({ title, prompt: '@sim sleep 120', config: { environment_id: 'local' } })
      })
    ).json()) as { run_id: string }
  ).run_id;

/** A raw keep-alive connection: answers are read in order, each whole (Content-Length bodies). */
class Connection {
  private buffered = Buffer.alloc(0);
  private wake: (() => void) | undefined;
  readonly socket: Socket;
  constructor(url: string) {
    const { hostname, port } = new URL(url);
    this.socket = connect(Number(port), hostname);
    this.socket.on('data', chunk => {
      this.buffered = Buffer.concat([this.buffered, chunk]);
      this.wake?.();
    });
  }
  send(text: string): void {
    this.socket.write(text);
  }
  async answer(): Promise<{ status: number; headers: string; body: string }> {
    for (;;) {
      const end = this.buffered.indexOf('\r\n\r\n');
      if (end >= 0) {
        const head = this.buffered.subarray(0, end).toString('latin1');
        const length = Number(/content-length: *(\d+)/i.exec(head)?.[1] ?? 0);
        if (this.buffered.length >= end + 4 + length) {
          const body = this.buffered.subarray(end + 4, end + 4 + length).toString('utf8');
          this.buffered = this.buffered.subarray(end + 4 + length);
          return { status: Number(head.split(' ')[1]), headers: head, body };
        }
      }
      await new Promise<void>(resolve => (this.wake = resolve));
    }
  }
  close(): void {
    this.socket.destroy();
  }
}

const getRun = (id: string, extra = '') =>
  `GET /api/v1/agent/runs/${id} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${key}\r\n${extra}\r\n`;

describe('one look at the stamp a turn, over one socket', () => {
  it('shows a cancel to a read sent after it on a keep-alive socket, pipelined behind a held read', async () => {
    const id = await create('pipelined');
    const c = new Connection(ex.url);
    try {
      for (let i = 0; i < 3; i++) {
        c.send(getRun(id));
        expect(JSON.parse((await c.answer()).body).state).not.toBe('CANCELLED');
      }
      c.send(getRun(id));
      const last = await c.answer();
      const etag = /etag: *(\S+)/i.exec(last.headers)![1]!;
      // A held read the server answers only once the run changes; the next read queues behind it.
      c.send(getRun(id, `Prefer: wait=30\r\nIf-None-Match: ${etag}\r\n`));
      expect((await other.runs.cancelRun('team-a', id, new Date().toISOString())).kind).toBe('cancelled');
      c.send(getRun(id));
      const held = await c.answer();
      expect(JSON.parse(held.body).state).toBe('CANCELLED');
      const after = await c.answer();
      expect(JSON.parse(after.body).state).toBe('CANCELLED');
    } finally {
      c.close();
    }
  });

  it('refuses a key revoked while a request of it was half sent, once the rest arrives after', async () => {
    const { raw, id } = await ex.key('team-a');
    const c = new Connection(ex.url);
    try {
      const list = `GET /api/v1/agent/runs?limit=1 HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${raw}\r\n\r\n`;
      for (let i = 0; i < 3; i++) {
        c.send(list);
        expect((await c.answer()).status).toBe(200);
      }
      c.send(list.slice(0, 20));
      await other.accounts.revokeKey(id, new Date().toISOString());
      c.send(list.slice(20));
      expect((await c.answer()).status).toBe(401);
    } finally {
      c.close();
    }
  });
  it('answers the others of a turn when clients left while their requests waited for it', async () => {
    const id = await create('left behind');
    const gone = Array.from({ length: 50 }, () => new Connection(ex.url));
    await Promise.all(gone.map(c => new Promise(resolve => c.socket.once('connect', resolve))));
    const stay = new Connection(ex.url);
    try {
      // Every request arrives together; all but one client close before the server can answer.
      for (const c of gone) c.socket.end(getRun(id));
      stay.send(getRun(id));
      for (const c of gone) c.close();
      const answer = await stay.answer();
      expect(answer.status).toBe(200);
      expect(JSON.parse(answer.body).run_id).toBe(id);
    } finally {
      stay.close();
    }
  });
});
