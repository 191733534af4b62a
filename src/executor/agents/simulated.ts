// The simulated agent: deterministic, for testing workflows. Lines of the prompt that start with
// `@sim` are directives, run in order; everything else is the instruction, echoed as the answer.
//
//   @sim sleep <seconds>       wait (cancellable)
//   @sim say <text>            agent output
//   @sim run <shell command>   run it in the workspace; non-zero exit fails the run
//   @sim write <path> <text>   write a file in the workspace (`\n` in the text is a line break)
//   @sim fail <message>        end FAILED with that status message
//   @sim result <text>         the final answer (`\n` in the text is a line break)
//   @sim json <object>         end the final answer with that JSON object (in a json fence)
//   @sim child <prompt>        (orchestrate turns) start a child run below this run, in the same
//                              environment, with that prompt (`\n` is a line break)
//   @sim gather                wait for every child this turn started to end; the final answer
//                              lists each one's state and answer
//
// The final answer (a `result` event) is the `@sim result` text, else the last `@sim say` text,
// else the echo of the instruction. `@sim child` and `@sim gather` talk to the executor as an
// orchestrating agent would: from a process inside the run's sandbox, with the turn's
// AGENT_RUN_BASE_URL and AGENT_RUN_API_KEY, through the run's proxy.

import { relative, resolve } from 'node:path';
import { type AgentContext, type AgentResult, agentKind } from './types.js';
import { agentFailed, agentStopped, commandFailed, succeeded } from '../runs/outcomes.js';
import { counted } from '../../common/plural.js';

const DIRECTIVE = /^@sim(?:\s+(\S+))?\s*(.*)$/;

/**
 * `@sim write` as a process of the run: each missing directory of the path made, one that is not
 * a directory (a link included) refused, a link in the file's place refused, then the text from
 * standard input. It says `added` or `modified` first (or why it refused).
 */
const WRITE_SCRIPT = [
  'p=$1; dirs=${p%/*}; [ "$dirs" = "$p" ] && dirs=',
  'cur=; IFS=/; set -f',
  'for part in $dirs; do',
  '  [ -z "$part" ] && continue',
  '  cur=${cur:+$cur/}$part',
  '  if [ -L "$cur" ] || { [ -e "$cur" ] && [ ! -d "$cur" ]; }; then printf "notdir %s\\n" "$cur"; exit 3; fi',
  '  [ -d "$cur" ] || mkdir -- "$cur" || exit 5',
  'done',
  'if [ -L "$p" ]; then echo link; exit 4; fi',
  'if [ -e "$p" ]; then echo modified; else echo added; fi',
  'exec cat > "$p"'
].join('\n');
const DEFAULT_PAUSE_MS = 300;

/**
 * The client of `@sim child` and `@sim gather`, run with the executor's own node inside the run's
 * sandbox: it reads a request from standard input and talks to AGENT_RUN_BASE_URL through the
 * run's proxy (HTTP_PROXY), as any HTTP client there would. `create` prints the new run's id;
 * `gather` waits for each run to end (held reads) and prints [{run_id, state, result}].
 */
