// Conversations that continue: `POST /agent/runs/{id}/followups` sends the next user message of the
// same run, whatever its state. The typed client against the executor on a real port, with a real
// SQLite file (or PostgreSQL with AGENT_EXECUTOR_TEST_STORE=postgres) and the simulated agent, whose
// `@sim run` lines are real shell commands in the run's workspace.
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { AgentRunClient, ConflictError, NotFoundError } from '../../src/client/index.js';
import { type TestExecutor, startTestExecutor } from '../support/executor.js';
import { sleep, waitForState } from '../support/wait.js';

let ex: TestExecutor;
let client: AgentRunClient;
let key: string;

beforeAll(async () => {
  ex = await startTestExecutor({ workers: 1 });
  key = (await ex.key('team-a', 'personal', 'alice')).raw;
  client = new AgentRunClient({ baseUrl: ex.url, apiKey: key });
});
afterAll(async () => {
  client.close();
  await ex.stop(1000);
});

const ended = (id: string, on: TestExecutor = ex) => waitForState({ on, key, id });
const start = async (prompt: string, c = client) =>
  (await c.runs.create({ prompt, config: { environment_id: 'local' } })).run_id;

async function events(id: string, kind: string, c = client): Promise<Record<string, unknown>[]> {
  const transcript = await c.runs.wholeTranscript(id);
  return (transcript?.events ?? []).filter(event => event.kind === kind) as Record<string, unknown>[];
}

describe('a follow-up to an ended run', () => {
  it('continues the same run in the same workspace: it sees the first turn’s file and changes another', async () => {
    const id = await start('@sim write first.txt one\n@sim result wrote first');
    expect((await ended(id)).state).toBe('SUCCEEDED');

    const answer = await client.runs.followUp(id, {
      message: '@sim run grep -q one first.txt\n@sim write second.txt two\n@sim result wrote second'
    });
    expect(answer.run_id).toBe(id);
    expect(['QUEUED', 'INPROGRESS']).toContain(answer.state);
    // Read right after the answer: active again, never the old terminal state.
    expect(['QUEUED', 'INPROGRESS']).toContain((await client.runs.get(id)).state);

    const run = await ended(id);
    expect(run.state).toBe('SUCCEEDED');
    expect((await events(id, 'result')).at(-1)).toMatchObject({ text: 'wrote second' });
    // The changes of the last turn cover everything since the start commit.
    const diff = (await events(id, 'diff')).at(-1) as { files: { path: string }[] };
    expect(diff.files.map(file => file.path).sort()).toEqual(['first.txt', 'second.txt']);
    // Each turn after the first begins with a `turn` event naming the follow-ups it takes.
    expect((await events(id, 'turn')).map(turn => turn.turn)).toEqual([2]);
    // The conversation: one step per turn, the follow-up as the second step's user message.
    const conversation = await client.runs.conversation(id);
    expect(conversation.steps).toHaveLength(2);
    expect(JSON.stringify(conversation.steps[1]!.messages[0])).toContain('write second.txt two');
  });

  it('continues a FAILED run', async () => {
    const id = await start('@sim write kept.txt yes\n@sim fail the tests broke');
    expect((await ended(id)).state).toBe('FAILED');
    await client.runs.followUp(id, { message: '@sim run test -f kept.txt\n@sim result fixed' });
    const run = await ended(id);
    expect(run).toMatchObject({ state: 'SUCCEEDED' });
    expect(run.status_message ?? null).toBeNull();
    expect((await events(id, 'result')).at(-1)).toMatchObject({ text: 'fixed' });
  });

  it('gives the agent the conversation so far in AGENT_CONVERSATION_FILE', async () => {
    const id = await start('@sim result the first answer');
    await ended(id);
    await client.runs.followUp(id, {
      message: '@sim run grep -q "the first answer" "$AGENT_CONVERSATION_FILE"\n@sim result seen'
    });
    expect((await ended(id)).state).toBe('SUCCEEDED');
  });
});

