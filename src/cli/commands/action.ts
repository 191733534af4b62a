// `agent-run action`: the bundled action run exactly as the GitHub runner runs it (INPUT_*
// variables, the GITHUB_OUTPUT / GITHUB_STATE / GITHUB_STEP_SUMMARY files, an event file, main
// then post), so anyone can try their inputs before pushing a workflow. base-url and api-key come
// from this command line's own settings; the key travels only in the child's environment.

import { spawn } from 'node:child_process';
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, realpathSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { EXIT, usage } from '../exit.js';
import { readConnection } from '../settings.js';
import type { Terminal } from '../terminal.js';
import { type Command, parse } from './common.js';
import { parseCommandFile, renderSummary, WorkflowLog } from './workflow-files.js';

export const actionCommand: Command = {
  name: 'action',
  summary: 'run the GitHub Action locally, as the runner does',
  help: `Usage: agent-run action [--input NAME=VALUE ...] [--event-name NAME] [--event FILE]

Runs the bundled action (dist/index.js) as the GitHub runner does, main step then post step,
in a temporary folder, with base-url and api-key taken from this command's settings. Prints the
action's log (stderr), then its outputs and its job summary (stdout; --json: the outputs as JSON).
The exit code is 0 when the step succeeded, 1 when it failed.

Options:
  --input NAME=VALUE     an input of action.yml; repeat for each (api-key is refused: use AGENT_RUN_API_KEY)
  --event-name NAME      GITHUB_EVENT_NAME (default workflow_dispatch)
  --event FILE           a webhook payload for GITHUB_EVENT_PATH (default {})

Example:
  agent-run action --base-url http://127.0.0.1:8080 --input environment-id=local \\
    --input prompt='Say hello @sim say hello' --input title=Try`,
  async run(argv, context) {
    const { values, positionals } = parse(argv, {
      input: { type: 'string', multiple: true },
      'event-name': { type: 'string' },
      event: { type: 'string' }
    });
    if (positionals.length > 0)
      throw usage(`action takes no arguments, got ${JSON.stringify(positionals[0])}; use --input NAME=VALUE`);
    const inputs: Record<string, string> = {};
    for (const pair of values.input ?? []) {
      const at = pair.indexOf('=');
      const name = (at < 0 ? pair : pair.slice(0, at)).trim().toLowerCase().replace(/_/g, '-');
      if (name === 'api-key') {
        throw usage(
          '--input api-key is refused: the key never goes on a command line; set AGENT_RUN_API_KEY or --api-key-file'
        );
      }
      if (at <= 0)
        throw usage(
          `--input ${JSON.stringify(pair.slice(0, 60))}: expected NAME=VALUE, e.g. --input prompt='Fix it'`
        );
      inputs[name] = pair.slice(at + 1);
    }
    const connection = readConnection(values, context.env);
    inputs['base-url'] = connection.baseUrl;

    const dir = mkdtempSync(join(tmpdir(), 'agent-run-action-'));
    const workspace = join(dir, 'workspace');
    const temp = join(dir, 'temp');
    mkdirSync(workspace);
    mkdirSync(temp);
    const files = {
      GITHUB_OUTPUT: join(dir, 'output'),
      GITHUB_STATE: join(dir, 'state'),
      GITHUB_STEP_SUMMARY: join(dir, 'summary'),
      GITHUB_EVENT_PATH: join(dir, 'event.json')
    };
    for (const file of Object.values(files)) writeFileSync(file, '');
    if (values.event !== undefined) {
      try {
        JSON.parse(readFileSync(values.event, 'utf8'));
        copyFileSync(values.event, files.GITHUB_EVENT_PATH);
      } catch (error) {
        throw usage(
          `--event ${JSON.stringify(values.event)}: expected a readable JSON file (${(error as Error).message})`
        );
      }
    } else writeFileSync(files.GITHUB_EVENT_PATH, '{}');

    const env: Record<string, string> = {};
    for (const [name, value] of Object.entries(context.env)) {
      if (
        value === undefined ||
        /^(INPUT_|STATE_|GITHUB_|RUNNER_)/.test(name) ||
        name === 'AGENT_RUN_API_KEY'
      )
        continue;
      env[name] = value;
    }
    Object.assign(env, files, {
      GITHUB_ACTIONS: 'true',
      CI: 'true',
      GITHUB_EVENT_NAME: values['event-name'] ?? 'workflow_dispatch',
      GITHUB_WORKSPACE: workspace,
      RUNNER_TEMP: temp,
      GITHUB_WORKFLOW: 'agent-run action',
      GITHUB_JOB: 'local',
      GITHUB_ACTION: 'agent-run'
    });
    for (const [name, value] of Object.entries(inputs))
      env[`INPUT_${name.replace(/ /g, '_').toUpperCase()}`] = value;
    env['INPUT_API-KEY'] = connection.apiKey;

    const log = new WorkflowLog(context.terminal, [connection.apiKey]);
    context.terminal.note(`Running the action in ${dir} (main step).`);
    const main = await runStep(env, log);
    const state = parseCommandFile(readFileSync(files.GITHUB_STATE, 'utf8'));
    const postEnv = { ...env };
    for (const [name, value] of Object.entries(state)) postEnv[`STATE_${name}`] = value;
    context.terminal.note('Post step.');
    await runStep(postEnv, log);

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
    return main === 0 ? EXIT.ok : EXIT.failed;
  }
};

/** The action's entry: the bundle beside this one (dist/index.js next to dist/cli/index.js, links resolved). */
function actionEntry(): string {
  return join(dirname(realpathSync(process.argv[1] ?? '.')), '..', 'index.js');
}

function runStep(env: Record<string, string>, log: WorkflowLog): Promise<number | null> {
  const child = spawn(process.execPath, [actionEntry()], {
    env,
    cwd: env.GITHUB_WORKSPACE,
    stdio: ['ignore', 'pipe', 'pipe']
  });
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => log.write(chunk));
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => log.write(chunk));
  return new Promise(resolve => child.on('close', code => resolve(log.flush() ?? code)));
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
