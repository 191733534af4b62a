// The schedule endpoints (create, list, get, update, delete, pause, resume), one handler each,
// named in routes/table.ts. The schemas have checked each field's form; what is left here is
// meaning: the cron expression parses and fires some day, the time zone exists, the environment is
// one this executor serves. A team sees only its own schedules (another team's id answers 404, as
// an unknown one). The runs a schedule starts are the scheduler's (schedules/scheduler.ts).

import { randomUUID } from 'node:crypto';
import type { CreateScheduleRequest, ScheduleRecord, UpdateScheduleRequest } from '../../../api/schedules.js';
import { cronProblem, nextFire, timeZoneProblem } from '../../schedules/cron.js';
import type { ScheduleSpec, ScheduleStore, StoredSchedule } from '../../store/schedule-types.js';
import type { ServerSettings } from '../context.js';
import { ProblemError } from '../problem.js';
import { checkHarnessConfig } from '../run-fields.js';
import type { Handler } from './handler.js';

type Body = CreateScheduleRequest | UpdateScheduleRequest;

/** The settings of a create or update body, checked beyond the schema. */
function specOf(
  body: Body,
  settings: Pick<ServerSettings, 'environments' | 'limits'>,
  previous?: ScheduleSpec
): ScheduleSpec {
  const zone = body.time_zone ?? previous?.time_zone ?? 'UTC';
  const zoneProblem = timeZoneProblem(zone);
  if (zoneProblem) throw new ProblemError('invalid_field', zoneProblem);
  const cron = cronProblem(body.cron_schedule, zone);
  if (cron) throw new ProblemError('invalid_field', cron);
  const agentConfig = (body.agent_config ?? previous?.agent_config ?? {}) as Record<string, unknown>;
  const environmentId = agentConfig.environment_id;
  const served = settings.environments.map(env => env.id).join(', ');
  if (typeof environmentId !== 'string')
    throw new ProblemError(
      'invalid_field',
      `agent_config.environment_id: missing; expected the id of an environment this executor serves (${served})`
    );
  if (!settings.environments.some(env => env.id === environmentId))
    throw new ProblemError(
      'invalid_field',
      `agent_config.environment_id ${JSON.stringify(environmentId)}: no such environment; expected one of ${served}`
    );
  // agent_config is the config of every run the schedule starts: checked as a create's would be.
  const environment = settings.environments.find(env => env.id === environmentId);
  if (environment) checkHarnessConfig(agentConfig, environment.agent.kind);
  const bytes = Buffer.byteLength(body.prompt);
  if (bytes > settings.limits.maxPromptBytes)
    throw new ProblemError(
      'invalid_field',
      `prompt: ${bytes} bytes is over the limit of ${settings.limits.maxPromptBytes} bytes`
    );
  return {
    name: body.name,
    cron_schedule: body.cron_schedule.trim(),
    prompt: body.prompt,
    agent_config: { ...agentConfig, environment_id: environmentId },
    time_zone: zone,
    overlap: body.overlap ?? previous?.overlap ?? 'skip',
    catch_up: body.catch_up ?? previous?.catch_up ?? true
  };
}

function iso(ms: number | null): string | null {
  return ms === null ? null : new Date(ms).toISOString();
}

/** A stored schedule in the service's ScheduledAgentItem shape, with the executor's additions. */
export function scheduleRecord(schedule: StoredSchedule): ScheduleRecord {
  const { spec } = schedule;
  return {
    id: schedule.id,
    name: spec.name,
    cron_schedule: spec.cron_schedule,
    prompt: spec.prompt,
    enabled: schedule.enabled,
    agent_config: spec.agent_config,
    time_zone: spec.time_zone,
    overlap: spec.overlap,
    catch_up: spec.catch_up,
    created_at: schedule.created_at,
    updated_at: schedule.updated_at,
    created_by: schedule.created_by,
    history: { last_ran: schedule.last_ran, next_run: iso(schedule.next_run_ms) },
    last_spawn_error: schedule.last_spawn_error,
    last_run_id: schedule.last_run_id,
    scope: { type: 'Team', uid: schedule.team }
  };
}

/** The next due time of a schedule created or updated now: none while it is paused. */
function nextDue(spec: ScheduleSpec, enabled: boolean): number | null {
  return enabled ? nextFire(spec.cron_schedule, spec.time_zone, Date.now()) : null;
}

