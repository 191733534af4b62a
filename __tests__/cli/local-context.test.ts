// What `agent-run action` tells the agent about where it runs (issue 35): a repository only from a
// real GitHub remote (a clone of a local path names none), and the sentence about users' text only
// when the prompt quotes some. The bundled command line against the contract server on a real port.
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ContractServer } from '../support/contract-server.js';
import { runCli } from './support.js';

const KEY = 'test-key-0123456789';
let server: ContractServer;
const dir = mkdtempSync(join(tmpdir(), 'cli-local-context-'));

beforeAll(async () => {
  server = await new ContractServer({ apiKey: KEY }).start();
  server.onCreate = run => server.script(run.run_id, [[50, { state: 'SUCCEEDED' }]]);
});
afterAll(async () => {
  await server.stop();
  rmSync(dir, { recursive: true, force: true });
});

/** A checkout with one commit whose origin is `remote`. */
function checkout(name: string, remote: string): string {
  const path = join(dir, name);
  mkdirSync(path);
  const git = (...args: string[]) =>
    execFileSync('git', ['-c', 'user.name=t', '-c', 'user.email=t@e', ...args], {
      cwd: path,
      stdio: 'ignore'
    });
  git('init', '-q', '-b', 'main');
  git('remote', 'add', 'origin', remote);
  git('commit', '-q', '--allow-empty', '-m', 'one');
  return path;
}

/** The prompt the action sent for `prompt` from `cwd`. */
async function sentPrompt(cwd: string, prompt: string): Promise<string> {
  const before = server.requests.filter(r => r.method === 'POST').length;
  const run = await runCli(['action', '--input', `prompt=${prompt}`, '--input', 'environment-id=e'], {
    env: { AGENT_RUN_BASE_URL: server.url, AGENT_RUN_API_KEY: KEY, TMPDIR: dir },
    cwd
  });
  expect(run.code).toBe(0);
  const posted = server.requests.filter(r => r.method === 'POST')[before]!;
  return (JSON.parse(posted.body) as { prompt: string }).prompt;
}

describe('the local context of agent-run action', () => {
  it('names no repository for a clone of a local path', async () => {
    const local = checkout('of-a-path', join(dir, 'work', 'main'));
    const prompt = await sentPrompt(local, 'Fix the bug');
    expect(prompt).not.toContain('repository:');
    expect(prompt).not.toContain('work/main');
    expect(prompt).not.toContain('Text inside');
  });

  it('names the GitHub repository of a GitHub remote, without the users-text sentence when nothing is quoted', async () => {
    const github = checkout('of-github', 'git@github.com:octo-org/app.git');
    const prompt = await sentPrompt(github, 'Fix the bug');
    expect(prompt).toContain('- repository: octo-org/app');
    expect(prompt).not.toContain('Text inside');
  });
});
