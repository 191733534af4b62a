// Reading what a run said, did and made: tolerant parsers of the conversation, transcript and
// artifact shapes, and a follower that turns either source into progress items while a run goes
// on. The follower asks for new transcript events with `after=SEQ` and `Prefer: wait=N`; a
// server that holds such reads gets one request per event, one that does not is read only when
// the run changes state and at the end, so an idle run costs no more requests than waiting does.

import type {
  Artifact,
  ArtifactDetails,
  Conversation,
  ConversationBlock,
  ConversationMessage,
  ConversationStep,
  Transcript,
  TranscriptEntry
} from '../api/index.js';
import { type AnyEvent, type EventOf, describeValue, known, otherKind } from '../api/index.js';
import { AgentRunError } from './errors.js';
import { ParseError, type Run } from './parse.js';

export interface TranscriptOptions {
  signal?: AbortSignal;
  /** Only events with a larger `seq`. */
  after?: number;
  /** Asks the server to hold the answer up to this many seconds until a newer event exists. */
  waitSeconds?: number;
  /** At most this many events in the answer (the executor allows 1 to 1000; its default is 100). */
  limit?: number;
}

export interface TranscriptRead {
  transcript: Transcript;
  /** The server applied `Prefer: wait`. */
  held: boolean;
}

export interface DownloadedArtifact {
  details: ArtifactDetails;
  bytes: Buffer;
  contentType?: string;
}

const isObject = (value: unknown): value is Record<string, unknown> =>
  value !== null && typeof value === 'object' && !Array.isArray(value);

/** Whether an error means "this service has no such endpoint" (404, 405, 422 operation_not_supported). */
export function isUnsupported(error: unknown): boolean {
  if (!(error instanceof AgentRunError)) return false;
  if (error.status === 404 || error.status === 405 || error.status === 501) return true;
  return error.status === 422 && error.errorCode === 'operation_not_supported';
}

export function parseConversation(value: unknown, what = 'conversation'): Conversation {
  if (!isObject(value)) throw new ParseError(`${what}: expected a JSON object, got ${describeValue(value)}`);
  if (!Array.isArray(value.steps)) {
    throw new ParseError(`${what}: expected a steps array, got ${describeValue(value.steps)}`);
  }
  return { ...value, steps: value.steps.filter(isObject).map(parseStep) };
}

function parseStep(step: Record<string, unknown>): ConversationStep {
  const messages = Array.isArray(step.messages) ? step.messages.filter(isObject) : [];
  const steps = Array.isArray(step.steps) ? step.steps.filter(isObject) : [];
  return { ...step, messages: messages.map(parseMessage), steps: steps.map(parseStep) };
}

function parseMessage(message: Record<string, unknown>): ConversationMessage {
  const content = Array.isArray(message.content) ? message.content : [];
  const blocks = content
    .map(block => (typeof block === 'string' ? { type: 'text', text: block } : block))
    .filter(isObject)
    .filter(block => typeof block.type === 'string') as ConversationBlock[];
  return { ...message, role: typeof message.role === 'string' ? message.role : 'unknown', content: blocks };
}

/** The transcript answer, or undefined when the body is not the executor's JSON form (a redirect, say). */
export function parseTranscript(body: string): Transcript | undefined {
  let value: unknown;
  try {
    value = JSON.parse(body);
  } catch {
    return undefined;
  }
  if (!isObject(value) || !Array.isArray(value.events)) return undefined;
  const events = value.events.filter(
    (event): event is TranscriptEntry => isObject(event) && typeof event.seq === 'number'
  );
  const transcript: Transcript = {
    run_id: typeof value.run_id === 'string' ? value.run_id : undefined,
    state: typeof value.state === 'string' ? value.state : undefined,
    events
  };
  if (typeof value.has_more === 'boolean') transcript.has_more = value.has_more;
  if (typeof value.next_after === 'number') transcript.next_after = value.next_after;
  return transcript;
}

/** A run record's `artifacts`, with malformed items dropped and unknown types kept. */
export function artifactsOf(run: Run | undefined): Artifact[] {
  const list = run?.artifacts;
  if (!Array.isArray(list)) return [];
  return list
    .filter(isObject)
    .filter(item => typeof item.artifact_type === 'string')
    .map(item => ({ ...item, data: isObject(item.data) ? item.data : {} }) as Artifact);
}

export function parseArtifactDetails(value: unknown, what: string): ArtifactDetails {
  if (!isObject(value)) throw new ParseError(`${what}: expected a JSON object, got ${describeValue(value)}`);
  return value as ArtifactDetails;
}

/** The download URL of an artifact's details, wherever the service put it. */
export function downloadUrlOf(details: ArtifactDetails): string | undefined {
  for (const candidate of [
    details.download_url,
    details.url,
    details.data?.download_url,
    details.data?.url
  ]) {
    if (typeof candidate === 'string' && candidate !== '') return candidate;
  }
  return undefined;
}

