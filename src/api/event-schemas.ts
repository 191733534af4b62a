// The JSON schema of each kind of transcript event (TypeBox), for the OpenAPI document: what a
// reader of GET /agent/runs/{id}/transcript finds in an event of each kind. The compile-time check
// at the bottom keeps each schema equal to its fields in ./events.ts, and the mapped type makes a
// kind without a schema fail to compile. The transcript route's own response schema stays the open
// `TranscriptEventSchema` (any kind, extra fields kept), so documenting a kind costs no serialisation.

import Type, { type Static, type TSchema } from 'typebox';
import type { EventFields, EventKind } from './events.js';

const Text = (description: string) => Type.String({ description });
const Count = (description: string) => Type.Integer({ minimum: 0, description });
const ExitCode = Type.Union([Type.Integer(), Type.Null()], {
  description: 'The exit code; null when the process was killed by a signal.'
});
const command = (description: string) =>
  ({
    description,
    fields: {
      command: Text('The shell command.'),
      exit_code: ExitCode,
      output: Text('Its standard output and error, interleaved (bounded).'),
      duration_ms: Count('How long it ran, in milliseconds.')
    }
  }) as const;

/** Each kind: what it means, and its fields besides seq, at and kind. */
const KINDS = {
  state: {
    description: 'The run changed state.',
    fields: {
      state: Text('The new state (QUEUED, INPROGRESS, SUCCEEDED, FAILED, CANCELLED, …).'),
      status_message: Type.Optional(Text('Why the run ended so (FAILED, CANCELLED, ERROR).')),
      error_code: Type.Optional(Text('The error code of a run that did not succeed.'))
    }
  },
  message: { description: 'Text the agent said.', fields: { text: Text('The text.') } },
  output: {
    description: "A chunk of a command agent's output.",
    fields: {
      stream: Type.Union([Type.Literal('stdout'), Type.Literal('stderr')], { description: 'Which stream.' }),
      text: Text('The chunk, as written (UTF-8).')
    }
  },
  command: command('A command the agent ran.'),
  setup: command("One of the environment's setup commands, run before the agent."),
  file: {
    description: 'A file the agent wrote.',
    fields: {
      path: Text('Its path in the workspace.'),
      change: Text('added or modified.'),
      bytes: Type.Optional(Count('Its size after the write (when the executor wrote it).')),
      source: Type.Optional(Text("Who wrote it: agent for a harness CLI's edit."))
    }
  },
  diff: {
    description: "The run's changes to its workspace.",
    fields: {
      diff: Text('A unified diff of every change (cut at a size limit).'),
      truncated: Type.Boolean({ description: 'true when the diff was cut.' }),
      files: Type.Array(
        Type.Object({ path: Text('The path.'), change: Text('added, modified, deleted, renamed, …') }),
        { description: 'The changed files (at most 1000).' }
      ),
      more_files: Type.Optional(Count('How many more files changed than files lists.'))
    }
  },
  exit: {
    description: "The agent's process ended.",
    fields: {
      exit_code: ExitCode,
      signal: Type.Union([Type.String(), Type.Null()], { description: 'The signal that killed it, or null.' })
    }
  },
  result: {
    description: "The agent's final answer (the run's result).",
    fields: {
      text: Text('The answer.'),
      source: Type.Optional(
        Text(
          'Where the answer came from: result_file (AGENT_RESULT_FILE) or stdout for a command agent, the harness kind (claude-code, …) for a harness.'
        )
      )
    }
  },
  notice: { description: 'Something the executor tells the reader.', fields: { text: Text('The notice.') } },
  warning: {
    description: 'The run is confined less than configured (said at its start).',
    fields: { message: Text('What is weaker, and why.') }
  },
  truncated: {
    description: 'Output dropped between the head and the tail of a long run (limits.transcript).',
    fields: {
      dropped_bytes: Count('Bytes of output dropped.'),
      dropped_events: Count('Events dropped.'),
      dropped_lines: Count('Lines dropped.'),
      limit_bytes: Count("The run's transcript limit."),
      text: Text('The same, in words.')
    }
  },
  omitted: {
    description:
      'Never stored: a page that shows a whole run (session page, conversation) left these events out.',
    fields: {
      omitted_events: Count('Events left out.'),
      omitted_bytes: Count('Their size.'),
      text: Text('The same, in words, with where to read them.')
    }
  },
  artifact: {
    description: 'A file the run produced, kept as an artifact (GET /agent/artifacts/{uid}).',
    fields: {
      artifact_uid: Text("The artifact's id."),
      filename: Text('Its file name.'),
      mime_type: Text('Its media type.'),
      size: Count('Its size in bytes.')
    }
  },
  publish: {
    description: "The run's changes were committed and pushed (and a pull request opened).",
    fields: {
      commit: Text('The commit made of the changes.'),
      branch: Text('The branch pushed.'),
      remote: Text('Where it was pushed (credentials removed).'),
      base_commit: Text('The commit the run started from.'),
      pull_request_url: Type.Optional(Text('The pull request opened.')),
      pull_request_number: Type.Optional(Type.Integer({ description: 'Its number.' }))
    }
  },
  action: {
    description: "A harness's tool call (Claude Code's Bash, Write, an MCP tool, …).",
    fields: {
      id: Text("The call's id, as the CLI gave it."),
      name: Text("The CLI's tool name."),
      input: Text('Its input, as JSON text (at most 16 KiB).')
    }
  },
  action_result: {
    description: "The result of a harness's tool call.",
    fields: {
      id: Text('The id of the call it answers.'),
      ok: Type.Optional(Type.Boolean({ description: 'false when the tool reported an error.' })),
      output: Text('What the tool answered (at most 16 KiB).')
    }
  },
  agent_session: {
    description: "The agent CLI's own session id, kept so that a later turn can resume it.",
    fields: {
      harness: Text('The harness kind (claude-code, codex, gemini).'),
      session_id: Text("The CLI's session id.")
    }
  },
  followup: {
    description: "A client's follow-up: the next user message of the run's conversation.",
    fields: {
      message: Text('The message.'),
      mode: Text('normal, plan or orchestrate.')
    }
  },
  turn: {
    description: 'The worker began a turn of the conversation (1 for the first), taking these follow-ups.',
    fields: {
      turn: Type.Integer({ description: 'The turn, from 1.' }),
      mode: Text('normal, plan or orchestrate.'),
      followups: Type.Array(Type.Integer(), { description: 'The seqs of the follow-up events it took.' })
    }
  }
} as const satisfies Record<EventKind, { description: string; fields: Record<string, TSchema> }>;

