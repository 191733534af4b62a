// `agent-run schedules list|create|get|update|pause|resume|delete`, `agent-run environments` and
// `agent-run models`: the scheduled agents of the key's team, and what the service (or executor)
// offers to run them in. Tables for people, --json for scripts.

import type { CreateScheduleRequest, ScheduleRecord } from '../../api/schedules.js';
import { EXIT, usage } from '../exit.js';
import { table } from '../terminal.js';
import { type Command, clientFor, onePositional, parse } from './common.js';

const SUBCOMMANDS = ['list', 'create', 'get', 'update', 'pause', 'resume', 'delete'] as const;
type Subcommand = (typeof SUBCOMMANDS)[number];

const SETTINGS = {
  name: { type: 'string' },
  cron: { type: 'string' },
  prompt: { type: 'string' },
  environment: { type: 'string' },
  model: { type: 'string' },
  'time-zone': { type: 'string' },
  overlap: { type: 'string' },
  'no-catch-up': { type: 'boolean' },
  paused: { type: 'boolean' }
} as const;

function describe(schedule: ScheduleRecord): string {
  const lines = [
    `${schedule.name} (${schedule.id})`,
    `  cron:       ${schedule.cron_schedule} (${schedule.time_zone})`,
    `  state:      ${schedule.enabled ? 'enabled' : 'paused'}`,
    `  next run:   ${schedule.history.next_run ?? '-'}`,
    `  last ran:   ${schedule.history.last_ran ?? '-'}${schedule.last_run_id ? ` (run ${schedule.last_run_id})` : ''}`,
    `  overlap:    ${schedule.overlap}; catch up: ${schedule.catch_up ? 'yes' : 'no'}`,
    `  env:        ${String((schedule.agent_config as { environment_id?: string } | undefined)?.environment_id ?? '-')}`
  ];
  if (schedule.last_spawn_error) lines.push(`  last error: ${schedule.last_spawn_error}`);
  lines.push(`  prompt:     ${schedule.prompt.split('\n')[0]}`);
  return lines.join('\n');
}

type Values = Partial<Record<keyof typeof SETTINGS, string | boolean>>;

/** A create body from the options; for an update, the current schedule fills what is not given. */
function bodyOf(values: Values, current?: ScheduleRecord): CreateScheduleRequest & { enabled: boolean } {
  const text = (name: keyof typeof SETTINGS) => values[name] as string | undefined;
  const need = (name: keyof typeof SETTINGS, fallback: string | undefined) => {
    const value = text(name) ?? fallback;
    if (value === undefined || value.trim() === '') throw usage(`--${name} is required; see --help`);
    return value;
  };
  const config: Record<string, unknown> = { ...current?.agent_config };
  if (text('environment') !== undefined) config.environment_id = text('environment');
  if (text('model') !== undefined) config.model_id = text('model');
  if (config.environment_id === undefined) throw usage('--environment is required; see --help');
  const overlap = text('overlap');
  if (overlap !== undefined && !['skip', 'queue', 'cancel_previous'].includes(overlap))
    throw usage(`--overlap ${JSON.stringify(overlap)}: expected skip, queue or cancel_previous`);
  return {
    name: need('name', current?.name),
    cron_schedule: need('cron', current?.cron_schedule),
    prompt: need('prompt', current?.prompt),
    agent_config: config as CreateScheduleRequest['agent_config'],
    enabled: values.paused ? false : (current?.enabled ?? true),
    time_zone: text('time-zone') ?? current?.time_zone,
    overlap: (overlap ?? current?.overlap) as CreateScheduleRequest['overlap'],
    catch_up: values['no-catch-up'] ? false : (current?.catch_up ?? true)
  };
}

