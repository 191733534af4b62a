// What a run produced, read back: its conversation (GET /api/v1/agent/runs/:id/conversation), its
// artifacts' details with a signed, time-limited download URL (GET /api/v1/agent/artifacts/:uid),
// and that URL itself (the bytes). The first two take an API key and see only the key's team; the
// download URL carries an HMAC of the artifact id and its expiry instead, so a client can hand it
// to a tool without the key (like a session link). Artifact bytes live in the store, so any node
// serves any artifact.

import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { authenticate } from '../auth.js';
import type { ServerContext } from '../context.js';
import { buildConversation } from '../conversation.js';
import { boundedEvents } from '../bounded-events.js';
import { ProblemError } from '../problem.js';

/** How long a download URL stays valid. */
export const DOWNLOAD_TTL_SECONDS = 15 * 60;

export async function resultRoutes(
  app: FastifyInstance,
  { context }: { context: ServerContext }
): Promise<void> {
  const { store, config, limiter } = context;
  const secret = await store.getSecret('artifact-links', () => randomBytes(32).toString('base64url'));
  const sign = (uid: string, expires: number) =>
    createHmac('sha256', secret).update(`${uid}\n${expires}`).digest('base64url');

  /** The key's team, with the same rate limit as every other API request. */
  const team = async (request: FastifyRequest): Promise<string> => {
    const principal = await authenticate(store, request);
    const wait = limiter.take(principal.keyId);
    if (wait !== undefined) {
      throw new ProblemError(
        'rate_limited',
        `this key may send ${config.limits.rateLimitPerMinute} requests a minute; retry in ${wait} s`,
        { 'retry-after': String(wait) }
      );
    }
    return principal.team;
  };

  app.get('/api/v1/agent/runs/:id/conversation', async request => {
    const { id } = request.params as { id: string };
    const run = await store.getRun(await team(request), id);
    if (!run)
      throw new ProblemError(
        'not_found',
        `run ${JSON.stringify(id.slice(0, 100))} does not exist or is not visible to this key`
      );
    return buildConversation(run, await boundedEvents(store, run.run_id));
  });

  app.get('/api/v1/agent/artifacts/:uid', async request => {
    const { uid } = request.params as { uid: string };
    const artifact = await store.getArtifact(await team(request), uid);
    if (!artifact) throw artifactNotFound(uid);
    const expires = Math.floor(Date.now() / 1000) + DOWNLOAD_TTL_SECONDS;
    const base = config.publicUrl ?? `${request.protocol}://${request.host}`;
    const { run_id, team: _team, artifact_type, created_at, ...data } = artifact;
    return {
      artifact_uid: artifact.artifact_uid,
      artifact_type,
      run_id,
      created_at,
      download_url: `${base}/api/v1/agent/artifacts/${encodeURIComponent(uid)}/download?expires=${expires}&signature=${sign(uid, expires)}`,
      expires_at: new Date(expires * 1000).toISOString(),
      data
    };
  });

  app.get('/api/v1/agent/artifacts/:uid/download', async (request, reply) => {
    const { uid } = request.params as { uid: string };
    const { expires, signature } = request.query as { expires?: string; signature?: string };
    const until = Number(expires);
    const valid =
      typeof expires === 'string' &&
      /^\d{1,12}$/.test(expires) &&
      until * 1000 > Date.now() &&
      typeof signature === 'string' &&
      same(signature, sign(uid, until));
    if (!valid)
      throw new ProblemError(
        'artifact_not_found',
        'this download link is wrong or has expired; ask GET /api/v1/agent/artifacts/{uid} for a new one'
      );
    const stored = await store.readArtifact(uid);
    if (!stored) throw artifactNotFound(uid);
    const { artifact, data } = stored;
    return reply
      .type(artifact.mime_type)
      .header('content-disposition', attachment(artifact.filename))
      .header('cache-control', 'private, no-store')
      .header('x-content-type-options', 'nosniff')
      .send(data);
  });
}

function artifactNotFound(uid: string): ProblemError {
  return new ProblemError(
    'artifact_not_found',
    `artifact ${JSON.stringify(uid.slice(0, 100))} does not exist or is not visible to this key`
  );
}

function same(given: string, expected: string): boolean {
  const a = Buffer.from(given);
  const b = Buffer.from(expected);
  return a.length === b.length && timingSafeEqual(a, b);
}

/** Content-Disposition for a file name of any characters (RFC 6266 with an ASCII fallback). */
function attachment(filename: string): string {
  const ascii = filename.replace(/[^\x20-\x7e]|["\\]/g, '_');
  return `attachment; filename="${ascii}"; filename*=UTF-8''${encodeURIComponent(filename)}`;
}
