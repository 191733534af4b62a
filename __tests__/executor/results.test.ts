// What a run produced, from the executor's side: the conversation in the production service's
// normalized shape, the final answer (simulated directives, AGENT_RESULT_FILE, standard output),
// request usage, the changes.patch artifact (team-scoped, signed download, applies with git apply),
// and the held transcript read (after= with Prefer: wait). Real executor on a real port, real git
// repositories, real agent processes; on SQLite, or PostgreSQL with AGENT_EXECUTOR_TEST_STORE.
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { execFileSync } from 'node:child_process';
import { existsSync, linkSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { EnvironmentConfig } from '../../src/executor/config/config.js';
import { prepareOutputs, readOutputFile } from '../../src/executor/worker/run-outputs.js';
import { unmountAll } from '../../src/executor/workspace/layers.js';
import { createWorkspace } from '../../src/executor/workspace/workspace.js';
import { eventually } from '../support/eventually.js';
import { type TestExecutor, startTestExecutor, tempDir } from '../support/executor.js';
import { waitForState } from '../support/wait.js';

let ex: TestExecutor;
let small: TestExecutor;
let key: string;
let keyB: string;
let smallKey: string;
let repo: string;

function gitRepo(): string {
  const dir = tempDir('agent-results-source-');
  writeFileSync(join(dir, 'README.md'), 'original\n');
  mkdirSync(join(dir, 'src'));
  writeFileSync(join(dir, 'src', 'app.txt'), 'app\n');
  git(dir, 'init', '--quiet');
  git(dir, 'add', '--all');
  git(dir, 'commit', '--quiet', '-m', 'initial');
  return dir;
}

function git(dir: string, ...args: string[]): string {
  return execFileSync('git', ['-C', dir, '-c', 'user.name=t', '-c', 'user.email=t@t', ...args], {
    encoding: 'utf8'
  });
}

const shell = (script: string) => ({ kind: 'command', command: ['/bin/sh', '-c', script], prompt: 'stdin' });

beforeAll(async () => {
  repo = gitRepo();
  const planted = tempDir('agent-results-planted-');
  process.env.PLANTED_TARGET = join(planted, 'executor.db');
  const environments = [
    { id: 'repo', source: repo, agent: { kind: 'simulated' } },
    {
      id: 'result-file',
      source: repo,
      agent: shell(
        'echo thinking; printf "the final answer\\nüñí\\n" > "$AGENT_RESULT_FILE"; ' +
          'printf \'{"inference_cost": 0.5, "compute_cost": 0.25}\' > "$AGENT_USAGE_FILE"'
      )
    },
    { id: 'stdout', source: repo, agent: shell('cat >/dev/null; echo first line; echo last line') },
    {
      id: 'stderr',
      source: repo,
      agent: shell(
        'cat >/dev/null; echo working; echo careful >&2; printf "the answer" > "$AGENT_RESULT_FILE"'
      )
    },
    {
      id: 'planted',
      source: repo,
      env: ['PLANTED_TARGET'],
      agent: shell(
        'ln -s "$PLANTED_TARGET" "$AGENT_RESULT_FILE"; ln "$PLANTED_TARGET" "$AGENT_USAGE_FILE"; echo from stdout'
      )
    }
  ];
  ex = await startTestExecutor({ workers: 4, workspaces: { retention: '0s' }, environments });
  // The planted link points at this executor's own SQLite database (on PostgreSQL, whose data is
  // elsewhere, at a file that starts like one).
  const database = ex.storeFiles().find(file => file.endsWith('executor.db'));
  if (database) process.env.PLANTED_TARGET = database;
  else writeFileSync(process.env.PLANTED_TARGET, 'SQLite format 3\0 secret');
  key = (await ex.key('team-a', 'personal', 'alice')).raw;
  keyB = (await ex.key('team-b', 'personal', 'bob')).raw;
  small = await startTestExecutor({
    workspaces: { retention: '0s', max_patch: '2KiB' },
    environments: [
      { id: 'repo', source: repo, agent: { kind: 'simulated' } },
      {
        // A 4 KB change, and a usage file nested 10,000 deep (valid JSON, 20 KB).
        id: 'deep-usage',
        source: repo,
        agent: shell(
          "head -c 4000 /dev/zero | tr '\\0' x > big.txt; " +
            "{ printf '{\"a\":'; printf '%10000s' '' | tr ' ' '['; printf '%10000s' '' | tr ' ' ']'; printf '}'; } > \"$AGENT_USAGE_FILE\""
        )
      }
    ]
  });
  smallKey = (await small.key('team-a')).raw;
});
/** Data dirs of workspaces made here without an executor: their copy-on-write views are unmounted at the end. */
const madeHere: string[] = [];
afterAll(async () => {
  await ex?.stop(1000);
  await small?.stop(1000);
  for (const dir of madeHere) await unmountAll(dir);
});

type Json = Record<string, unknown>;

async function create(environment: string, prompt: string, on = ex, k = key): Promise<string> {
  const response = await on.request('/api/v1/agent/runs', {
    method: 'POST',
    key: k,
    body: JSON.stringify({ prompt, config: { environment_id: environment } })
  });
  expect(response.status).toBe(200);
  return ((await response.json()) as { run_id: string }).run_id;
}

const finished = (id: string, on = ex, k = key): Promise<Json> => waitForState({ on, key: k, id });

async function conversation(id: string, on = ex, k = key): Promise<Json> {
  const response = await on.request(`/api/v1/agent/runs/${id}/conversation`, { key: k });
  expect(response.status).toBe(200);
  return (await response.json()) as Json;
}

// The service's shapes, as ../shared/reference/real-service.md describes them, written as checks.
const ROLES = ['user', 'assistant', 'tool', 'system'];
const BLOCK_TYPES = ['text', 'action', 'action_result', 'event'];
const optionalString = (value: unknown) => value === undefined || typeof value === 'string';

function checkConversation(value: unknown): void {
  const conversation = value as Json;
  expect(typeof conversation.conversation_id).toBe('string');
  expect(Array.isArray(conversation.steps)).toBe(true);
  for (const step of conversation.steps as unknown[]) checkStep(step);
}

function checkStep(value: unknown): void {
  const step = value as Json;
  expect(typeof step.id).toBe('string');
  for (const field of ['description', 'summary', 'started_at', 'completed_at'])
    expect(optionalString(step[field])).toBe(true);
  expect(Array.isArray(step.messages)).toBe(true);
  expect(Array.isArray(step.steps)).toBe(true);
  for (const message of step.messages as Json[]) {
    expect(ROLES).toContain(message.role);
    expect(optionalString(message.timestamp)).toBe(true);
    expect(Array.isArray(message.content)).toBe(true);
    for (const block of message.content as Json[]) {
      expect(BLOCK_TYPES).toContain(block.type);
      if (block.type === 'text') expect(typeof block.text).toBe('string');
    }
  }
  for (const child of step.steps as unknown[]) checkStep(child);
}

const blocks = (conv: Json) =>
  ((conv.steps as Json[])[0]!.messages as Json[]).flatMap(message =>
    (message.content as Json[]).map((block): Json => ({ ...block, role: message.role }))
  );
/** The final answer as a client takes it: the last assistant text block. */
const answer = (conv: Json) =>
  blocks(conv)
    .filter(block => block.role === 'assistant' && block.type === 'text')
    .at(-1)?.text;

describe('the conversation', () => {
  it('is the service normalized shape: prompt, text, commands with results, events, answer last', async () => {
    const prompt = 'Tidy up\n@sim say looking around\n@sim run echo hi; exit 3\n@sim write notes.md n';
    const failing = await create('repo', prompt);
    await finished(failing);
    const id = await create(
      'repo',
      'Tidy up\n@sim say looking around\n@sim run echo hi\n@sim write notes.md n\n@sim say done'
    );
    const run = await finished(id);
    expect(run.state).toBe('SUCCEEDED');
    const conv = await conversation(id);
    checkConversation(conv);
    expect(conv.conversation_id).toBe(id);
    const all = blocks(conv);
    expect(all[0]).toEqual({ type: 'text', text: run.prompt, role: 'user' });
    expect(all).toContainEqual({ type: 'text', text: 'looking around', role: 'assistant' });
    const action = all.find(block => block.type === 'action')!;
    expect(action).toMatchObject({ role: 'assistant', name: 'run_command', input: { command: 'echo hi' } });
    const result = all.find(block => block.type === 'action_result')!;
    expect(result).toMatchObject({ action_id: action.id, state: 'SUCCEEDED', output: { exit_code: 0 } });
    expect((result.output as Json).output).toContain('hi');
    expect(all).toContainEqual(
      expect.objectContaining({ type: 'event', event_type: 'file_change', path: 'notes.md', change: 'added' })
    );
    const states = all.filter(block => block.event_type === 'state_change').map(block => block.state);
    expect(states).toEqual(['QUEUED', 'INPROGRESS', 'SUCCEEDED']);
    expect(answer(conv)).toBe('done');
    // The answer comes after every command and text; only events follow it.
    const last = all.findLastIndex(block => block.type === 'text');
    expect(all.slice(last + 1).every(block => block.type === 'event')).toBe(true);

    const failed = blocks(await conversation(failing)).find(block => block.type === 'action_result')!;
    expect(failed).toMatchObject({ state: 'FAILED', output: { exit_code: 3 } });
  });

  it('answers 404 for unknown runs and other teams', async () => {
    const id = await create('repo', '@sim say mine');
    await finished(id);
    for (const [path, k] of [
      [`/api/v1/agent/runs/${id}/conversation`, keyB],
      ['/api/v1/agent/runs/no-such-run/conversation', key]
    ] as const) {
      const response = await ex.request(path, { key: k });
      expect(response.status).toBe(404);
      expect((await response.json()) as Json).toMatchObject({ error_code: 'not_found' });
    }
    expect((await ex.request(`/api/v1/agent/runs/${id}/conversation`)).status).toBe(401);
  });

  it('takes the simulated answer from @sim result, @sim json, the last @sim say, or the instruction', async () => {
    const cases: [string, string][] = [
      ['@sim say one\n@sim say two', 'two'],
      ['@sim say talk\n@sim result The verdict:\\nall good', 'The verdict:\nall good'],
      [
        'Review it\n@sim say ok\n@sim json {"verdict": "pass", "score": 3}',
        'ok\n\n```json\n{\n  "verdict": "pass",\n  "score": 3\n}\n```'
      ],
      ['Just do it', 'Simulated agent received the instruction:\nJust do it']
    ];
    for (const [prompt, expected] of cases) {
      const id = await create('repo', prompt);
      expect((await finished(id)).state).toBe('SUCCEEDED');
      expect(answer(await conversation(id))).toBe(expected);
    }
    const bad = await create('repo', '@sim json [1, 2]');
    expect(await finished(bad)).toMatchObject({
      state: 'FAILED',
      status_message: expect.stringMatching(/@sim json.*JSON object/)
    });
  });
});

describe('a command agent', () => {
  it('answers with AGENT_RESULT_FILE and reports AGENT_USAGE_FILE as request_usage', async () => {
    const id = await create('result-file', 'go');
    const run = await finished(id);
    expect(run.state).toBe('SUCCEEDED');
    expect(run.request_usage).toEqual({ inference_cost: 0.5, compute_cost: 0.25 });
    const conv = await conversation(id);
    expect(answer(conv)).toBe('the final answer\nüñí\n');
    expect(blocks(conv)).toContainEqual({ type: 'text', text: 'thinking\n', role: 'assistant' });
    // The output folder is outside the workspace: its files are not changes of the run.
    expect(run.artifacts).toBeUndefined();
    expect(existsSync(join(ex.dataDir, 'outputs', id))).toBe(false);
  });

  it('answers with the end of its standard output when it writes no result file', async () => {
    const id = await create('stdout', 'go');
    expect((await finished(id)).state).toBe('SUCCEEDED');
    expect(answer(await conversation(id))).toBe('first line\nlast line\n');
  });

  it('has its messages in transcript order: the answer after its standard error and its exit', async () => {
    const id = await create('stderr', 'go');
    expect((await finished(id)).state).toBe('SUCCEEDED');
    const conv = await conversation(id);
    const messages = (conv.steps as Json[])[0]!.messages as { timestamp: string }[];
    const times = messages.map(message => message.timestamp);
    expect(times).toEqual([...times].sort());
    const order = blocks(conv).map(block =>
      block.type === 'event'
        ? `${block.event_type as string}`
        : `${block.role as string}:${block.type as string}`
    );
    const at = (what: string) => order.indexOf(what);
    expect(at('stderr')).toBeGreaterThan(-1);
    expect(at('agent_exit')).toBeGreaterThan(at('stderr'));
    expect(order.lastIndexOf('assistant:text')).toBeGreaterThan(at('agent_exit'));
    expect(answer(conv)).toBe('the answer');
  });

  it('refuses a symbolic link (and a hard link) planted as AGENT_RESULT_FILE pointing at the database', async () => {
    const id = await create('planted', 'go');
    const run = await finished(id);
    expect(run.state).toBe('SUCCEEDED');
    expect(run.request_usage).toBeUndefined();
    const conv = await conversation(id);
    expect(answer(conv)).toBe('from stdout\n');
    expect(JSON.stringify(conv)).not.toContain('SQLite format 3');
    const notices = blocks(conv)
      .filter(block => block.event_type === 'notice')
      .map(block => block.text);
    expect(notices).toContain('AGENT_RESULT_FILE was not read: it is a symbolic link');
    // In the run's sandbox the database is not even visible, so the hard link may not be made at all.
    for (const notice of notices.filter(text => String(text).startsWith('AGENT_USAGE_FILE')))
      expect(notice).toBe('AGENT_USAGE_FILE was not read: it has other hard links');
  });

  it('reads no output file that is a hard link to another file', async () => {
    const dataDir = tempDir('agent-results-outputs-');
    const outputs = prepareOutputs(dataDir, 'run-1', { confined: true });
    const secret = join(dataDir, 'secret.db');
    writeFileSync(secret, 'SQLite format 3 secret');
    linkSync(secret, outputs.env.AGENT_RESULT_FILE);
    expect(await readOutputFile(outputs, outputs.env.AGENT_RESULT_FILE, 1024)).toEqual({
      kind: 'refused',
      why: 'it has other hard links'
    });
    writeFileSync(outputs.env.AGENT_USAGE_FILE, '{}');
    expect(await readOutputFile(outputs, outputs.env.AGENT_USAGE_FILE, 1024)).toEqual({
      kind: 'read',
      data: Buffer.from('{}')
    });
    rmSync(dataDir, { recursive: true, force: true });
  });
});

describe('changes.patch', () => {
  it('is a FILE artifact of the team, downloads by a signed link, and applies to a fresh checkout', async () => {
    const prompt = [
      '@sim write README.md changed',
      '@sim run git add -A && git -c user.name=a -c user.email=a@a commit -qm "agent commit"',
      '@sim write src/new.txt new file',
      '@sim run printf "\\000\\001\\377binary" > blob.bin',
      '@sim run rm src/app.txt'
    ].join('\n');
    const id = await create('repo', prompt);
    const run = await finished(id);
    expect(run.state).toBe('SUCCEEDED');
    const artifacts = run.artifacts as Json[];
    expect(artifacts).toHaveLength(1);
    expect(artifacts[0]).toMatchObject({
      artifact_type: 'FILE',
      created_at: expect.any(String),
      data: {
        artifact_uid: expect.any(String),
        filepath: 'changes.patch',
        filename: 'changes.patch',
        mime_type: 'text/x-diff',
        size: expect.any(Number)
      }
    });
    const uid = (artifacts[0]!.data as Json).artifact_uid as string;
    // The list finds runs by the type of artifact they have.
    const listed = async (type: string) =>
      (
        (
          (await (
            await ex.request(`/api/v1/agent/runs?artifact_type=${type}&limit=100`, { key })
          ).json()) as Json
        ).runs as Json[]
      ).map(r => r.run_id);
    expect(await listed('FILE')).toContain(id);
    expect(await listed('PLAN')).not.toContain(id);

    expect((await ex.request(`/api/v1/agent/artifacts/${uid}`, { key: keyB })).status).toBe(404);
    expect((await ex.request('/api/v1/agent/artifacts/nope', { key })).status).toBe(404);
    expect((await ex.request(`/api/v1/agent/artifacts/${uid}`)).status).toBe(401);
    const detailsResponse = await ex.request(`/api/v1/agent/artifacts/${uid}`, { key });
    expect(detailsResponse.status).toBe(200);
    const details = (await detailsResponse.json()) as Json;
    expect(details).toMatchObject({
      artifact_uid: uid,
      artifact_type: 'FILE',
      run_id: id,
      data: artifacts[0]!.data
    });
    expect(Date.parse(details.expires_at as string)).toBeGreaterThan(Date.now());
    const url = details.download_url as string;
    expect(url.startsWith(ex.url)).toBe(true);

    const download = await fetch(url);
    expect(download.status).toBe(200);
    expect(download.headers.get('content-type')).toMatch(/^text\/x-diff/);
    expect(download.headers.get('content-disposition')).toContain('filename="changes.patch"');
    const patch = Buffer.from(await download.arrayBuffer());
    expect(patch.length).toBe((artifacts[0]!.data as Json).size);
    expect((await fetch(url.replace(/signature=[^&]+/, 'signature=forged'))).status).toBe(404);
    expect((await fetch(url.replace(/expires=\d+/, 'expires=1'))).status).toBe(404);

    const checkout = tempDir('agent-results-checkout-');
    execFileSync('git', ['clone', '--quiet', repo, checkout]);
    writeFileSync(join(checkout, '..', `${id}.patch`), patch);
    git(checkout, 'apply', '--binary', join(checkout, '..', `${id}.patch`));
    expect(readFileSync(join(checkout, 'README.md'), 'utf8')).toBe('changed');
    expect(readFileSync(join(checkout, 'src', 'new.txt'), 'utf8')).toBe('new file');
    expect(readFileSync(join(checkout, 'blob.bin'))).toEqual(
      Buffer.from([0, 1, 255, ...Buffer.from('binary')])
    );
    expect(existsSync(join(checkout, 'src', 'app.txt'))).toBe(false);
  });

  it('holds changes the agent committed itself, even when it left the tree clean', async () => {
    const id = await create(
      'repo',
      '@sim write committed.txt kept\n@sim run git add -A && git -c user.name=a -c user.email=a@a commit -qm c'
    );
    const run = await finished(id);
    expect(run.state).toBe('SUCCEEDED');
    const uid = ((run.artifacts as Json[])[0]!.data as Json).artifact_uid as string;
    const details = (await (await ex.request(`/api/v1/agent/artifacts/${uid}`, { key })).json()) as Json;
    const patch = await (await fetch(details.download_url as string)).text();
    expect(patch).toContain('+++ b/committed.txt');
  });

  it('starts from the commit git names HEAD, in a worktree, on a branch, and with packed refs', async () => {
    const worktree = join(tempDir('agent-results-wt-'), 'wt');
    git(repo, 'worktree', 'add', '--detach', '--quiet', worktree, 'HEAD');
    const packed = gitRepo();
    git(packed, 'pack-refs', '--all');
    const dataDir = tempDir('agent-results-data-');
    madeHere.push(dataDir);
    let n = 0;
    for (const dir of [repo, worktree, packed]) {
      const environment = { source: dir } as EnvironmentConfig;
      const workspace = await createWorkspace(environment, dataDir, `start-${n++}`);
      expect(workspace.base).toBe(git(dir, 'rev-parse', 'HEAD').trim());
      // The agent's own repository starts there too.
      expect(git(workspace.root, 'rev-parse', 'HEAD').trim()).toBe(workspace.base);
    }
    git(repo, 'worktree', 'remove', '--force', worktree);
  });

  it('names at most 1,000 changed files in the diff and counts the rest', async () => {
    const dataDir = tempDir('agent-results-many-');
    madeHere.push(dataDir);
    const workspace = await createWorkspace({ source: repo } as EnvironmentConfig, dataDir, 'many-files');
    mkdirSync(join(workspace.root, 'many'));
    for (let i = 0; i < 1205; i++) writeFileSync(join(workspace.root, 'many', `f${i}.txt`), `${i}\n`);
    const changes = await workspace.diff();
    expect(changes.files).toHaveLength(1000);
    expect(changes.files[0]).toEqual({ path: 'many/f0.txt', change: 'added' });
    expect(changes.more_files).toBe(205);
  });

  it('goes with its run when finished runs are pruned', async () => {
    const id = await create('repo', '@sim write pruned.txt bye');
    const run = await finished(id);
    const uid = ((run.artifacts as Json[])[0]!.data as Json).artifact_uid as string;
    const store = await ex.openStore();
    try {
      expect((await store.artifacts.readArtifact(uid))?.artifact).toMatchObject({
        run_id: id,
        team: 'team-a'
      });
      expect(await store.runs.pruneFinished(new Date(Date.now() + 60_000).toISOString())).toBeGreaterThan(0);
      expect(await store.artifacts.readArtifact(uid)).toBeUndefined();
      expect(await store.artifacts.getArtifact('team-a', uid)).toBeUndefined();
    } finally {
      await store.close();
    }
  });

  it('fails the run when the patch is over workspaces.max_patch, rather than cut it', async () => {
    const id = await create('repo', `@sim write big.txt ${'x'.repeat(4000)}`, small, smallKey);
    const run = await finished(id, small, smallKey);
    expect(run).toMatchObject({ state: 'FAILED', error_code: 'patch_too_large' });
    expect(run.status_message).toMatch(/over the limit of 2048 bytes \(workspaces\.max_patch\)/);
    expect(run.artifacts).toBeUndefined();
  });

  it('keeps that limit when the usage file is nested too deep to store (it skipped the patch step)', async () => {
    const id = await create('deep-usage', 'go', small, smallKey);
    const run = await finished(id, small, smallKey);
    expect(run).toMatchObject({ state: 'FAILED', error_code: 'patch_too_large' });
    expect(run.request_usage).toBeUndefined();
    const notices = blocks(await conversation(id, small, smallKey))
      .filter(block => block.event_type === 'notice')
      .map(block => block.text);
    expect(notices).toContain('AGENT_USAGE_FILE ignored: it is nested too deep to store');
  });
});

describe('the API description', () => {
  it('covers the new endpoints and error codes', async () => {
    const doc = (await (await ex.request('/api/v1/openapi.json')).json()) as {
      paths: Record<string, Record<string, { parameters?: { name: string }[] }>>;
      components: { schemas: Record<string, unknown> };
    };
    expect(Object.keys(doc.paths)).toEqual(
      expect.arrayContaining([
        '/api/v1/agent/runs/{run_id}/conversation',
        '/api/v1/agent/artifacts/{artifact_uid}',
        '/api/v1/agent/artifacts/{artifact_uid}/download'
      ])
    );
    const transcriptParameters = doc.paths['/api/v1/agent/runs/{run_id}/transcript']!.get!.parameters!;
    expect(transcriptParameters.map(parameter => parameter.name)).toEqual(
      expect.arrayContaining(['after', 'Prefer'])
    );
    expect(doc.components.schemas.Conversation).toBeDefined();
    const errors = (await (await ex.request('/api/v1/errors')).json()) as {
      errors: { error_code: string }[];
    };
    expect(errors.errors.map(error => error.error_code)).toEqual(
      expect.arrayContaining(['artifact_not_found', 'patch_too_large'])
    );
  });
});

describe('the held transcript read', () => {
  const transcript = async (id: string, after: number, wait?: number) => {
    const started = Date.now();
    const response = await ex.request(`/api/v1/agent/runs/${id}/transcript?after=${after}`, {
      key,
      headers: wait === undefined ? {} : { prefer: `wait=${wait}` }
    });
    expect(response.status).toBe(200);
    const body = (await response.json()) as { state: string; events: { seq: number; kind: string }[] };
    return { ...body, ms: Date.now() - started, applied: response.headers.get('preference-applied') };
  };

  it('answers after= at once, and holds Prefer: wait until a new event', async () => {
    const id = await create('repo', '@sim say early\n@sim sleep 1.5\n@sim say late\n@sim sleep 1');
    const page = await eventually(
      async () => {
        const read = await transcript(id, 0);
        return read.events.some(event => event.kind === 'message') && read;
      },
      { what: 'the first message', timeoutMs: 60_000 }
    );
    const newest = page.events.at(-1)!.seq;
    expect((await transcript(id, newest)).events).toEqual([]);
    // Held until the next event: answered with it, before the wait asked for ran out.
    const held = await transcript(id, newest, 60);
    expect(held.applied).toBe('wait=60');
    expect(held.ms).toBeLessThan(60_000);
    expect(held.events.length).toBeGreaterThan(0);
    expect(held.events.every(event => event.seq > newest)).toBe(true);
    expect(held.events[0]).toMatchObject({ kind: 'message', text: 'late' });
    // A finished run's transcript is not held.
    await finished(id);
    const all = await transcript(id, 0);
    const end = await transcript(id, all.events.at(-1)!.seq, 60);
    expect(end.events).toEqual([]);
    expect(end.ms).toBeLessThan(60_000);
  });

  it('wakes on an event another node appends (by notification on PostgreSQL, by re-reading on SQLite)', async () => {
    const id = await create('repo', '@sim sleep 600');
    const page = await eventually(
      async () => {
        const read = await transcript(id, 0);
        return read.state === 'INPROGRESS' && read;
      },
      { what: 'the run to start', timeoutMs: 60_000 }
    );
    const newest = page.events.at(-1)!.seq;
    const other = await ex.openStore();
    try {
      const held = transcript(id, newest, 60);
      await new Promise(resolve => setTimeout(resolve, 500));
      await other.transcript.appendEvent(
        id,
        'message',
        { text: 'from another node' },
        new Date().toISOString()
      );
      // Woken by the other node's event, before the wait asked for ran out (the delay itself is
      // measured in bench/, not asserted on a shared machine).
      const answered = await held;
      expect(answered.events).toEqual([
        expect.objectContaining({ kind: 'message', text: 'from another node' })
      ]);
      expect(answered.ms).toBeLessThan(60_000);
    } finally {
      await other.close();
    }
    await ex.request(`/api/v1/agent/runs/${id}/cancel`, { method: 'POST', key });
  });

  it('refuses an after= that is not an event number', async () => {
    const id = await create('repo', 'x');
    const response = await ex.request(`/api/v1/agent/runs/${id}/transcript?after=abc`, { key });
    expect(response.status).toBe(400);
    expect(((await response.json()) as Json).detail).toMatch(/after "abc": expected/);
  });
});