export const schedulesCommand: Command = {
  name: 'schedules',
  summary: 'list and manage scheduled agents',
  help: `Usage: agent-run schedules list|create|get|update|pause|resume|delete [ID] [options] [--json]

  list                   the team's schedules: name, id, cron, state, next and last run
  create                 a schedule: --name, --cron, --prompt and --environment are required
  get ID                 one schedule, with its last spawn error
  update ID              change the options given; the others stay
  pause ID / resume ID   stop firing / fire again from the next due time
  delete ID              remove it (the runs it started stay)

Options (create, update):
  --name TEXT            the schedule's name, also the title of its runs
  --cron EXPR            five-field cron expression, e.g. "0 9 * * 1-5"
  --prompt TEXT          the prompt of each run
  --environment ID       the environment the runs execute in
  --model ID             the model_id of each run
  --time-zone ZONE       IANA zone the expression is read in (default UTC)
  --overlap POLICY       skip (default), queue or cancel_previous, while the previous run still runs
  --no-catch-up          skip due times missed while the executor was down (default: run once)
  --paused               create or leave it paused

Example:
  agent-run schedules create --name nightly --cron "0 2 * * *" --environment local --prompt "Triage new issues"`,
  async run(argv, context) {
    const [sub, ...rest] = argv;
    if (!SUBCOMMANDS.includes(sub as Subcommand))
      throw usage(`schedules ${JSON.stringify(sub ?? '')}: expected one of ${SUBCOMMANDS.join(', ')}`);
    const { values, positionals } = parse(rest, SETTINGS);
    const client = clientFor(values, context);
    const show = (schedule: ScheduleRecord) =>
      values.json ? context.terminal.json(schedule, 2) : context.terminal.out(describe(schedule));
    try {
      switch (sub as Subcommand) {
        case 'list': {
          if (positionals.length > 0) throw usage('schedules list takes no arguments');
          const schedules = await client.schedules.list();
          if (values.json) context.terminal.json({ schedules }, 2);
          else if (schedules.length === 0) context.terminal.out('No schedules.');
          else
            context.terminal.out(
              table(
                ['NAME', 'ID', 'CRON', 'STATE', 'NEXT RUN', 'LAST RAN'],
                schedules.map(s => [
                  s.name,
                  s.id,
                  s.cron_schedule,
                  s.enabled ? (s.last_spawn_error ? 'enabled (error)' : 'enabled') : 'paused',
                  s.history.next_run ?? '-',
                  s.history.last_ran ?? '-'
                ])
              )
            );
          return EXIT.ok;
        }
        case 'create':
          if (positionals.length > 0) throw usage('schedules create takes options only; see --help');
          show(await client.schedules.create(bodyOf(values)));
          return EXIT.ok;
        case 'get':
          show(await client.schedules.get(onePositional(positionals, 'schedule ID')));
          return EXIT.ok;
        case 'update': {
          const id = onePositional(positionals, 'schedule ID');
          const current = await client.schedules.get(id);
          show(await client.schedules.update(id, bodyOf(values, current)));
          return EXIT.ok;
        }
        case 'pause':
          show(await client.schedules.pause(onePositional(positionals, 'schedule ID')));
          return EXIT.ok;
        case 'resume':
          show(await client.schedules.resume(onePositional(positionals, 'schedule ID')));
          return EXIT.ok;
        case 'delete': {
          const id = onePositional(positionals, 'schedule ID');
          await client.schedules.delete(id);
          if (values.json) context.terminal.json({ id, deleted: true }, 2);
          else context.terminal.out(`Deleted schedule ${id}; the runs it started stay.`);
          return EXIT.ok;
        }
      }
    } finally {
      client.close();
    }
  }
};

export const environmentsCommand: Command = {
  name: 'environments',
  summary: 'list the environments runs can execute in',
  help: `Usage: agent-run environments [--json]

Lists the environments: id, name, agent kind, the network a run may reach and where runs start from.

Example:
  agent-run environments --json`,
  async run(argv, context) {
    const { values, positionals } = parse(argv, {});
    if (positionals.length > 0) throw usage('environments takes no arguments');
    const client = clientFor(values, context);
    try {
      const environments = await client.environments.list();
      if (values.json) context.terminal.json({ environments }, 2);
      else
        context.terminal.out(
          table(
            ['ID', 'NAME', 'AGENT', 'NETWORK', 'SOURCE'],
            environments.map(e => [
              e.id,
              e.name,
              e.agent_kind,
              e.network.length === 0 ? 'none' : e.network.join(' '),
              e.source
            ])
          )
        );
      return EXIT.ok;
    } finally {
      client.close();
    }
  }
};

export const modelsCommand: Command = {
  name: 'models',
  summary: "list the models the environments' agents take",
  help: `Usage: agent-run models [--json]

Lists, per environment, its agent kind, whether a run's model_id is used, and the default model.

Example:
  agent-run models`,
  async run(argv, context) {
    const { values, positionals } = parse(argv, {});
    if (positionals.length > 0) throw usage('models takes no arguments');
    const client = clientFor(values, context);
    try {
      const models = await client.models.list();
      if (values.json) context.terminal.json(models, 2);
      else
        context.terminal.out(
          table(
            ['ENVIRONMENT', 'AGENT', 'TAKES MODEL_ID', 'DEFAULT MODEL'],
            (models.environments ?? []).map(e => [
              e.environment_id,
              e.agent_kind,
              e.accepts_model_id ? 'yes' : 'no',
              e.default_model_id ?? '-'
            ])
          )
        );
      return EXIT.ok;
    } finally {
      client.close();
    }
  }
};
