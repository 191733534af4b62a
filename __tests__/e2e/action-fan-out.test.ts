// Fan-out through the bundled action (dist/index.js, run as the runner runs it) against the
// bundled executor: one run per item, in flight at most max-parallel at once (seen in the runs'
// own records on the server), the gathered `runs` output, fan-out-require, a retried step that
// finds its runs again, the timeout cancelling every run, and bad items named.
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { type ExecutorWithKey, spawnExecutorWithKey } from '../support/executor.js';
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

const THREE = [
  '- title: Security',
  '  prompt: "Check security\\n@sim sleep 4\\n@sim result no secrets found"',
  '- title: Performance',
  '  prompt: "Check speed\\n@sim sleep 4\\n@sim result fast enough"',
  '- "Check tests\\n@sim sleep 4\\n@sim result tests cover it"'
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
    const items = ['- "@sim sleep 1"', '- "@sim sleep 1"', '- "@sim sleep 1"'].join('\n');
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
    const { inputs, env } = stepOf(items, { timeout: '3s' });
    const result = await runAction(inputs, { env });
    expect(result.code).toBe(1);
    expect(result.outputs.conclusion).toBe('timed_out');
    const server = await serverRuns(env.GITHUB_ACTION);
    expect(server.map(run => run.state)).toEqual(['CANCELLED', 'CANCELLED']);
    for (const run of server) expect(run.status_message).toContain('timeout after 3s');
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
  });

  it('names the bad item, its field and the form expected', async () => {
    const cases: [string, RegExp][] = [
      [
        '- prompt: x\n  colour: red',
        /fan-out\[0\]\.colour: not an item field; expected one of prompt, prompt-file/
      ],
      ['- "ok"\n- prompt: x\n  mode: fast', /fan-out\[1\]\.mode "fast": expected normal or plan/],
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
