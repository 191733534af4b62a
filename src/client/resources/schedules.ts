// `client.schedules`: scheduled agents (the executor's and the service's /agent/schedules).

import type { EndpointName } from '../../api/index.js';
import type { CreateScheduleRequest, ScheduleRecord, UpdateScheduleRequest } from '../../api/schedules.js';
import type { ClientCore, EndpointCall } from '../core.js';
import type { CallOptions } from '../poll.js';

export class Schedules {
  constructor(private readonly core: ClientCore) {}

  async list(options: CallOptions = {}): Promise<ScheduleRecord[]> {
    return (
      (await this.core.object<{ schedules?: ScheduleRecord[] }>('listSchedules', options)).schedules ?? []
    );
  }

  get(scheduleId: string, options: CallOptions = {}): Promise<ScheduleRecord> {
    return this.one('getSchedule', scheduleId, options);
  }

  /** Not retried: a create whose answer was lost may have made the schedule (list to find it). */
  create(body: CreateScheduleRequest, options: CallOptions = {}): Promise<ScheduleRecord> {
    return this.core.object<ScheduleRecord>('createSchedule', { ...options, json: body, maxRetries: 0 });
  }

  /** Replaces the settings: name, cron_schedule, prompt and enabled are required. */
  update(
    scheduleId: string,
    body: UpdateScheduleRequest,
    options: CallOptions = {}
  ): Promise<ScheduleRecord> {
    return this.one('updateSchedule', scheduleId, { ...options, json: body });
  }

  async delete(scheduleId: string, options: CallOptions = {}): Promise<void> {
    await this.one('deleteSchedule', scheduleId, options);
  }

  pause(scheduleId: string, options: CallOptions = {}): Promise<ScheduleRecord> {
    return this.one('pauseSchedule', scheduleId, options);
  }

  resume(scheduleId: string, options: CallOptions = {}): Promise<ScheduleRecord> {
    return this.one('resumeSchedule', scheduleId, options);
  }

  /** A request about one schedule, answered by its record. */
  private one(name: EndpointName, scheduleId: string, call: EndpointCall): Promise<ScheduleRecord> {
    return this.core.object<ScheduleRecord>(name, { ...call, params: { schedule_id: scheduleId } });
  }
}
