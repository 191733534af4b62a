// A run's model id goes on its harness CLI's command line after `-m`: Gemini CLI's parser reads a
// value that starts with `-` as an option of its own (`gemini -m --version` prints its version), so
// the one who creates a run or a schedule could set the CLI's options, past the operator's. A model
// id that is not one is refused: by the API when a run or schedule is created (422 invalid_field),
// and by the harness for one from elsewhere (the environment's agent.model), before the CLI starts.

import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { chmodSync, existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { type TestExecutor, startTestExecutor, tempDir } from '../support/executor.js';
import { waitForState } from '../support/wait.js';

let ex: TestExecutor;
let key: string;
const scripts = tempDir('harness-model-option-');
chmodSync(scripts, 0o755);

/** A stand-in for the gemini CLI: writes its arguments (one a line) to `<name>.args`, then answers. */
function fakeGemini(name: string): string {
  const file = join(scripts, `${name}.sh`);
  const answer = '{"type":"result","status":"success","stats":{}}';
  writeFileSync(
    file,
    `#!/bin/sh\n[ "$1" = --version ] && echo 1.0.0 && exit 0\ncat > /dev/null\nprintf '%s\\n' "$@" > ${scripts}/${name}.args\necho '{"type":"message","role":"assistant","content":"ok","delta":true}'\necho '${answer}'\n`,
    { mode: 0o755 }
  );
  return file;
}

const environment = (id: string, model?: string) => ({
  id,
  source: tempDir('harness-model-source-'),
  sandbox: 'off',
  agent: { kind: 'gemini', command: [fakeGemini(id)], ...(model ? { model } : {}) },
  timeout: '1m'
});

beforeAll(async () => {
  ex = await startTestExecutor({
    environments: [environment('plain'), environment('option-model', '--version')]
  });
  key = (await ex.key()).raw;
}, 120_000);

afterAll(async () => {
  await ex?.stop(1000);
});

const post = (path: string, body: unknown) =>
  ex.request(path, { method: 'POST', key, body: JSON.stringify(body) });

describe('a model id on a harness command line', () => {
  it('a run with a real model id reaches the CLI as the value of -m', async () => {
    const created = await post('/api/v1/agent/runs', {
      prompt: 'hello',
      config: { environment_id: 'plain', model_id: 'gemini-2.5-pro' }
    });
    expect(created.status).toBe(200);
    const { run_id } = (await created.json()) as { run_id: string };
    expect((await waitForState({ on: ex, key, id: run_id }, undefined, { timeoutMs: 60_000 })).state).toBe(
      'SUCCEEDED'
    );
    const args = readFileSync(join(scripts, 'plain.args'), 'utf8').split('\n');
    expect(args[args.indexOf('-m') + 1]).toBe('gemini-2.5-pro');
  });

  it.each([
    ['config.model_id', { model_id: '--version' }],
    ['config.harness.model_id', { harness: { type: 'gemini', model_id: '-e=evil' } }]
  ])('a run whose %s is an option is refused with 422', async (field, config) => {
    const created = await post('/api/v1/agent/runs', {
      prompt: 'hello',
      config: { environment_id: 'plain', ...config }
    });
    expect(created.status).toBe(422);
    const problem = (await created.json()) as { error_code: string; detail: string };
    expect(problem.error_code).toBe('invalid_field');
    expect(problem.detail).toContain(field);
    expect(problem.detail).toContain('expected a model id');
  });

  it('a schedule whose runs would carry an option as model id is refused with 422', async () => {
    const created = await post('/api/v1/agent/schedules', {
      name: 'nightly',
      cron_schedule: '0 3 * * *',
      prompt: 'hello',
      agent_config: { environment_id: 'plain', model_id: '--approval-mode=default' }
    });
    expect(created.status).toBe(422);
    expect(((await created.json()) as { detail: string }).detail).toContain('config.model_id');
  });

  it("an environment's model that is an option never starts the CLI: the run fails naming it", async () => {
    const created = await post('/api/v1/agent/runs', {
      prompt: 'hello',
      config: { environment_id: 'option-model' }
    });
    expect(created.status).toBe(200);
    const { run_id } = (await created.json()) as { run_id: string };
    const run = await waitForState({ on: ex, key, id: run_id }, undefined, { timeoutMs: 60_000 });
    expect(run.state).toBe('FAILED');
    expect(run.error_code).toBe('agent_model_not_found');
    expect(run.status_message).toContain('"--version"');
    expect(existsSync(join(scripts, 'option-model.args'))).toBe(false);
  });
});
