// The package's `agent-executor` bin as npm installs it: a symlink in node_modules/.bin to
// dist/executor/index.js, run as a program (its shebang picks `node` from PATH), not as
// `node FILE`. Without the shebang the shell runs the JavaScript itself ("import: not found").
// Also what it prints at start-up about the address it listens on.
import { describe, expect, it } from '@jest/globals';
import { execFile } from 'node:child_process';
import { mkdirSync, readFileSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { delimiter, dirname, join } from 'node:path';
import { promisify } from 'node:util';
import { eventually } from '../support/eventually.js';
import { EXECUTOR_ENTRY, spawnExecutor, tempDir } from '../support/executor.js';

const run = promisify(execFile);

describe('agent-executor bin', () => {
  it('starts with a shebang and is executable', () => {
    expect(readFileSync(EXECUTOR_ENTRY, 'utf8').split('\n')[0]).toBe('#!/usr/bin/env node');
    expect(statSync(EXECUTOR_ENTRY).mode & 0o777).toBe(0o755);
  });

  it('runs through a node_modules/.bin symlink with the Node on PATH', async () => {
    const bin = join(tempDir('agent-executor-bin-'), 'node_modules', '.bin');
    mkdirSync(bin, { recursive: true });
    symlinkSync(EXECUTOR_ENTRY, join(bin, 'agent-executor'));
    // PATH as `npm exec` makes it: the prefix's bin folder, then the Node 24 the scripts run on.
    const PATH = [bin, dirname(process.execPath), process.env.PATH].join(delimiter);
    const { stdout } = await run('agent-executor', ['--help'], { env: { ...process.env, PATH } });
    expect(stdout).toMatch(/^Usage: agent-executor \[global options\] <command> \[options\]/);
  });

  it('warns at start-up that --host 0.0.0.0 makes session links no browser opens, naming server.public_url', async () => {
    const dir = tempDir();
    const ex = await spawnExecutor(['--host', '0.0.0.0', '--data-dir', join(dir, 'data')], { cwd: dir });
    try {
      expect(ex.url).toMatch(/^http:\/\/0\.0\.0\.0:\d+$/);
      const warning = await eventually(() => /^warning: .*$/m.exec(ex.stderr())?.[0], {
        what: 'the start-up warning'
      });
      expect(warning).toContain(`session links start with ${ex.url}`);
      expect(warning).toContain('set server.public_url in agent-executor.yaml');
    } finally {
      await ex.stop();
    }
  });

  it('does not warn when server.public_url is set', async () => {
    const dir = tempDir();
    writeFileSync(join(dir, 'agent-executor.yaml'), 'server:\n  public_url: https://agents.example.com\n');
    const ex = await spawnExecutor(['--host', '0.0.0.0', '--data-dir', join(dir, 'data')], { cwd: dir });
    await ex.stop();
    expect(ex.stderr()).not.toContain('warning:');
  });
});