type Kinds = typeof KINDS;

/** The schema of one kind of event: seq, at, the kind itself and its fields. */
function schemaOf(kind: EventKind): TSchema {
  const { description, fields } = KINDS[kind];
  return Type.Object(
    {
      seq: Type.Integer({ description: 'Position in the transcript, from 1.' }),
      at: Type.String({ format: 'date-time', description: 'When it was recorded.' }),
      kind: Type.Literal(kind),
      ...(fields as Record<string, TSchema>)
    },
    { title: `${kind} event`, description }
  );
}

/** Every kind's schema, by kind. */
export const EventSchemas = Object.fromEntries(
  (Object.keys(KINDS) as EventKind[]).map(kind => [kind, schemaOf(kind)])
) as Record<EventKind, TSchema>;

/** Any event of a known kind (for the OpenAPI document; a client must still accept other kinds). */
export const KnownEventSchema = Type.Union(Object.values(EventSchemas), {
  description:
    'A transcript event of a kind this version writes. Clients must accept kinds and fields they do not know.'
});

// Each schema describes exactly its kind's fields.
type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;
export type EventSchemaChecks = {
  [K in EventKind]: Same<Static<Type.TObject<Kinds[K]['fields']>>, EventFields[K]>;
};
const checks: { [K in EventKind]: true } = {} as EventSchemaChecks;
void checks;