/** One thing worth showing of a run's progress, from either the transcript or the conversation. */
export type ProgressItem =
  | {
      type: 'text';
      role: string;
      text: string;
      /** The run's final answer (a `result` event). */ final?: true;
    }
  | { type: 'command'; command: string; exitCode?: number | null; output?: string }
  | { type: 'output'; text: string }
  | { type: 'file'; path: string; change: string }
  | { type: 'state'; state: string; message?: string }
  | {
      type: 'event';
      text: string;
      /** The event begins a later turn of the run (a `turn` event). */ turn?: true;
    };

const str = (value: unknown): string | undefined => (typeof value === 'string' ? value : undefined);

/**
 * What has been shown of a turn of a run, so each fact is shown once: the final answer when a
 * message already said it, and a file change the diff repeats after the file's own event. A new
 * turn (a `turn` event, a user's message in a conversation) starts afresh: its answer and the
 * files it changed are shown even when an earlier turn showed the same.
 */
export class SeenItems {
  private readonly texts = new Set<string>();
  private readonly files = new Set<string>();

  /** The items not shown before, remembering them. */
  fresh(items: ProgressItem[]): ProgressItem[] {
    return items.filter(item => {
      if ((item.type === 'event' && item.turn) || (item.type === 'text' && item.role === 'user')) {
        this.texts.clear();
        this.files.clear();
      }
      if (item.type === 'text' && item.role === 'assistant') {
        const text = item.text.trim();
        if (item.final && this.texts.has(text)) return false;
        this.texts.add(text);
      }
      if (item.type === 'file') {
        const key = `${item.change} ${item.path}`;
        if (this.files.has(key)) return false;
        this.files.add(key);
      }
      return true;
    });
  }
}

/** Transcript events as progress items, each fact once; kinds this code does not know become `event` items. */
export function itemsFromTranscript(events: TranscriptEntry[], seen = new SeenItems()): ProgressItem[] {
  return seen.fresh(transcriptItems(events));
}

/**
 * The progress items of transcript events. The switch of `eventItems` has a case for every kind of
 * src/api/events.ts (a new kind does not compile until it has one); a kind this code has never seen
 * (a newer service) becomes an `event` item with its text or its name. Fields are read as tolerantly
 * as the rest: the service is not ours.
 */
function transcriptItems(events: TranscriptEntry[]): ProgressItem[] {
  return events.flatMap(eventItems);
}

/** One transcript event's progress items (most kinds give one; a diff one per file). */
function eventItems(event: TranscriptEntry): ProgressItem[] {
  const e = known(event);
  switch (e.kind) {
    case 'message':
      return [{ type: 'text', role: 'assistant', text: str(e.text) ?? '' }];
    case 'result':
      return [{ type: 'text', role: 'assistant', text: str(e.text) ?? '', final: true }];
    case 'command':
    case 'setup':
      return [
        {
          type: 'command',
          command: `${e.kind === 'setup' ? '(setup) ' : ''}${str(e.command) ?? ''}`,
          exitCode: typeof e.exit_code === 'number' ? e.exit_code : null,
          output: str(e.output)
        }
      ];
    case 'output':
      return [{ type: 'output', text: str(e.text) ?? '' }];
    case 'action':
      return [actionItem(event)];
    case 'action_result':
      return [{ type: 'output', text: str(event.output) ?? '' }];
    case 'file':
      return [{ type: 'file', path: str(e.path) ?? '?', change: str(e.change) ?? 'changed' }];
    case 'diff':
      return diffItems(e);
    case 'state':
      return [{ type: 'state', state: str(e.state) ?? '?', message: str(e.status_message) }];
    case 'exit':
      return [{ type: 'event', text: `agent exited with code ${String(e.exit_code)}` }];
    case 'artifact':
      return [artifactItem(e)];
    case 'notice':
    case 'truncated':
    case 'omitted':
      return [{ type: 'event', text: str(e.text) ?? e.kind }];
    case 'warning':
      return [{ type: 'event', text: `warning: ${str(e.message) ?? ''}`.trim() }];
    case 'followup':
      return [{ type: 'event', text: `follow-up: ${str(e.message) ?? ''}`.trim() }];
    case 'turn':
      return [
        { type: 'event', text: `turn ${String(e.turn)} begins (${str(e.mode) ?? 'normal'} mode)`, turn: true }
      ];
    case 'agent_session':
      return [{ type: 'event', text: `agent session ${str(e.session_id) ?? ''}`.trim() }];
    case 'publish':
      return [publishItem(e)];
    default: {
      const other = otherKind(e);
      return [{ type: 'event', text: str(other.text) ?? other.kind }];
    }
  }
}

