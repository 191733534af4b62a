// The dashboard's routes: sign-in and sign-out, the runs list, a run (with cancel and artifact
// downloads), the schedules (with pause and resume), the environments, the live streams and the two static files. Forms are parsed here
// only (the JSON API still takes JSON alone), and the JSON API never looks at the cookie: it keeps
// accepting Bearer keys only.

import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { KEY_PREFIX } from '../../store/keys.js';
import type { ServerContext } from '../context.js';
import { boundedEvents } from '../bounded-events.js';
import { ProblemError } from '../problem.js';
import { CSS, JS } from './assets.js';
import { renderEnvironments } from './environments-page.js';
import { PAGE_SIZE, listQuery, readFilters, renderList, renderProblem, renderSignIn } from './list-page.js';
import { listStream, runStream } from './live.js';
import { localPath } from './html.js';
import { renderRun } from './run-page.js';
import { renderSchedules } from './schedules-page.js';
import { renderWebhooks } from './webhooks-page.js';
import { setScheduleEnabled } from '../routes/schedules.js';
import { type SignedIn, clearCookie, refusal, signIn, viewerOf } from './session.js';

const CSP =
  "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; " +
  "form-action 'self'; base-uri 'none'; frame-ancestors 'none'";

const HEADERS: Record<string, string> = {
  'content-security-policy': CSP,
  // same-origin, not no-referrer: under no-referrer Chromium sends `Origin: null` with our own forms.
  'referrer-policy': 'same-origin',
  'x-content-type-options': 'nosniff',
  'x-frame-options': 'DENY',
  'cache-control': 'no-store'
};

function html(reply: FastifyReply, body: string, status = 200): FastifyReply {
  return reply.code(status).headers(HEADERS).type('text/html; charset=utf-8').send(body);
}

/**
 * A refusal: an HTML page for a browser (it asks for text/html), and for any other client the
 * problem+json every other error of the executor is.
 */
function refuse(
  request: FastifyRequest,
  reply: FastifyReply,
  page: string,
  problem: ProblemError
): FastifyReply {
  if (!/\btext\/html\b/.test(request.headers.accept ?? '')) throw problem;
  for (const [name, value] of Object.entries(problem.headers)) void reply.header(name, value);
  return html(reply, page, problem.status);
}

function forbidden(
  request: FastifyRequest,
  reply: FastifyReply,
  viewer: SignedIn | undefined,
  why: string
): FastifyReply {
  return refuse(
    request,
    reply,
    renderProblem(viewer, 'Request refused', why),
    new ProblemError('invalid_request', why, {}, 403)
  );
}

function runNotFound(
  request: FastifyRequest,
  reply: FastifyReply,
  viewer: SignedIn | undefined,
  id: string
): FastifyReply {
  return refuse(
    request,
    reply,
    renderProblem(viewer, 'Run not found', `There is no run ${id.slice(0, 100)} in your team.`),
    new ProblemError(
      'not_found',
      `run ${JSON.stringify(id.slice(0, 100))} does not exist or is not visible to this session`
    )
  );
}

