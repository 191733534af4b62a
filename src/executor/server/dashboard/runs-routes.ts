// The dashboard's run pages: the list (or the sign-in page when no one is signed in), one run,
// its cancel button, its artifacts' downloads, and the live streams that keep both pages current.

import type { FastifyReply, FastifyRequest } from 'fastify';
import type { ServerContext } from '../context.js';
import { boundedEvents } from '../bounded-events.js';
import { ProblemError } from '../problem.js';
import { localPath } from './html.js';
import { PAGE_SIZE, listQuery, readFilters, renderList, renderProblem, renderSignIn } from './list-page.js';
import { listStream, runStream } from './live.js';
import { HEADERS, formViewer, html, refuse, runNotFound, seeOther, signedIn } from './respond.js';
import { renderRun } from './run-page.js';
import { viewerOf } from './session.js';

/** GET /: the team's runs, filtered and counted per state; the sign-in page for no one. */
export async function listPage(context: ServerContext, request: FastifyRequest, reply: FastifyReply) {
  const { stores } = context;
  const viewer = await viewerOf(stores.accounts, request);
  if (!viewer) {
    // Back after sign-in to the page asked for: a deep link's, or this list with its filters.
    const asked = (request.query as { next?: unknown }).next;
    const next =
      asked !== undefined ? localPath(asked) : request.url !== '/' ? localPath(request.url) : undefined;
    return html(reply, renderSignIn(undefined, next));
  }
  const filters = readFilters(request.query as Record<string, unknown>);
  const runs = await stores.runs.listRuns(viewer.team, listQuery(filters, PAGE_SIZE + 1));
  const counts = await stores.runs.countRunsByState(viewer.team);
  const more = runs.length > PAGE_SIZE;
  const environments = context.settings.environments.map(e => e.id);
  return html(reply, renderList(viewer, filters, runs.slice(0, PAGE_SIZE), more, counts, environments));
}

/** GET /runs/:id: one run, its transcript (bounded), artifacts and session link. */
export async function runPage(context: ServerContext, request: FastifyRequest, reply: FastifyReply) {
  const { stores, settings } = context;
  const viewer = await signedIn(stores.accounts, settings, request, reply);
  if (!viewer) return reply;
  const { id } = request.params as { id: string };
  const run = await stores.runs.getRun(viewer.team, id);
  if (!run) return runNotFound(request, reply, viewer, id);
  const [events, artifacts] = await Promise.all([
    boundedEvents(stores.transcript, id),
    stores.artifacts.listArtifacts(viewer.team, id)
  ]);
  const base = settings.publicUrl ?? `${request.protocol}://${request.host}`;
  return html(reply, renderRun(viewer, run, events, artifacts, base, context.links.link(run)));
}

/** POST /runs/:id/cancel: the run page's cancel button. */
export async function cancelRunForm(context: ServerContext, request: FastifyRequest, reply: FastifyReply) {
  const viewer = await formViewer(context.stores.accounts, context.settings, request, reply);
  if (!viewer) return reply;
  const { id } = request.params as { id: string };
  const result = await context.stores.runs.cancelRun(
    viewer.team,
    id,
    new Date().toISOString(),
    `from the dashboard by ${viewer.keyName}`
  );
  if (result.kind === 'not_found') return runNotFound(request, reply, viewer, id);
  return seeOther(reply, `/runs/${encodeURIComponent(id)}`);
}

/** GET /runs/:id/artifacts/:uid: an artifact of the run, as a download that never renders. */
export async function artifactDownload(context: ServerContext, request: FastifyRequest, reply: FastifyReply) {
  const { stores } = context;
  const viewer = await signedIn(stores.accounts, context.settings, request, reply);
  if (!viewer) return reply;
  const { id, uid } = request.params as { id: string; uid: string };
  const artifact = await stores.artifacts.getArtifact(viewer.team, uid);
  const stored = artifact && artifact.run_id === id ? await stores.artifacts.readArtifact(uid) : undefined;
  if (!stored)
    return refuse(
      request,
      reply,
      renderProblem(viewer, 'Artifact not found', `There is no artifact ${uid.slice(0, 100)} in this run.`),
      new ProblemError(
        'artifact_not_found',
        `artifact ${JSON.stringify(uid.slice(0, 100))} does not exist in run ${JSON.stringify(id.slice(0, 100))} of this team`
      )
    );
  const name = stored.artifact.filename;
  return reply
    .type(stored.artifact.mime_type)
    .headers({ ...HEADERS, 'content-security-policy': "default-src 'none'; sandbox" })
    .header(
      'content-disposition',
      `attachment; filename="${name.replace(/[^\x20-\x7e]|["\\]/g, '_')}"; filename*=UTF-8''${encodeURIComponent(name)}`
    )
    .send(stored.data);
}

/** GET /live: the run page's stream (?run=) or the list's, ending when the session does. */
export async function liveEvents(context: ServerContext, request: FastifyRequest, reply: FastifyReply) {
  const { stores } = context;
  const viewer = await viewerOf(stores.accounts, request);
  if (!viewer) throw new ProblemError('unauthenticated', 'no dashboard session: sign in at / first');
  const query = request.query as Record<string, unknown>;
  const session = async () => (await stores.accounts.findWebSession(viewer.idHash, Date.now())) !== undefined;
  if (typeof query.run === 'string') {
    const run = await stores.runs.getRun(viewer.team, query.run);
    if (!run) return runNotFound(request, reply, viewer, query.run);
    const after = Number(query.after);
    return runStream(
      stores,
      viewer.team,
      run.run_id,
      Number.isSafeInteger(after) ? after : 0,
      request,
      reply,
      HEADERS,
      session
    );
  }
  return listStream(stores.runs, viewer.team, readFilters(query), request, reply, HEADERS, session);
}
