// The executor's own git. In a workspace the agent may have written anything into .git (hooks,
// `core.fsmonitor`, filter drivers, a symlinked config), and the executor's git runs outside the
// sandbox: so there it runs with no system or global config, hooks off, fsmonitor off, no
// credential helper, the repository named explicitly, and the workspace's config rewritten clean.

import { execFile } from 'node:child_process';
import { lstatSync, mkdirSync, unlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';

const exec = promisify(execFile);

/** Hides the credentials a git URL may carry (`https://user:token@host/…`). */
export function redactUrls(text: string): string {
  return text.replace(/\/\/[^/@\s]+@/g, '//***@');
}

/**
 * One line of why git failed, for a status message: its own `fatal:` (or `error:`) line, without
 * the `hint:` lines and suggestions around it; the first line it printed when it printed neither.
 */
export function gitReason(error: unknown): string {
  const lines = String((error as { stderr?: string }).stderr ?? '')
    .split('\n')
    .map(line => line.trim())
    .filter(line => line !== '' && !/^hint:/i.test(line));
  const reason = lines.find(line => /^fatal:/i.test(line)) ?? lines.find(line => /^error:/i.test(line));
  return reason ?? lines[0] ?? (error as Error).message.split('\n')[0]!;
}

/** Settings that win over anything a repository's own config says. */
const SAFE = [
  '-c',
  'core.hooksPath=/dev/null',
  '-c',
  'core.fsmonitor=false',
  '-c',
  'credential.helper=',
  '-c',
  'core.sshCommand=false',
  '-c',
  'protocol.allow=never',
  '-c',
  'user.name=agent-executor',
  '-c',
  'user.email=agent-executor@localhost'
];
const SAFE_ENV = { GIT_CONFIG_NOSYSTEM: '1', GIT_CONFIG_GLOBAL: '/dev/null', GIT_TERMINAL_PROMPT: '0' };

async function run(args: string[], env?: NodeJS.ProcessEnv): Promise<string> {
  try {
    const { stdout } = await exec('git', args, { maxBuffer: 64 * 1024 * 1024, env });
    return stdout;
  } catch (error) {
    // The error's own message holds the whole command line; say which git command failed and why.
    const why = gitReason(error);
    const verb =
      args.find(arg => !arg.startsWith('-') && !arg.includes('=') && !arg.startsWith('/')) ?? 'git';
    // The whole of git's error output stays on the error for callers that need more than one line
    // (a push refused by the remote says why in its `remote:` lines).
    const stderr = redactUrls(String((error as { stderr?: string }).stderr ?? ''));
    throw Object.assign(new Error(redactUrls(`git ${verb} failed: ${why}`)), { stderr });
  }
}

/** git on a source (clone, fetch, rev-parse): the user's own config applies, credentials included. */
export function sourceGit(args: string[], cwd?: string): Promise<string> {
  return run(cwd ? ['-C', cwd, ...args] : args);
}

/**
 * git on a workspace: its .git must be a real directory, its config is rewritten clean first.
 * `env` adds variables for this one process (publishing passes the token's header this way).
 */
export async function workspaceGit(
  root: string,
  args: string[],
  env: Record<string, string> = {}
): Promise<string> {
  const dotGit = join(root, '.git');
  if (!lstatSync(dotGit, { throwIfNoEntry: false })?.isDirectory())
    throw new Error(`the workspace's .git at ${dotGit} is no longer a directory; the run replaced it`);
  writeCleanConfig(dotGit);
  return run([...SAFE, '--git-dir', dotGit, '--work-tree', root, ...args], {
    ...process.env,
    ...SAFE_ENV,
    ...env
  });
}

/** git init of a new workspace repository, with no template (no sample hooks). */
export async function initWorkspace(root: string): Promise<void> {
  mkdirSync(root, { recursive: true });
  await run([...SAFE, 'init', '--quiet', '--template=', root], { ...process.env, ...SAFE_ENV });
}

/**
 * Several git commands on a workspace in one child process (`a && b && …`: a run's workspace is
 * made and diffed with a few of them, and each process costs milliseconds on a busy machine), with
 * the same protections as workspaceGit. `init` first makes the repository.
 */
export async function workspaceGitAll(root: string, commands: string[][], init = false): Promise<string> {
  const dotGit = join(root, '.git');
  if (init) mkdirSync(root, { recursive: true });
  else if (!lstatSync(dotGit, { throwIfNoEntry: false })?.isDirectory())
    throw new Error(`the workspace's .git at ${dotGit} is no longer a directory; the run replaced it`);
  else writeCleanConfig(dotGit);
  const quote = (arg: string) => `'${arg.replaceAll("'", `'\\''`)}'`;
  const script = [...(init ? [['init', '--quiet', '--template=']] : []), ...commands]
    .map(args => ['git', ...SAFE, ...args].map(quote).join(' '))
    .join(' && ');
  try {
    const { stdout } = await exec('/bin/sh', ['-c', script], {
      cwd: root,
      maxBuffer: 64 * 1024 * 1024,
      env: { ...process.env, ...SAFE_ENV, GIT_DIR: dotGit, GIT_WORK_TREE: root }
    });
    return stdout;
  } catch (error) {
    const why = gitReason(error);
    throw new Error(redactUrls(`git ${commands.map(c => c[0]).join(', ')} failed: ${why}`));
  }
}

/** Replaces a file without following a symbolic link the run may have put in its place. */
export function replaceFile(path: string, text: string): void {
  try {
    unlinkSync(path);
  } catch {
    // not there
  }
  writeFileSync(path, text, { flag: 'wx', mode: 0o644 });
}

function writeCleanConfig(dotGit: string): void {
  replaceFile(
    join(dotGit, 'config'),
    '[core]\n\trepositoryformatversion = 0\n\tfilemode = true\n\tbare = false\n'
  );
}
