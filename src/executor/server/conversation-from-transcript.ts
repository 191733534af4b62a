// The run's conversation in the production service's normalized shape (GET
// /agent/runs/{id}/conversation), built from the transcript: steps → messages → content blocks
// `text`, `action`, `action_result` and `event`. The prompt is the user's message; agent text and a
// command agent's standard output are the assistant's; each command is an action with its result;
// everything else (file changes, published artifacts, state changes) is an event. The switch has a
// case for every kind of src/api/events.ts (a new kind does not compile until it has one). Messages
// come in transcript order; the agent's final answer (a `result` event, recorded after everything
// the agent said) is the last assistant text block, so a client takes it from there. A pure function
// of the run and its events: no store, no I/O.
//
// The types are the executor's own output types (src/api has no conversation types yet); they
// follow the service's shapes and a client reads them as tolerantly as the rest.

import { type EventKind, known, otherKind } from '../../api/events.js';
import type { StoredRun, TranscriptEvent } from '../store/types.js';

export type ConversationBlock =
  | { type: 'text'; text: string }
  | {
      type: 'action';
      id: string;
      name: 'run_command';
      category: 'command';
      input: { command: string };
      description?: string;
    }
  | { type: 'action'; id: string; name: string; category: 'tool'; input: unknown }
  | {
      type: 'action_result';
      action_id: string;
      state: 'SUCCEEDED' | 'FAILED';
      output: { exit_code: number | null; output: string; duration_ms?: number };
    }
  | { type: 'action_result'; action_id: string; state: 'SUCCEEDED' | 'FAILED'; output: { output: string } }
  | { type: 'event'; event_type: string; [field: string]: unknown };

export interface ConversationMessage {
  role: 'user' | 'assistant' | 'tool' | 'system';
  timestamp?: string;
  content: ConversationBlock[];
}

export interface ConversationStep {
  id: string;
  description?: string;
  started_at?: string;
  completed_at?: string;
  messages: ConversationMessage[];
  steps: ConversationStep[];
}

export interface Conversation {
  conversation_id: string;
  steps: ConversationStep[];
}

/** Transcript kinds that become event blocks, and the event_type they get there (else their kind). */
const EVENT_TYPES: { readonly [K in EventKind]?: string } = {
  state: 'state_change',
  file: 'file_change',
  diff: 'changes',
  artifact: 'artifact_published',
  exit: 'agent_exit'
};

export function buildConversation(run: StoredRun, events: TranscriptEvent[]): Conversation {
  let messages: ConversationMessage[] = [
    { role: 'user', timestamp: run.created_at, content: [{ type: 'text', text: run.prompt }] }
  ];
  // Each later turn of a continued run is a step of its own, its follow-ups as the user message.
  const turns: { at: string; messages: ConversationMessage[] }[] = [{ at: run.created_at, messages }];
  const followups = new Map<number, string>();
  for (const event of events) {
    const e = known(event);
    const { seq, at, kind, ...rest } = e;
    const data = rest as Record<string, unknown>;
    switch (e.kind) {
      case 'result':
        placeAnswer(messages, String(data.text ?? ''), at);
        break;
      case 'message':
        addText(messages, at, String(data.text ?? ''));
        break;
      case 'output':
        if (data.stream === 'stdout') addText(messages, at, String(data.text ?? ''), true);
        else
          add(messages, 'system', at, { type: 'event', event_type: 'stderr', text: String(data.text ?? '') });
        break;
      case 'command':
      case 'setup':
        addCommand(messages, seq, at, kind, data);
        break;
      // A harness's tool call (Claude Code's Bash, Write, an MCP tool…) and its result, by the CLI's id.
      case 'action':
        add(messages, 'assistant', at, {
          type: 'action',
          id: String(data.id ?? `action-${seq}`),
          name: String(data.name ?? 'tool'),
          category: 'tool',
          input: parsedInput(data.input)
        });
        break;
      case 'action_result':
        add(messages, 'tool', at, {
          type: 'action_result',
          action_id: String(data.id ?? ''),
          state: data.ok === false ? 'FAILED' : 'SUCCEEDED',
          output: { output: String(data.output ?? '') }
        });
        break;
      case 'state':
      case 'file':
      case 'diff':
      case 'artifact':
      case 'exit':
      case 'notice':
      case 'warning':
      case 'truncated':
      case 'omitted':
      case 'publish':
      case 'agent_session':
        add(messages, 'system', at, { ...data, type: 'event', event_type: EVENT_TYPES[e.kind] ?? e.kind });
        break;
      case 'followup':
        followups.set(seq, String(data.message ?? ''));
        break;
      case 'turn': {
        if (e.turn <= 1) break;
        const taken = (Array.isArray(e.followups) ? e.followups : []).map(at => followups.get(at) ?? '');
        messages = [{ role: 'user', timestamp: at, content: [{ type: 'text', text: taken.join('\n\n') }] }];
        turns.push({ at, messages });
        break;
      }
      default:
        // A kind a newer executor wrote into the same store: an event named by its kind.
        add(messages, 'system', at, { ...data, type: 'event', event_type: otherKind(e).kind });
    }
  }
  return { conversation_id: run.run_id, steps: stepsOf(run, turns) };
}

