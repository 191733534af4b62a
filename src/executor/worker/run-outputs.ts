// What a run hands back besides its state: the agent's final answer, its request usage and its
// changes as a patch. Each run gets an output folder under DATA_DIR/outputs/<run id>, outside the
// workspace (so nothing written there is part of the changes); a command agent finds it through
// AGENT_RESULT_FILE and AGENT_USAGE_FILE. The agent controls that folder, so the executor never
// opens it: its files are read by the run's own user in the reader sandbox (sandbox/run-files.ts),
// which shows that folder alone; they must be regular files with no other hard link and are read
// only up to a limit, so a link planted there cannot make the executor read (and publish) any
// other file of the machine.

import { randomUUID } from 'node:crypto';
import { lchownSync, mkdirSync, realpathSync } from 'node:fs';
import { join } from 'node:path';
import { type AgentOutcome, patchTooLarge } from '../runs/outcomes.js';
import { type RunIdentity, asRunUser, readerReason } from '../sandbox/run-files.js';
import type { ArtifactRename, StoredRun, Stores } from '../store/types.js';
import { removeTree } from '../workspace/remove.js';
import { redactSecrets } from './orchestrate.js';

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
  /** Who reads the folder for the executor: the run's user (sandbox/run-files.ts). */
  identity: RunIdentity;
}

/** Makes the run's (empty) output folder, the run user's from the start. */
export function prepareOutputs(dataDir: string, runId: string, identity: RunIdentity): RunOutputs {
  const dir = join(dataDir, 'outputs', runId);
  removeTree(dir);
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  if (identity.user) lchownSync(dir, identity.user.uid, identity.user.gid);
  return {
    dir: realpathSync(dir),
    env: { AGENT_RESULT_FILE: join(dir, 'result.md'), AGENT_USAGE_FILE: join(dir, 'usage.json') },
    identity
  };
}

type Read = { kind: 'absent' } | { kind: 'refused'; why: string } | { kind: 'read'; data: Buffer };

/**
 * What the reader says of each file before its bytes: the same refusals the executor made when it
 * opened the files itself (a link, not a regular file, a file with other names), now made by the
 * run's user in the reader sandbox, where a link could reach nothing of the host anyway. For each
 * `path max` pair it prints one line, `<verdict> <bytes that follow>`, then those bytes.
 */
const READ_SCRIPT = [
  'while [ $# -ge 2 ]; do',
  '  f=$1; max=$2; shift 2',
  '  if [ -L "$f" ]; then echo "link 0"',
  '  elif [ ! -e "$f" ]; then echo "absent 0"',
  '  elif [ ! -f "$f" ]; then echo "special 0"',
  '  elif [ "$(stat -c %h -- "$f")" -gt 1 ]; then echo "linked 0"',
  '  else',
  '    size=$(stat -c %s -- "$f") || exit 3',
  '    [ "$size" -gt "$max" ] && size=$max',
  '    echo "read $size"; head -c "$size" -- "$f" || exit 3',
  '  fi',
  'done'
].join('\n');
const REFUSALS: Record<string, string> = {
  link: 'it is a symbolic link',
  special: 'it is not a regular file',
  linked: 'it has other hard links'
};

/**
 * Reads files the agent may have written in its output folder, in one process as the run's user
 * in the reader sandbox (run-files.ts): never through a symbolic link, only a regular file with no
 * other name, at most `max` bytes of each (the rest is left out).
 */
export async function readOutputFiles(
  outputs: RunOutputs,
  files: { path: string; max: number }[]
): Promise<Read[]> {
  const result = await asRunUser(outputs.identity, {
    read: [outputs.dir],
    program: '/bin/sh',
    args: ['-c', READ_SCRIPT, 'sh', ...files.flatMap(file => [file.path, String(file.max)])],
    maxStdout: files.reduce((sum, file) => sum + file.max + 32, 0),
    // A FIFO planted as a file is refused before it is opened; nothing here can block for long.
    timeoutMs: 30_000
  });
  const failed = (): Read => ({ kind: 'refused', why: `it cannot be read (${readerReason(result)})` });
  const reads: Read[] = [];
  let at = 0;
  for (const _ of files) {
    const newline = result.stdout.indexOf(0x0a, at);
    if (newline < 0) {
      reads.push(failed());
      continue;
    }
    const [verdict = '', count = '0'] = result.stdout.toString('utf8', at, newline).split(' ');
    const bytes = Number(count);
    at = newline + 1;
    if (verdict === 'absent') reads.push({ kind: 'absent' });
    else if (REFUSALS[verdict]) reads.push({ kind: 'refused', why: REFUSALS[verdict]! });
    else if (verdict === 'read' && Number.isSafeInteger(bytes) && at + bytes <= result.stdout.length) {
      reads.push({ kind: 'read', data: result.stdout.subarray(at, at + bytes) });
      at += bytes;
    } else reads.push(failed());
  }
  return reads;
}

