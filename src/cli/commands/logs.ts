// `agent-run logs` and `artifacts`: what a run said and did (its conversation where the service
// has one, else the executor's transcript), live with --follow; and what it made, downloadable.

import { mkdirSync, writeFileSync } from 'node:fs';
import { basename, join } from 'node:path';
import {
  type ProgressItem,
  RunFollower,
  artifactsOf,
  isTerminalState,
  isUnsupported,
  itemsFromConversation,
  itemsFromTranscript
} from '../../client/index.js';
import { EXIT } from '../exit.js';
import { table } from '../terminal.js';
import { type Command, clientFor, onePositional, parse } from './common.js';
import { counted } from '../../common/plural.js';

export const logsCommand: Command = {
  name: 'logs',
  summary: "print a run's conversation (or transcript)",
  help: `Usage: agent-run logs ID [--follow] [--json]

Prints what the run said and did: the agent's messages, each command with its exit code and
output, file changes and state changes. With --follow, keeps printing as the run goes on and
returns when it ends. --json prints the items one JSON object a line.

Example:
  agent-run logs 3f2a9c1e-0000-4000-8000-000000000000 --follow`,
  async run(argv, context) {
    const { values, positionals } = parse(argv, { follow: { type: 'boolean', short: 'f' } });
    const runId = onePositional(positionals, 'run ID');
    const { terminal } = context;
    const print = (items: ProgressItem[]) => {
      if (values.json) for (const item of items) terminal.json(item);
      else for (const line of terminal.renderItems(items, false)) terminal.out(line);
    };
    const client = clientFor(values, context);
    try {
      const run = await client.runs.get(runId);
      if (!values.follow || isTerminalState(run.state)) {
        print(await readItems(client, runId));
        return EXIT.ok;
      }
      const follower = new RunFollower(client, runId, {
        onItems: print,
        onNotice: note => terminal.note(note)
      });
      follower.start();
      try {
        await client.runs.wait(runId, {
          timeoutMs: 24 * 60 * 60_000,
          onStateChange: () => void follower.onStateChange().catch(() => undefined)
        });
      } finally {
        await follower.finish();
      }
      return EXIT.ok;
    } finally {
      client.close();
    }
  }
};

/** The conversation's items where the service has one, else the transcript's. */
async function readItems(client: import('../../client/index.js').AgentRunClient, runId: string) {
  try {
    return itemsFromConversation(await client.runs.conversation(runId));
  } catch (error) {
    if (!isUnsupported(error)) throw error;
  }
  const transcript = await client.runs.wholeTranscript(runId);
  return transcript ? itemsFromTranscript(transcript.events) : [];
}

export const artifactsCommand: Command = {
  name: 'artifacts',
  summary: 'list (and download) what a run produced',
  help: `Usage: agent-run artifacts ID [--download DIR] [--json]

Lists the run's artifacts (pull requests, files such as changes.patch, plans, screenshots).
With --download DIR, saves each downloadable one into DIR under its file name.

Example:
  agent-run artifacts 3f2a9c1e-0000-4000-8000-000000000000 --download ./out`,
  async run(argv, context) {
    const { values, positionals } = parse(argv, { download: { type: 'string' } });
    const runId = onePositional(positionals, 'run ID');
    const { terminal } = context;
    const client = clientFor(values, context);
    try {
      const artifacts = artifactsOf(await client.runs.get(runId));
      if (values.json) terminal.json(artifacts, 2);
      else if (artifacts.length === 0) terminal.out(`Run ${runId} has no artifacts.`);
      else {
        const rows = artifacts.map(a => [
          a.artifact_type,
          a.data.url ?? a.data.filepath ?? a.data.filename ?? a.data.title ?? '',
          a.data.artifact_uid ?? a.data.document_uid ?? '',
          a.data.branch ?? a.data.mime_type ?? ''
        ]);
        terminal.out(table(['TYPE', 'WHAT', 'UID', 'DETAIL'], rows));
      }
      if (values.download === undefined) return EXIT.ok;
      mkdirSync(values.download, { recursive: true });
      // Two artifacts of one name (a service that keeps a patch per turn): the newest, listed last,
      // keeps the name; earlier ones get a number.
      const names = artifacts.map(a =>
        safeName(a.data.filename ?? a.data.filepath ?? a.data.artifact_uid ?? '')
      );
      const taken = new Set<string>();
      const saved = new Map<number, string>();
      for (let i = artifacts.length - 1; i >= 0; i--)
        if (artifacts[i]!.data.artifact_uid) saved.set(i, uniqueName(names[i]!, taken));
      for (const [i, artifact] of artifacts.entries()) {
        const uid = artifact.data.artifact_uid;
        if (!uid) continue;
        const file = await client.artifacts.download(uid);
        const name = saved.get(i)!;
        const path = join(values.download, name);
        writeFileSync(path, file.bytes);
        terminal.note(
          `Saved ${artifact.artifact_type} ${uid} to ${path} (${counted(file.bytes.length, 'byte')}).`
        );
      }
      return EXIT.ok;
    } finally {
      client.close();
    }
  }
};

/** A file name the service chose, reduced to one harmless path segment. */
function safeName(name: string): string {
  const base = basename(name.replace(/\\/g, '/')).replace(/[^\w.+@-]/g, '_');
  return base === '' || /^\.+$/.test(base) ? 'artifact' : base;
}

function uniqueName(name: string, taken: Set<string>): string {
  let candidate = name;
  for (let i = 2; taken.has(candidate); i++) candidate = `${i}-${name}`;
  taken.add(candidate);
  return candidate;
}