describe('a follow-up to an active run', () => {
  it('to a running run: the run goes on with it after the current turn', async () => {
    const id = await start('@sim write a.txt a\n@sim sleep 2\n@sim result first');
    await waitForState({ on: ex, key, id }, ['INPROGRESS']);
    const answer = await client.runs.followUp(id, { message: '@sim run test -f a.txt\n@sim result second' });
    expect(answer.state).toBe('INPROGRESS');
    expect((await ended(id)).state).toBe('SUCCEEDED');
    expect((await events(id, 'turn')).map(turn => turn.turn)).toEqual([2]);
    expect((await events(id, 'result')).map(result => result.text)).toEqual(['first', 'second']);
  });

  it('to a running run whose turn then fails: the run goes on with the follow-up', async () => {
    const id = await start('@sim sleep 2\n@sim fail broke');
    await waitForState({ on: ex, key, id }, ['INPROGRESS']);
    await client.runs.followUp(id, { message: '@sim result recovered' });
    await waitForState({ on: ex, key, id }, ['SUCCEEDED'], { timeoutMs: 60_000 });
    expect((await events(id, 'result')).at(-1)).toMatchObject({ text: 'recovered' });
    expect((await events(id, 'turn')).map(turn => turn.turn)).toEqual([2]);
  });

  it('to a queued run: the message joins the prompt of its first turn', async () => {
    const busy = await start('@sim sleep 3');
    await waitForState({ on: ex, key, id: busy }, ['INPROGRESS']);
    const id = await start('@sim write q.txt q');
    expect((await client.runs.get(id)).state).toBe('QUEUED');
    const answer = await client.runs.followUp(id, { message: '@sim run test -f q.txt\n@sim result joined' });
    expect(answer.state).toBe('QUEUED');
    expect((await ended(id)).state).toBe('SUCCEEDED');
    const turns = await events(id, 'turn');
    expect(turns).toHaveLength(1);
    expect((turns[0]!.followups as number[]).length).toBe(1);
    expect((await events(id, 'result')).at(-1)).toMatchObject({ text: 'joined' });
    await ended(busy);
  });
});

describe('cancel and follow-ups', () => {
  it('cancels a continued run as any run, and a later follow-up continues the cancelled run', async () => {
    const id = await start('@sim write c.txt c\n@sim result one');
    await ended(id);
    await client.runs.followUp(id, { message: '@sim sleep 30' });
    await waitForState({ on: ex, key, id }, ['INPROGRESS']);
    await client.runs.cancel(id, { reason: 'superseded' });
    expect(await ended(id)).toMatchObject({ state: 'CANCELLED', error_code: 'cancelled' });
    await client.runs.followUp(id, { message: '@sim run test -f c.txt\n@sim result back' });
    const run = await ended(id);
    expect(run).toMatchObject({ state: 'SUCCEEDED' });
    expect(run.error_code ?? null).toBeNull();
    expect((await events(id, 'result')).at(-1)).toMatchObject({ text: 'back' });
  });
});

describe('follow-ups that are refused', () => {
  it('another team’s run is 404, as is an unknown one', async () => {
    const id = await start('@sim result mine');
    await ended(id);
    const other = new AgentRunClient({
      baseUrl: ex.url,
      apiKey: (await ex.key('team-b', 'personal', 'bob')).raw
    });
    await expect(other.runs.followUp(id, { message: 'hello' })).rejects.toBeInstanceOf(NotFoundError);
    other.close();
    await expect(client.runs.followUp('no-such-run', { message: 'hello' })).rejects.toMatchObject({
      status: 404,
      errorCode: 'not_found'
    });
    expect((await client.runs.get(id)).state).toBe('SUCCEEDED');
  });

  it('an empty or oversized message, an unknown mode: 422', async () => {
    const id = await start('@sim result x');
    await ended(id);
    const send = (body: unknown) =>
      ex.request(`/api/v1/agent/runs/${id}/followups`, { method: 'POST', key, body: JSON.stringify(body) });
    for (const body of [
      {},
      { message: '' },
      { message: 'x'.repeat(100_001) },
      { message: 'hi', mode: 'fast' }
    ]) {
      const response = await send(body);
      expect(response.status).toBe(422);
      expect(await response.json()).toMatchObject({ error_code: 'invalid_field' });
    }
    expect((await client.runs.get(id)).state).toBe('SUCCEEDED');
  });
});

describe('workspaces.continue_for', () => {
  let short: TestExecutor;
  let shortClient: AgentRunClient;
  beforeAll(async () => {
    short = await startTestExecutor({ workspaces: { continue_for: '1s' } });
    shortClient = new AgentRunClient({
      baseUrl: short.url,
      apiKey: (await short.key('team-a', 'personal', 'alice')).raw
    });
  });
  afterAll(async () => {
    shortClient.close();
    await short.stop(1000);
  });

  it('a run that ended longer ago is not continued: 409 run_not_continuable, naming why', async () => {
    const id = await start('@sim result done', shortClient);
    const run = await shortClient.runs.wait(id, { timeoutMs: 60_000 });
    expect(run.run?.state).toBe('SUCCEEDED');
    await sleep(1500);
    const refused = shortClient.runs.followUp(id, { message: 'more' });
    await expect(refused).rejects.toBeInstanceOf(ConflictError);
    await expect(refused).rejects.toMatchObject({ errorCode: 'run_not_continuable' });
    await expect(refused).rejects.toThrow(/workspaces\.continue_for/);
    expect((await shortClient.runs.get(id)).state).toBe('SUCCEEDED');
  });
});

