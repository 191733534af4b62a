// The dashboard's routes: sign-in and sign-out, the runs list, a run (with cancel and artifact
// downloads), the schedules (with pause and resume), the webhooks, the environments, the live
// streams and the two static files. Each page's handler lives with its kind (runs-routes.ts,
// sign-in-routes.ts, team-routes.ts); this plugin only names them. Forms are parsed here only (the
// JSON API still takes JSON alone), and the JSON API never looks at the cookie: it keeps accepting
// Bearer keys only.

import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { ServerContext } from '../context.js';
import { CSS, JS } from './assets.js';
import type { PageHandler } from './respond.js';
import { artifactDownload, cancelRunForm, listPage, liveEvents, runPage } from './runs-routes.js';
import { signInForm, signOutForm } from './sign-in-routes.js';
import {
  environmentsPage,
  pauseScheduleForm,
  resumeScheduleForm,
  schedulesPage,
  webhooksPage
} from './team-routes.js';

function stylesheet(_context: ServerContext, _request: FastifyRequest, reply: FastifyReply) {
  return reply.type('text/css; charset=utf-8').header('cache-control', 'public, max-age=300').send(CSS);
}

function script(_context: ServerContext, _request: FastifyRequest, reply: FastifyReply) {
  return reply.type('text/javascript; charset=utf-8').header('cache-control', 'public, max-age=300').send(JS);
}

const ROUTES: readonly (readonly ['GET' | 'POST', string, PageHandler])[] = [
  ['GET', '/dashboard/app.css', stylesheet],
  ['GET', '/dashboard/app.js', script],
  ['GET', '/', listPage],
  ['POST', '/sign-in', signInForm],
  ['POST', '/sign-out', signOutForm],
  ['GET', '/runs/:id', runPage],
  ['POST', '/runs/:id/cancel', cancelRunForm],
  ['GET', '/runs/:id/artifacts/:uid', artifactDownload],
  ['GET', '/environments', environmentsPage],
  ['GET', '/schedules', schedulesPage],
  ['GET', '/webhooks', webhooksPage],
  ['POST', '/schedules/:id/pause', pauseScheduleForm],
  ['POST', '/schedules/:id/resume', resumeScheduleForm],
  ['GET', '/live', liveEvents]
];

export async function dashboardRoutes(
  app: FastifyInstance,
  { context }: { context: ServerContext }
): Promise<void> {
  app.addContentTypeParser(
    'application/x-www-form-urlencoded',
    { parseAs: 'string' },
    (_request, body, done) => done(null, Object.fromEntries(new URLSearchParams(body as string)))
  );
  for (const [method, url, handler] of ROUTES)
    app.route({ method, url, handler: (request, reply) => handler(context, request, reply) });
}
