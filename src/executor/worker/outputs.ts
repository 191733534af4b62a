// What a run hands back besides its state: the agent's final answer, its request usage and its
// changes as a patch. Each run gets an output folder under DATA_DIR/outputs/<run id>, outside the
// workspace (so nothing written there is part of the changes); a command agent finds it through
// AGENT_RESULT_FILE and AGENT_USAGE_FILE. The agent controls that folder, so its files are opened
// without following symbolic links, must be regular files with no other hard link, and are read
// only up to a limit: a link planted there cannot make the executor read (and publish) any other
// file of the machine.

import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import {
  constants,
  lstatSync,
  mkdirSync,
  promises as fs,
  readFileSync,
  realpathSync,
  rmSync,
  statSync
} from 'node:fs';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import type { AgentResult } from '../agents/types.js';
import type { RunStore, StoredRun } from '../store/types.js';

const exec = promisify(execFile);

/** A command agent's answer when it writes no result file: the end of its standard output. */
export const STDOUT_TAIL_BYTES = 64 * 1024;
/** Longest answer kept from AGENT_RESULT_FILE (the action caps it further for its outputs). */
export const MAX_RESULT_BYTES = 1024 * 1024;
const MAX_USAGE_BYTES = 64 * 1024;
const PATCH_NAME = 'changes.patch';

export interface RunOutputs {
  dir: string;
  /** Variables for the agent's process. */
  env: { AGENT_RESULT_FILE: string; AGENT_USAGE_FILE: string };
}

/** Makes the run's (empty) output folder. */
export function prepareOutputs(dataDir: string, runId: string): RunOutputs {
  const dir = join(dataDir, 'outputs', runId);
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  return {
    dir: realpathSync(dir),
    env: { AGENT_RESULT_FILE: join(dir, 'result.md'), AGENT_USAGE_FILE: join(dir, 'usage.json') }
  };
}

/**
 * The commit the workspace starts at: the patch is taken from it, so agent commits are included.
 * Read from git's files when they say it plainly (a detached worktree's HEAD, or a loose branch
 * ref), which spares a process on every run; asked of git otherwise.
 */
export async function startCommit(root: string): Promise<string> {
  try {
    let gitDir = join(root, '.git');
    if (statSync(gitDir).isFile())
      gitDir = resolve(root, /^gitdir:\s*(.+)$/m.exec(readFileSync(gitDir, 'utf8'))![1]!.trim());
    const head = readFileSync(join(gitDir, 'HEAD'), 'utf8').trim();
    const ref = /^ref:\s*(refs\/heads\/\S+)$/.exec(head)?.[1];
    const commit = ref ? readFileSync(join(gitDir, ref), 'utf8').trim() : head;
    if (/^(?:[0-9a-f]{40}|[0-9a-f]{64})$/.test(commit)) return commit;
  } catch {
    // a layout this does not read (packed refs, say): git knows
  }
  const { stdout } = await exec('git', ['-c', `safe.directory=${root}`, '-C', root, 'rev-parse', 'HEAD']);
  return stdout.trim();
}

type Read = { kind: 'absent' } | { kind: 'refused'; why: string } | { kind: 'read'; data: Buffer };

/**
 * Reads a file the agent may have written in its output folder: never through a symbolic link
 * (O_NOFOLLOW on the file, the folder itself checked to still be the folder made for the run),
 * only a regular file, at most `max` bytes (the rest is left out).
 */