/** A harness's tool call (input as JSON text): a command when it runs one, else the tool and its input. */
function actionItem(event: TranscriptEntry): ProgressItem {
  let input: unknown;
  try {
    input = JSON.parse(str(event.input) ?? 'null');
  } catch {
    input = undefined;
  }
  const command = isObject(input) ? str(input.command) : undefined;
  if (command !== undefined) return { type: 'command', command };
  return { type: 'event', text: `${str(event.name) ?? 'tool'} ${str(event.input) ?? ''}`.trim() };
}

/** A diff's files, and a line for those it does not list. */
function diffItems(e: EventOf<'diff'>): ProgressItem[] {
  const items: ProgressItem[] = [];
  const files = Array.isArray(e.files) ? (e.files as unknown[]).filter(isObject) : [];
  for (const file of files) {
    items.push({ type: 'file', path: str(file.path) ?? '?', change: str(file.change) ?? 'changed' });
  }
  if (typeof e.more_files === 'number' && e.more_files > 0)
    items.push({ type: 'event', text: `${e.more_files} more files changed (not listed)` });
  return items;
}

/** An artifact by its file name (or title, or address) and uid. */
function artifactItem(e: EventOf<'artifact'>): ProgressItem {
  const loose = e as AnyEvent;
  const name = str(e.filename) ?? str(loose.title) ?? str(loose.url) ?? '';
  const uid = str(e.artifact_uid);
  return { type: 'event', text: `artifact ${name}${uid ? ` (${uid})` : ''}`.trim() };
}

/** Where the run's changes were published: the branch and the pull request. */
function publishItem(e: EventOf<'publish'>): ProgressItem {
  const pr = str(e.pull_request_url);
  const branch = str(e.branch);
  return {
    type: 'event',
    text: `published${branch ? ` to branch ${branch}` : ''}${pr ? `, pull request ${pr}` : ''}`
  };
}

/** The conversation as progress items, in order, each fact once: messages' text, commands with their results, events. */
export function itemsFromConversation(conversation: Conversation): ProgressItem[] {
  const items: ProgressItem[] = [];
  const visit = (steps: ConversationStep[]) => {
    for (const step of steps) {
      for (const message of step.messages) {
        for (const block of message.content) items.push(...itemsOfBlock(message.role, block));
      }
      visit(step.steps);
    }
  };
  visit(conversation.steps);
  // An action and its result arrive as two blocks; show them as one command when they are adjacent.
  const merged: ProgressItem[] = [];
  for (const item of items) {
    const previous = merged.at(-1);
    if (item.type === 'output' && previous?.type === 'command' && previous.exitCode === undefined) {
      const result = item as ProgressItem & { exitCode?: number | null };
      previous.exitCode = result.exitCode ?? null;
      previous.output = item.text;
    } else merged.push(item);
  }
  // The last assistant text is the run's answer: shown once, even when a message said it before.
  const isAgentText = (item: ProgressItem): item is ProgressItem & { type: 'text' } =>
    item.type === 'text' && item.role === 'assistant';
  const last = merged.findLastIndex(isAgentText);
  const answer = merged[last];
  const said =
    answer !== undefined &&
    isAgentText(answer) &&
    merged.slice(0, last).some(item => isAgentText(item) && item.text.trim() === answer.text.trim());
  return new SeenItems().fresh(said ? merged.filter((_, i) => i !== last) : merged);
}

/** The conversation's event types that are transcript events in another shape, and their kind. */
const EVENT_KINDS: Record<string, string> = {
  state_change: 'state',
  file_change: 'file',
  changes: 'diff',
  artifact_published: 'artifact',
  agent_exit: 'exit',
  stderr: 'output'
};

function itemsOfBlock(role: string, block: ConversationBlock): ProgressItem[] {
  // An event block carries its transcript event's fields: one renderer shows both with their details.
  const kind = block.type === 'event' ? EVENT_KINDS[str(block.event_type) ?? ''] : undefined;
  if (kind !== undefined) return transcriptItems([{ ...block, kind, seq: 0 } as TranscriptEntry]);
  return [itemOfBlock(role, block)];
}

function itemOfBlock(role: string, block: ConversationBlock): ProgressItem {
  switch (block.type) {
    case 'text':
      return { type: 'text', role, text: block.text ?? '' };
    case 'action': {
      const command = str(block.input?.command);
      if (command !== undefined) return { type: 'command', command };
      return { type: 'event', text: [block.category, block.name].filter(Boolean).join(': ') || 'action' };
    }
    case 'action_result': {
      const exitCode = typeof block.output?.exit_code === 'number' ? block.output.exit_code : null;
      return Object.assign(
        { type: 'output' as const, text: str(block.output?.output) ?? str(block.state) ?? '' },
        { exitCode }
      );
    }
    default: {
      const name = str(block.name) ?? str(block.event_type) ?? block.type;
      const detail = str(block.text) ?? str(block.description) ?? str(block.message);
      return { type: 'event', text: detail ? `${name}: ${detail}` : name };
    }
  }
}
