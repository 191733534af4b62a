// The executor's own git. Two kinds: git on a source (clone, fetch, rev-parse), where the user's
// own config applies; and git on a run's workspace after (or before) its agent, which runs outside
// the sandbox with the executor's privileges on files the agent wrote. The second never reads a
// `.git` of the workspace: it is always `--git-dir <the run's private git dir> --work-tree
// <workspace>` (see private-git.ts), with no system or global config, no inherited GIT_* variable
// (a push keeps the operator's ssh and certificate ones), a small environment that holds no
// secret of the executor (a push adds HOME, ssh and proxy variables and its token header), and
// settings on its command line that switch off everything a repository or a work tree could use
// to start a program: hooks, fsmonitor, external diff and textconv, submodule recursion,
// transports, ssh, credential helpers. `.gitattributes` of the work tree may still name
// `filter=`/`diff=` drivers, but no config git reads defines one, so none runs; the attributes
// that stay (eol, text, working-tree-encoding, ident) only transform bytes.

import { execFile, spawn } from 'node:child_process';
import { unlinkSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { promisify } from 'node:util';
import { systemProgram } from '../sandbox/user.js';
import { type RunIdentity, asRunUser, readerReason } from '../sandbox/run-files.js';

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
  const failed = error as { killed?: boolean; code?: unknown; signal?: unknown };
  // Killed by its timeout (execFile's, or `timeout -s KILL` in a script: exit 137) or its memory cap.
  if (failed.killed || failed.code === 137 || failed.signal === 'SIGKILL')
    return `killed: it ran longer than ${POST_RUN_TIMEOUT_MS / 60000} minutes or past its memory cap`;
  const lines = String((error as { stderr?: string }).stderr ?? '')
    .split('\n')
    .map(line => line.trim())
    .filter(line => line !== '' && !/^hint:/i.test(line));
  const reason = lines.find(line => /^fatal:/i.test(line)) ?? lines.find(line => /^error:/i.test(line));
  return reason ?? lines[0] ?? (error as Error).message.split('\n')[0]!;
}

/** Settings that win over anything a config could say (command-line `-c` has the last word). */
const HARDENED = [
  'core.hooksPath=/dev/null',
  'core.fsmonitor=false',
  'core.untrackedCache=false',
  'core.attributesFile=/dev/null',
  'core.excludesFile=/dev/null',
  'core.sshCommand=false',
  'core.askPass=',
  'credential.helper=',
  'diff.external=',
  'diff.ignoreSubmodules=all',
  'diff.submodule=short',
  'submodule.recurse=false',
  'status.submoduleSummary=false',
  'push.recurseSubmodules=no',
  'fetch.recurseSubmodules=false',
  'protocol.allow=never',
  'gc.auto=0',
  'maintenance.auto=false',
  'advice.addEmbeddedRepo=false',
  'user.name=agent-executor',
  'user.email=agent-executor@localhost',
  // Smaller mmap windows than git's defaults, so that git fits under POST_RUN_MEMORY_KB.
  'core.packedGitLimit=256m',
  'core.packedGitWindowSize=32m',
  'core.deltaBaseCacheLimit=64m',
  'core.bigFileThreshold=64m'
].flatMap(setting => ['-c', setting]);

/** What a workspace git process inherits of the executor's environment (no secret is among them). */
const LOCAL_VARIABLES = ['PATH', 'LANG', 'LC_ALL', 'LC_CTYPE', 'LC_MESSAGES', 'TZ', 'TMPDIR'];
/** What a push also needs: ssh's keys and agent, proxies and certificate bundles. */
const PUSH_VARIABLES = [
  'HOME',
  'SSH_AUTH_SOCK',
  'SSL_CERT_FILE',
  'SSL_CERT_DIR',
  'CURL_CA_BUNDLE',
  // The operator's own ssh and certificate settings for git: the only GIT_* variables passed.
  'GIT_SSH_COMMAND',
  'GIT_SSH',
  'GIT_SSL_CAINFO',
  'GIT_SSL_CAPATH',
  ...['http_proxy', 'https_proxy', 'all_proxy', 'no_proxy'].flatMap(name => [name, name.toUpperCase()])
];

/** A run's private git dir and the work tree it describes. */
export interface PrivateRepository {
  gitDir: string;
  workTree: string;
}

/**
 * The environment of a workspace git process: a few variables of the executor's (more for a
 * push), no other GIT_* one, then the protections and `extra` (a push's token header).
 */
export function privateEnv(
  repository: PrivateRepository,
  extra: Record<string, string> = {},
  push = false
): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const name of push ? [...LOCAL_VARIABLES, ...PUSH_VARIABLES] : LOCAL_VARIABLES)
    if (process.env[name] !== undefined) env[name] = process.env[name];
  return {
    ...env,
    GIT_CONFIG_NOSYSTEM: '1',
    GIT_CONFIG_GLOBAL: '/dev/null',
    GIT_TERMINAL_PROMPT: '0',
    GIT_NO_REPLACE_OBJECTS: '1',
    GIT_CEILING_DIRECTORIES: dirname(repository.workTree),
    GIT_DIR: repository.gitDir,
    GIT_WORK_TREE: repository.workTree,
    ...extra
  };
}