/** One file of the output folder (readOutputFiles for one). */
export async function readOutputFile(outputs: RunOutputs, path: string, max: number): Promise<Read> {
  return (await readOutputFiles(outputs, [{ path, max }]))[0]!;
}

export interface CollectOptions {
  stores: Pick<Stores, 'transcript' | 'artifacts'>;
  run: StoredRun;
  outputs: RunOutputs;
  /**
   * Whether the workspace's diff saw changed files (the work tree against the start commit, so
   * agent commits count), and how to write its patch; absent when no workspace was made.
   */
  workspace?: { changed: boolean; patch(max: number): Promise<{ bytes: Buffer; size: number }> };
  maxPatchBytes: number;
  record: (kind: string, data: Record<string, unknown>) => Promise<void>;
  /** The run's secrets (an orchestrate turn's credential): replaced in the patch it keeps. */
  secrets?: ReadonlySet<string>;
}

/**
 * After the agent: records its final answer (a `result` event), stores its usage and its changes
 * (the `changes.patch` artifact), then removes the output folder. Answers a failure when the
 * patch is over the limit.
 */
export async function collectOutputs(options: CollectOptions): Promise<AgentOutcome | undefined> {
  const { stores, run, outputs, record } = options;
  try {
    // Both files in one reader: the answer, and the usage (one byte past its limit, to say so).
    const [result, usage] = (await readOutputFiles(outputs, [
      { path: outputs.env.AGENT_RESULT_FILE, max: MAX_RESULT_BYTES },
      { path: outputs.env.AGENT_USAGE_FILE, max: MAX_USAGE_BYTES + 1 }
    ])) as [Read, Read];
    await collectResult(options, result);
    if (usage.kind === 'refused')
      await record('notice', { text: `AGENT_USAGE_FILE was not read: ${usage.why}` });
    if (usage.kind === 'read') {
      const parsed = parseUsage(usage.data);
      if (typeof parsed === 'string') await record('notice', { text: `AGENT_USAGE_FILE ignored: ${parsed}` });
      else await stores.artifacts.setRequestUsage(run.run_id, parsed.json);
    }
    return options.workspace ? await collectPatch(options, options.workspace) : undefined;
  } finally {
    removeTree(outputs.dir);
  }
}

async function collectResult({ stores, run, record }: CollectOptions, file: Read): Promise<void> {
  if (file.kind === 'refused') {
    await record('notice', { text: `AGENT_RESULT_FILE was not read: ${file.why}` });
  }
  if (file.kind === 'read') {
    await record('result', { text: file.data.toString('utf8'), source: 'result_file' });
    return;
  }
  // Page through the transcript keeping only the last STDOUT_TAIL_BYTES of stdout, so a long
  // transcript is never held whole.
  let bytes = Buffer.alloc(0);
  let printed = false;
  for (let after = 0; ;) {
    const page = await stores.transcript.listEvents(run.run_id, { after, limit: 50 });
    if (page.some(event => event.kind === 'result')) return;
    const text = page
      .filter(event => event.kind === 'output' && event.stream === 'stdout')
      .map(event => String(event.text ?? ''))
      .join('');
    printed ||= text.trim() !== '';
    bytes = Buffer.concat([bytes, Buffer.from(text, 'utf8')]);
    if (bytes.length > STDOUT_TAIL_BYTES) bytes = bytes.subarray(bytes.length - STDOUT_TAIL_BYTES);
    if (page.length < 50) break;
    after = page.at(-1)!.seq;
  }
  if (!printed) return;
  const tail = bytes;
  // A cut in the middle of a character leaves replacement characters at the start: drop them.
  await record('result', { text: tail.toString('utf8').replace(/^\uFFFD+/, ''), source: 'stdout' });
}