const CHILD_CLIENT = `
const http = require('node:http');
const env = process.env;
const proxy = new URL(env.HTTP_PROXY);
function call(method, path, body, headers = {}) {
  return new Promise((resolve, reject) => {
    const req = http.request({
      host: proxy.hostname, port: proxy.port, method, path: env.AGENT_RUN_BASE_URL + path,
      headers: { authorization: 'Bearer ' + env.AGENT_RUN_API_KEY, 'content-type': 'application/json', ...headers }
    }, res => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', chunk => (text += chunk));
      res.on('end', () => {
        let json;
        try { json = JSON.parse(text); } catch { json = undefined; }
        if (res.statusCode >= 300) reject(new Error(res.statusCode + ' ' + (json && json.detail ? json.detail : text.slice(0, 300))));
        else resolve(json);
      });
    });
    req.on('error', reject);
    req.end(body === undefined ? undefined : JSON.stringify(body));
  });
}
const ended = s => ['SUCCEEDED', 'FAILED', 'ERROR', 'BLOCKED', 'CANCELLED'].includes(s);
async function main() {
  let input = '';
  for await (const chunk of process.stdin) input += chunk;
  const ask = JSON.parse(input);
  if (ask.action === 'create') {
    const made = await call('POST', '/api/v1/agent/runs', { prompt: ask.prompt, config: { environment_id: ask.environment } });
    process.stdout.write(JSON.stringify({ run_id: made.run_id }));
    return;
  }
  const out = [];
  for (const id of ask.ids) {
    let run = await call('GET', '/api/v1/agent/runs/' + id);
    while (!ended(run.state)) run = await call('GET', '/api/v1/agent/runs/' + id, undefined, { prefer: 'wait=30' }) || run;
    const transcript = await call('GET', '/api/v1/agent/runs/' + id + '/transcript');
    const result = (transcript.events || []).filter(e => e.kind === 'result').pop();
    out.push({ run_id: id, state: run.state, result: result ? result.text : run.status_message || '' });
  }
  process.stdout.write(JSON.stringify(out));
}
main().catch(error => { process.stderr.write(error.message + '\\n'); process.exit(1); });
`;
/** Most characters of the child client's output kept. */
const MAX_CLIENT_OUTPUT = 1024 * 1024;

export const simulatedAgent = agentKind({
  kind: 'simulated',
  summary: 'deterministic, for testing workflows: @sim directives in the prompt choose what happens',
  keys: [],
  parse: () => ({ kind: 'simulated' }),
  describe: () => 'simulated',

  async run(context: AgentContext): Promise<AgentResult> {
    const instruction: string[] = [];
    const answer: Answer = {};
    let directives = 0;
    for (const line of context.prompt.split(/\r?\n/)) {
      if (context.signal.aborted) return agentStopped();
      const match = DIRECTIVE.exec(line.trim());
      if (!match) {
        instruction.push(line);
        continue;
      }
      directives++;
      const [, verb = '', rest = ''] = match;
      const failure = await directive(context, verb, rest.trim(), answer);
      if (failure) {
        if (!context.signal.aborted) await recordAnswer(context, answer, undefined);
        return failure;
      }
    }
    if (directives === 0) await sleep(DEFAULT_PAUSE_MS, context.signal);
    if (context.signal.aborted) return agentStopped();
    const text = instruction.join('\n').trim();
    const echo = text === '' ? undefined : `Simulated agent received the instruction:\n${text}`;
    if (echo !== undefined) await context.record('message', { text: echo });
    await recordAnswer(context, answer, echo);
    return succeeded();
  }
});

interface Answer {
  said?: string;
  result?: string;
  json?: string;
  /** The runs `@sim child` started in this turn, in order. */
  children?: string[];
}

async function recordAnswer(context: AgentContext, answer: Answer, echo: string | undefined): Promise<void> {
  const text = answer.result ?? answer.said ?? echo;
  if (text === undefined && answer.json === undefined) return;
  const parts = [text, answer.json === undefined ? undefined : `\`\`\`json\n${answer.json}\n\`\`\``];
  await context.record('result', { text: parts.filter(part => part !== undefined).join('\n\n') });
}

/** Runs one directive; answers the failed outcome it ends the run with, if any. */
async function directive(
  context: AgentContext,
  verb: string,
  rest: string,
  answer: Answer
): Promise<AgentResult | undefined> {
  const run = VERBS.get(verb);
  if (run) return run(context, rest, answer);
  return invalid(`@sim ${verb}`, 'expected one of sleep, say, run, write, fail, result, json, child, gather');
}

/** What one directive does: its text after the verb, and the answer it may add to. */
type Verb = (context: AgentContext, rest: string, answer: Answer) => Promise<AgentResult | undefined>;

/** `@sim sleep <seconds>`: waits, cancellably. */
async function sleepVerb(context: AgentContext, rest: string): Promise<AgentResult | undefined> {
  const seconds = Number(rest);
  if (rest === '' || !Number.isFinite(seconds) || seconds < 0) {
    return invalid(`@sim sleep ${rest}`, 'expected a number of seconds, e.g. @sim sleep 2.5');
  }
  await sleep(seconds * 1000, context.signal);
  return undefined;
}

