// Every workflow we ship or show is valid YAML, and every step that uses one of our actions passes
// only inputs that exist (and every required one).
import { describe, expect, it } from '@jest/globals';
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { parse } from 'yaml';

type ActionMeta = { inputs: Record<string, { required?: boolean; default?: string }> };
const actions: Record<string, ActionMeta> = {
  main: parse(readFileSync('action.yml', 'utf8')),
  executor: parse(readFileSync('executor/action.yml', 'utf8'))
};

function ours(uses: string): ActionMeta | undefined {
  if (uses === './' || /^OWNER\/agent-run@/.test(uses)) return actions.main;
  if (uses === './executor' || /^OWNER\/agent-run\/executor@/.test(uses)) return actions.executor;
  return undefined;
}

const files = [
  ...readdirSync('examples/workflows').map(f => join('examples/workflows', f)),
  ...readdirSync('.github/workflows').map(f => join('.github/workflows', f))
];

describe('workflows', () => {
  it('exist: the four examples and both of ours', () => {
    expect(files.sort()).toEqual([
      '.github/workflows/check-dist.yml',
      '.github/workflows/ci.yml',
      'examples/workflows/comment-trigger.yml',
      'examples/workflows/nightly.yml',
      'examples/workflows/pr-review.yml',
      'examples/workflows/self-hosted-test.yml'
    ]);
  });

  it.each(files)('%s uses only inputs our actions have', file => {
    const workflow = parse(readFileSync(file, 'utf8')) as {
      on: unknown;
      jobs: Record<string, { steps: { uses?: string; with?: Record<string, unknown> }[] }>;
    };
    expect(workflow.on).toBeDefined();
    expect(Object.keys(workflow.jobs).length).toBeGreaterThan(0);
    for (const job of Object.values(workflow.jobs)) {
      for (const step of job.steps) {
        const meta = step.uses ? ours(step.uses) : undefined;
        if (!meta) continue;
        const given = Object.keys(step.with ?? {});
        for (const name of given) expect(Object.keys(meta.inputs)).toContain(name);
        for (const [name, input] of Object.entries(meta.inputs)) {
          if (input.required && input.default === undefined) expect(given).toContain(name);
        }
      }
    }
  });
});
