// The run's conversation as a Markdown file a person can read or a workflow can upload: the
// prompt, the agent's messages, each command with its exit code and the end of its output, and
// the file changes and other events. Built from the service's normalized conversation shape.

import type { ConversationBlock, Conversation, ConversationStep } from '../api/index.js';
import type { Run } from '../client/index.js';

/** Command output kept per command in the transcript (its end, where errors usually are). */
export const COMMAND_OUTPUT_CHARS = 4000;

/** A fence longer than any run of backticks in the text, so the text cannot close it. */
function fenced(text: string, info = ''): string {
  const longest = Math.max(2, ...[...text.matchAll(/`+/g)].map(match => match[0].length));
  const fence = '`'.repeat(longest + 1);
  return `${fence}${info}\n${text.replace(/\n$/, '')}\n${fence}`;
}

function tail(text: string, max = COMMAND_OUTPUT_CHARS): string {
  return text.length <= max
    ? text
    : `[… ${text.length - max} earlier characters not shown]\n${text.slice(-max)}`;
}

/** Lines describing an event block, from whatever fields it has (a file list gives one per file). */
function eventLines(block: ConversationBlock): string[] {
  const kind = String(block.event_type ?? block.name ?? 'event');
  const nested = (block.data ?? block.payload) as Record<string, unknown> | undefined;
  const fields: Record<string, unknown> = {
    ...(nested && typeof nested === 'object' ? nested : {}),
    ...block
  };
  const describe = (item: Record<string, unknown>) => {
    const path = item.path ?? item.filepath ?? item.filename;
    const change = item.change ?? item.change_type;
    return typeof path === 'string'
      ? `\`${path}\`${typeof change === 'string' ? ` (${change})` : ''}`
      : undefined;
  };
  if (Array.isArray(fields.files)) {
    const files = fields.files.filter(item => item !== null && typeof item === 'object') as Record<
      string,
      unknown
    >[];
    return [`- ${kind}:`, ...files.map(file => `  - ${describe(file) ?? 'a file'}`)];
  }
  const file = describe(fields);
  if (file) return [`- ${kind}: ${file}`];
  const text = fields.text ?? fields.description ?? fields.message ?? fields.state;
  return [`- ${kind}${typeof text === 'string' ? `: ${text}` : ''}`];
}

export function renderTranscript(
  conversation: Conversation,
  context: { runId: string; run?: Run; prompt?: string }
): string {
  const out: string[] = [`# Agent run ${context.runId}`, ''];
  if (context.run?.state) out.push(`State: **${context.run.state}**`, '');
  if (context.run?.session_link) out.push(`Session: ${context.run.session_link}`, '');
  let promptShown = false;
  let pending: { command: string } | undefined;
  const flushCommand = (result?: ConversationBlock) => {
    if (!pending) return;
    const exit = result?.output?.exit_code;
    const status = exit === undefined || exit === null ? (result?.state ?? 'no result') : `exit code ${exit}`;
    out.push(`### Command (${status})`, '', fenced(pending.command, 'sh'), '');
    const output = result?.output?.output;
    if (typeof output === 'string' && output !== '') out.push(fenced(tail(output)), '');
    pending = undefined;
  };
  const visit = (steps: ConversationStep[]) => {
    for (const step of steps) {
      if (step.description) out.push(`## ${step.description.split('\n')[0]}`, '');
      for (const message of step.messages) {
        for (const block of message.content) {
          if (block.type === 'action_result') {
            flushCommand(block);
            continue;
          }
          flushCommand();
          if (block.type === 'text' && typeof block.text === 'string') {
            if (message.role === 'user' && !promptShown) {
              out.push('## Prompt', '', block.text, '');
              promptShown = true;
            } else {
              out.push(`**${message.role}:**`, '', block.text, '');
            }
          } else if (block.type === 'action') {
            const command = block.input?.command;
            if (typeof command === 'string') pending = { command };
            else out.push(`- action \`${String(block.name ?? 'unknown')}\``, '');
          } else if (block.type === 'event') {
            out.push(...eventLines(block), '');
          } else {
            out.push(`- ${block.type} block`, '');
          }
        }
      }
      flushCommand();
      visit(step.steps);
    }
  };
  if (context.prompt !== undefined && !conversation.steps.some(hasUserText)) {
    out.push('## Prompt', '', context.prompt, '');
    promptShown = true;
  }
  visit(conversation.steps);
  return `${out.join('\n').trimEnd()}\n`;
}

function hasUserText(step: ConversationStep): boolean {
  return (
    step.messages.some(m => m.role === 'user' && m.content.some(b => b.type === 'text')) ||
    step.steps.some(hasUserText)
  );
}
