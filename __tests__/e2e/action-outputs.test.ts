// What the agent made, through the bundled action (dist/index.js) run as the runner runs it,
// against the bundled executor: the answer, the structured output, the artifacts, the patch (it
// applies to a fresh checkout of the source), the transcript file and live log lines.
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type ExecutorWithKey, spawnExecutorWithKey } from '../support/executor.js';
import { runAction } from '../support/runner.js';

let executor: ExecutorWithKey;
let repo: string;

const git = (dir: string, ...args: string[]) =>
  execFileSync('git', ['-C', dir, '-c', 'user.name=t', '-c', 'user.email=t@t', ...args], {
    encoding: 'utf8'
  });

beforeAll(async () => {
  repo = mkdtempSync(join(tmpdir(), 'agent-run-outputs-src-'));
  git(repo, 'init', '--quiet');
  writeFileSync(join(repo, 'README.md'), 'line one\nline two\n');
  git(repo, 'add', '.');
  git(repo, 'commit', '--quiet', '-m', 'start');
  const config = { environments: [{ id: 'repo', source: repo, agent: { kind: 'simulated' } }] };
  executor = await spawnExecutorWithKey({
    kind: 'personal',
    name: 'outputs',
    config: JSON.stringify(config)
  });
});
afterAll(() => executor.stop());

const inputs = (prompt: string, extra: Record<string, string> = {}) => ({
  prompt,
  'environment-id': 'repo',
  'api-key': executor.key,
  'base-url': executor.url,
  ...extra
});

const SCHEMA = JSON.stringify({
  type: 'object',
  properties: { verdict: { enum: ['pass', 'fail'] }, score: { type: 'number' } },
  required: ['verdict']
});

describe('what the agent made, through the action', () => {
  it('gives the answer, artifacts, a patch that applies, a transcript file and live log lines', async () => {
    const prompt = [
      'Update the readme',
      '@sim run echo hello-from-command',
      '@sim write README.md line one\\nline two changed\\n',
      '@sim write docs/new.md brand new',
      '@sim result Updated the readme: ünïcode ✓'
    ].join('\n');
    const result = await runAction(inputs(prompt));
    expect(result.code).toBe(0);
    const out = result.outputs;
    expect(out.conclusion).toBe('succeeded');
    expect(out.result).toBe('Updated the readme: ünïcode ✓');

    const artifacts = JSON.parse(out.artifacts!) as {
      artifact_type: string;
      data: Record<string, unknown>;
    }[];
    const patch = artifacts.find(a => a.artifact_type === 'FILE');
    expect(patch?.data).toMatchObject({ filename: 'changes.patch', mime_type: 'text/x-diff' });
    expect(out['pull-request-url']).toBe('');
    expect(out.branch).toBe('');

    // The patch is written under RUNNER_TEMP and applies to a fresh checkout of the source.
    expect(out['patch-file']).toMatch(/\/agent-run-e2e-[^/]+\/agent-run-[^/]+\/changes\.patch$/);
    expect(existsSync(out['patch-file']!)).toBe(true);
    const checkout = mkdtempSync(join(tmpdir(), 'agent-run-outputs-clone-'));
    execFileSync('git', ['clone', '--quiet', repo, checkout]);
    git(checkout, 'apply', out['patch-file']!);
    expect(readFileSync(join(checkout, 'README.md'), 'utf8')).toBe('line one\nline two changed\n');
    expect(readFileSync(join(checkout, 'docs/new.md'), 'utf8')).toBe('brand new');

    // The transcript: prompt, the command with its exit code and output, the file changes, the answer.
    const transcript = readFileSync(out['transcript-file']!, 'utf8');
    expect(out['transcript-file']).toMatch(/agent-run-[^/]+\/transcript\.md$/);
    expect(transcript).toContain('## Prompt');
    expect(transcript).toContain('Update the readme');
    expect(transcript).toMatch(
      /### Command \(exit code 0\)\s+```sh\necho hello-from-command\n```\s+```\nhello-from-command/
    );
    expect(transcript).toContain('- changes:\n  - `README.md` (modified)\n  - `docs/new.md` (added)');
    expect(transcript).toContain('Updated the readme: ünïcode ✓');

    // Live: the command as a collapsible group titled with its exit code, its output inside.
    expect(result.stdout).toMatch(
      /::group::\$ echo hello-from-command \(exit code 0\)\n│ hello-from-command\n::endgroup::/
    );

    // Summary: the answer and the artifacts.
    expect(result.summary).toContain('Updated the readme&#58; ünïcode ✓');
    expect(result.summary).toContain('changes.patch');
  });

  it('outputs the structured output, minified, when it matches the schema', async () => {
    const result = await runAction(
      inputs('Review the change\n@sim say looks fine\n@sim json {"verdict": "pass", "score": 9}', {
        'output-schema': SCHEMA
      })
    );
    expect(result.code).toBe(0);
    expect(result.outputs['structured-output']).toBe('{"verdict":"pass","score":9}');
    expect(result.outputs.result).toContain('"verdict"');
    // The prompt asked for the object and carried the schema.
    const run = JSON.parse(result.outputs.run!) as { prompt: string };
    expect(run.prompt).toContain('End your answer with one JSON object that matches this JSON Schema');
    expect(run.prompt).toContain('"required": [\n    "verdict"\n  ]');
  });

  it('fails the step naming the first violation when the object does not match', async () => {
    const result = await runAction(
      inputs('Review\n@sim json {"verdict": "maybe", "score": "high"}', { 'output-schema': SCHEMA })
    );
    expect(result.code).toBe(1);
    expect(result.outputs).toMatchObject({
      state: 'SUCCEEDED',
      conclusion: 'failed',
      'structured-output': ''
    });
    expect(result.stdout).toMatch(
      /::error::Run \S+ succeeded, but its structured output is missing or invalid: .*\/verdict: must be one of "pass", "fail" \(enum\)/
    );
    expect(result.stdout).toContain('/score: must be number (type)');
  });

  it('fails when the answer ends with no JSON object at all', async () => {
    const result = await runAction(inputs('Review\n@sim result no object here', { 'output-schema': SCHEMA }));
    expect(result.code).toBe(1);
    expect(result.outputs.conclusion).toBe('failed');
    expect(result.stdout).toContain('the answer does not end with a JSON object');
  });

  it('refuses a schema that is not valid JSON Schema before any run exists', async () => {
    const before = await runCount();
    const result = await runAction(inputs('Review', { 'output-schema': '{"type": "nope"}' }));
    expect(result.code).toBe(1);
    expect(result.outputs['run-id'] ?? '').toBe('');
    expect(result.stdout).toMatch(/::error::output-schema .*is not a valid JSON Schema/);
    expect(await runCount()).toBe(before);
  });
});

/** How many runs the executor has, read through its API. */
async function runCount(): Promise<number> {
  const response = await fetch(`${executor.url}/api/v1/agent/runs?limit=100`, {
    headers: { authorization: `Bearer ${executor.key}` }
  });
  return ((await response.json()) as { runs: unknown[] }).runs.length;
}