export async function readOutputFile(outputs: RunOutputs, path: string, max: number): Promise<Read> {
  let folder;
  try {
    folder = lstatSync(outputs.dir);
  } catch {
    return { kind: 'absent' };
  }
  if (!folder.isDirectory() || realpathSync(outputs.dir) !== outputs.dir)
    return { kind: 'refused', why: 'the output folder was replaced' };
  let handle;
  try {
    handle = await fs.open(path, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') return { kind: 'absent' };
    if (code === 'ELOOP') return { kind: 'refused', why: 'it is a symbolic link' };
    return { kind: 'refused', why: `it cannot be opened (${code ?? 'error'})` };
  }
  try {
    const stat = await handle.stat();
    if (!stat.isFile()) return { kind: 'refused', why: 'it is not a regular file' };
    // A hard link to another file (the database, say) is a regular file too: only a file the
    // agent wrote itself has no other name.
    if (stat.nlink > 1) return { kind: 'refused', why: 'it has other hard links' };
    const buffer = Buffer.alloc(Math.min(max, stat.size));
    const { bytesRead } = await handle.read(buffer, 0, buffer.length, 0);
    return { kind: 'read', data: buffer.subarray(0, bytesRead) };
  } finally {
    await handle.close();
  }
}

export interface CollectOptions {
  store: RunStore;
  run: StoredRun;
  outputs: RunOutputs;
  /**
   * The workspace's checkout, the commit it started at, and whether its diff saw changed files
   * (false spares the patch's git processes when HEAD did not move either); absent when no
   * workspace was made.
   */
  workspace?: { root: string; base: string; changed: boolean };
  maxPatchBytes: number;
  record: (kind: string, data: Record<string, unknown>) => Promise<void>;
}

/**
 * After the agent: records its final answer (a `result` event), stores its usage and its changes
 * (the `changes.patch` artifact), then removes the output folder. Answers a failure when the
 * patch is over the limit.
 */
export async function collectOutputs(options: CollectOptions): Promise<AgentResult | undefined> {
  const { store, run, outputs, record } = options;
  try {
    await collectResult(options);
    const usage = await readOutputFile(outputs, outputs.env.AGENT_USAGE_FILE, MAX_USAGE_BYTES + 1);
    if (usage.kind === 'refused')
      await record('notice', { text: `AGENT_USAGE_FILE was not read: ${usage.why}` });
    if (usage.kind === 'read') {
      const parsed = parseUsage(usage.data);
      if (typeof parsed === 'string') await record('notice', { text: `AGENT_USAGE_FILE ignored: ${parsed}` });
      else await store.setRequestUsage(run.run_id, JSON.stringify(parsed));
    }
    return options.workspace ? await collectPatch(options, options.workspace) : undefined;
  } finally {
    rmSync(outputs.dir, { recursive: true, force: true });
  }
}

async function collectResult({ store, run, outputs, record }: CollectOptions): Promise<void> {
  const file = await readOutputFile(outputs, outputs.env.AGENT_RESULT_FILE, MAX_RESULT_BYTES);
  if (file.kind === 'refused') {
    await record('notice', { text: `AGENT_RESULT_FILE was not read: ${file.why}` });
  }
  if (file.kind === 'read') {
    await record('result', { text: file.data.toString('utf8'), source: 'result_file' });
    return;
  }
  const events = await store.listEvents(run.run_id);
  if (events.some(event => event.kind === 'result')) return;
  const stdout = events
    .filter(event => event.kind === 'output' && event.stream === 'stdout')
    .map(event => String(event.text ?? ''))
    .join('');
  if (stdout.trim() === '') return;
  const bytes = Buffer.from(stdout, 'utf8');
  const tail = bytes.length > STDOUT_TAIL_BYTES ? bytes.subarray(bytes.length - STDOUT_TAIL_BYTES) : bytes;
  // A cut in the middle of a character leaves replacement characters at the start: drop them.
  await record('result', { text: tail.toString('utf8').replace(/^\uFFFD+/, ''), source: 'stdout' });
}

/** The usage file's object, or why it was ignored. */
function parseUsage(data: Buffer): Record<string, unknown> | string {
  if (data.length > MAX_USAGE_BYTES) return `it is over ${MAX_USAGE_BYTES} bytes`;
  try {
    const value: unknown = JSON.parse(data.toString('utf8'));
    if (value !== null && typeof value === 'object' && !Array.isArray(value))
      return value as Record<string, unknown>;
    return 'expected a JSON object such as {"inference_cost": 0.12}';
  } catch {
    return 'it is not valid JSON; expected a JSON object such as {"inference_cost": 0.12}';
  }
}

/**
 * The full `git diff --binary` from the start commit to everything in the workspace now (agent
 * commits, staged, unstaged and new files), written by git straight to a file: never cut.
 */
async function collectPatch(
  { store, run, outputs, maxPatchBytes, record }: CollectOptions,
  workspace: { root: string; base: string; changed: boolean }
): Promise<AgentResult | undefined> {
  if (!workspace.changed && (await startCommit(workspace.root)) === workspace.base) return undefined;
  const patch = join(outputs.dir, `.${randomUUID()}.patch`);
  // The workspace belongs to the run's user when the executor is root: git must not refuse it.
  const owner = `safe.directory=${workspace.root}`;
  await exec('git', ['-c', owner, '-C', workspace.root, 'add', '--all']);
  await exec('git', [
    '-c',
    owner,
    '-C',
    workspace.root,
    'diff',
    '--cached',
    '--binary',
    '--no-color',
    '--no-ext-diff',
    '--no-renames',
    `--output=${patch}`,
    workspace.base
  ]);
  const size = (await fs.stat(patch)).size;
  if (size === 0) return undefined;
  if (size > maxPatchBytes) {
    return {
      state: 'FAILED',
      error_code: 'patch_too_large',
      status_message: `the run's changes make a patch of ${size} bytes, over the limit of ${maxPatchBytes} bytes (workspaces.max_patch); the changes were not kept`
    };
  }
  const uid = randomUUID();
  await store.addArtifact(
    {
      artifact_uid: uid,
      run_id: run.run_id,
      team: run.team,
      artifact_type: 'FILE',
      filepath: PATCH_NAME,
      filename: PATCH_NAME,
      mime_type: 'text/x-diff',
      size,
      description: 'The changes of the run: `git apply changes.patch` in a checkout of the source',
      created_at: new Date().toISOString()
    },
    await fs.readFile(patch)
  );
  await record('artifact', { artifact_uid: uid, filename: PATCH_NAME, mime_type: 'text/x-diff', size });
  return undefined;
}