/** A fixed, generous bound on each workspace git process: it is killed after this long. */
export const POST_RUN_TIMEOUT_MS = 5 * 60 * 1000;
/** The address space a workspace git command may use (`ulimit -v`, in KiB): 2 GiB. */
export const POST_RUN_MEMORY_KB = 2 * 1024 * 1024;

/**
 * A host identity git writes files as (the files of a shared checkout belong to the run's user from
 * the start: no chown afterwards, no index stamps to mend). See asOwner.
 */
export interface FileOwner {
  uid: number;
  gid: number;
}

/**
 * The command line that runs git so that the files it makes belong to `owner`: the effective ids
 * are the owner's (the kernel gives new files the effective ids), the real ones stay root's, and it
 * has only the two capabilities that let it read and write what root can (the source's objects,
 * the executor's root-only directories), in its bounding set too: neither git nor anything it
 * starts can take back the rest, not even by setting its effective uid to its real one. With a real
 * uid of root, the kernel's access() checks, which git makes on its git dir, still pass.
 */
function asOwner(owner: FileOwner, args: string[]): [string, string[]] {
  const caps = '+dac_override,+dac_read_search';
  return [
    SETPRIV,
    [
      '--ruid=0',
      `--euid=${owner.uid}`,
      '--rgid=0',
      `--egid=${owner.gid}`,
      '--clear-groups',
      `--bounding-set=-all,${caps}`,
      `--inh-caps=${caps}`,
      `--ambient-caps=${caps}`,
      '--no-new-privs',
      '--',
      'git',
      ...args
    ]
  ];
}
const SETPRIV = systemProgram('setpriv');

