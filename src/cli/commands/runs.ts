// `agent-run get`, `list`, `wait` and `cancel`: one run's record, a page of runs, waiting for a
// run that already exists, and asking the service to stop one.

import {
  type AgentRunClient,
  ConflictError,
  type ListRunsQuery,
  type Run,
  type RunsPage,
  formatDuration
} from '../../client/index.js';
import { EXIT, EXIT_CODES_HELP, usage } from '../exit.js';
import { table } from '../terminal.js';
import {
  type Command,
  clientFor,
  durationOption,
  jsonFields,
  metadataOption,
  onBlockedOption,
  onePositional,
  parse,
  pick
} from './common.js';
import { watchRun } from './watch.js';

export const getCommand: Command = {
  name: 'get',
  summary: "print a run's record",
  help: `Usage: agent-run get ID [--json [FIELDS]]

Prints the run's state, title, times, status message and session link (--json: the whole record;
--json FIELDS: only those fields, comma-separated).

Example:
  agent-run get 3f2a9c1e-0000-4000-8000-000000000000 --json state,session_link`,
  async run(argv, context) {
    const selected = jsonFields(argv);
    const { values, positionals } = parse(selected.argv, {});
    const runId = onePositional(positionals, 'run ID');
    const client = clientFor(values, context);
    try {
      const run = await client.runs.get(runId);
      if (values.json) context.terminal.json(pick(run, selected.fields), 2);
      else context.terminal.out(describeRun(run));
      return EXIT.ok;
    } finally {
      client.close();
    }
  }
};

export const listCommand: Command = {
  name: 'list',
  summary: 'list runs, newest first',
  help: `Usage: agent-run list [--state S ...] [--environment ID] [--metadata K=V ...] [--ancestor ID] [--limit N] [--json [FIELDS]]

Lists runs, newest first, as a table: id, state, environment, created, duration and title (an
untitled run shows its prompt's first line). --json: {runs, page_info}; --json FIELDS: an array
of the runs with only those fields, e.g. --json run_id,state,title.

Options:
  --state S              only runs in this state; repeat for several
  --environment ID       only runs of this environment
  --metadata KEY=VALUE   only runs whose metadata has this pair; repeat for several (all must match)
  --ancestor ID          only runs below this run (its children, their children, ...)
  --limit N              at most N runs (1-500, default 20; read in pages of 100)

Example:
  agent-run list --state FAILED --state ERROR --limit 5`,
  async run(argv, context) {
    const selected = jsonFields(argv);
    const { values, positionals } = parse(selected.argv, {
      state: { type: 'string', multiple: true },
      environment: { type: 'string' },
      metadata: { type: 'string', multiple: true },
      ancestor: { type: 'string' },
      limit: { type: 'string' }
    });
    const metadata = metadataOption(values.metadata);
    if (positionals.length > 0) throw usage(`list takes no arguments, got ${JSON.stringify(positionals[0])}`);
    const limit = values.limit === undefined ? 20 : Number(values.limit);
    if (!Number.isInteger(limit) || limit < 1 || limit > 500) {
      throw usage(`--limit ${JSON.stringify(values.limit)}: expected a whole number from 1 to 500`);
    }
    const states = (values.state ?? []).map(state => state.trim().toUpperCase());
    const client = clientFor(values, context);
    try {
      const page = await listUpTo(client, limit, {
        ...(states.length > 0 ? { state: states } : {}),
        ...(values.environment ? { environment_id: values.environment } : {}),
        ...(metadata ? { metadata } : {}),
        ...(values.ancestor ? { ancestor_run_id: values.ancestor } : {})
      });
      if (values.json) {
        if (selected.fields)
          context.terminal.json(
            page.runs.map(run => pick(run, selected.fields)),
            2
          );
        else context.terminal.json(page, 2);
        return EXIT.ok;
      }
      if (page.runs.length === 0) {
        context.terminal.out('No runs.');
        return EXIT.ok;
      }
      const rows = page.runs.map(run => [
        run.run_id,
        run.state,
        environmentOf(run),
        run.created_at ?? '',
        durationOf(run),
        titleOf(run)
      ]);
      context.terminal.out(table(['RUN ID', 'STATE', 'ENVIRONMENT', 'CREATED', 'DURATION', 'TITLE'], rows));
      if (page.page_info.has_next_page) context.terminal.note('More runs exist: raise --limit or filter.');
      return EXIT.ok;
    } finally {
      client.close();
    }
  }
};

/** The service's page size limit: larger --limit values are read page by page. */
const PAGE_SIZE = 100;