describe('an executor restart between turns', () => {
  it('continues the run in the workspace the first process left', async () => {
    let first: TestExecutor | undefined = await startTestExecutor();
    const raw = (await first.key('team-r', 'personal', 'rita')).raw;
    let c = new AgentRunClient({ baseUrl: first.url, apiKey: raw });
    const id = await start('@sim write before.txt kept\n@sim result one', c);
    expect((await waitForState({ on: first, key: raw, id })).state).toBe('SUCCEEDED');
    c.close();
    await first.stop(1000);
    const second = await startTestExecutor({}, first);
    first = undefined;
    try {
      c = new AgentRunClient({ baseUrl: second.url, apiKey: raw });
      await c.runs.followUp(id, { message: '@sim run grep -q kept before.txt\n@sim result two' });
      const run = await waitForState({ on: second, key: raw, id });
      expect(run.state).toBe('SUCCEEDED');
      expect((await events(id, 'result', c)).at(-1)).toMatchObject({ text: 'two' });
      c.close();
    } finally {
      await second.stop(1000);
    }
  });
});

describe('metadata on create', () => {
  it('is returned on the record and filters the list (metadata[key]=value, repeatable)', async () => {
    const tag = `t${Date.now()}`;
    const make = async (metadata: Record<string, string>) =>
      (
        await client.runs.create({
          prompt: '@sim result m',
          config: { environment_id: 'local' },
          metadata: { tag, ...metadata }
        })
      ).run_id;
    const a = await make({ repo: 'o/r', thread: '7' });
    const b = await make({ repo: 'o/r', thread: '8' });
    await make({ repo: 'o/other', thread: '7' });
    expect((await client.runs.get(a)).metadata).toEqual({ tag, repo: 'o/r', thread: '7' });
    const ids = async (query: Record<string, string>) =>
      (await client.runs.list({ 'metadata[tag]': tag, ...query })).runs.map(run => run.run_id).sort();
    expect(await ids({ 'metadata[repo]': 'o/r' })).toEqual([a, b].sort());
    expect(await ids({ 'metadata[repo]': 'o/r', 'metadata[thread]': '7' })).toEqual([a]);
    expect(await ids({ 'metadata[repo]': 'nobody' })).toEqual([]);
    for (const id of [a, b]) await ended(id);
  });

  it('refuses more than 20 pairs, long keys or values, and values that are not strings: 422 naming metadata', async () => {
    const many = Object.fromEntries(Array.from({ length: 21 }, (_, i) => [`k${i}`, 'v']));
    for (const metadata of [many, { ['k'.repeat(65)]: 'v' }, { k: 'v'.repeat(513) }, { k: 7 }, ['x']]) {
      const response = await ex.request('/api/v1/agent/runs', {
        method: 'POST',
        key,
        body: JSON.stringify({ prompt: 'x', config: { environment_id: 'local' }, metadata })
      });
      expect(response.status).toBe(422);
      const problem = (await response.json()) as { error_code: string; detail: string };
      expect(problem.error_code).toBe('invalid_field');
      expect(problem.detail).toMatch(/^metadata/);
    }
  });
});

