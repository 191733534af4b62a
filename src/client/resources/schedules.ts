// `client.schedules`: scheduled agents (the executor's and the service's /agent/schedules).

import type { CreateScheduleRequest, ScheduleRecord, UpdateScheduleRequest } from '../../api/schedules.js';
import type { ClientCore } from '../core.js';
import type { CallOptions } from '../poll.js';

export class Schedules {
  constructor(private readonly core: ClientCore) {}

  async list(options: CallOptions = {}): Promise<ScheduleRecord[]> {
    const body = await this.core.object('listSchedules', options);
    return (body as { schedules?: ScheduleRecord[] }).schedules ?? [];
  }

  async get(scheduleId: string, options: CallOptions = {}): Promise<ScheduleRecord> {
    return (await this.core.object('getSchedule', {
      ...options,
      params: { schedule_id: scheduleId }
    })) as ScheduleRecord;
  }

  /** Not retried: a create whose answer was lost may have made the schedule (list to find it). */
  async create(body: CreateScheduleRequest, options: CallOptions = {}): Promise<ScheduleRecord> {
    return (await this.core.object('createSchedule', {
      ...options,
      json: body,
      maxRetries: 0
    })) as ScheduleRecord;
  }

  /** Replaces the settings: name, cron_schedule, prompt and enabled are required. */
  async update(
    scheduleId: string,
    body: UpdateScheduleRequest,
    options: CallOptions = {}
  ): Promise<ScheduleRecord> {
    return (await this.core.object('updateSchedule', {
      ...options,
      params: { schedule_id: scheduleId },
      json: body
    })) as ScheduleRecord;
  }

  async delete(scheduleId: string, options: CallOptions = {}): Promise<void> {
    await this.core.object('deleteSchedule', { ...options, params: { schedule_id: scheduleId } });
  }

  async pause(scheduleId: string, options: CallOptions = {}): Promise<ScheduleRecord> {
    return (await this.core.object('pauseSchedule', {
      ...options,
      params: { schedule_id: scheduleId }
    })) as ScheduleRecord;
  }

  async resume(scheduleId: string, options: CallOptions = {}): Promise<ScheduleRecord> {
    return (await this.core.object('resumeSchedule', {
      ...options,
      params: { schedule_id: scheduleId }
    })) as ScheduleRecord;
  }
}