async function run(
  args: string[],
  env?: NodeJS.ProcessEnv,
  cwd?: string,
  timeout = 0,
  owner?: FileOwner
): Promise<string> {
  try {
    const [program, programArgs] = owner ? asOwner(owner, args) : ['git', args];
    const { stdout } = await exec(program, programArgs, {
      maxBuffer: 64 * 1024 * 1024,
      env,
      cwd,
      timeout,
      killSignal: 'SIGKILL'
    });
    return stdout;
  } catch (error) {
    const code = (error as { code?: unknown }).code;
    if (owner && (code === 'ENOENT' || code === 'EACCES'))
      throw new Error(
        `git ${args.includes('read-tree') ? 'read-tree' : 'command'} could not start as the run's user: ${SETPRIV} is missing or not executable (${code}); install util-linux (\`apt-get install util-linux\`)`
      );
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
 * git on a workspace through the run's private git dir. `env` adds variables for this one process
 * (publishing passes the token's header this way, with `push` set so that ssh and proxies work).
 */
export function privateGit(
  repository: PrivateRepository,
  args: string[],
  options: { env?: Record<string, string>; push?: boolean; owner?: FileOwner } = {}
): Promise<string> {
  return run(
    [...HARDENED, '--git-dir', repository.gitDir, '--work-tree', repository.workTree, ...args],
    privateEnv(repository, options.env, options.push),
    // Never the workspace: a relative path git meets is then not the agent's.
    repository.gitDir,
    POST_RUN_TIMEOUT_MS,
    options.owner
  );
}

/**
 * Several git commands on a workspace in one child process (`a && b && …`: each process costs
 * milliseconds on a busy machine), with the same protections as privateGit.
 */
export async function privateGitAll(repository: PrivateRepository, commands: string[][]): Promise<string> {
  // Each git under an address-space cap and killed by `timeout` (the shell's own kill would leave
  // its git running).
  const seconds = String(POST_RUN_TIMEOUT_MS / 1000);
  const script = [
    `ulimit -v ${POST_RUN_MEMORY_KB}`,
    ...commands.map(args =>
      ['timeout', '-s', 'KILL', seconds, 'git', ...HARDENED, ...args].map(quote).join(' ')
    )
  ].join(' && ');
  try {
    const { stdout } = await exec('/bin/sh', ['-c', script], {
      cwd: repository.gitDir,
      maxBuffer: 64 * 1024 * 1024,
      env: privateEnv(repository)
    });
    return stdout;
  } catch (error) {
    // git names what it refused in `error:` lines before its `fatal:` one (`invalid path '.GIT/x'`).
    const errors = String((error as { stderr?: string }).stderr ?? '')
      .split('\n')
      .map(line => line.trim())
      .filter(line => /^error:/i.test(line))
      .slice(0, 3);
    const why = [...new Set([...errors, gitReason(error)])].join('; ');
    throw new Error(redactUrls(`git ${commands.map(c => c[0]).join(', ')} failed: ${why}`));
  }
}

/** `arg` as one word of a shell command. */
export function quote(arg: string): string {
  return `'${arg.replaceAll("'", `'\\''`)}'`;
}

/** A git command with the protections, as a line of a shell script (for runTreeGit's own lines). */
export function gitLine(args: string[]): string {
  return ['git', ...HARDENED, ...args].map(quote).join(' ');
}

/** Where a run's files are and who may read them: what git on a run's work tree needs. */
export interface RunTree {
  repository: PrivateRepository;
  /** Object stores the private git dir borrows (shown read-only). */
  borrowed: string[];
  identity: RunIdentity;
}

/**
 * git commands on a run's work tree (`a && b && …`) run as the run's user in the reader sandbox
 * (sandbox/run-files.ts): it sees the work tree (read-only unless `writeTree`), the private git
 * dir (the run user's, writable) and the borrowed objects, nothing else of the host. What git
 * prints is answered as bytes, at most `maxStdout` of them (`stopPastMax` ends git there; else the
 * rest is counted in `bytes`). Throws, naming git's reason, when a command fails.
 */
export async function runTreeGit(
  tree: RunTree,
  /** git's arguments per command; a string is a shell command of our own, used as written. */
  commands: (string[] | string)[],
  options: {
    /** The commands as one pipeline (`a | b | …`, failing when any fails) instead of `a && b`. */
    pipeline?: boolean;
    maxStdout?: number;
    stopPastMax?: boolean;
    /** The work tree writable, and git started at its top (`git apply` writes paths from there). */
    writeTree?: boolean;
    stdin?: Buffer;
  } = {}
): Promise<{ stdout: Buffer; bytes: number }> {
  const { repository } = tree;
  const line = (command: string[] | string) => (typeof command === 'string' ? command : gitLine(command));
  const script = options.pipeline
    ? `set -o pipefail; ${commands.map(line).join(' | ')}`
    : commands.map(line).join(' && ');
  const env: Record<string, string> = {};
  for (const [name, value] of Object.entries(privateEnv(repository)))
    if (value !== undefined && name !== 'PATH' && name !== 'TMPDIR') env[name] = value;
  const result = await asRunUser(tree.identity, {
    read: [...tree.borrowed, ...(options.writeTree ? [] : [repository.workTree])],
    write: [repository.gitDir, ...(options.writeTree ? [repository.workTree] : [])],
    // Never the work tree unless it is written: a relative path git meets is then not the agent's.
    cwd: options.writeTree ? repository.workTree : repository.gitDir,
    program: options.pipeline ? '/bin/bash' : '/bin/sh',
    args: ['-c', script],
    env,
    stdin: options.stdin,
    maxStdout: options.maxStdout ?? 64 * 1024 * 1024,
    stopPastMax: options.stopPastMax,
    timeoutMs: POST_RUN_TIMEOUT_MS,
    memoryKb: POST_RUN_MEMORY_KB
  });
  const stopped = options.stopPastMax && result.stdoutBytes > result.stdout.length;
  if (result.code !== 0 && !stopped) {
    const errors = result.stderr
      .split('\n')
      .map(line => line.trim())
      .filter(line => /^error:/i.test(line))
      .slice(0, 3);
    const fatal = result.timedOut
      ? `killed: it ran longer than ${POST_RUN_TIMEOUT_MS / 60000} minutes`
      : result.signal === 'SIGKILL'
        ? 'killed: past its memory cap'
        : (result.stderr.split('\n').find(line => /^fatal:/i.test(line.trim())) ?? readerReason(result));
    const why = [...new Set([...errors, fatal.trim()])].join('; ');
    const names = commands.map(c => (typeof c === 'string' ? c.split(' ')[0] : c[0]));
    throw new Error(redactUrls(`git ${names.join(', ')} failed: ${why}`));
  }
  return { stdout: result.stdout, bytes: result.stdoutBytes };
}

/**
 * The index entries of the private git dir that are submodules (gitlinks, mode 160000), read as a
 * stream: a large repository's index listing is never held whole in memory.
 */
export function privateGitlinks(repository: PrivateRepository): Promise<string[]> {
  return new Promise((resolve, reject) => {
    const child = spawn('git', [...HARDENED, '--git-dir', repository.gitDir, 'ls-files', '--stage', '-z'], {
      cwd: repository.gitDir,
      env: privateEnv(repository),
      stdio: ['ignore', 'pipe', 'pipe']
    });
    const links: string[] = [];
    let rest = Buffer.alloc(0);
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => {
      rest = Buffer.concat([rest, chunk]);
      for (let end = rest.indexOf(0); end >= 0; end = rest.indexOf(0)) {
        // `<mode> <object> <stage>\t<path>`
        const entry = rest.subarray(0, end).toString('utf8');
        rest = rest.subarray(end + 1);
        if (entry.startsWith('160000 ')) links.push(entry.slice(entry.indexOf('\t') + 1));
      }
    });
    child.stderr.on('data', chunk => (stderr += String(chunk)));
    child.on('error', reject);
    child.on('close', code =>
      code === 0
        ? resolve(links)
        : reject(new Error(`git ls-files failed: ${gitReason({ stderr }) || `exit code ${code}`}`))
    );
  });
}

/** Replaces a file without following a symbolic link the run may have put in its place. */
export function replaceFile(path: string, text: string | Buffer): void {
  try {
    unlinkSync(path);
  } catch {
    // not there
  }
  writeFileSync(path, text, { flag: 'wx', mode: 0o644 });
}