export async function dashboardRoutes(
  app: FastifyInstance,
  { context }: { context: ServerContext }
): Promise<void> {
  const { store, config, limiter } = context;
  app.addContentTypeParser(
    'application/x-www-form-urlencoded',
    { parseAs: 'string' },
    (_request, body, done) => done(null, Object.fromEntries(new URLSearchParams(body as string)))
  );
  const field = (request: FastifyRequest, name: string): unknown =>
    (request.body as Record<string, unknown> | undefined)?.[name];
  const environments = config.environments.map(e => e.id);

  /** The viewer, or a redirect to the sign-in page (answered here) when there is none. */
  const signedIn = async (request: FastifyRequest, reply: FastifyReply): Promise<SignedIn | undefined> => {
    const viewer = await viewerOf(store, request);
    if (!viewer) {
      clearCookie(config, request, reply);
      // After sign-in the browser comes back to the page it asked for.
      const next = localPath(request.url);
      const back = next && next !== '/' ? `/?next=${encodeURIComponent(next)}` : '/';
      void reply.code(303).header('location', back).send();
    }
    return viewer;
  };

  app.get('/dashboard/app.css', (_request, reply) =>
    reply.type('text/css; charset=utf-8').header('cache-control', 'public, max-age=300').send(CSS)
  );
  app.get('/dashboard/app.js', (_request, reply) =>
    reply.type('text/javascript; charset=utf-8').header('cache-control', 'public, max-age=300').send(JS)
  );

  app.get('/', async (request, reply) => {
    const viewer = await viewerOf(store, request);
    if (!viewer) {
      // Back after sign-in to the page asked for: a deep link's, or this list with its filters.
      const asked = (request.query as { next?: unknown }).next;
      const next =
        asked !== undefined ? localPath(asked) : request.url !== '/' ? localPath(request.url) : undefined;
      return html(reply, renderSignIn(undefined, next));
    }
    const filters = readFilters(request.query as Record<string, unknown>);
    const runs = await store.listRuns(viewer.team, listQuery(filters, PAGE_SIZE + 1));
    const counts = await store.countRunsByState(viewer.team);
    const more = runs.length > PAGE_SIZE;
    return html(reply, renderList(viewer, filters, runs.slice(0, PAGE_SIZE), more, counts, environments));
  });

  app.post('/sign-in', async (request, reply) => {
    const refused = refusal(config, request, undefined, undefined);
    if (refused) return forbidden(request, reply, undefined, refused);
    const next = localPath(field(request, 'next'));
    const wait = limiter.take(`sign-in ${request.ip}`);
    if (wait !== undefined) {
      const message = `too many sign-in attempts from this address; try again in ${wait} s`;
      return refuse(
        request,
        reply,
        renderSignIn(message, next),
        new ProblemError('rate_limited', message, { 'retry-after': String(wait) })
      );
    }
    const key = field(request, 'api_key');
    if (typeof key !== 'string' || !(await signIn(store, config, request, reply, key.trim()))) {
      const message = `That API key is malformed, unknown or revoked; paste a whole key of the form ${KEY_PREFIX}…`;
      return refuse(
        request,
        reply,
        renderSignIn(message, next),
        new ProblemError('unauthenticated', message)
      );
    }
    return reply
      .code(303)
      .header('location', next ?? '/')
      .send();
  });

  app.post('/sign-out', async (request, reply) => {
    const viewer = await viewerOf(store, request);
    const refused = refusal(config, request, viewer, field(request, 'csrf'));
    if (refused) return forbidden(request, reply, viewer, refused);
    if (viewer) await store.deleteWebSession(viewer.idHash);
    clearCookie(config, request, reply);
    return reply.code(303).header('location', '/').send();
  });

  app.get('/runs/:id', async (request, reply) => {
    const viewer = await signedIn(request, reply);
    if (!viewer) return reply;
    const { id } = request.params as { id: string };
    const run = await store.getRun(viewer.team, id);
    if (!run) return runNotFound(request, reply, viewer, id);
    const [events, artifacts] = await Promise.all([
      boundedEvents(store, id),
      store.listArtifacts(viewer.team, id)
    ]);
    const base = config.publicUrl ?? `${request.protocol}://${request.host}`;
    return html(reply, renderRun(viewer, run, events, artifacts, base, context.links.link(run)));
  });

  app.post('/runs/:id/cancel', async (request, reply) => {
    const viewer = await viewerOf(store, request);
    const refused = refusal(config, request, viewer, field(request, 'csrf'));
    if (refused) return forbidden(request, reply, viewer, refused);
    if (!viewer) return reply.code(303).header('location', '/').send();
    const { id } = request.params as { id: string };
    const result = await store.cancelRun(
      viewer.team,
      id,
      new Date().toISOString(),
      `from the dashboard by ${viewer.keyName}`
    );
    if (result.kind === 'not_found') return runNotFound(request, reply, viewer, id);
    return reply
      .code(303)
      .header('location', `/runs/${encodeURIComponent(id)}`)
      .send();
  });

  app.get('/runs/:id/artifacts/:uid', async (request, reply) => {
    const viewer = await signedIn(request, reply);
    if (!viewer) return reply;
    const { id, uid } = request.params as { id: string; uid: string };
    const artifact = await store.getArtifact(viewer.team, uid);
    const stored = artifact && artifact.run_id === id ? await store.readArtifact(uid) : undefined;
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
  });

  app.get('/environments', async (request, reply) => {
    const viewer = await signedIn(request, reply);
    if (!viewer) return reply;
    const active = await store.listRuns(viewer.team, { limit: 1000, states: ['QUEUED', 'INPROGRESS'] });
    return html(reply, renderEnvironments(viewer, config, active, await store.listNodes()));
  });

  app.get('/schedules', async (request, reply) => {
    const viewer = await signedIn(request, reply);
    if (!viewer) return reply;
    const schedules = await store.schedules.listSchedules(viewer.team);
    const rows = await Promise.all(
      schedules.map(async schedule => ({
        schedule,
        runs: await store.listRuns(viewer.team, { limit: 5, scheduleId: schedule.id })
      }))
    );
    return html(reply, renderSchedules(viewer, rows));
  });

  app.get('/webhooks', async (request, reply) => {
    const viewer = await signedIn(request, reply);
    if (!viewer) return reply;
    const webhooks = await store.webhooks.listWebhooks(viewer.team);
    const rows = await Promise.all(
      webhooks.map(async webhook => ({
        webhook,
        deliveries: await store.webhooks.listDeliveries(webhook.id, 50)
      }))
    );
    return html(reply, renderWebhooks(viewer, rows));
  });

  for (const action of ['pause', 'resume'] as const) {
    app.post(`/schedules/:id/${action}`, async (request, reply) => {
      const viewer = await viewerOf(store, request);
      const refused = refusal(config, request, viewer, field(request, 'csrf'));
      if (refused) return forbidden(request, reply, viewer, refused);
      if (!viewer) return reply.code(303).header('location', '/').send();
      const { id } = request.params as { id: string };
      const changed = await setScheduleEnabled(store.schedules, viewer.team, id, action === 'resume');
      if (!changed)
        return refuse(
          request,
          reply,
          renderProblem(
            viewer,
            'Schedule not found',
            `There is no schedule ${id.slice(0, 100)} in your team.`
          ),
          new ProblemError('not_found', `schedule ${JSON.stringify(id.slice(0, 100))} does not exist`)
        );
      return reply.code(303).header('location', '/schedules').send();
    });
  }

  app.get('/live', async (request, reply) => {
    const viewer = await viewerOf(store, request);
    if (!viewer) throw new ProblemError('unauthenticated', 'no dashboard session: sign in at / first');
    const query = request.query as Record<string, unknown>;
    const session = async () => (await store.findWebSession(viewer.idHash, Date.now())) !== undefined;
    if (typeof query.run === 'string') {
      const run = await store.getRun(viewer.team, query.run);
      if (!run) return runNotFound(request, reply, viewer, query.run);
      const after = Number(query.after);
      return runStream(
        store,
        viewer.team,
        run.run_id,
        Number.isSafeInteger(after) ? after : 0,
        request,
        reply,
        HEADERS,
        session
      );
    }
    return listStream(store, viewer.team, readFilters(query), request, reply, HEADERS, session);
  });
}
