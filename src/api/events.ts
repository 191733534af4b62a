// The kinds of event a run's transcript holds, each with its fields, as one closed union. The
// executor writes them, and its pages, its conversation builder and the client's progress items read
// them. Every reader switches on `kind` and ends in `otherKind(event)`, which only compiles once every
// kind above it has its case: adding a kind is one line in `EventFields` (and its schema in
// schemas.ts), and the compiler then names every reader that must learn it. The client reads a service
// it does not control, so a kind it has never seen is still shown, generically.

/** The fields of each kind of transcript event, besides `seq`, `at` and `kind`. */
export interface EventFields {
  /** The run changed state. */
  state: { state: string; status_message?: string; error_code?: string };
  /** Text the agent said. */
  message: { text: string };
  /** A chunk of a command agent's standard output or error. */
  output: { stream: 'stdout' | 'stderr'; text: string };
  /** A command the agent ran, with its exit code (null when killed) and combined output. */
  command: { command: string; exit_code: number | null; output: string; duration_ms: number };
  /** One of the environment's setup commands, run before the agent. */
  setup: { command: string; exit_code: number | null; output: string; duration_ms: number };
  /** A file the agent wrote. */
  file: { path: string; change: string; bytes?: number; source?: string };
  /** The run's changes to its workspace: the files (at most 1000 listed) and a unified diff. */
  diff: {
    diff: string;
    truncated: boolean;
    files: { path: string; change: string }[];
    more_files?: number;
  };
  /** The agent's process ended. */
  exit: { exit_code: number | null; signal: string | null };
  /** The agent's final answer. */
  result: { text: string; source?: string };
  /** Something the executor tells the reader (a file not read, nothing to commit, …). */
  notice: { text: string };
  /** A weaker confinement than configured, said once at the start of the run. */
  warning: { message: string };
  /** Output dropped between the head and the tail of a long run (limits.transcript). */
  truncated: {
    dropped_bytes: number;
    dropped_events: number;
    dropped_lines: number;
    limit_bytes: number;
    text: string;
  };
  /** Not stored: a page showing a whole run left these events out (see the transcript). */
  omitted: { omitted_events: number; omitted_bytes: number; text: string };
  /** A file the run produced, kept as an artifact. */
  artifact: { artifact_uid: string; filename: string; mime_type: string; size: number };
  /** The run's changes were committed and pushed (and a pull request opened, when configured). */
  publish: {
    commit: string;
    branch: string;
    remote: string;
    base_commit: string;
    pull_request_url?: string;
    pull_request_number?: number;
  };
  /** A harness's tool call (the CLI's tool name and its input as JSON text, at most 16 KiB). */
  action: { id: string; name: string; input: string };
  /** The result of a harness's tool call, by the call's id (output at most 16 KiB). */
  action_result: { id: string; ok?: boolean; output: string };
  /** The agent CLI's own session id, kept so a later turn can resume it. */
  agent_session: { harness: string; session_id: string };
  /** A client's follow-up: the next user message of the run's conversation, and its mode. */
  followup: { message: string; mode: string };
  /** The worker began a turn (1 for the first), taking the follow-ups with these seqs. */
  turn: { turn: number; mode: string; followups: number[] };
}

export type EventKind = keyof EventFields;

/** One event of a kind, as stored and served. */
export type EventOf<K extends EventKind> = { seq: number; at: string; kind: K } & EventFields[K];

/** Any event of a kind this code knows: switch on `kind` to reach its fields. */
export type KnownEvent = { [K in EventKind]: EventOf<K> }[EventKind];

/** Every kind, at run time (the same list as `EventFields`: the check below fails otherwise). */
export const EVENT_KINDS = [
  'state',
  'message',
  'output',
  'command',
  'setup',
  'file',
  'diff',
  'exit',
  'result',
  'notice',
  'warning',
  'truncated',
  'omitted',
  'artifact',
  'publish',
  'action',
  'action_result',
  'agent_session',
  'followup',
  'turn'
] as const satisfies readonly EventKind[];

type Listed = (typeof EVENT_KINDS)[number];
/** Fails to compile when a kind of `EventFields` is missing from `EVENT_KINDS`. */
export type EventKindsListed = [Exclude<EventKind, Listed>] extends [never] ? true : never;
const listed: EventKindsListed = true;
void listed;

/** An event of any kind, known or not: what a reader of a stored or served transcript holds. */
export interface AnyEvent {
  seq: number;
  at?: string;
  kind: string;
  [field: string]: unknown;
}

export function isEventKind(kind: string): kind is EventKind {
  return (EVENT_KINDS as readonly string[]).includes(kind);
}

/**
 * The event a reader's switch did not handle. It takes `never`, so it compiles only in a switch that
 * has a case for every kind; at run time it hands back the event (a kind from a newer writer) so the
 * reader can show it generically.
 */
export function otherKind(event: never): AnyEvent {
  return event as AnyEvent;
}

/** Narrows an event read from a store or a service to the union (the switch's default handles the rest). */
export function known(event: AnyEvent): KnownEvent {
  return event as unknown as KnownEvent;
}
