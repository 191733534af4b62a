// The OpenAPI 3.1 document of the contract, generated from the schemas (served by the executor at
// /api/v1/openapi.json).

import { ERROR_CODES } from './error-codes.js';
import {
  CreateRunRequestSchema,
  CreateRunResponseSchema,
  ListRunsResponseSchema,
  ProblemSchema,
  RunRecordSchema,
  TranscriptSchema
} from './schemas.js';
import { KNOWN_STATES } from './run.js';

const json = (schema: unknown) => ({ 'application/json': { schema } });
const problem = (description: string) => ({
  description,
  content: { 'application/problem+json': { schema: { $ref: '#/components/schemas/Problem' } } }
});
const ref = (name: string) => ({ $ref: `#/components/schemas/${name}` });
const runId = { name: 'run_id', in: 'path', required: true, schema: { type: 'string' } };
const errors = {
  '401': problem('Missing, malformed, unknown or revoked API key.'),
  '429': problem('Rate limited; see Retry-After.')
};

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
          summary: 'List runs, newest first',
          parameters: [
            {
              name: 'limit',
              in: 'query',
              schema: { type: 'integer', minimum: 1, maximum: 100, default: 20 }
            },
            { name: 'cursor', in: 'query', schema: { type: 'string' } },
            {
              name: 'state',
              in: 'query',
              schema: { type: 'array', items: { type: 'string', enum: [...KNOWN_STATES] } },
              style: 'form',
              explode: true
            },
            { name: 'environment_id', in: 'query', schema: { type: 'string' } },
            { name: 'created_after', in: 'query', schema: { type: 'string', format: 'date-time' } },
            { name: 'created_before', in: 'query', schema: { type: 'string', format: 'date-time' } }
          ],
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
          parameters: [runId],
          responses: {
            '200': { description: 'Transcript events.', content: json(ref('Transcript')) },
            '404': problem('No such run.'),
            ...errors
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
        Problem: ProblemSchema
      }
    }
  };
}
