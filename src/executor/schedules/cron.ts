// Cron expressions of schedules, read by croner: five fields (minute hour day-of-month month
// day-of-week) or a nickname (@hourly, @daily, @weekly, @monthly, @yearly), in an IANA time zone.
// Checks answer with the field, the bad value and the expected form; an expression that never
// fires (the 31st of February) is refused like a malformed one.

import { Cron } from 'croner';

export const CRON_FORM =
  'five fields "minute hour day-of-month month day-of-week" such as "0 9 * * 1-5", or @hourly, @daily, @weekly, @monthly, @yearly';

const NICKNAMES = new Set(['@yearly', '@annually', '@monthly', '@weekly', '@daily', '@midnight', '@hourly']);

/** Why the time zone is not one, or undefined when it is a known IANA zone. */
export function timeZoneProblem(zone: string): string | undefined {
  try {
    new Intl.DateTimeFormat('en', { timeZone: zone });
    return undefined;
  } catch {
    return `time_zone ${JSON.stringify(zone)}: expected an IANA time zone such as "UTC" or "Europe/Berlin"`;
  }
}

function parse(expression: string, zone: string): Cron {
  return new Cron(expression, { timezone: zone, paused: true });
}

/** Why the expression is not a usable schedule, or undefined when it is. */
export function cronProblem(expression: string, zone: string): string | undefined {
  const text = expression.trim();
  const fields = text.split(/\s+/);
  const shown = JSON.stringify(expression);
  if (!(fields.length === 5 || (fields.length === 1 && NICKNAMES.has(text.toLowerCase()))))
    return `cron_schedule ${shown}: expected ${CRON_FORM}`;
  let cron: Cron;
  try {
    cron = parse(text, zone);
  } catch (error) {
    const reason = error instanceof Error ? error.message.replace(/^CronPattern: /, '') : String(error);
    return `cron_schedule ${shown}: ${reason}; expected ${CRON_FORM}`;
  }
  if (cron.nextRun(new Date()) === null)
    return `cron_schedule ${shown}: never fires (no such date); expected ${CRON_FORM}`;
  return undefined;
}

/** The first fire time strictly after `afterMs`, in ms; null when there is none. */
export function nextFire(expression: string, zone: string, afterMs: number): number | null {
  const next = parse(expression.trim(), zone).nextRun(new Date(afterMs));
  return next === null ? null : next.getTime();
}
