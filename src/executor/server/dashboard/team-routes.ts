// The dashboard's pages of what a team has beside its runs: the environments (and the nodes
// serving them), the schedules with their pause and resume buttons, and the webhook endpoints with
// their recent deliveries.

import type { FastifyReply, FastifyRequest } from 'fastify';
import type { ServerContext } from '../context.js';
import { ProblemError } from '../problem.js';
import { setScheduleEnabled } from '../routes/schedules.js';
import { renderEnvironments } from './environments-page.js';
import { renderProblem } from './list-page.js';
import { formViewer, html, refuse, seeOther, signedIn } from './respond.js';
import { renderSchedules } from './schedules-page.js';
import { renderWebhooks } from './webhooks-page.js';

/** GET /environments: each environment with the team's queued and running runs, and the nodes. */
export async function environmentsPage(context: ServerContext, request: FastifyRequest, reply: FastifyReply) {
  const { stores, settings } = context;
  const viewer = await signedIn(stores.accounts, settings, request, reply);
  if (!viewer) return reply;
  const active = await stores.runs.listRuns(viewer.team, { limit: 1000, states: ['QUEUED', 'INPROGRESS'] });
  return html(reply, renderEnvironments(viewer, settings, active, await stores.nodes.listNodes()));
}

/** GET /schedules: the team's schedules, each with its five latest runs. */
export async function schedulesPage(context: ServerContext, request: FastifyRequest, reply: FastifyReply) {
  const { stores } = context;
  const viewer = await signedIn(stores.accounts, context.settings, request, reply);
  if (!viewer) return reply;
  const schedules = await stores.schedules.listSchedules(viewer.team);
  const rows = await Promise.all(
    schedules.map(async schedule => ({
      schedule,
      runs: await stores.runs.listRuns(viewer.team, { limit: 5, scheduleId: schedule.id })
    }))
  );
  return html(reply, renderSchedules(viewer, rows));
}

/** The pause and resume buttons: the schedule enabled or not, then back to the schedules page. */
async function scheduleForm(
  context: ServerContext,
  request: FastifyRequest,
  reply: FastifyReply,
  enabled: boolean
) {
  const { stores } = context;
  const viewer = await formViewer(stores.accounts, context.settings, request, reply);
  if (!viewer) return reply;
  const { id } = request.params as { id: string };
  const changed = await setScheduleEnabled(stores.schedules, viewer.team, id, enabled);
  if (!changed)
    return refuse(
      request,
      reply,
      renderProblem(viewer, 'Schedule not found', `There is no schedule ${id.slice(0, 100)} in your team.`),
      new ProblemError('not_found', `schedule ${JSON.stringify(id.slice(0, 100))} does not exist`)
    );
  return seeOther(reply, '/schedules');
}

/** POST /schedules/:id/pause */
export function pauseScheduleForm(context: ServerContext, request: FastifyRequest, reply: FastifyReply) {
  return scheduleForm(context, request, reply, false);
}

/** POST /schedules/:id/resume */
export function resumeScheduleForm(context: ServerContext, request: FastifyRequest, reply: FastifyReply) {
  return scheduleForm(context, request, reply, true);
}

/** GET /webhooks: the team's endpoints, each with its 50 latest deliveries. */
export async function webhooksPage(context: ServerContext, request: FastifyRequest, reply: FastifyReply) {
  const { stores } = context;
  const viewer = await signedIn(stores.accounts, context.settings, request, reply);
  if (!viewer) return reply;
  const webhooks = await stores.webhooks.listWebhooks(viewer.team);
  const rows = await Promise.all(
    webhooks.map(async webhook => ({
      webhook,
      deliveries: await stores.deliveries.listDeliveries(webhook.id, 50)
    }))
  );
  return html(reply, renderWebhooks(viewer, rows));
}