/** Up to `limit` runs, newest first, following the cursor across pages of at most 100. */
async function listUpTo(client: AgentRunClient, limit: number, query: ListRunsQuery): Promise<RunsPage> {
  const runs: Run[] = [];
  let cursor: string | undefined;
  for (;;) {
    const page = await client.runs.list({
      ...query,
      limit: Math.min(PAGE_SIZE, limit - runs.length),
      cursor
    });
    runs.push(...page.runs);
    const next = page.page_info.next_cursor ?? undefined;
    const more = page.page_info.has_next_page && next !== undefined && next !== cursor;
    if (!more || runs.length >= limit || page.runs.length === 0) {
      return {
        runs: runs.slice(0, limit),
        page_info: more ? page.page_info : { has_next_page: false, next_cursor: null }
      };
    }
    cursor = next;
  }
}

/** An untitled run is named by its prompt's first line, as the dashboard names it. */
function titleOf(run: Run): string {
  const title = (run.title ?? '').trim();
  if (title !== '') return title;
  const first = (run.prompt ?? '').trim().split('\n')[0] ?? '';
  return first.length > 60 ? `${first.slice(0, 59)}…` : first;
}

function environmentOf(run: Run): string {
  const id = (run.agent_config as { environment_id?: unknown } | undefined)?.environment_id;
  return typeof id === 'string' ? id : '';
}

function durationOf(run: Run): string {
  const start = Date.parse(run.started_at ?? '');
  const end = Date.parse(run.completed_at ?? '');
  return Number.isNaN(start) || Number.isNaN(end) ? '' : formatDuration(end - start);
}

export const waitCommand: Command = {
  name: 'wait',
  summary: 'wait for a run to end, print the answer',
  help: `Usage: agent-run wait ID [--timeout 60m] [--on-blocked fail|wait] [--json]

Waits for an existing run to end, streaming its progress to stderr; prints the agent's answer
(--json: the final record with result and artifacts). The exit code says how it ended.

Example:
  agent-run wait 3f2a9c1e-0000-4000-8000-000000000000 --timeout 30m

${EXIT_CODES_HELP}`,
  async run(argv, context) {
    const { values, positionals } = parse(argv, {
      timeout: { type: 'string' },
      'on-blocked': { type: 'string' }
    });
    const runId = onePositional(positionals, 'run ID');
    const timeoutMs = durationOption('timeout', values.timeout, '60m');
    const onBlocked = onBlockedOption(values['on-blocked']);
    const client = clientFor(values, context);
    try {
      await client.runs.get(runId); // an unknown id fails here, before any progress is read
      return await watchRun(client, context.terminal, runId, {
        timeoutMs,
        onBlocked,
        json: values.json === true,
        onInterrupt: 'leave'
      });
    } finally {
      client.close();
    }
  }
};

export const cancelCommand: Command = {
  name: 'cancel',
  summary: 'cancel a run',
  help: `Usage: agent-run cancel ID [--reason TEXT]

Asks the service to cancel the run. Exit code 1 when the run had already ended.

Example:
  agent-run cancel 3f2a9c1e-0000-4000-8000-000000000000 --reason "superseded"`,
  async run(argv, context) {
    const { values, positionals } = parse(argv, { reason: { type: 'string' } });
    const runId = onePositional(positionals, 'run ID');
    const client = clientFor(values, context);
    try {
      await client.runs.cancel(runId, { reason: values.reason });
      const run = await client.runs.get(runId).catch(() => undefined);
      if (values.json) context.terminal.json(run ?? { run_id: runId }, 2);
      else context.terminal.out(`Cancelled run ${runId}${run ? ` (now ${run.state})` : ''}.`);
      return EXIT.ok;
    } catch (error) {
      if (!(error instanceof ConflictError) && (error as { status?: number }).status !== 400) throw error;
      const run = await client.runs.get(runId).catch(() => undefined);
      context.terminal.error(
        `run ${runId} cannot be cancelled: it is ${run?.state ?? 'already finished'} (${(error as Error).message})`
      );
      return EXIT.failed;
    } finally {
      client.close();
    }
  }
};

function describeRun(run: Run): string {
  const rows: [string, unknown][] = [
    ['run', run.run_id],
    ['state', run.state],
    ['title', run.title],
    ['created', run.created_at],
    ['started', run.started_at],
    ['completed', run.completed_at],
    [
      'duration',
      run.started_at && run.completed_at
        ? formatDuration(Date.parse(run.completed_at) - Date.parse(run.started_at))
        : undefined
    ],
    ['error code', run.error_code],
    ['status', run.status_message],
    ['session', run.session_link]
  ];
  return rows
    .filter(([, value]) => value !== undefined && value !== null && value !== '')
    .map(([name, value]) => `${`${name}:`.padEnd(11)} ${String(value)}`)
    .join('\n');
}
