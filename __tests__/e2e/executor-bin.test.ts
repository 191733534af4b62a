// The package's `agent-executor` bin as npm installs it: a symlink in node_modules/.bin to
// dist/executor/index.js, run as a program (its shebang picks `node` from PATH), not as
// `node FILE`. Without the shebang the shell runs the JavaScript itself ("import: not found").
import { describe, expect, it } from '@jest/globals';
import { execFile } from 'node:child_process';
import { mkdirSync, readFileSync, statSync, symlinkSync } from 'node:fs';
import { delimiter, dirname, join } from 'node:path';
import { promisify } from 'node:util';
import { EXECUTOR_ENTRY, tempDir } from '../support/executor.js';

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
    expect(stdout).toMatch(/^Usage: agent-executor <command> \[options\]/);
  });
});