/** `@sim say <text>`: agent output, and the answer unless a later directive gives one. */
async function sayVerb(context: AgentContext, rest: string, answer: Answer): Promise<undefined> {
  await context.record('message', { text: rest });
  answer.said = rest;
  return undefined;
}

/** `@sim json <object>`: the JSON object the final answer ends with. */
async function jsonVerb(
  _context: AgentContext,
  rest: string,
  answer: Answer
): Promise<AgentResult | undefined> {
  let value: unknown;
  try {
    value = JSON.parse(rest);
  } catch {
    value = undefined;
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value))
    return invalid(`@sim json ${rest.slice(0, 40)}`, 'expected a JSON object, e.g. @sim json {"ok": true}');
  answer.json = JSON.stringify(value, null, 2);
  return undefined;
}

/** `@sim run <shell command>`: runs it in the workspace; a non-zero exit fails the run. */
async function runVerb(context: AgentContext, rest: string): Promise<AgentResult | undefined> {
  if (rest === '') return invalid('@sim run', 'expected a shell command, e.g. @sim run npm test');
  const result = await context.processes.shell(rest, { env: context.env });
  await context.record('command', {
    command: rest,
    exit_code: result.exitCode,
    output: result.output,
    duration_ms: result.durationMs
  });
  if (result.exitCode === 0 || context.signal.aborted) return undefined;
  return commandFailed(rest, result.exitCode, result.signal);
}

/** `@sim write <path> <text>`: writes a file of the workspace, as a process of the run. */
async function writeVerb(context: AgentContext, rest: string): Promise<AgentResult | undefined> {
  const space = rest.search(/\s/);
  const path = space < 0 ? rest : rest.slice(0, space);
  const text = space < 0 ? '' : rest.slice(space + 1).replace(/\\n/g, '\n');
  const target = resolve(context.workspace, path);
  const inside = relative(context.workspace, target);
  if (path === '' || inside.startsWith('..') || inside === '') {
    return invalid(
      `@sim write ${path}`,
      'expected a file path inside the workspace, e.g. @sim write notes/a.md Hello'
    );
  }
  // Refused before any process starts, as a sandboxed write would be refused.
  if (context.mode === 'plan')
    return agentFailed(`@sim write ${path}: the workspace is read-only in plan mode`);
  // Written by a process of the run, in its sandbox, as the run's user: the executor itself
  // never opens a path the run could have turned into a link.
  let said = '';
  let complained = '';
  const wrote = await context.processes.run('/bin/sh', ['-c', WRITE_SCRIPT, 'sh', inside], {
    env: { PATH: '/usr/bin:/bin' },
    stdin: text,
    onStdout: chunk => void (said = (said + chunk.toString('utf8')).slice(0, 4096)),
    onStderr: chunk => void (complained = (complained + chunk.toString('utf8')).slice(0, 4096))
  });
  const verdict = said.split('\n')[0] ?? '';
  if (wrote.exitCode === 0) {
    await context.record('file', {
      path: inside,
      change: verdict === 'modified' ? 'modified' : 'added',
      bytes: Buffer.byteLength(text)
    });
    return undefined;
  }
  // A path through a link or a file is the directive's fault; anything else (a workspace the
  // process may not write, a sandbox that did not start) is not, and says what the process said.
  if (verdict.startsWith('notdir ') || verdict === 'link')
    return invalid(`@sim write ${path}`, `${path}: ${unwritten(verdict, wrote)}`);
  const why = complained.trim().split('\n')[0]?.slice(0, 500);
  return agentFailed(`@sim write ${path}: ${unwritten(verdict, wrote)}${why ? `: ${why}` : ''}`);
}

/** Why WRITE_SCRIPT refused, from the first line it printed and how it ended. */
function unwritten(
  verdict: string,
  wrote: { exitCode: number | null; signal: NodeJS.Signals | null }
): string {
  if (verdict.startsWith('notdir '))
    return `${verdict.slice(7)} is not a directory (a link is never followed)`;
  if (verdict === 'link') return 'is a symbolic link; the executor never writes through one';
  return `could not be written (exit code ${wrote.exitCode ?? wrote.signal})`;
}

