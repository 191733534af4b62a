// `agent-run run --fan-out FILE` (dist/cli/index.js) against the bundled executor, both run as
// users run them: one run per item, at most --max-parallel in flight (seen in the runs' own records
// on the server), a line per run as each ends and the table at the end, the exit code --require
// decides, bad items named before any run exists, the same file run again finding its runs, and
// Ctrl-C or SIGTERM cancelling every run the command created.
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type ExecutorWithKey, spawnExecutorWithKey } from '../support/executor.js';
import { runCli } from './support.js';

let executor: ExecutorWithKey;
let env: Record<string, string>;
let dir: string;

beforeAll(async () => {
  executor = await spawnExecutorWithKey({ kind: 'personal', name: 'cli-fan-out' });
  env = { AGENT_RUN_BASE_URL: executor.url, AGENT_RUN_API_KEY: executor.key };
  dir = mkdtempSync(join(tmpdir(), 'cli-fan-out-'));
});
afterAll(async () => {
  rmSync(dir, { recursive: true, force: true });
  await executor.stop();
});

interface ServerRun {
  run_id: string;
  state: string;
  title?: string;
  created_at: string;
  completed_at: string;
  status_message?: string;
  metadata: Record<string, string>;
}

let lists = 0;
/** Writes a list under a name of its own (the runs' fan_out metadata); answers its path and name. */
function list(text: string): { file: string; name: string } {
  const name = `list-${++lists}`;
  const file = join(dir, `${name}.yml`);
  writeFileSync(file, text);
  return { file, name };
}

/** The list's runs as the server has them, by fan_out_index. */
async function serverRuns(name: string): Promise<ServerRun[]> {
  const response = await fetch(`${executor.url}/api/v1/agent/runs?metadata[fan_out]=${name}&limit=100`, {
    headers: { authorization: `Bearer ${executor.key}` }
  });
  const { runs } = (await response.json()) as { runs: ServerRun[] };
  return runs.sort((a, b) => Number(a.metadata.fan_out_index) - Number(b.metadata.fan_out_index));
}

/** The table's rows on stdout (the header left out), split on its column gaps. */
function tableRows(stdout: string): string[][] {
  return stdout
    .trimEnd()
    .split('\n')
    .slice(1)
    .map(line => line.split(/ {2,}/));
}

const THREE = [
  '- title: Security',
  '  prompt: "Check security\\n@sim sleep 3\\n@sim result no secrets found"',
  '- title: Performance',
  '  prompt: "Check speed\\n@sim sleep 3\\n@sim result fast enough"',
  '- "Check tests\\n@sim sleep 3\\n@sim result tests cover it"'
].join('\n');