/**
 * Pauses (next due time none) or resumes (next due time from now) a team's schedule, keeping its
 * settings; the schedule as it is now, undefined when the team has none with this id. The API's
 * pause and resume and the dashboard's buttons both go through here.
 */
export async function setScheduleEnabled(
  schedules: Pick<ScheduleStore, 'getSchedule' | 'updateSchedule'>,
  team: string,
  id: string,
  enabled: boolean
): Promise<StoredSchedule | undefined> {
  const schedule = await schedules.getSchedule(team, id);
  if (!schedule) return undefined;
  const nextRunMs = nextDue(schedule.spec, enabled);
  const at = new Date().toISOString();
  if (!(await schedules.updateSchedule(team, id, { spec: schedule.spec, enabled, nextRunMs, at })))
    return undefined;
  return schedules.getSchedule(team, id);
}

function notFound(id: string): ProblemError {
  return new ProblemError('not_found', `schedule ${JSON.stringify(id)} does not exist`);
}

/** The team's schedule with this id, or 404 (another team's answers as an unknown one). */
async function findSchedule(schedules: ScheduleStore, team: string, id: string): Promise<StoredSchedule> {
  const schedule = await schedules.getSchedule(team, id);
  if (!schedule) throw notFound(id);
  return schedule;
}

/** Sets enabled (and the next due time from now), keeping the settings; 404 when there is none. */
async function setEnabled(
  schedules: ScheduleStore,
  team: string,
  id: string,
  enabled: boolean
): Promise<ScheduleRecord> {
  const schedule = await setScheduleEnabled(schedules, team, id, enabled);
  if (!schedule) throw notFound(id);
  return scheduleRecord(schedule);
}

export const createSchedule: Handler<'createSchedule'> = async (context, request) => {
  const body = request.body;
  const spec = specOf(body, context.settings);
  const enabled = body.enabled ?? true;
  const principal = request.principal;
  const at = new Date().toISOString();
  const schedule: StoredSchedule = {
    id: randomUUID(),
    team: principal.team,
    spec,
    enabled,
    next_run_ms: nextDue(spec, enabled),
    last_ran: null,
    last_run_id: null,
    last_spawn_error: null,
    created_by: {
      type: principal.kind === 'personal' ? 'user' : 'agent',
      uid: principal.keyId,
      display_name: principal.name
    },
    created_at: at,
    updated_at: at
  };
  const limit = context.settings.limits.maxSchedulesPerTeam;
  if (!(await context.stores.schedules.createSchedule(schedule, limit)))
    throw new ProblemError(
      'schedule_limit_reached',
      `this team has ${limit} schedules, the limit of limits.max_schedules_per_team; delete one to create another`
    );
  return scheduleRecord(schedule);
};

export const listSchedules: Handler<'listSchedules'> = async (context, request) => ({
  schedules: (await context.stores.schedules.listSchedules(request.principal.team)).map(scheduleRecord)
});

export const getSchedule: Handler<'getSchedule'> = async (context, request) =>
  scheduleRecord(
    await findSchedule(context.stores.schedules, request.principal.team, request.params.schedule_id)
  );

export const updateSchedule: Handler<'updateSchedule'> = async (context, request) => {
  const schedules = context.stores.schedules;
  const { team } = request.principal;
  const id = request.params.schedule_id;
  const previous = await findSchedule(schedules, team, id);
  const spec = specOf(request.body, context.settings, previous.spec);
  const enabled = request.body.enabled;
  const changed = await schedules.updateSchedule(team, id, {
    spec,
    enabled,
    nextRunMs: nextDue(spec, enabled),
    at: new Date().toISOString()
  });
  if (!changed) throw notFound(id);
  return scheduleRecord(await findSchedule(schedules, team, id));
};

export const deleteSchedule: Handler<'deleteSchedule'> = async (context, request) => {
  const id = request.params.schedule_id;
  if (!(await context.stores.schedules.deleteSchedule(request.principal.team, id))) throw notFound(id);
  return { success: true };
};

export const pauseSchedule: Handler<'pauseSchedule'> = (context, request) =>
  setEnabled(context.stores.schedules, request.principal.team, request.params.schedule_id, false);

export const resumeSchedule: Handler<'resumeSchedule'> = (context, request) =>
  setEnabled(context.stores.schedules, request.principal.team, request.params.schedule_id, true);
