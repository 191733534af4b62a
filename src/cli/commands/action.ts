// `agent-run action`: the bundled action run exactly as the GitHub runner runs it (INPUT_*
// variables, the GITHUB_OUTPUT / GITHUB_STATE / GITHUB_STEP_SUMMARY files, an event file, main
// then post), so anyone can try their inputs before pushing a workflow. base-url and api-key come
// from this command line's own settings; the key travels only in the child's environment. Its
// temporary folder is removed at the end unless --keep-temp.

import { type ChildProcess, spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { EXIT, usage } from '../exit.js';
import { readConnection } from '../settings.js';
import type { Terminal } from '../terminal.js';
import { type Command, parse } from './common.js';
import {
  type Checkout,
  checkRepository,
  declaredInputs,
  parseInputs,
  readCheckout
} from './action-context.js';
import { parseCommandFile, renderSummary, WorkflowLog } from './workflow-files.js';

export const actionCommand: Command = {
  name: 'action',
  summary: 'run the GitHub Action locally, as the runner does',
  help: `Usage: agent-run action [--input NAME=VALUE ...] [--repo OWNER/NAME] [--ref REF] [--sha SHA]
                        [--actor LOGIN] [--event NAME] [--event-path FILE] [--keep-temp]

Runs the bundled action (dist/index.js) as the GitHub runner does, main step then post step,
with base-url and api-key taken from this command's settings. The workspace is the git checkout
you are in (or the current directory); relative prompt-file and output-schema paths are read from
the current directory. Prints the action's log (stderr), then its outputs and its job summary
(stdout; --json: the outputs as JSON). The exit code is 0 when the step succeeded, 1 when it
failed, 130 when interrupted: Ctrl-C or SIGTERM reaches the action, which cancels its run as on
a cancelled job; the post step still runs and the log and outputs are still printed.

Options:
  --input NAME=VALUE     an input of action.yml; repeat for each. Unknown names are refused;
                         api-key and base-url come from this command's settings
  --repo OWNER/NAME      GITHUB_REPOSITORY (default: the origin remote of the current checkout)
  --ref REF              GITHUB_REF (default: the checked-out branch, e.g. refs/heads/main)
  --sha SHA              GITHUB_SHA (default: the checked-out commit)
  --actor LOGIN          GITHUB_ACTOR, the user the trust gate checks (default: none)
  --event NAME           GITHUB_EVENT_NAME (default workflow_dispatch)
  --event-path FILE      a webhook payload for GITHUB_EVENT_PATH (default {})
  --keep-temp            keep the temporary folder (outputs, state, summary, patch and transcript
                         files) instead of removing it at the end

Example:
  agent-run action --base-url http://127.0.0.1:8080 --input environment-id=local \\
    --input prompt='@sim say hello' --input title=Try`,
  async run(argv, context) {
    const { values, positionals } = parse(argv, ACTION_OPTIONS);
    if (positionals.length > 0)
      throw usage(`action takes no arguments, got ${JSON.stringify(positionals[0])}; use --input NAME=VALUE`);
    const cwd = process.cwd();
    const inputs = parseInputs(values.input ?? [], declaredInputs(actionYml()), cwd);
    const { eventName, payload } = readEvent(values, cwd);
    const checkout = readCheckout(cwd);
    const repository = values.repo !== undefined ? checkRepository(values.repo) : checkout.repository;
    const connection = readConnection(values, context.env);
    inputs['base-url'] = connection.baseUrl;

    const dir = mkdtempSync(join(tmpdir(), 'agent-run-action-'));
    try {
      const files = workflowFiles(dir, payload);
      const env = stepEnv(context.env, files, join(dir, 'temp'), {
        values,
        checkout,
        repository,
        eventName
      });
      for (const [name, value] of Object.entries(inputs))
        env[`INPUT_${name.replace(/ /g, '_').toUpperCase()}`] = value;
      env['INPUT_API-KEY'] = connection.apiKey;

      const where = repository
        ? `${repository}${env.GITHUB_REF ? ` ${env.GITHUB_REF}` : ''}`
        : 'no repository';
      context.terminal.note(
        `Running the action in ${checkout.workspace} (${where}; event ${eventName}): main step.`
      );
      const log = new WorkflowLog(context.terminal, [connection.apiKey]);
      const steps = new StepRunner(log);
      const main = await runBothSteps(steps, env, files, checkout.workspace, context.terminal);
      const outputs = parseCommandFile(readFileSync(files.GITHUB_OUTPUT, 'utf8'));
      const masked = Object.fromEntries(
        Object.entries(outputs).map(([name, value]) => [name, log.mask(value)])
      );
      printResults(
        context.terminal,
        masked,
        log.mask(readFileSync(files.GITHUB_STEP_SUMMARY, 'utf8')),
        values.json === true
      );
      if (values['keep-temp']) context.terminal.note(`Kept the temporary folder ${dir}.`);
      else if (Object.values(outputs).some(value => value.startsWith(dir)))
        context.terminal.note(`Files named by the outputs were removed with ${dir}; --keep-temp keeps them.`);
      if (steps.interrupted) return EXIT.interrupted;
      return main === 0 ? EXIT.ok : EXIT.failed;
    } finally {
      if (!values['keep-temp']) rmSync(dir, { recursive: true, force: true });
    }
  }
};

/** The options of `action`, beside every command's. */
const ACTION_OPTIONS = {
  input: { type: 'string', multiple: true },
  repo: { type: 'string' },
  ref: { type: 'string' },
  sha: { type: 'string' },
  actor: { type: 'string' },
  event: { type: 'string' },
  'event-name': { type: 'string' },
  'event-path': { type: 'string' },
  'keep-temp': { type: 'boolean' }
} as const;

/** The parsed options of `action`. */
type ActionValues = ReturnType<typeof parse<typeof ACTION_OPTIONS>>['values'];

/** The files the runner gives a step, by the variable that names each. */
interface WorkflowFiles {
  GITHUB_OUTPUT: string;
  GITHUB_STATE: string;
  GITHUB_STEP_SUMMARY: string;
  GITHUB_EVENT_PATH: string;
}

/** --event (a name, default workflow_dispatch) and --event-path (a JSON payload, default {}). */
function readEvent(values: ActionValues, cwd: string): { eventName: string; payload: string } {
  const eventName = values.event ?? values['event-name'] ?? 'workflow_dispatch';
  if (/[/\\.]/.test(eventName)) {
    throw usage(
      `--event ${JSON.stringify(eventName)}: expected an event name such as pull_request; pass a payload file with --event-path`
    );
  }
  let payload = '{}';
  const eventPath = values['event-path'];
  if (eventPath !== undefined) {
    try {
      payload = readFileSync(resolve(cwd, eventPath), 'utf8');
      JSON.parse(payload);
    } catch (error) {
      throw usage(
        `--event-path ${JSON.stringify(eventPath)}: expected a readable JSON file (${(error as Error).message})`
      );
    }
  }
  return { eventName, payload };
}

/** The step's files in `dir`, empty but for the event's payload, and its RUNNER_TEMP folder `dir/temp`. */
function workflowFiles(dir: string, payload: string): WorkflowFiles {
  mkdirSync(join(dir, 'temp'));
  const files = {
    GITHUB_OUTPUT: join(dir, 'output'),
    GITHUB_STATE: join(dir, 'state'),
    GITHUB_STEP_SUMMARY: join(dir, 'summary'),
    GITHUB_EVENT_PATH: join(dir, 'event.json')
  };
  for (const file of Object.values(files)) writeFileSync(file, '');
  writeFileSync(files.GITHUB_EVENT_PATH, payload);
  return files;
}

/**
 * The step's environment as the runner sets it: this command's own without any runner, input or
 * key variable, then the repository, the files and the workflow's names (the inputs come after).
 */
function stepEnv(
  own: NodeJS.ProcessEnv,
  files: WorkflowFiles,
  temp: string,
  where: { values: ActionValues; checkout: Checkout; repository: string | undefined; eventName: string }
): Record<string, string> {
  const { values, checkout, repository, eventName } = where;
  const env: Record<string, string> = {};
  for (const [name, value] of Object.entries(own)) {
    if (
      value === undefined ||
      /^(INPUT_|STATE_|GITHUB_|RUNNER_)/.test(name) ||
      name === 'AGENT_RUN_API_KEY' ||
      name === 'AGENT_RUN_ID_TOKEN'
    )
      continue;
    env[name] = value;
  }
  const known: Record<string, string | undefined> = {
    GITHUB_REPOSITORY: repository,
    GITHUB_REPOSITORY_OWNER: repository?.split('/')[0],
    GITHUB_REF: values.ref ?? checkout.ref,
    GITHUB_SHA: values.sha ?? checkout.sha,
    GITHUB_ACTOR: values.actor
  };
  for (const [name, value] of Object.entries(known)) if (value) env[name] = value;
  Object.assign(env, files, {
    GITHUB_ACTIONS: 'true',
    CI: 'true',
    GITHUB_EVENT_NAME: eventName,
    GITHUB_WORKSPACE: checkout.workspace,
    RUNNER_TEMP: temp,
    GITHUB_SERVER_URL: 'https://github.com',
    GITHUB_API_URL: 'https://api.github.com',
    GITHUB_WORKFLOW: 'agent-run action',
    GITHUB_JOB: 'local',
    GITHUB_ACTION: 'agent-run'
  });
  return env;
}

/** The main step, then the post step with the state the main step saved; answers the main step's exit code. */
async function runBothSteps(
  steps: StepRunner,
  env: Record<string, string>,
  files: WorkflowFiles,
  workspace: string,
  terminal: Terminal
): Promise<number | null> {
  const main = await steps.run(env, workspace);
  const state = parseCommandFile(readFileSync(files.GITHUB_STATE, 'utf8'));
  const postEnv = { ...env };
  for (const [name, value] of Object.entries(state)) postEnv[`STATE_${name}`] = value;
  terminal.note('Post step.');
  await steps.run(postEnv, workspace);
  steps.dispose();
  return main;
}

/** action.yml beside the bundle: dist/cli/index.js → the package root. */
function actionYml(): string {
  return join(dirname(actionEntry()), '..', 'action.yml');
}

/**
 * Runs the action's steps one at a time. SIGINT or SIGTERM sent to this command reaches the step
 * running (the action cancels its run, as on a cancelled job); the next step still runs, as the
 * runner runs post steps after a cancellation.
 */
class StepRunner {
  interrupted = false;
  private child?: ChildProcess;
  private readonly forward = (signal: NodeJS.Signals) => {
    this.interrupted = true;
    this.child?.kill(signal);
  };

  constructor(private readonly log: WorkflowLog) {
    process.on('SIGINT', this.forward);
    process.on('SIGTERM', this.forward);
  }

  run(env: Record<string, string>, cwd: string): Promise<number | null> {
    const child = spawn(process.execPath, [actionEntry()], { env, cwd, stdio: ['ignore', 'pipe', 'pipe'] });
    this.child = child;
    child.stdout!.setEncoding('utf8').on('data', (chunk: string) => this.log.write(chunk));
    child.stderr!.setEncoding('utf8').on('data', (chunk: string) => this.log.write(chunk));
    return new Promise(resolve =>
      child.on('close', code => {
        this.child = undefined;
        resolve(this.log.flush() ?? code);
      })
    );
  }

  dispose(): void {
    process.off('SIGINT', this.forward);
    process.off('SIGTERM', this.forward);
  }
}

/** The action's entry: the bundle beside this one (dist/index.js next to dist/cli/index.js, links resolved). */
function actionEntry(): string {
  return join(dirname(realpathSync(process.argv[1] ?? '.')), '..', 'index.js');
}

function printResults(
  terminal: Terminal,
  outputs: Record<string, string>,
  summary: string,
  json: boolean
): void {
  if (json) {
    terminal.json({ outputs, summary }, 2);
    return;
  }
  terminal.out('Outputs:');
  for (const [name, value] of Object.entries(outputs)) {
    const lines = value.split('\n');
    terminal.out(`  ${name}: ${lines.length > 1 || value.length > 200 ? `\n${indentBlock(value)}` : value}`);
  }
  if (summary.trim() !== '') {
    terminal.out('\nJob summary:');
    terminal.out(renderSummary(summary));
  }
}

function indentBlock(text: string): string {
  return text
    .split('\n')
    .map(line => `    ${line}`)
    .join('\n');
}
