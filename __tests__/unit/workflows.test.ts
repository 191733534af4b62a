// Every workflow we ship or show is valid YAML, and every step that uses one of our actions passes
// only inputs that exist (and every required one), and asks only for environments the executor it
// starts serves.
import { describe, expect, it } from '@jest/globals';
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { parse } from 'yaml';
import { parseConfig } from '../../src/executor/config/config.js';

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

type Workflow = { jobs: Record<string, { steps: { uses?: string; with?: Record<string, unknown> }[] }> };

/**
 * Where a job asks our action for an environment that the executor started by an earlier step of
 * the same job does not serve. `root` is the repository root the workflow's paths are relative to
 * (for the examples: examples/, where the config they name is shipped).
 */
function unservedEnvironments(workflow: Workflow, root: string): string[] {
  const problems: string[] = [];
  for (const [name, job] of Object.entries(workflow.jobs)) {
    let served: string[] | undefined;
    for (const step of job.steps) {
      const meta = step.uses ? ours(step.uses) : undefined;
      if (meta === actions.executor) {
        const config = step.with?.config as string | undefined;
        const path = config === undefined ? undefined : resolve(root, config);
        if (path !== undefined && !existsSync(path)) {
          problems.push(`job ${name}: the executor's config ${config} does not exist in ${root}`);
          served = undefined;
          continue;
        }
        const raw = path === undefined ? {} : (parse(readFileSync(path, 'utf8')) ?? {});
        served = parseConfig(raw, root).environments.map(env => env.id);
      } else if (meta === actions.main && served !== undefined) {
        const id = step.with?.['environment-id'];
        if (typeof id === 'string' && !id.includes('${{') && !served.includes(id)) {
          problems.push(
            `job ${name}: environment-id ${id} is not served (the config serves ${served.join(', ')})`
          );
        }
      }
    }
  }
  return problems;
}

const files = [
  ...readdirSync('examples/workflows').map(f => join('examples/workflows', f)),
  ...readdirSync('.github/workflows').map(f => join('.github/workflows', f))
];

describe('workflows', () => {
  it('exist: the six examples and both of ours', () => {
    expect(files.sort()).toEqual([
      '.github/workflows/check-dist.yml',
      '.github/workflows/ci.yml',
      'examples/workflows/comment-trigger.yml',
      'examples/workflows/nightly.yml',
      'examples/workflows/plan-approve.yml',
      'examples/workflows/pr-review-fan-out.yml',
      'examples/workflows/pr-review.yml',
      'examples/workflows/review.yml',
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

  it.each(files)('%s asks only for environments its executor serves', file => {
    const workflow = parse(readFileSync(file, 'utf8')) as Workflow;
    expect(unservedEnvironments(workflow, file.startsWith('examples/') ? 'examples' : '.')).toEqual([]);
  });

  it('catches a config combined with an environment it does not define', () => {
    const step = (uses: string, given: Record<string, unknown>) => ({ uses, with: given });
    const workflow: Workflow = {
      jobs: {
        test: {
          steps: [
            step('OWNER/agent-run/executor@v1', { config: 'agent-executor.yaml' }),
            step('OWNER/agent-run@v1', { 'environment-id': 'local', prompt: 'x' })
          ]
        }
      }
    };
    expect(unservedEnvironments(workflow, 'examples')).toEqual([
      'job test: environment-id local is not served (the config serves app)'
    ]);
    expect(unservedEnvironments(workflow, '.')).toEqual([
      `job test: the executor's config agent-executor.yaml does not exist in .`
    ]);
  });
});

describe('example workflows on threads', () => {
  it('run one step per thread at a time: a concurrency group per issue or pull request, queued', () => {
    const dir = 'examples/workflows';
    // A workflow reports on a thread when a step of ours writes the progress comment there.
    const threaded = readdirSync(dir).filter(name =>
      Object.values((parse(readFileSync(join(dir, name), 'utf8')) as Workflow).jobs).some(job =>
        job.steps.some(
          step =>
            step.uses &&
            ours(step.uses) === actions.main &&
            [undefined, 'off'].every(off => step.with?.comment !== off)
        )
      )
    );
    expect(threaded.length).toBeGreaterThan(0);
    for (const name of threaded) {
      const workflow = parse(readFileSync(join(dir, name), 'utf8'));
      expect({ name, concurrency: workflow.concurrency }).toEqual({
        name,
        concurrency: {
          group: expect.stringContaining('github.event.issue.number || github.event.pull_request.number'),
          'cancel-in-progress': false
        }
      });
    }
  });
});
