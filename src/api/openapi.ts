// The OpenAPI 3.1 document of the contract, generated from the schemas (served by the executor at
// /api/v1/openapi.json).

import { ERROR_CODES } from './error-codes.js';
import {
  CreateRunRequestSchema,
  CreateRunResponseSchema,
  ListRunsQuerySchema,
  ListRunsResponseSchema,
  ProblemSchema,
  RunRecordSchema,
  TranscriptSchema
} from './schemas.js';
import { KnownEventSchema } from './event-schemas.js';
import { KNOWN_STATES } from './run.js';

const json = (schema: unknown) => ({ 'application/json': { schema } });
const problem = (description: string) => ({
  description,
  content: { 'application/problem+json': { schema: { $ref: '#/components/schemas/Problem' } } }
});
const ref = (name: string) => ({ $ref: `#/components/schemas/${name}` });
const runId = { name: 'run_id', in: 'path', required: true, schema: { type: 'string' } };
const artifactUid = { name: 'artifact_uid', in: 'path', required: true, schema: { type: 'string' } };
const prefer = { name: 'Prefer', in: 'header', schema: { type: 'string', examples: ['wait=30'] } };

/** The service's normalized conversation: steps → messages → content blocks. */
const ConversationSchema = {
  type: 'object',
  required: ['conversation_id', 'steps'],
  properties: {
    conversation_id: { type: 'string' },
    steps: { type: 'array', items: { $ref: '#/components/schemas/ConversationStep' } }
  }
};
const ConversationStepSchema = {
  type: 'object',
  required: ['id', 'messages', 'steps'],
  properties: {
    id: { type: 'string' },
    description: { type: 'string' },
    summary: { type: 'string' },
    started_at: { type: 'string', format: 'date-time' },
    completed_at: { type: 'string', format: 'date-time' },
    messages: {
      type: 'array',
      items: {
        type: 'object',
        required: ['role', 'content'],
        properties: {
          role: { type: 'string', enum: ['user', 'assistant', 'tool', 'system'] },
          timestamp: { type: 'string', format: 'date-time' },
          content: {
            type: 'array',
            description:
              'Blocks by `type`: text {text}; action {id, name: run_command, category, input.command}; action_result {action_id, state, output {exit_code, output}}; event {event_type, …} (state_change, file_change, changes, artifact_published, agent_exit, notice, stderr). The last assistant text block is the final answer. Unknown types may appear.',
            items: { type: 'object', required: ['type'], properties: { type: { type: 'string' } } }
          }
        }
      }
    },
    steps: { type: 'array', items: { $ref: '#/components/schemas/ConversationStep' } }
  }
};
const ArtifactSchema = {
  type: 'object',
  required: ['artifact_uid', 'artifact_type', 'run_id', 'created_at', 'download_url', 'expires_at', 'data'],
  properties: {
    artifact_uid: { type: 'string' },
    artifact_type: { type: 'string', examples: ['FILE'] },
    run_id: { type: 'string' },
    created_at: { type: 'string', format: 'date-time' },
    download_url: { type: 'string', description: 'Signed; needs no API key; valid until expires_at.' },
    expires_at: { type: 'string', format: 'date-time' },
    data: {
      type: 'object',
      required: ['artifact_uid', 'filepath', 'filename', 'mime_type', 'size'],
      properties: {
        artifact_uid: { type: 'string' },
        filepath: { type: 'string' },
        filename: { type: 'string' },
        mime_type: { type: 'string', examples: ['text/x-diff'] },
        size: { type: 'integer' },
        description: { type: 'string' }
      }
    }
  }
};

const errors = {
  '401': problem('Missing, malformed, unknown or revoked API key.'),
  '429': problem('Rate limited; see Retry-After.')
};

/** The list's query parameters, from the schema the executor validates them with. */
function listParameters(): Record<string, unknown>[] {
  return Object.entries(ListRunsQuerySchema.properties as Record<string, { description?: string }>).map(
    ([name, schema]) => ({
      name,
      in: 'query',
      ...(typeof schema.description === 'string' ? { description: schema.description } : {}),
      schema,
      ...(name === 'state' ? { style: 'form', explode: true } : {})
    })
  );
}

