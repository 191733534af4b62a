// What the agent made, gathered once the wait is over: its final answer (and the structured
// output at its end), its artifacts, the pull request it opened, its changes as a patch file and
// a Markdown transcript, both written under RUNNER_TEMP. A service without the conversation or
// artifact endpoints leaves those parts empty with one notice; nothing here fails the step by
// itself (the caller decides what an invalid structured output means).

import * as core from '@actions/core';
import { mkdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Artifact, Conversation } from '../api/index.js';
import {
  type AgentRunClient,
  type Run,
  artifactsOf,
  finalAnswer,
  isUnsupported,
  structuredOutput
} from '../client/index.js';
import type { OutputSchema } from './output-schema.js';
import type { ReviewOutcome } from './review.js';
import { toJson } from './step-outputs.js';
import { renderTranscript } from './transcript-file.js';

/** GitHub keeps each step output under 1 MiB; the answer stays well below it with room for the rest. */
export const MAX_RESULT_BYTES = 512 * 1024;

export interface Produced {
  /** The final answer, cut to MAX_RESULT_BYTES. */
  result?: string;
  /** Whether `result` was cut. */
  resultCut?: boolean;
  /** The structured output, minified, when it matched the schema. */
  structured?: string;
  /** Why there is no structured output although a schema was given. */
  structuredProblem?: string;
  artifacts: Artifact[];
  /** Whether the record had an `artifacts` list at all (else the output stays empty). */
  artifactsListed: boolean;
  pullRequestUrl?: string;
  branch?: string;
  patchFile?: string;
  transcriptFile?: string;
  /** The pull request review posted from the findings (`review: inline`). */
  review?: ReviewOutcome;
  /** Why the review could not be posted. */
  reviewProblem?: string;
}

/** Cuts text to at most `limit` UTF-8 bytes without splitting a character. */
export function capText(text: string, limit = MAX_RESULT_BYTES): { text: string; cut: boolean } {
  const bytes = Buffer.from(text, 'utf8');
  if (bytes.length <= limit) return { text, cut: false };
  let end = limit;
  // Back up to the start of a character (continuation bytes are 10xxxxxx).
  while (end > 0 && (bytes[end]! & 0xc0) === 0x80) end--;
  return { text: bytes.subarray(0, end).toString('utf8'), cut: true };
}

/** Whether a FILE artifact holds the run's changes as a diff. */
export function isPatchArtifact(artifact: Artifact): boolean {
  if (artifact.artifact_type !== 'FILE') return false;
  const { mime_type: mime, filename, filepath } = artifact.data;
  const name = String(filename ?? filepath ?? '').toLowerCase();
  return mime === 'text/x-diff' || mime === 'text/x-patch' || /\.(patch|diff)$/.test(name);
}

/**
 * The run's current patch: the artifact named `changes.patch` (a run continued by follow-ups names
 * its earlier ones by turn), else the last patch listed (the newest: a service that keeps one per
 * turn under the same name lists the latest last).
 */
export function currentPatch(artifacts: Artifact[]): Artifact | undefined {
  const patches = artifacts.filter(isPatchArtifact);
  const named = patches.filter(artifact => String(artifact.data.filename ?? '') === 'changes.patch');
  return named.at(-1) ?? patches.at(-1);
}

/** The folder under RUNNER_TEMP that holds this run's files. */
function runFolder(runId: string): string {
  const dir = join(process.env.RUNNER_TEMP || tmpdir(), `agent-run-${runId.replace(/[^\w.-]/g, '_')}`);
  mkdirSync(dir, { recursive: true });
  return dir;
}

/** Reads and writes everything the run produced; `run` is its last record. */
export async function collectProduced(
  client: AgentRunClient,
  runId: string,
  run: Run | undefined,
  options: { prompt?: string; schema?: OutputSchema; signal?: AbortSignal; deadlineNote?: string }
): Promise<Produced> {
  const produced: Produced = { artifacts: artifactsOf(run), artifactsListed: Array.isArray(run?.artifacts) };
  const missing: string[] = [];

  const pullRequest = produced.artifacts.find(a => a.artifact_type === 'PULL_REQUEST');
  if (typeof pullRequest?.data.url === 'string') produced.pullRequestUrl = pullRequest.data.url;
  if (typeof pullRequest?.data.branch === 'string') produced.branch = pullRequest.data.branch;

  let conversation: Conversation | undefined;
  try {
    conversation = await client.runs.conversation(runId, { signal: options.signal });
  } catch (error) {
    if (!isUnsupported(error)) throw error;
    missing.push(
      `no conversation endpoint (${(error as Error).message}): result, structured-output and transcript-file are empty`
    );
  }
  if (conversation) {
    const answer = finalAnswer(conversation);
    if (answer !== undefined) {
      const capped = capText(answer);
      produced.result = capped.text;
      produced.resultCut = capped.cut;
      if (capped.cut) {
        core.notice(
          `The agent's answer is ${Buffer.byteLength(answer)} bytes; the result output holds its first ${MAX_RESULT_BYTES}.`
        );
      }
    }
    if (options.schema) {
      // The whole answer is searched: the object sits at its end, which a cut would lose.
      const checked = structuredOutput(answer, options.schema.check);
      if (!checked.ok) produced.structuredProblem = checked.reason;
      else {
        produced.structured = toJson(checked.value);
        if (produced.structured === undefined)
          produced.structuredProblem = 'the JSON object is nested too deeply to write as an output';
      }
    }
    const file = join(runFolder(runId), 'transcript.md');
    writeFileSync(file, renderTranscript(conversation, { runId, run, prompt: options.prompt }));
    produced.transcriptFile = file;
  }

  const patch = currentPatch(produced.artifacts);
  const uid = patch?.data.artifact_uid;
  if (typeof uid === 'string' && uid !== '') {
    try {
      const downloaded = await client.artifacts.download(uid, { signal: options.signal });
      const file = join(runFolder(runId), 'changes.patch');
      writeFileSync(file, downloaded.bytes);
      produced.patchFile = file;
    } catch (error) {
      if (!isUnsupported(error)) throw error;
      missing.push(`no artifact endpoint (${(error as Error).message}): patch-file is empty`);
    }
  }
  if (missing.length > 0) {
    core.notice(`This service does not offer everything the action reads: ${missing.join('; ')}.`);
  }
  return produced;
}

/** The same, where a failure to read costs only these outputs: a warning, never the step. */
export async function collectProducedSafely(
  ...args: Parameters<typeof collectProduced>
): Promise<Produced | undefined> {
  try {
    return await collectProduced(...args);
  } catch (error) {
    const options = args[3];
    const why =
      options.signal?.aborted && options.deadlineNote ? options.deadlineNote : (error as Error).message;
    core.warning(`Could not read what the run produced: ${why}`);
    return { artifacts: artifactsOf(args[2]), artifactsListed: Array.isArray(args[2]?.artifacts) };
  }
}
