// Fan-out through the bundled action (dist/index.js, run as the runner runs it) against the
// bundled executor: one run per item, in flight at most max-parallel at once (seen in the runs'
// own records on the server), the gathered `runs` output, fan-out-require, a retried step that
// finds its runs again, the timeout cancelling every run, and bad items named; the progress
// comment's row per item on the GitHub stand-in, rewritten as the runs move; and the same step
// against the production stand-in (the contract server answering as the service does).
import { afterAll, afterEach, beforeAll, describe, expect, it } from '@jest/globals';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ContractServer } from '../support/contract-server.js';
import { eventually } from '../support/eventually.js';
import { type ExecutorWithKey, spawnExecutorWithKey } from '../support/executor.js';
import { GitHubServer } from '../support/github-server.js';
import { HOSTILE, liveParts } from '../support/live-markup.js';
import { runAction, startAction } from '../support/runner.js';

let executor: ExecutorWithKey;

beforeAll(async () => {
  executor = await spawnExecutorWithKey({ kind: 'personal', name: 'fan-out' });
});
afterAll(() => executor.stop());

interface RunEntry {
  index: number;
  title: string | null;
  run_id: string;
  state: string;
  conclusion: string;
  session_link: string | null;
  status_message: string | null;
  result: string;
  artifacts: unknown[];
}

interface ServerRun {
  run_id: string;
  state: string;
  created_at: string;
  completed_at: string;
  status_message?: string;
  metadata: Record<string, string>;
}

let step = 0;
/** Inputs of one step; each gets its own step id (the runs' fan_out metadata) and workflow run. */
function stepOf(fanOut: string, extra: Record<string, string> = {}) {
  step++;
  return {
    inputs: {
      'fan-out': fanOut,
      'environment-id': 'local',
      'api-key': executor.key,
      'base-url': executor.url,
      ...extra
    },
    env: { GITHUB_ACTION: `review-${step}`, GITHUB_RUN_ID: `${1000 + step}`, GITHUB_RUN_ATTEMPT: '1' }
  };
}

/** The step's runs as the server has them, by fan_out_index. */
async function serverRuns(stepId: string): Promise<ServerRun[]> {
  const response = await fetch(`${executor.url}/api/v1/agent/runs?metadata[fan_out]=${stepId}&limit=100`, {
    headers: { authorization: `Bearer ${executor.key}` }
  });
  const { runs } = (await response.json()) as { runs: ServerRun[] };
  return runs.sort((a, b) => Number(a.metadata.fan_out_index) - Number(b.metadata.fan_out_index));
}

// Each run takes a second (and its sandbox's start): creates sent at once all land before any ends.
const THREE = [
  '- title: Security',
  '  prompt: "Check security\\n@sim sleep 1\\n@sim result no secrets found"',
  '- title: Performance',
  '  prompt: "Check speed\\n@sim sleep 1\\n@sim result fast enough"',
  '- "Check tests\\n@sim sleep 1\\n@sim result tests cover it"'
].join('\n');