/** `@sim child <prompt>`: starts a child run in the same environment, through the run's proxy. */
async function childVerb(
  context: AgentContext,
  rest: string,
  answer: Answer
): Promise<AgentResult | undefined> {
  if (rest === '')
    return invalid('@sim child', "expected the child run's prompt, e.g. @sim child Review the tests");
  const called = await childClient(context, '@sim child', {
    action: 'create',
    prompt: rest.replace(/\\n/g, '\n'),
    environment: context.environmentId
  });
  if ('failure' in called) return called.failure;
  const id = String((called.answer as { run_id?: unknown } | null)?.run_id);
  (answer.children ??= []).push(id);
  await context.record('message', { text: `started child run ${id}` });
  return undefined;
}

/** `@sim gather`: waits for this turn's children to end; the answer lists each one's state and answer. */
async function gatherVerb(
  context: AgentContext,
  _rest: string,
  answer: Answer
): Promise<AgentResult | undefined> {
  const ids = answer.children ?? [];
  if (ids.length === 0) return invalid('@sim gather', 'no @sim child came before it in this turn');
  const called = await childClient(context, '@sim gather', { action: 'gather', ids });
  if ('failure' in called) return called.failure;
  const lines = (called.answer as { run_id: string; state: string; result: string }[]).map(
    (child, index) => `- child ${index + 1} (${child.run_id}) ${child.state}: ${child.result}`
  );
  answer.result = `Gathered ${counted(lines.length, 'child run')}:\n${lines.join('\n')}`;
  await context.record('message', { text: answer.result });
  return undefined;
}

/** The directives by verb. */
const VERBS: ReadonlyMap<string, Verb> = new Map<string, Verb>([
  ['sleep', sleepVerb],
  ['say', sayVerb],
  [
    'result',
    async (_context, rest, answer) => {
      answer.result = rest.replace(/\\n/g, '\n');
      return undefined;
    }
  ],
  ['json', jsonVerb],
  ['run', runVerb],
  ['write', writeVerb],
  ['fail', async (_context, rest) => agentFailed(rest || 'the simulated agent was told to fail')],
  ['child', childVerb],
  ['gather', gatherVerb]
]);

/**
 * Runs the child client inside the run's sandbox with `ask` on its standard input; answers what it
 * printed (parsed), or the failed outcome saying why.
 */
async function childClient(
  context: AgentContext,
  what: string,
  ask: Record<string, unknown>
): Promise<{ answer: unknown } | { failure: AgentResult }> {
  if (context.mode !== 'orchestrate' || !context.env.AGENT_RUN_API_KEY)
    return {
      failure: invalid(
        what,
        'this turn is not in mode orchestrate, so it has no credential to start child runs with'
      )
    };
  let out = '';
  let err = '';
  const ran = await context.processes.run(process.execPath, ['-e', CHILD_CLIENT], {
    env: { PATH: '/usr/bin:/bin', ...context.env },
    stdin: JSON.stringify(ask),
    onStdout: chunk => void (out = (out + chunk.toString('utf8')).slice(0, MAX_CLIENT_OUTPUT)),
    onStderr: chunk => void (err = (err + chunk.toString('utf8')).slice(-4096))
  });
  if (context.signal.aborted) return { failure: agentStopped() };
  if (ran.exitCode !== 0)
    return {
      failure: agentFailed(
        `${what}: the executor refused or could not be reached: ${err.trim() || `exit code ${ran.exitCode ?? ran.signal}`}`
      )
    };
  try {
    return { answer: JSON.parse(out) as unknown };
  } catch {
    return { failure: agentFailed(`${what}: the child client's answer was not JSON`) };
  }
}

function invalid(what: string, expected: string): AgentResult {
  return agentFailed(`invalid directive ${what}: ${expected}`);
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise(resolvePromise => {
    if (signal.aborted) return resolvePromise();
    // setTimeout overflows past 2^31-1 ms (about 24.8 days); no run lives that long anyway.
    const timer = setTimeout(done, Math.min(ms, 2 ** 31 - 1));
    function done() {
      clearTimeout(timer);
      signal.removeEventListener('abort', done);
      resolvePromise();
    }
    signal.addEventListener('abort', done, { once: true });
  });
}