export function openApiDocument(serverUrl?: string): Record<string, unknown> {
  const create = {
    summary: 'Create a run',
    description: 'Starts an agent run asynchronously. Send Idempotency-Key to make retries safe.',
    parameters: [
      { name: 'Idempotency-Key', in: 'header', required: false, schema: { type: 'string', maxLength: 255 } }
    ],
    requestBody: { required: true, content: json(ref('CreateRunRequest')) },
    responses: {
      '200': {
        description: 'The run was queued (or the same request was replayed).',
        content: json(ref('CreateRunResponse'))
      },
      '400': problem('Malformed body.'),
      '404': problem('Unknown environment.'),
      '413': problem('Body too large.'),
      '422': problem('Invalid field, prompt too large, or Idempotency-Key reused with another body.'),
      '503': problem('Shutting down.'),
      ...errors
    }
  };
  return {
    openapi: '3.1.0',
    info: {
      title: 'Cloud Agent Run API',
      version: '1.0.0',
      description: `Run states: ${KNOWN_STATES.join(', ')}. Error codes: ${Object.keys(ERROR_CODES).join(', ')} (GET /api/v1/errors).`
    },
    servers: serverUrl ? [{ url: serverUrl }] : [],
    security: [{ bearer: [] }],
    paths: {
      '/api/v1/agent/run': { post: { ...create, operationId: 'createRun', deprecated: true } },
      '/api/v1/agent/runs': {
        post: { ...create, operationId: 'createRunAlias' },
        get: {
          operationId: 'listRuns',
          summary: 'List runs, newest created first unless sort_by/sort_order say otherwise',
          description: 'Any query parameter not listed here is answered 400.',
          parameters: listParameters(),
          responses: {
            '200': { description: 'A page of runs.', content: json(ref('ListRunsResponse')) },
            '400': problem('Bad query parameter.'),
            ...errors
          }
        }
      },
      '/api/v1/agent/runs/{run_id}': {
        get: {
          operationId: 'getRun',
          summary: 'Read a run',
          description:
            'With If-None-Match and Prefer: wait=N (max 60), the answer is held while the run is unchanged.',
          parameters: [
            runId,
            { name: 'If-None-Match', in: 'header', schema: { type: 'string' } },
            { name: 'Prefer', in: 'header', schema: { type: 'string', examples: ['wait=30'] } }
          ],
          responses: {
            '200': { description: 'The run.', content: json(ref('RunRecord')) },
            '304': { description: 'Unchanged.' },
            '404': problem('No such run.'),
            ...errors
          }
        }
      },
      '/api/v1/agent/runs/{run_id}/cancel': {
        post: {
          operationId: 'cancelRun',
          summary: 'Cancel a run',
          parameters: [runId],
          requestBody: {
            required: false,
            description: 'Optional; the status message becomes `cancelled by a client: <reason>`.',
            content: json({
              type: 'object',
              properties: { reason: { type: 'string', minLength: 1, maxLength: 500 } }
            })
          },
          responses: {
            '200': { description: 'The run id.', content: json({ type: 'string' }) },
            '404': problem('No such run.'),
            '409': problem('Already finished.'),
            '422': problem('`reason` is not a string of 1–500 characters.'),
            ...errors
          }
        }
      },
      '/api/v1/agent/runs/{run_id}/transcript': {
        get: {
          operationId: 'getTranscript',
          summary: "A run's transcript",
          description:
            "One page of events: with after=<seq>, only events newer than that one; at most limit events (default 100, max 1000) and about 512 KiB of them; has_more says more follow (read again with after=next_after). With Prefer: wait=N (max 60) as well, an empty answer is held until there is an event (or the run ended, or N seconds passed). A run whose output passed the executor's limits.transcript has a truncated event between the head and the tail of its output, saying how many bytes were dropped.",
          parameters: [
            runId,
            { name: 'after', in: 'query', schema: { type: 'integer', minimum: 0 } },
            {
              name: 'limit',
              in: 'query',
              schema: { type: 'integer', minimum: 1, maximum: 1000, default: 100 }
            },
            prefer
          ],
          responses: {
            '200': { description: 'Transcript events.', content: json(ref('Transcript')) },
            '400': problem('after is not a whole number, or limit is not 1 to 1000.'),
            '404': problem('No such run.'),
            ...errors
          }
        }
      },
      '/api/v1/agent/runs/{run_id}/conversation': {
        get: {
          operationId: 'getConversation',
          summary: "A run's conversation, normalized",
          description:
            'Built from the transcript: the prompt as the user message, agent text and command output as assistant text, each command as an action with its action_result, everything else as events; the final answer is the last assistant text block.',
          parameters: [runId],
          responses: {
            '200': { description: 'The conversation.', content: json(ref('Conversation')) },
            '404': problem('No such run.'),
            ...errors
          }
        }
      },
      '/api/v1/agent/artifacts/{artifact_uid}': {
        get: {
          operationId: 'getArtifact',
          summary: "An artifact's details and a time-limited download URL",
          parameters: [artifactUid],
          responses: {
            '200': { description: 'The artifact.', content: json(ref('Artifact')) },
            '404': problem('No such artifact (artifact_not_found).'),
            ...errors
          }
        }
      },
      '/api/v1/agent/artifacts/{artifact_uid}/download': {
        get: {
          operationId: 'downloadArtifact',
          summary: "An artifact's bytes, by the signed download URL",
          security: [],
          parameters: [
            artifactUid,
            { name: 'expires', in: 'query', required: true, schema: { type: 'integer' } },
            { name: 'signature', in: 'query', required: true, schema: { type: 'string' } }
          ],
          responses: {
            '200': { description: "The bytes, in the artifact's mime_type, as an attachment." },
            '404': problem('Wrong or expired link (artifact_not_found).')
          }
        }
      }
    },
    components: {
      securitySchemes: { bearer: { type: 'http', scheme: 'bearer' } },
      schemas: {
        CreateRunRequest: CreateRunRequestSchema,
        CreateRunResponse: CreateRunResponseSchema,
        RunRecord: RunRecordSchema,
        ListRunsResponse: ListRunsResponseSchema,
        Transcript: TranscriptSchema,
        TranscriptEventKinds: KnownEventSchema,
        Conversation: ConversationSchema,
        ConversationStep: ConversationStepSchema,
        Artifact: ArtifactSchema,
        Problem: ProblemSchema
      }
    }
  };
}