describe('fan-out through the action', () => {
  it('runs three items at once with max-parallel 3, gathers runs in input order and writes a row each', async () => {
    const { inputs, env } = stepOf(THREE, { 'max-parallel': '3' });
    const result = await runAction(inputs, { env });
    expect(result.code).toBe(0);
    expect(result.outputs.conclusion).toBe('succeeded');
    expect(result.outputs.result).toBe('');
    const runs = JSON.parse(result.outputs.runs!) as RunEntry[];
    expect(runs.map(run => [run.index, run.title, run.state, run.conclusion, run.result])).toEqual([
      [0, 'Security', 'SUCCEEDED', 'succeeded', 'no secrets found'],
      [1, 'Performance', 'SUCCEEDED', 'succeeded', 'fast enough'],
      [2, null, 'SUCCEEDED', 'succeeded', 'tests cover it']
    ]);
    expect(result.outputs['run-id']).toBe(runs[0]!.run_id);
    for (const run of runs) expect(run.session_link).toContain(`/sessions/${run.run_id}`);

    // On the server: every run was created before any of them ended.
    const server = await serverRuns(env.GITHUB_ACTION);
    expect(server.map(run => run.run_id)).toEqual(runs.map(run => run.run_id));
    const lastCreated = server
      .map(run => run.created_at)
      .sort()
      .at(-1)!;
    const firstEnded = server.map(run => run.completed_at).sort()[0]!;
    expect(lastCreated < firstEnded).toBe(true);
    expect(server[1]!.metadata).toMatchObject({ fan_out: env.GITHUB_ACTION, fan_out_index: '1' });

    // One summary row per item: title, state and a link to its session.
    expect(result.summary).toContain('Security');
    expect(result.summary).toContain('Performance');
    expect(result.summary.match(/SUCCEEDED/g)).toHaveLength(3);
    expect(result.summary.match(/\/sessions\//g)).toHaveLength(3);

    // The same step again (a retry of the same attempt): the same keys, no new run.
    const again = await runAction(inputs, { env });
    expect(again.code).toBe(0);
    expect((JSON.parse(again.outputs.runs!) as RunEntry[]).map(run => run.run_id)).toEqual(
      runs.map(run => run.run_id)
    );
    expect(await serverRuns(env.GITHUB_ACTION)).toHaveLength(3);
  });

  it('runs one at a time with max-parallel 1', async () => {
    const items = ['- "@sim sleep 0.5"', '- "@sim sleep 0.5"', '- "@sim sleep 0.5"'].join('\n');
    const { inputs, env } = stepOf(items, { 'max-parallel': '1' });
    const result = await runAction(inputs, { env });
    expect(result.code).toBe(0);
    const server = await serverRuns(env.GITHUB_ACTION);
    expect(server).toHaveLength(3);
    // Each run was created only after the one before it ended.
    for (let i = 1; i < server.length; i++)
      expect(server[i]!.created_at >= server[i - 1]!.completed_at).toBe(true);
  });

  it('fails the step naming the failed item with require all, and succeeds with require any', async () => {
    const items = ['- "@sim result fine"', '- title: Lint', '  prompt: "@sim fail lint found 3 errors"'].join(
      '\n'
    );
    const all = stepOf(items);
    const failed = await runAction(all.inputs, { env: all.env });
    expect(failed.code).toBe(1);
    expect(failed.outputs.conclusion).toBe('failed');
    expect(failed.stdout).toContain('1 of 2 runs succeeded (fan-out-require: all)');
    expect(failed.stdout).toMatch(
      /fan-out\[1\] "Lint": run [\w-]+ ended FAILED \(agent_failed\): lint found 3 errors/
    );
    const runs = JSON.parse(failed.outputs.runs!) as RunEntry[];
    expect(runs[1]).toMatchObject({
      state: 'FAILED',
      conclusion: 'failed',
      status_message: 'lint found 3 errors'
    });

    const any = stepOf(items, { 'fan-out-require': 'any' });
    const passed = await runAction(any.inputs, { env: any.env });
    expect(passed.code).toBe(0);
    expect(passed.outputs.conclusion).toBe('succeeded');
    expect((JSON.parse(passed.outputs.runs!) as RunEntry[]).map(run => run.state)).toEqual([
      'SUCCEEDED',
      'FAILED'
    ]);
  });

  it('cancels every run at the timeout', async () => {
    const items = ['- "@sim sleep 120"', '- "@sim sleep 120"'].join('\n');
    const { inputs, env } = stepOf(items, { timeout: '1s' });
    const result = await runAction(inputs, { env });
    expect(result.code).toBe(1);
    expect(result.outputs.conclusion).toBe('timed_out');
    const server = await serverRuns(env.GITHUB_ACTION);
    expect(server.map(run => run.state)).toEqual(['CANCELLED', 'CANCELLED']);
    for (const run of server) expect(run.status_message).toContain('timeout after 1s');
  });

  it('cancels every run when the job is cancelled', async () => {
    const items = ['- "@sim sleep 120"', '- "@sim sleep 120"'].join('\n');
    const { inputs, env } = stepOf(items);
    const action = startAction(inputs, { env });
    await action.waitFor(/fan-out\[0\]: run [\w-]+ is INPROGRESS/);
    await action.waitFor(/fan-out\[1\]: run [\w-]+ is INPROGRESS/);
    action.child.kill('SIGTERM');
    const result = await action.done;
    expect(result.code).toBe(1);
    expect(result.outputs.conclusion).toBe('cancelled');
    const server = await serverRuns(env.GITHUB_ACTION);
    expect(server.map(run => [run.state, run.status_message])).toEqual([
      ['CANCELLED', 'cancelled by a client: the job was cancelled'],
      ['CANCELLED', 'cancelled by a client: the job was cancelled']
    ]);
    // The summary shows each run as the cancel left it (read once after it), not the INPROGRESS seen before.
    const states = [...result.summary.matchAll(/<tr><td>(\d)<\/td><td>[^<]*(?:<\/td>)?<td>([^<]*)/g)].map(
      m => [m[1], m[2]]
    );
    expect(states).toEqual([
      ['0', expect.stringMatching(/^(CANCELLED|cancelled by the job \(last read(:|&#58;) \w+\))$/)],
      ['1', expect.stringMatching(/^(CANCELLED|cancelled by the job \(last read(:|&#58;) \w+\))$/)]
    ]);
  });

  it('names the bad item, its field and the form expected', async () => {
    const cases: [string, RegExp][] = [
      [
        '- prompt: x\n  colour: red',
        /fan-out\[0\]\.colour: not an item field; expected one of prompt, prompt-file/
      ],
      [
        '- "ok"\n- prompt: x\n  mode: fast',
        /fan-out\[1\]\.mode "fast": expected normal, plan or orchestrate/
      ],
      ['- prompt: x\n  config: [1, 2]', /fan-out\[0\]\.config \[1,2\]: expected a mapping/],
      ['prompt: not a list', /fan-out .*: expected a YAML list of 1–50 items/],
      ['- title: no prompt', /fan-out\[0\]: prompt is empty/]
    ];
    for (const [fanOut, message] of cases) {
      const { inputs, env } = stepOf(fanOut);
      const result = await runAction(inputs, { env });
      expect(result.code).toBe(1);
      expect(result.stdout).toMatch(message);
      expect(await serverRuns(env.GITHUB_ACTION)).toEqual([]);
    }
  });
});

/** A comment on pull request #5 by a collaborator, as GitHub sends the step its event. */
function commentEvent(github: GitHubServer): { env: Record<string, string>; cleanup: () => void } {
  const dir = mkdtempSync(join(tmpdir(), 'fan-out-event-'));
  const payload = {
    action: 'created',
    issue: { number: 5, title: 'Reviews', body: '', pull_request: {}, user: { login: 'alice' } },
    comment: { body: '@agent review it', user: { login: 'alice' } }
  };
  writeFileSync(join(dir, 'event.json'), JSON.stringify(payload));
  return {
    env: {
      GITHUB_EVENT_NAME: 'issue_comment',
      GITHUB_EVENT_PATH: join(dir, 'event.json'),
      GITHUB_REPOSITORY: 'acme/app',
      GITHUB_ACTOR: 'alice',
      GITHUB_API_URL: github.url,
      GITHUB_WORKFLOW: 'agent',
      GITHUB_JOB: 'review'
    },
    cleanup: () => rmSync(dir, { recursive: true, force: true })
  };
}

/** The comment's table rows, by index: the cells of each `| n | … |` line. */
function rowsOf(body: string): string[][] {
  return body
    .split('\n')
    .filter(line => /^\| \d+ \|/.test(line))
    .map(line =>
      line
        .slice(1, -1)
        .split('|')
        .map(cell => cell.trim())
    );
}

/** Every body the step sent for its comment on #5, in order. */
function commentBodies(github: GitHubServer): string[] {
  return github.requests
    .filter(r => (r.method === 'POST' || r.method === 'PATCH') && /\/issues\/(5\/)?comments/.test(r.path))
    .map(r => (r.body as { body: string }).body);
}

describe('the progress comment of a fan-out', () => {
  let github: GitHubServer;
  let event: ReturnType<typeof commentEvent>;

  beforeAll(async () => {
    github = await new GitHubServer().start();
    github.permissions.set('alice', 'write');
    event = commentEvent(github);
  });
  afterAll(async () => {
    event.cleanup();
    await github.stop();
  });

  it('shows one row per item, rewritten as the runs move, every field inert', async () => {
    const items = [
      '- title: Quick',
      '  prompt: "@sim result done"',
      `- title: ${JSON.stringify(HOSTILE)}`,
      '  prompt: "@sim fail @alice fixes #1 <img src=https://evil.example/x.png>"',
      '- title: Slow',
      '  prompt: "@sim sleep 120"'
    ].join('\n');
    const { inputs, env } = stepOf(items, {
      'max-parallel': '3',
      comment: 'sticky',
      'github-token': 'ghs_test',
      'trigger-phrase': '@agent'
    });
    const action = startAction(inputs, { env: { ...event.env, ...env } });
    // While Slow still runs, the comment already shows Quick's and the second item's ends.
    const during = await eventually(
      () =>
        commentBodies(github).find(body => {
          const rows = rowsOf(body);
          return (
            rows[0]?.[2] === '<code>SUCCEEDED</code>' &&
            rows[1]?.[2]?.startsWith('<code>FAILED</code>') &&
            rows[2]?.[2] === '<code>INPROGRESS</code>'
          );
        }),
      { what: 'a comment with rows 0 and 1 ended and row 2 in progress', timeoutMs: 90_000 }
    );
    const rows = rowsOf(during);
    expect(rows.map(row => [row[0], row[1]])).toEqual([
      ['0', 'Quick'],
      ['1', expect.stringContaining('&#64; alice')],
      ['2', 'Slow']
    ]);
    for (const row of rows) expect(row[4]).toMatch(/^<code>[\w-]+<\/code>$/); // a public repository: no session link
    expect(rows[0]![3]).toMatch(/^\d+s$/);
    expect(during).toContain('2 of 3 ended');

    action.child.kill('SIGTERM');
    const result = await action.done;
    expect(result.outputs.conclusion).toBe('cancelled');
    const comments = github.comments.get(5)!;
    expect(comments).toHaveLength(1);
    const final = comments[0]!.body;
    expect(final).toContain('3 of 3 ended (cancelled)');
    // As the cancel left it (read once after it), or, if still going then, that the job cancelled it.
    expect(rowsOf(final)[2]![2]).toMatch(
      /^<code>(CANCELLED|cancelled by the job \(last read&#58; \w+\))<\/code>(<br>cancelled by a client&#58; the job was cancelled)?$/
    );
    // Nothing any body said would mention, close, load or hide anything on GitHub.
    for (const body of commentBodies(github)) expect(liveParts(body)).toEqual([]);
  });

  it('an older step does not overwrite the table a newer run of the same step wrote', async () => {
    const step = (runId: string, items: string) => ({
      inputs: {
        'fan-out': items,
        'environment-id': 'local',
        'api-key': executor.key,
        'base-url': executor.url,
        comment: 'sticky',
        'github-token': 'ghs_test',
        'trigger-phrase': '@agent'
      },
      env: { ...event.env, GITHUB_ACTION: 'review-twice', GITHUB_RUN_ID: runId, GITHUB_RUN_ATTEMPT: '1' }
    });
    const ours = () =>
      (github.comments.get(5) ?? []).filter(
        c => c.body.includes('| 0 | Old |') || c.body.includes('| 0 | New |')
      );
    const older = step('3000', '- title: Old\n  prompt: "@sim sleep 120"');
    const action = startAction(older.inputs, { env: older.env });
    await eventually(() => ours().find(c => c.body.includes('<code>INPROGRESS</code>')), {
      what: "the older step's table with its run in progress",
      timeoutMs: 90_000
    });

    // A newer run of the same step writes the same comment (it finds it by its marker).
    const newer = step('3001', '- title: New\n  prompt: "@sim result new done"');
    const result = await runAction(newer.inputs, { env: newer.env });
    expect(result.code).toBe(0);
    expect(ours()).toHaveLength(1);
    const written = ours()[0]!.body;
    expect(rowsOf(written).map(row => [row[1], row[2]])).toEqual([['New', '<code>SUCCEEDED</code>']]);

    // The older step, cancelled now, would write its cancelled table: it leaves the newer one.
    action.child.kill('SIGTERM');
    const old = await action.done;
    expect(old.outputs.conclusion).toBe('cancelled');
    expect(ours()).toHaveLength(1);
    expect(ours()[0]!.body).toBe(written);
    expect(old.stdout).toContain(
      "A newer step (workflow run 3001, attempt 1) now reports on #5's progress comment; this step no longer updates it."
    );
  });
});

describe('fan-out against the production stand-in', () => {
  const KEY = 'test-key-0123456789';
  let server: ContractServer;
  let github: GitHubServer;
  let event: ReturnType<typeof commentEvent>;

  beforeAll(async () => {
    github = await new GitHubServer().start();
    github.permissions.set('alice', 'write');
    event = commentEvent(github);
  });
  afterAll(async () => {
    event.cleanup();
    await github.stop();
  });
  afterEach(() => server.stop());

  async function service(): Promise<Record<string, string>> {
    // The service's own answers: a cancel of a PENDING run is refused with 409, of an ended one with 400.
    server = await new ContractServer({ apiKey: KEY, cancelStyle: 'service' }).start();
    // The first read of each run 100 ms after its create instead of 1 s; this server holds the rest.
    return { 'environment-id': 'env-1', 'api-key': KEY, 'base-url': server.url, 'poll-interval': '100ms' };
  }

  it('creates the three runs at once, gathers them in input order, meets require any, and a retry makes none', async () => {
    const connection = await service();
    server.onCreate = run =>
      server.update(run.run_id, {
        state: 'INPROGRESS',
        session_link: `${server.url}/sessions/${run.run_id}`
      });
    const { inputs, env } = stepOf(THREE, { ...connection, 'max-parallel': '3', 'fan-out-require': 'any' });
    const action = startAction(inputs, { env });
    // All three exist before any ends: then they end, one of them FAILED.
    await eventually(() => server.runs.size === 3, { what: 'three runs created', timeoutMs: 60_000 });
    const created = [...server.runs.values()].sort(
      (a, b) =>
        Number((a.metadata as Record<string, string>).fan_out_index) -
        Number((b.metadata as Record<string, string>).fan_out_index)
    );
    expect(created.map(run => run.title ?? null)).toEqual(['Security', 'Performance', null]);
    server.update(created[0]!.run_id, { state: 'SUCCEEDED' });
    server.update(created[1]!.run_id, {
      state: 'FAILED',
      status_message: { message: 'the model gave up', error_code: 'agent_failed' }
    });
    server.update(created[2]!.run_id, { state: 'SUCCEEDED' });
    const result = await action.done;
    expect(result.code).toBe(0);
    expect(result.outputs.conclusion).toBe('succeeded');
    const runs = JSON.parse(result.outputs.runs!) as RunEntry[];
    expect(runs.map(run => [run.index, run.run_id, run.state, run.session_link])).toEqual(
      created.map((run, index) => [
        index,
        run.run_id,
        ['SUCCEEDED', 'FAILED', 'SUCCEEDED'][index],
        `${server.url}/sessions/${run.run_id}`
      ])
    );
    expect(runs[1]!.status_message).toBe('the model gave up');
    expect((created[1]!.metadata as Record<string, string>).fan_out).toBe(env.GITHUB_ACTION);

    const again = await runAction(inputs, { env });
    expect(again.outputs.conclusion).toBe('succeeded');
    expect((JSON.parse(again.outputs.runs!) as RunEntry[]).map(run => run.run_id)).toEqual(
      runs.map(run => run.run_id)
    );
    expect(server.runs.size).toBe(3);
  });

  it('cancels every run at the timeout', async () => {
    const connection = await service();
    server.onCreate = run => server.update(run.run_id, { state: 'INPROGRESS' });
    const items = ['- "first"', '- "second"'].join('\n');
    const { inputs, env } = stepOf(items, { ...connection, timeout: '1s' });
    const result = await runAction(inputs, { env });
    expect(result.code).toBe(1);
    expect(result.outputs.conclusion).toBe('timed_out');
    expect([...server.runs.values()].map(run => run.state)).toEqual(['CANCELLED', 'CANCELLED']);
  });

  it('keeps the comment of 50 runs with long hostile titles and messages under GitHub’s limit, inert', async () => {
    const connection = await service();
    let n = 0;
    server.onCreate = run =>
      server.update(run.run_id, {
        session_link: `${server.url}/sessions/${run.run_id}`,
        ...(n++ % 2 === 0 ? { state: 'SUCCEEDED' } : { state: 'FAILED', status_message: HOSTILE.repeat(30) })
      });
    const items = Array.from(
      { length: 50 },
      (_, i) => `- title: ${JSON.stringify(`${i} ${HOSTILE.repeat(4)}`)}\n  prompt: review part ${i}`
    ).join('\n');
    const { inputs, env } = stepOf(items, {
      ...connection,
      'max-parallel': '20',
      'fan-out-require': 'any',
      comment: 'final',
      'comment-session-link': 'always',
      'github-token': 'ghs_test',
      'trigger-phrase': '@agent'
    });
    const result = await runAction(inputs, { env: { ...event.env, ...env } });
    expect(result.outputs.conclusion).toBe('succeeded');
    const bodies = commentBodies(github);
    expect(bodies).toHaveLength(1); // comment: final writes once, at the end
    const body = bodies[0]!;
    expect(body.length).toBeLessThanOrEqual(65_536);
    expect(body).toContain('50 of 50 ended (succeeded)');
    const rows = rowsOf(body);
    expect(rows.map(row => row[0])).toEqual(Array.from({ length: 50 }, (_, i) => String(i)));
    expect(rows.filter(row => row[2] === '<code>SUCCEEDED</code>')).toHaveLength(25);
    expect(liveParts(body)).toEqual([]);
  });
});
