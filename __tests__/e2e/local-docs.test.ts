// The "Try it locally" commands of docs/client.md, run as written in bash: the executor in the
// background, a key, then the action on a plain prompt, a failing one, the example pull-request
// event and the example comment event (examples/events/). They run in a folder shaped like a clone
// after `npm ci` (package.json, dist, node_modules and examples of this checkout, linked), so `npx`
// finds the package's own commands and the executor's data stays out of the checkout. Two changes
// only: a free port for 8080, and a wait for the executor's "listening on" line before the next
// command (a person typing is slower than the executor's start-up; a script is not).
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { execFileSync, spawn } from 'node:child_process';
import { existsSync, readFileSync, readdirSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { createServer } from 'node:net';
import { join, resolve } from 'node:path';
import { tempDir } from '../support/executor.js';

const dirs: string[] = [];

/** The shell block under a heading of a Markdown file. */
function block(file: string, heading: string): string {
  const text = readFileSync(file, 'utf8');
  const section = text.slice(text.indexOf(heading));
  const match = /```sh\n([\s\S]*?)```/.exec(section);
  if (!match) throw new Error(`no sh block under ${heading} in ${file}`);
  return match[1]!;
}

/** The block's commands (continuation lines joined), each followed by a line with its exit code. */
function withExitCodes(script: string): string {
  const commands = script
    .replace(/\\\n\s*/g, ' ')
    .split('\n')
    .filter(line => line.trim() !== '');
  return commands
    .map((command, index) =>
      command.trim().endsWith('&')
        ? `${command}\nuntil grep -q 'listening on' executor.log 2>/dev/null; do sleep 0.2; done`
        : `${command}\necho "::exit ${index} $?"`
    )
    .join('\n')
    .concat('\nwait\n'); // the executor's end, after the block's `kill %1`
}

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>(done => server.listen(0, '127.0.0.1', done));
  const { port } = server.address() as { port: number };
  await new Promise(done => server.close(done));
  return port;
}

function bash(script: string, cwd: string): Promise<{ code: number | null; output: string }> {
  return new Promise(done => {
    const child = spawn('bash', ['-c', script], {
      cwd,
      env: { ...process.env, AGENT_RUN_BASE_URL: '', AGENT_RUN_API_KEY: '' },
      stdio: ['ignore', 'pipe', 'pipe']
    });
    let output = '';
    child.stdout.on('data', chunk => (output += chunk));
    child.stderr.on('data', chunk => (output += chunk));
    child.on('close', code => done({ code, output }));
  });
}

/** A folder shaped like a clone after `npm ci`, with a commit of its own. */
function cloneLike(): string {
  const dir = tempDir('try-it-locally-');
  dirs.push(dir);
  for (const name of ['package.json', 'dist', 'node_modules', 'examples'])
    symlinkSync(resolve(name), join(dir, name));
  writeFileSync(join(dir, 'README.md'), 'hello\n');
  writeFileSync(join(dir, '.gitignore'), 'node_modules\ndist\nexamples\n.agent-executor/\nexecutor.log\n');
  const git = (...args: string[]) =>
    execFileSync('git', ['-C', dir, '-c', 'user.name=t', '-c', 'user.email=t@t', ...args]);
  git('init', '--quiet');
  git('add', 'README.md', '.gitignore');
  git('commit', '--quiet', '-m', 'initial');
  return dir;
}

afterAll(() => {
  // npx links a folder's own package into its cache (~/.npm/_npx/HASH) to run its commands: ours go too.
  const cache = join(homedir(), '.npm', '_npx');
  for (const entry of existsSync(cache) ? readdirSync(cache) : []) {
    const manifest = join(cache, entry, 'package.json');
    const text = existsSync(manifest) ? readFileSync(manifest, 'utf8') : '';
    if (dirs.some(dir => text.includes(dir))) rmSync(join(cache, entry), { recursive: true, force: true });
  }
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

describe('Try it locally (docs/client.md)', () => {
  let output: string;
  beforeAll(async () => {
    const port = await freePort();
    const script = withExitCodes(
      block('docs/client.md', '### Try it locally').replaceAll('8080', String(port))
    );
    output = (await bash(script, cloneLike())).output;
  }, 600_000);

  it('runs the plain prompt, then the failing one with exit 1', () => {
    expect(output).toContain('::exit 3 0');
    expect(output).toContain('lint found 3 errors');
    expect(output).toContain('::exit 4 1');
  });

  it('runs the pull-request example through the gate: the agent answers', () => {
    const pr = output.slice(output.indexOf('::exit 4 '), output.indexOf('::exit 5 '));
    expect(pr).toContain('Trust gate passed: alice is listed in allowed-actors.');
    expect(pr).toContain('Review PR #7 of octo-org/hello');
    expect(pr).toMatch(/conclusion: succeeded/);
    expect(output).toContain('::exit 5 0');
  });

  it('runs the comment example through the gate and the trigger phrase: the agent answers', () => {
    const comment = output.slice(output.indexOf('::exit 5 '), output.indexOf('::exit 6 '));
    expect(comment).toContain('Trust gate passed: alice is listed in allowed-actors.');
    expect(comment).toMatch(/conclusion: succeeded/);
    expect(comment).toContain('the test is added');
    expect(output).toContain('::exit 6 0');
  });
});

describe('the pull-request example without allowed-actors', () => {
  it('is skipped with a message naming the repository and saying once what to set', async () => {
    const port = await freePort();
    const commands = block('docs/client.md', '### Try it locally')
      .replaceAll('8080', String(port))
      .replace(/ --input allowed-actors=alice/g, '')
      .replace(/\s*npx agent-run action --event issue_comment[\s\S]*?\n(?=kill)/, '\n');
    const { output } = await bash(withExitCodes(commands), cloneLike());
    const pr = output.slice(output.indexOf('::exit 4 '), output.indexOf('::exit 5 '));
    expect(pr).toContain(
      'Not starting the agent: could not check the permission of alice on octo-org/hello: github-token is empty; set github-token, or name alice in allowed-actors.'
    );
    expect(pr.match(/not starting the agent/gi)).toHaveLength(1);
    expect(pr).toContain('conclusion: skipped');
  }, 600_000);
});
