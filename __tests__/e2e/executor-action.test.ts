// The `executor` helper action, run as the runner runs it: start the executor, hand its URL and a
// key to the main action, stop it in the post step.
import { describe, expect, it } from '@jest/globals';
import { existsSync, mkdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { tempDir } from '../support/executor.js';
import { runAction } from '../support/runner.js';

const ENTRY = resolve('dist/executor-action/index.js');

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

describe('executor action', () => {
  it('starts the executor, outputs a masked key and base-url that the main action uses, and stops it in post', async () => {
    const dir = tempDir();
    const config = join(dir, 'agent-executor.yaml');
    writeFileSync(config, 'environments:\n  - id: ci\n    source: .\n');
    const started = await runAction(
      { config, 'data-dir': join(dir, 'data') },
      { entry: ENTRY, env: { RUNNER_TEMP: dir, GITHUB_WORKSPACE: dir } }
    );
    expect(started.code).toBe(0);
    const { 'base-url': url, 'api-key': key } = started.outputs;
    expect(url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    expect(key).toMatch(/^arx_/);
    expect(started.stdout).toContain(`::add-mask::${key}`);
    const pid = Number(started.state.pid);
    expect(alive(pid)).toBe(true);

    const agent = await runAction({
      prompt: '@sim say hi',
      'environment-id': 'ci',
      'api-key': key!,
      'base-url': url!
    });
    expect(agent.outputs.conclusion).toBe('succeeded');

    const post = await runAction({}, { entry: ENTRY, state: started.state });
    expect(post.code).toBe(0);
    expect(post.stdout).toContain(`Stopped the executor (pid ${pid})`);
    expect(alive(pid)).toBe(false);
  });

  it('puts keys and runs in the store it is given, and masks a store URL', async () => {
    const dir = tempDir();
    const path = join(dir, 'elsewhere', 'runs.db');
    const started = await runAction(
      { 'data-dir': join(dir, 'data'), store: `sqlite:${path}` },
      { entry: ENTRY, env: { RUNNER_TEMP: dir } }
    );
    expect(started.code).toBe(0);
    expect(started.stdout).toContain(`::add-mask::sqlite:${path}`);
    expect(existsSync(path)).toBe(true);
    expect(existsSync(join(dir, 'data', 'executor.db'))).toBe(false);
    const read = await fetch(`${started.outputs['base-url']}/api/v1/agent/runs`, {
      headers: { authorization: `Bearer ${started.outputs['api-key']}` }
    });
    expect(read.status).toBe(200);
    expect((await runAction({}, { entry: ENTRY, state: started.state })).code).toBe(0);
    const url = await runAction(
      {
        'data-dir': join(dir, 'data2'),
        store: 'postgres://ci:p%40ss-word@127.0.0.1:1/agents',
        'ready-timeout-seconds': '5'
      },
      { entry: ENTRY, env: { RUNNER_TEMP: dir } }
    );
    expect(url.stdout).toContain('::add-mask::p@ss-word');
    expect(url.code).toBe(1);
    expect(url.stdout).toContain('cannot open the PostgreSQL store at postgres://ci:***@127.0.0.1:1/agents');
  });

  it('fails clearly when the executor cannot start', async () => {
    const dir = tempDir();
    const config = join(dir, 'bad.yaml');
    writeFileSync(config, 'workers: none\n');
    const result = await runAction(
      { config, 'data-dir': join(dir, 'data') },
      { entry: ENTRY, env: { GITHUB_WORKSPACE: dir } }
    );
    expect(result.code).toBe(1);
    expect(result.stdout).toContain('::error::the executor exited before it was ready:');
    expect(result.stdout).toContain('workers "none": expected a whole number from 1 to 256');
  });

  it('reads config only as the main action reads prompt-file: inside the workspace, no link, not under .git/', async () => {
    const workspace = tempDir();
    const outside = join(tempDir(), 'outside.yaml');
    writeFileSync(outside, 'workers: none\n');
    symlinkSync(outside, join(workspace, 'linked.yaml'));
    mkdirSync(join(workspace, '.git'));
    writeFileSync(join(workspace, '.git', 'config.yaml'), 'workers: none\n');
    const rule =
      'expected a regular file inside the workspace (GITHUB_WORKSPACE), reached without symbolic links and not under .git/';
    const cases: [string, string][] = [
      ['linked.yaml', `${join(workspace, 'linked.yaml')} is a symbolic link; ${rule}`],
      [outside, `${outside} is outside the workspace ${workspace}; ${rule}`],
      ['.git/config.yaml', `${join(workspace, '.git', 'config.yaml')} is under .git/; ${rule}`],
      ['missing.yaml', `cannot read ${join(workspace, 'missing.yaml')} (ENOENT)`]
    ];
    for (const [config, message] of cases) {
      const result = await runAction(
        { config, 'data-dir': join(workspace, 'data') },
        { entry: ENTRY, env: { GITHUB_WORKSPACE: workspace } }
      );
      expect(result.code).toBe(1);
      expect(result.stdout).toContain(`::error::config ${JSON.stringify(config)}: ${message}`);
      expect(result.stdout).not.toContain('the executor exited before it was ready');
    }
  });
});