/**
 * The usage file's object as JSON to store, or why it was ignored. JSON.parse reads any depth but
 * JSON.stringify overflows the stack past a few thousand levels: such a file is refused here, where
 * before the error skipped the rest of the outputs step (the patch, and workspaces.max_patch with it).
 */
function parseUsage(data: Buffer): { json: string } | string {
  if (data.length > MAX_USAGE_BYTES) return `it is over ${MAX_USAGE_BYTES} bytes`;
  let value: unknown;
  try {
    value = JSON.parse(data.toString('utf8'));
  } catch {
    return 'it is not valid JSON; expected a JSON object such as {"inference_cost": 0.12}';
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value))
    return 'expected a JSON object such as {"inference_cost": 0.12}';
  try {
    return { json: JSON.stringify(value) };
  } catch {
    return 'it is nested too deep to store';
  }
}

/**
 * The full `git diff --binary` from the start commit to everything in the workspace now (agent
 * commits, staged, unstaged and new files), printed by git as the run's user (never cut: past
 * the limit it is only counted, and the run fails saying its size).
 */
async function collectPatch(
  { stores, run, maxPatchBytes, record, secrets }: CollectOptions,
  workspace: NonNullable<CollectOptions['workspace']>
): Promise<AgentOutcome | undefined> {
  const renamed = await earlierPatches(stores, run);
  // No changes since the start commit (a later turn undid them): no `changes.patch` is right.
  const made = workspace.changed ? await workspace.patch(maxPatchBytes) : { bytes: Buffer.alloc(0), size: 0 };
  // A secret the agent wrote into a file is replaced in the patch too (one line's text changes, no
  // line is added or removed, so the patch still applies).
  const bytes =
    secrets && [...secrets].some(secret => made.bytes.includes(secret))
      ? Buffer.from(redactSecrets(made.bytes.toString('utf8'), secrets))
      : made.bytes;
  const size = bytes === made.bytes ? made.size : bytes.length;
  if (size === 0 || size > maxPatchBytes) {
    await stores.artifacts.renameArtifacts(run.run_id, renamed);
    return size === 0 ? undefined : patchTooLarge(size, maxPatchBytes);
  }
  const uid = randomUUID();
  await stores.artifacts.addArtifact(
    {
      artifact_uid: uid,
      run_id: run.run_id,
      team: run.team,
      artifact_type: 'FILE',
      filepath: PATCH_NAME,
      filename: PATCH_NAME,
      mime_type: 'text/x-diff',
      size,
      description:
        'Every change of the run since its start commit: `git apply changes.patch` in a checkout of the source',
      created_at: new Date().toISOString()
    },
    bytes,
    renamed
  );
  await record('artifact', { artifact_uid: uid, filename: PATCH_NAME, mime_type: 'text/x-diff', size });
  return undefined;
}

/**
 * The run's earlier `changes.patch` (a run continued by follow-ups makes one each time it ends),
 * each renamed `changes-turn-N.patch` after the last turn it covered (the `turn` event before its
 * `artifact` event; turn 1 when none): the run keeps one `changes.patch`, always the newest, which
 * covers everything since the start commit.
 */
async function earlierPatches(
  { transcript, artifacts }: Pick<Stores, 'transcript' | 'artifacts'>,
  run: StoredRun
): Promise<ArtifactRename[]> {
  const earlier = (await artifacts.listArtifacts(run.team, run.run_id)).filter(
    artifact => artifact.artifact_type === 'FILE' && artifact.filename === PATCH_NAME
  );
  if (earlier.length === 0) return [];
  const events = await transcript.listEvents(run.run_id, { kinds: ['turn', 'artifact'] });
  return earlier.map(artifact => {
    let turn = 1;
    for (const event of events) {
      if (event.kind === 'turn' && typeof event.turn === 'number') turn = event.turn;
      if (event.kind === 'artifact' && event.artifact_uid === artifact.artifact_uid) break;
    }
    return { artifact_uid: artifact.artifact_uid, filename: `changes-turn-${turn}.patch` };
  });
}
