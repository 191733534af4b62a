// Liveness, readiness, the OpenAPI document and the error reference: no key needed.

import { ERROR_CODES } from '../../../api/index.js';
import { openApiDocument } from '../../../api/openapi.js';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { freeSpaceProblem } from '../../sandbox/processes.js';
import type { RouteContext } from './handler.js';

export async function health() {
  return { status: 'ok' };
}

export async function ready(context: RouteContext, request: FastifyRequest, reply: FastifyReply) {
  if (context.draining) return reply.code(503).send({ status: 'shutting_down' });
  try {
    await context.stores.ping();
  } catch {
    return reply.code(503).send({ status: 'store_unavailable' });
  }
  // Looked at now, not when the pool last tried a claim: ready again as soon as room is back.
  const short = context.runsWork ? freeSpaceProblem(context.settings, request.log) : undefined;
  if (short) return reply.code(503).send({ status: 'low_on_space', claiming: false, reason: short });
  return { status: 'ready', environments: context.settings.environments.map(env => env.id) };
}

/** The OpenAPI document, serialised once per public URL. */
let openApi: { url: string; text: string } | undefined;

export async function getOpenApi(context: RouteContext, _request: FastifyRequest, reply: FastifyReply) {
  const url = context.publicUrl();
  if (openApi?.url !== url) openApi = { url, text: JSON.stringify(openApiDocument(url)) };
  return reply.type('application/json').send(openApi.text);
}

export async function listErrorCodes() {
  return { errors: Object.entries(ERROR_CODES).map(([code, info]) => ({ error_code: code, ...info })) };
}