describe('agent-run run --fan-out', () => {
  it('runs three items at once with --max-parallel 3, a line as each ends, the table at the end; again, no new run', async () => {
    const { file, name } = list(THREE);
    const run = await runCli(['run', '--environment', 'local', '--fan-out', file, '--max-parallel', '3'], {
      env
    });
    expect(run.code).toBe(0);
    const server = await serverRuns(name);
    expect(server.map(r => [r.title ?? null, r.state, r.metadata])).toEqual([
      ['Security', 'SUCCEEDED', { fan_out: name, fan_out_index: '0' }],
      ['Performance', 'SUCCEEDED', { fan_out: name, fan_out_index: '1' }],
      [null, 'SUCCEEDED', { fan_out: name, fan_out_index: '2' }]
    ]);
    // Every run was created before any of them ended.
    const lastCreated = server
      .map(r => r.created_at)
      .sort()
      .at(-1)!;
    expect(lastCreated < server.map(r => r.completed_at).sort()[0]!).toBe(true);

    // One line per run on stderr as it ended, then the table on stdout in input order.
    const ids = server.map(r => r.run_id);
    for (const [i, id] of ids.entries())
      expect(run.stderr).toMatch(
        new RegExp(`^\\[[123]/3\\] fan-out\\[${i}\\]( "\\w+")?: run ${id} SUCCEEDED after \\d+s$`, 'm')
      );
    expect(run.stderr.match(/^\[\d\/3\]/gm)).toEqual(['[1/3]', '[2/3]', '[3/3]']);
    expect(run.stderr).toContain('Fan-out succeeded: 3 of 3 runs succeeded (--require all)');
    expect(run.stdout.split('\n')[0]).toMatch(/^#\s+TITLE\s+STATE\s+DURATION\s+RUN\s+ANSWER OR MESSAGE$/);
    expect(tableRows(run.stdout).map(row => [row[0], row[1], row[2], row[4], row.at(-1)])).toEqual([
      ['0', 'Security', 'SUCCEEDED', ids[0], 'no secrets found'],
      ['1', 'Performance', 'SUCCEEDED', ids[1], 'fast enough'],
      ['2', '-', 'SUCCEEDED', ids[2], 'tests cover it']
    ]);

    // The same file again: the same keys find the same runs, and nothing new is created.
    const again = await runCli(['run', '--environment', 'local', '--fan-out', file, '--max-parallel', '3'], {
      env
    });
    expect(again.code).toBe(0);
    expect(again.stdout).toContain(ids[0]);
    expect(again.stdout).toContain(ids[2]);
    expect((await serverRuns(name)).map(r => r.run_id)).toEqual(ids);
  });

  it('runs one at a time with --max-parallel 1', async () => {
    const { file, name } = list(['- "@sim sleep 1"', '- "@sim sleep 1"', '- "@sim sleep 1"'].join('\n'));
    const run = await runCli(['run', '--environment', 'local', '--fan-out', file, '--max-parallel', '1'], {
      env
    });
    expect(run.code).toBe(0);
    const server = await serverRuns(name);
    expect(server).toHaveLength(3);
    for (let i = 1; i < server.length; i++)
      expect(server[i]!.created_at >= server[i - 1]!.completed_at).toBe(true);
  });

  it('exits 1 naming the failed run with --require all, 0 with --require any, and gathers records with --json', async () => {
    const items = ['- "@sim result fine"', '- title: Lint', '  prompt: "@sim fail lint found 3 errors"'].join(
      '\n'
    );
    const all = list(items);
    const failed = await runCli(['run', '--environment', 'local', '--fan-out', all.file], { env });
    expect(failed.code).toBe(1);
    expect(failed.stderr).toMatch(
      /^\[\d\/2\] fan-out\[1\] "Lint": run [\w-]+ ended FAILED \(agent_failed\) after \d+s: lint found 3 errors$/m
    );
    expect(failed.stderr).toContain('error: fan-out failed: 1 of 2 runs succeeded (--require all)');
    expect(tableRows(failed.stdout)[1]).toEqual([
      '1',
      'Lint',
      'FAILED',
      expect.stringMatching(/^\d+s$/),
      expect.any(String),
      'lint found 3 errors'
    ]);

    const any = list(items);
    const passed = await runCli(
      ['run', '--environment', 'local', '--fan-out', any.file, '--require', 'any', '--json'],
      { env }
    );
    expect(passed.code).toBe(0);
    const records = JSON.parse(passed.stdout) as Record<string, unknown>[];
    expect(records.map(r => [r.index, r.title, r.state, r.conclusion, r.result, r.status_message])).toEqual([
      [0, null, 'SUCCEEDED', 'succeeded', 'fine', null],
      [1, 'Lint', 'FAILED', 'failed', null, 'lint found 3 errors']
    ]);
    expect(records[0]!.run_id).toBe((await serverRuns(any.name))[0]!.run_id);
  });

  it('takes PROMPT and the options as every item’s defaults, and a prompt-file beside the list', async () => {
    mkdirSync(join(dir, 'prompts'), { recursive: true });
    writeFileSync(join(dir, 'prompts', 'speed.md'), '@sim result from the file');
    const { file, name } = list(
      ['- prompt-file: prompts/speed.md', '- title: Own', '- prompt: "@sim result its own"'].join('\n')
    );
    const run = await runCli(
      [
        'run',
        '--environment',
        'local',
        '--title',
        'Default',
        '--metadata',
        'team=web',
        '--fan-out',
        file,
        '--json',
        '@sim result the default'
      ],
      { env, cwd: tmpdir() }
    );
    expect(run.code).toBe(0);
    const records = JSON.parse(run.stdout) as Record<string, unknown>[];
    expect(records.map(r => [r.title, r.result])).toEqual([
      ['Default', 'from the file'],
      ['Own', 'the default'],
      ['Default', 'its own']
    ]);
    expect((await serverRuns(name))[1]!.metadata).toEqual({ team: 'web', fan_out: name, fan_out_index: '1' });
  });

  it('reads the list from standard input with --fan-out -, a prompt-file relative to the working directory', async () => {
    const cwd = join(dir, 'from-stdin');
    mkdirSync(join(cwd, 'prompts'), { recursive: true });
    writeFileSync(join(cwd, 'prompts', 'one.md'), '@sim result read beside the working directory');
    const run = await runCli(['run', '--environment', 'local', '--fan-out', '-', '--json'], {
      env,
      cwd,
      stdin: ['- prompt-file: prompts/one.md', '- title: Piped', '  prompt: "@sim result piped in"'].join(
        '\n'
      )
    });
    expect(run.code).toBe(0);
    const records = JSON.parse(run.stdout) as Record<string, unknown>[];
    expect(records.map(r => [r.index, r.title, r.state, r.result])).toEqual([
      [0, null, 'SUCCEEDED', 'read beside the working directory'],
      [1, 'Piped', 'SUCCEEDED', 'piped in']
    ]);
    const server = await serverRuns('stdin');
    expect(server.map(r => r.run_id)).toEqual(records.map(r => r.run_id));

    // Standard input carries one of them: the list or the prompt.
    const both = await runCli(['run', '--environment', 'local', '--fan-out', '-', '-'], {
      env,
      stdin: '- x'
    });
    expect(both.code).toBe(2);
    expect(both.stderr).toContain('standard input can carry the fan-out list or the prompt, not both');
    // A bad list on standard input is named like a file's.
    const bad = await runCli(['run', '--environment', 'local', '--fan-out', '-'], {
      env,
      stdin: 'prompt: x'
    });
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain('error: --fan-out "-": no run was started:');
    expect(bad.stderr).toMatch(/fan-out .*: expected a YAML list of 1–50 items/);
  });

  it('checks each answer against --output-schema, and shows a title’s control characters escaped in aligned columns', async () => {
    const schema = join(dir, 'verdict.json');
    writeFileSync(
      schema,
      JSON.stringify({ type: 'object', required: ['verdict'], properties: { verdict: { type: 'string' } } })
    );
    const { file } = list(
      [
        '- title: "Red \\e[31m title"',
        '  prompt: \'@sim json {"verdict": "pass"}\'',
        '- "@sim result no object"'
      ].join('\n')
    );
    const run = await runCli(
      ['run', '--environment', 'local', '--fan-out', file, '--output-schema', schema],
      {
        env
      }
    );
    expect(run.code).toBe(1);
    expect(run.stderr).toMatch(
      /^\[\d\/2\] fan-out\[1\]: run [\w-]+ SUCCEEDED after \d+s, but its structured output does not match: /m
    );
    expect(run.stdout).not.toContain('\u001b');
    const [header, first, second] = run.stdout.split('\n');
    expect(first).toContain('Red \\x1b[31m title');
    for (const line of [first!, second!]) expect(line.indexOf('SUCCEEDED')).toBe(header!.indexOf('STATE'));
    expect(second).toContain('invalid structured output');
  });

  for (const signal of ['SIGINT', 'SIGTERM'] as const)
    it(`cancels every run it created on ${signal} and exits 130`, async () => {
      const { file, name } = list(
        ['- "@sim sleep 120"', '- "@sim sleep 120"', '- "@sim sleep 120"'].join('\n')
      );
      const run = await runCli(['run', '--environment', 'local', '--fan-out', file, '--max-parallel', '2'], {
        env,
        onStderr: (text, child) => {
          if ((text.match(/^fan-out\[\d\]: run [\w-]+\.$/gm) ?? []).length === 2 && !child.killed)
            child.kill(signal);
        }
      });
      expect(run.code).toBe(130);
      const server = await serverRuns(name);
      // The third item was never started: only the two runs in flight existed, and both are cancelled.
      expect(server.map(r => [r.metadata.fan_out_index, r.state, r.status_message])).toEqual([
        ['0', 'CANCELLED', 'cancelled by a client: agent-run was interrupted'],
        ['1', 'CANCELLED', 'cancelled by a client: agent-run was interrupted']
      ]);
      for (const r of server) expect(run.stderr).toContain(`Interrupted: cancelled run ${r.run_id}`);
      expect(tableRows(run.stdout)[2]).toEqual([
        '2',
        '-',
        'NOT STARTED',
        '-',
        '-',
        'not started: the fan-out ended first'
      ]);
    });

  it('names the bad item, its field and the form expected, and starts no run', async () => {
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
      ['- title: no prompt', /fan-out\[0\]: prompt is empty: set the item's prompt or prompt-file/],
      [
        '- prompt-file: missing.md',
        /fan-out\[0\]\.prompt-file "missing\.md": cannot read .*missing\.md \(ENOENT\); expected a file relative to the list's folder/
      ],
      [
        '- prompt: x\n  environment-id: a\n  config: {environment_id: b}',
        /fan-out\[0\]: config\.environment_id "b" differs from fan-out\[0\]\.environment-id "a": set it in one place/
      ]
    ];
    for (const [text, message] of cases) {
      const { file, name } = list(text);
      const run = await runCli(['run', '--environment', 'local', '--fan-out', file], { env });
      expect(run.code).toBe(2);
      expect(run.stderr).toContain(`error: --fan-out ${JSON.stringify(file)}: no run was started:`);
      expect(run.stderr).toMatch(message);
      expect(await serverRuns(name)).toEqual([]);
    }
    const { file } = list('- x');
    const options: [string[], string][] = [
      [['--max-parallel', '0'], '--max-parallel "0": expected a whole number from 1 to 20'],
      [['--require', 'most'], '--require "most": expected all or any'],
      [['--no-wait'], '--no-wait and --fan-out'],
      [
        ['--fan-out', join(dir, 'nothing.yml')],
        `--fan-out ${JSON.stringify(join(dir, 'nothing.yml'))}: cannot read it (ENOENT)`
      ]
    ];
    for (const [extra, message] of options) {
      const run = await runCli(['run', '--environment', 'local', '--fan-out', file, ...extra], { env });
      expect(run.code).toBe(2);
      expect(run.stderr).toContain(message);
    }
    const help = await runCli(['run', '--help'], { env });
    for (const option of ['--fan-out FILE', '--max-parallel N', '--require all|any', '--idempotency-key KEY'])
      expect(help.stdout).toContain(option);
    const alone = await runCli(['run', '--environment', 'local', '--max-parallel', '2', 'x'], { env });
    expect(alone.code).toBe(2);
    expect(alone.stderr).toContain('--max-parallel is for --fan-out FILE; give --fan-out too');
  });
});