/** A command the agent or the environment's setup ran: the action, then its result. */
function addCommand(
  messages: ConversationMessage[],
  seq: number,
  at: string,
  kind: string,
  data: Record<string, unknown>
): void {
  const id = `action-${seq}`;
  const exitCode = typeof data.exit_code === 'number' ? data.exit_code : null;
  const action: ConversationBlock = {
    type: 'action',
    id,
    name: 'run_command',
    category: 'command',
    input: { command: String(data.command ?? '') }
  };
  if (kind === 'setup') action.description = 'environment setup';
  add(messages, 'assistant', at, action);
  const output: { exit_code: number | null; output: string; duration_ms?: number } = {
    exit_code: exitCode,
    output: String(data.output ?? '')
  };
  if (typeof data.duration_ms === 'number') output.duration_ms = data.duration_ms;
  add(messages, 'tool', at, {
    type: 'action_result',
    action_id: id,
    state: exitCode === 0 ? 'SUCCEEDED' : 'FAILED',
    output
  });
}

/** The conversation's steps: the first turn under the run's id, each later one as `<id>-turn-N`. */
function stepsOf(
  run: StoredRun,
  turns: { at: string; messages: ConversationMessage[] }[]
): ConversationStep[] {
  return turns.map((turn, index) => {
    const step: ConversationStep = {
      id: index === 0 ? run.run_id : `${run.run_id}-turn-${index + 1}`,
      messages: turn.messages,
      steps: []
    };
    if (run.title !== null) step.description = run.title;
    if (index === 0 && run.started_at !== null) step.started_at = run.started_at;
    if (index > 0) step.started_at = turn.at;
    if (index === turns.length - 1 && run.completed_at !== null) step.completed_at = run.completed_at;
    return step;
  });
}

/** A harness stores a tool's input as bounded JSON text: the value again when it is whole. */
function parsedInput(input: unknown): unknown {
  if (typeof input !== 'string') return input;
  try {
    return JSON.parse(input) as unknown;
  } catch {
    return input;
  }
}

function add(
  messages: ConversationMessage[],
  role: ConversationMessage['role'],
  at: string,
  block: ConversationBlock
): void {
  messages.push({ role, timestamp: at, content: [block] });
}

/** Agent text; a stream's consecutive chunks join into one block. */
function addText(messages: ConversationMessage[], at: string, text: string, stream = false): void {
  const last = messages.at(-1);
  const block = last?.content.at(-1);
  if (stream && last?.role === 'assistant' && block?.type === 'text' && (last as Streamed).streamed) {
    block.text += text;
    return;
  }
  const message: Streamed = { role: 'assistant', timestamp: at, content: [{ type: 'text', text }] };
  if (stream) Object.defineProperty(message, 'streamed', { value: true, enumerable: false });
  messages.push(message);
}

type Streamed = ConversationMessage & { streamed?: boolean };

/**
 * The final answer goes where the transcript has it (after the agent's exit and its last standard
 * error, say), unless the last assistant text, followed by events only, already says exactly that.
 */
function placeAnswer(messages: ConversationMessage[], answer: string, at: string): void {
  let index = messages.length;
  while (index > 1 && messages[index - 1]!.content.every(block => block.type === 'event')) index--;
  const before = messages.slice(0, index);
  const lastText = before
    .filter(message => message.role === 'assistant')
    .flatMap(message => message.content)
    .filter(block => block.type === 'text')
    .at(-1);
  const lastBlock = before.at(-1)?.content.at(-1);
  if (lastText && lastText === lastBlock && lastText.type === 'text' && lastText.text === answer) return;
  messages.push({ role: 'assistant', timestamp: at, content: [{ type: 'text', text: answer }] });
}