describe('mode plan', () => {
  it('leaves the workspace unchanged (a write fails) and yields a PLAN artifact whose content comes back', async () => {
    const id = (
      await client.runs.create({
        prompt: ['@sim write kept.txt base', '@sim result # Base\\nwritten'].join('\n'),
        config: { environment_id: 'local' }
      })
    ).run_id;
    expect((await ended(id)).state).toBe('SUCCEEDED');
    // A plan turn: a write in the sandbox fails, the workspace is as it was.
    await client.runs.followUp(id, {
      message: '@sim run sh -c "echo changed > kept.txt" || echo refused\n@sim run grep -q base kept.txt',
      mode: 'plan'
    });
    expect((await ended(id)).state).toBe('SUCCEEDED');
    const outputs = (await events(id, 'command')).slice(-2);
    expect(String(outputs[0]!.output)).toMatch(/Read-only file system/);
    expect(outputs[1]).toMatchObject({ exit_code: 0 });

    await client.runs.followUp(id, {
      message: '@sim result # Fix the parser\\n1. read it\\n2. change it',
      mode: 'plan'
    });
    const run = await ended(id);
    expect(run.state).toBe('SUCCEEDED');
    const plans = (run.artifacts as { artifact_type: string; data: Record<string, string> }[]).filter(
      artifact => artifact.artifact_type === 'PLAN'
    );
    expect(plans.at(-1)!.data).toMatchObject({ title: 'Fix the parser', document_uid: expect.any(String) });
    const details = await client.artifacts.get(plans.at(-1)!.data.document_uid!);
    expect(details.data).toMatchObject({ content: '# Fix the parser\n1. read it\n2. change it' });
    // The changes are still the first turn's only.
    const diff = (await events(id, 'diff')).at(-1) as { files: { path: string }[] };
    expect(diff.files.map(file => file.path)).toEqual(['kept.txt']);
  });

  it('refuses @sim write in plan mode, as the read-only workspace would', async () => {
    const response = await client.runs.create({
      prompt: '@sim write x.txt y',
      config: { environment_id: 'local' },
      mode: 'plan'
    });
    const run = await ended(response.run_id);
    expect(run).toMatchObject({ state: 'FAILED' });
    expect(String(run.status_message)).toMatch(/read-only in plan mode/);
  });
});

describe('conversation_id on create', () => {
  it('starts a new run from the earlier run’s final tree, with its own id', async () => {
    const first = await start('@sim write from-first.txt one\n@sim result first');
    expect((await ended(first)).state).toBe('SUCCEEDED');
    const second = (
      await client.runs.create({
        prompt: '@sim run grep -q one from-first.txt\n@sim write from-second.txt two\n@sim result second',
        config: { environment_id: 'local' },
        conversation_id: first
      })
    ).run_id;
    expect(second).not.toBe(first);
    const run = await ended(second);
    expect([run.state, run.status_message]).toEqual(['SUCCEEDED', undefined]);
    const diff = (await events(second, 'diff')).at(-1) as { files: { path: string }[] };
    expect(diff.files.map(file => file.path).sort()).toEqual(['from-first.txt', 'from-second.txt']);
    // The earlier run is as it was.
    const before = (await events(first, 'diff')).at(-1) as { files: { path: string }[] };
    expect(before.files.map(file => file.path)).toEqual(['from-first.txt']);
  });

  it('fails a run whose earlier run is running again when it starts (a follow-up came after its create): it reads nothing of a live run', async () => {
    const two = await startTestExecutor({ workers: 2 });
    const twoKey = (await two.key('team-a', 'personal', 'alice')).raw;
    const c = new AgentRunClient({ baseUrl: two.url, apiKey: twoKey });
    try {
      const earlier = await start('@sim write early.txt one\n@sim result first', c);
      expect((await waitForState({ on: two, key: twoKey, id: earlier })).state).toBe('SUCCEEDED');
      // Both workers busy, so the continuing run waits in the queue.
      const blockers = [await start('@sim run sleep 300', c), await start('@sim run sleep 300', c)];
      for (const id of blockers) await waitForState({ on: two, key: twoKey, id }, ['INPROGRESS']);
      const later = (
        await c.runs.create({
          prompt: '@sim result later',
          config: { environment_id: 'local' },
          conversation_id: earlier
        })
      ).run_id;
      await c.runs.followUp(earlier, { message: '@sim run sleep 300' });
      for (const id of blockers) await c.runs.cancel(id);
      const run = await waitForState({ on: two, key: twoKey, id: later });
      expect(run.state).toBe('FAILED');
      expect(run.status_message).toContain(
        `conversation_id ${earlier}: that run is running again (a follow-up)`
      );
      await c.runs.cancel(earlier);
    } finally {
      c.close();
      await two.stop(1000);
    }
  });

  it('refuses an unknown or another team’s run (422 naming conversation_id) and a running one (409)', async () => {
    const create = (conversation_id: string) =>
      ex.request('/api/v1/agent/runs', {
        method: 'POST',
        key,
        body: JSON.stringify({ prompt: 'x', config: { environment_id: 'local' }, conversation_id })
      });
    const unknown = await create('no-such-run');
    expect(unknown.status).toBe(422);
    expect(((await unknown.json()) as { detail: string }).detail).toMatch(/^conversation_id "no-such-run"/);
    const running = await start('@sim sleep 2');
    await waitForState({ on: ex, key, id: running }, ['INPROGRESS']);
    const busy = await create(running);
    expect(busy.status).toBe(409);
    expect(await busy.json()).toMatchObject({ error_code: 'run_not_continuable' });
    await ended(running);
  });
});
