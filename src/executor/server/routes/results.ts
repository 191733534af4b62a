// What a run produced, read back: its conversation, its artifacts' details with a signed,
// time-limited download URL, and that URL itself (the bytes). The first two take an API key and
// see only the key's team (the key tree's hook checks it and the rate limit); the download URL
// carries an HMAC of the artifact id and its expiry instead (download-links.ts, checked by the
// download tree's hook), so a client can hand it to a tool without the key, like a session link.
// Artifact bytes live in the store, so any node serves any artifact.

import type { FastifyReply } from 'fastify';
import { buildConversation } from '../conversation-from-transcript.js';
import { boundedEvents } from '../bounded-events.js';
import { ProblemError } from '../problem.js';
import type { EndpointRequest, RouteContext } from './handler.js';

export async function getConversation(context: RouteContext, request: EndpointRequest<'getConversation'>) {
  const id = request.params.run_id;
  const run = await context.stores.runs.getRun(request.principal.team, id);
  if (!run)
    throw new ProblemError(
      'not_found',
      `run ${JSON.stringify(id.slice(0, 100))} does not exist or is not visible to this key`
    );
  return buildConversation(run, await boundedEvents(context.stores.transcript, run.run_id));
}

export async function getArtifact(context: RouteContext, request: EndpointRequest<'getArtifact'>) {
  const uid = request.params.artifact_uid;
  const artifact = await context.stores.artifacts.getArtifact(request.principal.team, uid);
  if (!artifact) throw artifactNotFound(uid);
  const base = context.settings.publicUrl ?? `${request.protocol}://${request.host}`;
  const link = context.downloads.url(base, uid);
  const { run_id, team: _team, artifact_type, created_at, ...data } = artifact;
  // A plan answers with its content, as the service does (and its download link as any artifact).
  const plan =
    artifact_type === 'PLAN'
      ? {
          document_uid: artifact.artifact_uid,
          title: artifact.description ?? 'Plan',
          content: (await context.stores.artifacts.readArtifact(uid))?.data.toString('utf8') ?? ''
        }
      : {};
  return {
    artifact_uid: artifact.artifact_uid,
    artifact_type,
    run_id,
    created_at,
    download_url: link.url,
    expires_at: link.expiresAt,
    data: { ...data, ...plan }
  };
}

export async function downloadArtifact(
  context: RouteContext,
  request: EndpointRequest<'downloadArtifact'>,
  reply: FastifyReply
) {
  const uid = request.params.artifact_uid;
  const stored = await context.stores.artifacts.readArtifact(uid);
  if (!stored) throw artifactNotFound(uid);
  const { artifact, data } = stored;
  return reply
    .type(artifact.mime_type)
    .header('content-disposition', attachment(artifact.filename))
    .header('cache-control', 'private, no-store')
    .header('x-content-type-options', 'nosniff')
    .send(data);
}

function artifactNotFound(uid: string): ProblemError {
  return new ProblemError(
    'artifact_not_found',
    `artifact ${JSON.stringify(uid.slice(0, 100))} does not exist or is not visible to this key`
  );
}

/** Content-Disposition for a file name of any characters (RFC 6266 with an ASCII fallback). */
function attachment(filename: string): string {
  const ascii = filename.replace(/[^\x20-\x7e]|["\\]/g, '_');
  return `attachment; filename="${ascii}"; filename*=UTF-8''${encodeURIComponent(filename)}`;
}
