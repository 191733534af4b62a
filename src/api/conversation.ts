// What a run said and did, in the production service's normalized shape
// (`GET /agent/runs/{id}/conversation`): steps → messages → content blocks. Servers add block types
// over time, so every type here is open: a block this code does not know is kept as it came.

/** A content block. `type` names it; the fields below are those of the known types. */
export interface ConversationBlock {
  type: 'text' | 'action' | 'action_result' | 'event' | (string & {});
  /** `text` blocks. */
  text?: string;
  /** `action` blocks: what the agent did (`run_command`, a file edit, a search…). */
  name?: string;
  category?: string;
  input?: { command?: string; [field: string]: unknown };
  /** `action_result` blocks: how it ended and what it printed. */
  state?: string;
  output?: { exit_code?: number | null; output?: string; [field: string]: unknown };
  [field: string]: unknown;
}

export interface ConversationMessage {
  role: 'user' | 'assistant' | 'tool' | 'system' | (string & {});
  timestamp?: string;
  content: ConversationBlock[];
  [field: string]: unknown;
}

/** A step of the work; `steps` holds nested, delegated work. */
export interface ConversationStep {
  id?: string;
  description?: string;
  summary?: string;
  started_at?: string;
  completed_at?: string;
  messages: ConversationMessage[];
  steps: ConversationStep[];
  [field: string]: unknown;
}

export interface Conversation {
  conversation_id?: string;
  steps: ConversationStep[];
  [field: string]: unknown;
}

/** An event of the executor's raw transcript (`GET /agent/runs/{id}/transcript`). */
export interface TranscriptEntry {
  seq: number;
  at?: string;
  /** One of `EVENT_KINDS` (./events.ts, each with its fields), or one this code has never seen. */
  kind: string;
  [field: string]: unknown;
}

/** Answer of `GET /agent/runs/{id}/transcript`. */
export interface Transcript {
  run_id?: string;
  state?: string;
  events: TranscriptEntry[];
  /** More events follow this page (executors that page the transcript; absent: this was all). */
  has_more?: boolean;
  /** Where the next page starts: pass it as `after`. */
  next_after?: number;
}
