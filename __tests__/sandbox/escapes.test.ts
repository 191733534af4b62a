// Escapes tried from a run of team B while team A's run holds secrets: every attempt fails, and
// each leaves its trace in B's transcript (the commands print what happened and their exit code).
// The executor's data dir and config sit in a directory the environment lists as readable, so they
// are hidden by the sandbox itself, not only by its private /tmp.

import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { TERMINAL_STATES } from '../../src/api/index.js';
import { waitForState } from '../support/wait.js';
import { execFileSync } from 'node:child_process';
import { chmodSync, existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { type Server, createServer } from 'node:net';
import { dirname, join } from 'node:path';
import { eventually } from '../support/eventually.js';
import { type TestExecutor, startTestExecutor, tempDir } from '../support/executor.js';
import { commandOutput, createRun, requireBubblewrap, transcript } from './support.js';

const SECRET_PROMPT = `TEAM-A-PROMPT-${process.pid}-${Date.now()}`;
const SECRET_FILE = `TEAM-A-FILE-${process.pid}`;
const HOME_SECRET = `HOME-SECRET-${process.pid}`;
const CONFIG_SECRET = `CONFIG-SECRET-${process.pid}`;
const TOKEN = `ghs_checkoutToken${process.pid}`;

let ex: TestExecutor;
let keyA: string;
let keyB: string;
let repo: string;
let home: string;
let planted: string;
const servers: Server[] = [];

function listen(banner: string): Promise<number> {
  const server = createServer(socket => socket.end(`${banner}\n`));
  servers.push(server);
  return new Promise(resolve =>
    server.listen(0, '127.0.0.1', () => resolve((server.address() as { port: number }).port))
  );
}

beforeAll(async () => {
  requireBubblewrap();
  repo = tempDir('sandbox-source-');
  writeFileSync(join(repo, 'README.md'), 'hello\n');
  const git = (...args: string[]) =>
    execFileSync('git', ['-C', repo, '-c', 'user.name=t', '-c', 'user.email=t@t', ...args]);
  git('init', '--quiet');
  git('add', '--all');
  git('commit', '--quiet', '-m', 'initial');
  // What actions/checkout leaves behind: the job's token in the checkout's own config.
  git('config', 'http.https://github.com/.extraheader', `AUTHORIZATION: basic ${TOKEN}`);
  home = process.env.HOME ?? '/root';
  planted = join(home, `.agent-run-sandbox-test-${process.pid}`);
  writeFileSync(planted, HOME_SECRET);
  const allowed = await listen('HELLO-FROM-ALLOWED');
  const other = await listen('HELLO-FROM-OTHER');
  ex = await startTestExecutor({
    workers: 4,
    environments: [
      { id: 'plain', source: repo },
      { id: 'proxied', source: repo, sandbox: { network: [`127.0.0.1:${allowed}`] } }
    ]
  });
  // The config file and a file beside it, in the directory the data dir lives in, made readable
  // (to the run's own user too: a root executor's runs are not root).
  const base = dirname(ex.dataDir);
  chmodSync(base, 0o755);
  writeFileSync(join(base, 'agent-executor.yaml'), `# ${CONFIG_SECRET}\n`);
  writeFileSync(join(base, 'visible.txt'), 'visible beside the data dir\n');
  ex.config.configFile = join(base, 'agent-executor.yaml');
  for (const env of ex.config.environments) env.sandbox.read.push(base);
  keyA = (await ex.key('team-a')).raw;
  keyB = (await ex.key('team-b')).raw;
  Object.assign(globalThis, { ports: { allowed, other } });
}, 240_000);

afterAll(async () => {
  await ex?.stop(1000);
  rmSync(planted, { force: true });
  for (const server of servers) server.close();
});

const ports = () => (globalThis as unknown as { ports: { allowed: number; other: number } }).ports;

describe('a run of team B', () => {
  let a: string;
  let output: string;

  beforeAll(async () => {
    a = await createRun(
      ex,
      keyA,
      'plain',
      `${SECRET_PROMPT}\n@sim write secret.txt ${SECRET_FILE}\n@sim sleep 600`
    );
    await waitForState({ on: ex, key: keyA, id: a }, ['INPROGRESS']);
    const workspaceA = join(ex.dataDir, 'workspaces', a);
    await eventually(() => existsSync(join(workspaceA, 'secret.txt')), {
      what: "run A's secret.txt",
      timeoutMs: 60_000
    });
    const executorPort = new URL(ex.url).port;
    const attempts = [
      `ls -la ${ex.dataDir}`,
      `cat ${ex.dataDir}/executor.db ${ex.dataDir}/executor.db-wal`,
      `grep -rl ${SECRET_PROMPT.slice(0, 12)} ${ex.dataDir} /tmp ${dirname(ex.dataDir)}`,
      `cat ${workspaceA}/secret.txt`,
      `cat ${ex.config.configFile}`,
      `cat ${dirname(ex.dataDir)}/visible.txt`,
      `cat ${planted}`,
      `ls -A $HOME; echo HOME=$HOME`,
      `echo escaped > ${dirname(ex.dataDir)}/written-by-b.txt`,
      `echo escaped > /usr/written-by-b.txt`,
      `kill -TERM ${process.pid}`,
      `ps -e -o pid,comm`,
      `curl -sS -m 3 http://127.0.0.1:${executorPort}/healthz`,
      `curl -sS -m 3 http://127.0.0.1:${ports().other}/`,
      `cat ${repo}/.git/config`,
      `git status --short && git log --oneline && cat .git/config && git config --list`,
      `git cat-file --batch-all-objects --batch-check`
    ];
    const b = await createRun(
      ex,
      keyB,
      'plain',
      attempts.map(c => `@sim run ${c}; echo "exit=$?"`).join('\n')
    );
    expect(await waitForState({ on: ex, key: keyB, id: b })).toMatchObject({ state: 'SUCCEEDED' });
    output = await commandOutput(ex, keyB, b);
  }, 240_000);

  afterAll(async () => {
    await ex.request(`/api/v1/agent/runs/${a}/cancel`, { method: 'POST', key: keyA });
  });

  it("cannot read the database, another run's workspace, the config file or a file in the executor's HOME", () => {
    expect(output).toContain(
      `$ cat ${ex.dataDir}/executor.db ${ex.dataDir}/executor.db-wal; echo "exit=$?"\ncat: ${ex.dataDir}/executor.db: No such file or directory`
    );
    expect(output).toContain(`secret.txt: No such file or directory`);
    expect(output).toContain(`${planted}: No such file or directory`);
    // The config file is shadowed: unreadable even though its directory is listed in sandbox.read.
    expect(output).toMatch(/agent-executor\.yaml: (Permission denied|No such file or directory)\nexit=1/);
    expect(output).toContain('visible beside the data dir'); // the directory itself is readable
    expect(output).toContain('HOME=/home/agent');
    for (const secret of [SECRET_PROMPT, SECRET_FILE, HOME_SECRET, CONFIG_SECRET, TOKEN])
      expect(output).not.toContain(secret);
  });

  it('cannot write outside its workspace', () => {
    // The shell's complaint (stderr) and `exit=2` (stdout) reach the transcript through two pipes,
    // in either order: each attempt's own block must hold both.
    const block = (command: string) => output.split(`$ ${command}`)[1]?.split('\n$ ')[0] ?? '';
    for (const target of [`${dirname(ex.dataDir)}/written-by-b.txt`, '/usr/written-by-b.txt']) {
      const seen = block(`echo escaped > ${target}`);
      expect(seen).toContain(`${target}: Read-only file system`);
      expect(seen).toContain('exit=2');
    }
    expect(existsSync(join(dirname(ex.dataDir), 'written-by-b.txt'))).toBe(false);
  });

  it("cannot see or signal the executor's process", async () => {
    expect(output).toMatch(
      new RegExp(`kill -TERM ${process.pid}; echo "exit=\\$\\?"\\n[^\\n]*No such process\\s*exit=1`)
    );
    // Only the run's own processes: bubblewrap's init, the shell and ps.
    const ps = output.split('$ ps -e -o pid,comm')[1]!.split('exit=')[0]!.trim().split('\n').slice(1);
    expect(ps.length).toBeLessThanOrEqual(4);
    expect((await ex.request('/healthz')).status).toBe(200);
  });

  it("cannot connect to the executor's port or another loopback port (network: none)", () => {
    expect(output).toMatch(/healthz; echo "exit=\$\?"\ncurl: \(7\) Failed to connect[^\n]*\nexit=7/);
    expect(output).not.toContain('HELLO-FROM-OTHER');
    expect(output).not.toContain('"status":"ok"');
  });

  it("uses git in its own repository without the source's credentials or another run's objects", () => {
    expect(output).toContain(`${repo}/.git/config: No such file or directory`);
    expect(output).toMatch(/[0-9a-f]{7} initial/);
    const blobOfA = execFileSync('git', ['hash-object', '--stdin'], { input: SECRET_FILE }).toString().trim();
    expect(output.split('--batch-check')[1]).toMatch(/[0-9a-f]{40} commit/);
    expect(output).not.toContain(blobOfA);
  });
});

describe('files the executor writes for a run', () => {
  it('never follows a symbolic link the run planted (@sim write)', async () => {
    const target = join(dirname(ex.dataDir), 'target.txt');
    writeFileSync(target, 'original');
    const through = async (link: string, path: string) => {
      const id = await createRun(ex, keyB, 'plain', `@sim run ${link}\n@sim write ${path} overwritten`);
      return waitForState({ on: ex, key: keyB, id });
    };
    expect(await through(`ln -s ${target} link.txt`, 'link.txt')).toMatchObject({
      state: 'FAILED',
      status_message: expect.stringContaining(
        'link.txt: is a symbolic link; the executor never writes through one'
      )
    });
    expect(await through(`ln -s ${dirname(target)} dir`, 'dir/target.txt')).toMatchObject({
      state: 'FAILED',
      status_message: expect.stringContaining('dir is not a directory (a link is never followed)')
    });
    expect(readFileSync(target, 'utf8')).toBe('original');
  });

  it("names a write the sandbox refused as a failed write, with the shell's reason, not an invalid directive", async () => {
    const id = await createRun(
      ex,
      keyB,
      'plain',
      '@sim run mkdir ro && chmod 555 ro\n@sim write ro/x.txt hello'
    );
    const run = await waitForState<{ run_id: string; state: string; status_message: string }>({
      on: ex,
      key: keyB,
      id
    });
    expect(run.state).toBe('FAILED');
    expect(run.status_message).toMatch(
      /^@sim write ro\/x\.txt: could not be written \(exit code \d+\): .*ro\/x\.txt: Permission denied/
    );
    expect(run.status_message).not.toContain('invalid directive');
  });
});

describe('network: a list of host:port', () => {
  it('reaches a listed loopback port through the proxy and is refused another, or a direct connection', async () => {
    const { allowed, other } = ports();
    const prompt = [
      `@sim run curl -sS -m 60 --http0.9 -p http://127.0.0.1:${allowed}/ ; echo "exit=$?"`,
      `@sim run curl -sS -m 5 --http0.9 -p http://127.0.0.1:${other}/ ; echo "exit=$?"`,
      `@sim run curl -sS -m 60 --http0.9 --noproxy '*' http://127.0.0.1:${allowed}/ ; echo "exit=$?"`
    ].join('\n');
    const id = await createRun(ex, keyB, 'proxied', prompt);
    // Up to two minutes of curl time in the worst case (-m 60 twice): the wait allows all of it.
    expect(
      await waitForState({ on: ex, key: keyB, id }, TERMINAL_STATES, { timeoutMs: 170_000 })
    ).toMatchObject({
      state: 'SUCCEEDED'
    });
    const commands = (await transcript(ex, keyB, id))
      .filter(e => e.kind === 'command')
      .map(e => String(e.output));
    // curl -p tunnels with CONNECT; the allowed server answers with its banner.
    expect(commands[0]).toContain('HELLO-FROM-ALLOWED');
    expect(commands[1]).toMatch(/CONNECT tunnel failed, response 403/);
    expect(commands[1]).not.toContain('HELLO-FROM-OTHER');
    expect(commands[2]).toMatch(/Failed to connect[^\n]*\nexit=7/);
  }, 240_000);
});

describe('sandbox directories', () => {
  it('keeps the source untouched: no worktree metadata, no written files', () => {
    expect(existsSync(join(repo, '.git', 'worktrees'))).toBe(false);
  });
});
