// What a new user tripped on in the first hour (issue 35), through the bundled programs as real
// processes: a misspelt option, configuration key or value gets the nearest known one; `keys
// create` without --kind makes a personal key; a busy port says what to do instead of EADDRINUSE.
import { afterAll, describe, expect, it, jest } from '@jest/globals';
import { rmSync, writeFileSync } from 'node:fs';
import { type Server, createServer } from 'node:net';
import { join } from 'node:path';
import { executorCli, tempDir } from '../support/executor.js';
import { runCli } from './support.js';

jest.setTimeout(120_000);

const dirs: string[] = [];
function dir(): string {
  const made = tempDir('frictions-');
  dirs.push(made);
  return made;
}
afterAll(() => {
  for (const made of dirs) rmSync(made, { recursive: true, force: true });
});

describe('did you mean', () => {
  it('agent-run names the option meant by --enviroment', async () => {
    const run = await runCli(['run', '--enviroment', 'local', 'hello']);
    expect(run.code).toBe(2);
    expect(run.stderr).toContain("Unknown option '--enviroment'; did you mean --environment? See --help");
  });

  it('agent-executor names the option meant by --prot', async () => {
    const run = await executorCli(['serve', '--prot', '0'], { cwd: dir() });
    expect(run.code).toBe(2);
    expect(run.stderr).toContain("Unknown option '--prot'; did you mean --port?");
  });

  it('names the key meant by enviroments:', async () => {
    const cwd = dir();
    writeFileSync(join(cwd, 'agent-executor.yaml'), 'enviroments: []\n');
    const run = await executorCli(['environments', 'list'], { cwd });
    expect(run.code).toBe(2);
    expect(run.stderr).toContain('enviroments: unknown key; expected one of');
    expect(run.stderr).toContain('; did you mean environments?');
  });

  it('names the kind meant by kind: comand, and only that problem', async () => {
    const cwd = dir();
    writeFileSync(
      join(cwd, 'agent-executor.yaml'),
      'environments:\n  - id: x\n    agent:\n      kind: comand\n      command: [echo, hi]\n'
    );
    const run = await executorCli(['environments', 'list'], { cwd });
    expect(run.code).toBe(2);
    expect(run.stderr.trim()).toBe(
      `agent-executor: ${join(cwd, 'agent-executor.yaml')}: environments[0].agent.kind "comand": ` +
        'expected one of simulated, command, claude-code, codex, gemini; did you mean command?'
    );
  });
});

describe('keys create', () => {
  it('makes a personal key when --kind is not given', async () => {
    const cwd = dir();
    const created = await executorCli(['keys', 'create', '--name', 'me', '--data-dir', join(cwd, 'data')], {
      cwd
    });
    expect(created.code).toBe(0);
    expect(created.stdout).toMatch(/^Created personal key key_\S+ \(me\) for team default\./);
  });
});

describe('a busy port', () => {
  let holder: Server;
  afterAll(() => new Promise<void>(done => (holder ? holder.close(() => done()) : done())));

  it('says the port is in use and how to pick another, instead of a raw EADDRINUSE', async () => {
    holder = createServer();
    await new Promise<void>(done => holder.listen(0, '127.0.0.1', done));
    const { port } = holder.address() as { port: number };
    const cwd = dir();
    const run = await executorCli(['serve', '--port', String(port), '--data-dir', join(cwd, 'data')], {
      cwd
    });
    expect(run.code).toBe(1);
    expect(run.stderr).toContain(
      `agent-executor: port ${port} of 127.0.0.1 is already in use by another program (another executor?); ` +
        'stop that one, give another port with --port PORT (or server.port in agent-executor.yaml), ' +
        'or --port 0 for any free port'
    );
    expect(run.stderr).not.toContain('EADDRINUSE');
  });
});
