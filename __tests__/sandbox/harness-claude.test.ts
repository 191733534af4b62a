// The claude-code harness with the real, unmodified Claude Code CLI (installed on first use into
// the CLI cache), its model API replaced by a stub Anthropic Messages API on loopback that scripts a
// tool loop. Each run is sandboxed with the stub as its only network destination, through the
// sandbox's filtering proxy: what the CLI sends, what the run records and what it keeps are read
// back through the API, as a user would.

import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, realpathSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { checkHarnessClis } from '../../src/executor/node/harness-startup.js';
import { environmentProblems } from '../../src/executor/node/startup.js';
import { installCli } from '../support/agent-clis.js';
import {
  type AnthropicStub,
  type MessagesBody,
  answersTool,
  startAnthropicStub,
  systemText,
  toolResults
} from '../support/anthropic-stub.js';
import { type TestExecutor, startTestExecutor, tempDir } from '../support/executor.js';
import { requireBubblewrap, transcript } from './support.js';
import { waitForState } from '../support/wait.js';

type Json = Record<string, unknown>;

const API_KEY = `sk-ant-api03-TESTKEY-${process.pid}-${Date.now()}`;
const BASE_PROMPT = `Always sign your answers as HARNESS-BASE-PROMPT-${process.pid}.`;
const MODEL = 'claude-stub-model-7';
const FINAL = 'I wrote notes.txt with the greeting.';

let ex: TestExecutor;
let key: string;
let stub: AnthropicStub;
let repo: string;

const REFUSED_MODEL = 'claude-refused-model';
const COSTLY_MODEL = 'claude-costly-model';
const MISSING_MODEL = 'claude-missing-model';
const LIMITED_MODEL = 'claude-limited-model';

const FOLLOWUP = `Now say RESUMED-${process.pid}.`;

/** The text of a message's content, whichever form it came in. */
function textOf(content: MessagesBody['messages'] extends (infer M)[] | undefined ? M : never): string {
  if (typeof content.content === 'string') return content.content;
  return content.content.map(block => (typeof block.text === 'string' ? block.text : '')).join('\n');
}

/** The tool loop: a shell command that writes a file, then the answer; a 401 for REFUSED_MODEL. */
function toolLoop(body: MessagesBody): ReturnType<Parameters<typeof startAnthropicStub>[0]> {
  // A follow-up's turn is answered at once.
  const last = body.messages?.at(-1);
  if (last && last.role === 'user' && textOf(last).includes(FOLLOWUP))
    return { text: `RESUMED-${process.pid}`, usage: { input_tokens: 10, output_tokens: 3 } };
  if (body.model === REFUSED_MODEL)
    return {
      status: 401,
      error: { type: 'authentication_error', message: 'invalid x-api-key' },
      retry: true // as the real service answers: the CLI would retry for minutes
    };
  if (body.model === MISSING_MODEL)
    return {
      status: 404,
      error: { type: 'not_found_error', message: `model: ${MISSING_MODEL}` },
      retry: true
    };
  if (body.model === LIMITED_MODEL)
    return {
      status: 429,
      error: { type: 'rate_limit_error', message: 'Number of requests has exceeded your rate limit' }
    };
  if (body.model === COSTLY_MODEL && !answersTool(body))
    return {
      tool: { name: 'Bash', input: { command: 'echo expensive' } },
      usage: { input_tokens: 2_000_000, output_tokens: 1000 }
    };
  if (!answersTool(body))
    return {
      tool: {
        name: 'Bash',
        input: {
          command:
            'printf \'hello from the harness\\n\' > notes.txt && echo wrote-it && echo "tmpdir=${TMPDIR:-unset}" && pwd'
        }
      },
      usage: { input_tokens: 1200, output_tokens: 30, cache_read_input_tokens: 400 }
    };
  const results = toolResults(body);
  if (results.length === 1) {
    // The workspace's path, as the shell printed it: Claude Code's Write takes an absolute path.
    const cwd = results[0]!.trim().split('\n').at(-1)!;
    return {
      tool: {
        name: 'Write',
        input: { file_path: `${cwd}/written.md`, content: 'written by the Write tool\n' }
      },
      usage: { input_tokens: 1250, output_tokens: 20 }
    };
  }
  return { text: FINAL, usage: { input_tokens: 1300, output_tokens: 12 } };
}

function environment(id: string, port: number, agent: Json = {}): Json {
  return {
    id,
    source: repo,
    env: ['ANTHROPIC_API_KEY', 'ANTHROPIC_BASE_URL'],
    agent: { kind: 'claude-code', command: [process.env.CLAUDE_TEST_PROGRAM!], ...agent },
    // The executor's own node (for the MCP server) is readable in the sandbox.
    sandbox: { network: [`127.0.0.1:${port}`], read: [dirname(realpathSync(process.execPath))] },
    timeout: '3m'
  };
}

beforeAll(async () => {
  requireBubblewrap();
  process.env.CLAUDE_TEST_PROGRAM = await installCli('claude-code');
  stub = await startAnthropicStub(toolLoop);
  repo = tempDir('harness-source-');
  writeFileSync(join(repo, 'README.md'), 'hello\n');
  // A stdio MCP server offering one tool: it only has to be listed to the model.
  writeFileSync(
    join(repo, 'mcp-probe.mjs'),
    [
      "import { createInterface } from 'node:readline';",
      'const send = (id, result) => process.stdout.write(JSON.stringify({ jsonrpc: "2.0", id, result }) + "\\n");',
      'createInterface({ input: process.stdin }).on("line", line => {',
      '  const m = JSON.parse(line);',
      '  if (m.method === "initialize") send(m.id, { protocolVersion: m.params.protocolVersion, capabilities: { tools: {} }, serverInfo: { name: "probe", version: "1.0.0" } });',
      '  else if (m.method === "tools/list") send(m.id, { tools: [{ name: "echo_probe", description: "Echoes its text", inputSchema: { type: "object", properties: { text: { type: "string" } } } }] });',
      '  else if (m.id !== undefined) send(m.id, {});',
      '});',
      ''
    ].join('\n')
  );
  const git = (...args: string[]) =>
    execFileSync('git', ['-C', repo, '-c', 'user.name=t', '-c', 'user.email=t@t', ...args]);
  git('init', '--quiet');
  git('add', '--all');
  git('commit', '--quiet', '-m', 'initial');
  process.env.ANTHROPIC_API_KEY = API_KEY;
  process.env.ANTHROPIC_BASE_URL = stub.url;
  ex = await startTestExecutor({
    workers: 2,
    log_level: 'silent',
    environments: [
      environment('claude', stub.port, { model: 'claude-default-model' }),
      environment('budget', stub.port, { max_cost_usd: 0.01 }),
      { ...environment('unconfined', stub.port), sandbox: 'off' },
      // The key's variable not listed: the CLI gets no key.
      { ...environment('nokey', stub.port), env: ['ANTHROPIC_BASE_URL'] }
    ]
  });
  key = (await ex.key()).raw;
}, 600_000);

afterAll(async () => {
  await ex?.stop(1000);
  await stub?.close();
});

async function create(body: Json): Promise<Response> {
  return ex.request('/api/v1/agent/run', { method: 'POST', key, body: JSON.stringify(body) });
}

async function run(body: Json): Promise<Json> {
  const response = await create(body);
  expect(response.status).toBe(200);
  const { run_id } = (await response.json()) as { run_id: string };
  return (await waitForState({ on: ex, key, id: run_id }, undefined, { timeoutMs: 240_000 })) as Json;
}

describe('a claude-code run against the stub model API', () => {
  let record: Json;
  let events: Json[];
  let conversation: Json;

  beforeAll(async () => {
    record = await run({
      prompt: 'Write a greeting into notes.txt',
      config: {
        environment_id: 'claude',
        model_id: MODEL,
        base_prompt: BASE_PROMPT,
        harness: { type: 'claude' },
        mcp_servers: { probe: { command: realpathSync(process.execPath), args: ['mcp-probe.mjs'] } },
        unknown_field: { kept: true }
      }
    });
    events = await transcript(ex, key, record.run_id as string);
    conversation = (await (
      await ex.request(`/api/v1/agent/runs/${String(record.run_id)}/conversation`, { key })
    ).json()) as Json;
  }, 300_000);

  it('succeeds with the tool call and its result in the conversation, and the answer last', () => {
    expect(record).toMatchObject({ state: 'SUCCEEDED' });
    const blocks = ((conversation.steps as Json[])[0]!.messages as Json[]).flatMap(m => m.content as Json[]);
    const action = blocks.find(block => block.type === 'action' && block.name === 'Bash');
    expect(action).toMatchObject({ input: { command: expect.stringContaining('notes.txt') } });
    // In the sandbox the CLI's temporary files go in the run's own /tmp, a tmpfs.
    expect(JSON.stringify(blocks)).toContain('tmpdir=/tmp\\n');
    expect(blocks).toContainEqual(
      expect.objectContaining({
        type: 'action_result',
        action_id: action!.id,
        state: 'SUCCEEDED',
        output: { output: expect.stringContaining('wrote-it') }
      })
    );
    const texts = blocks.filter(block => block.type === 'text');
    expect(texts.at(-1)).toEqual({ type: 'text', text: FINAL });
    expect(events.find(event => event.kind === 'agent_session')).toMatchObject({
      harness: 'claude-code',
      session_id: expect.stringMatching(/^[0-9a-f-]{36}$/)
    });
  });

  it('keeps the written file in the changes.patch artifact', async () => {
    const uid = ((record.artifacts as Json[])[0]!.data as Json).artifact_uid as string;
    const details = (await (await ex.request(`/api/v1/agent/artifacts/${uid}`, { key })).json()) as Json;
    const patch = await (await fetch(details.download_url as string)).text();
    expect(patch).toContain('+++ b/notes.txt');
    expect(patch).toContain('+hello from the harness');
    expect(patch).toContain('+++ b/written.md');
    expect(patch).toContain('+written by the Write tool');
    expect(events).toContainEqual(
      expect.objectContaining({ kind: 'file', path: 'written.md', change: 'modified' })
    );
  });

  it("reports the stub's token counts and the CLI's cost as request_usage", () => {
    expect(record.request_usage).toMatchObject({
      input_tokens: 3750,
      output_tokens: 62,
      cache_read_tokens: 400,
      total_tokens: 4212,
      inference_cost_usd: expect.any(Number)
    });
  });

  it('sends the run model, the base prompt, the MCP tool and the key to the model API', () => {
    const turns = stub.turns().filter(turn => turn.body.model !== REFUSED_MODEL);
    expect(turns.length).toBeGreaterThanOrEqual(2);
    for (const turn of turns) {
      expect(turn.body.model).toBe(MODEL);
      expect(systemText(turn.body)).toContain(BASE_PROMPT);
      expect(turn.headers['x-api-key']).toBe(API_KEY);
    }
    const tools = turns[0]!.body.tools!.map(tool => tool.name);
    expect(tools).toContain('Bash');
    // The CLI lists MCP tools among its deferred tools (loaded by its ToolSearch when used).
    expect(JSON.stringify(turns[0]!.body)).toContain('mcp__probe__echo_probe');
  });

  it('resumes the same CLI session on a follow-up: the model sees the first turn', async () => {
    const id = record.run_id as string;
    const sent = await ex.request(`/api/v1/agent/runs/${id}/followups`, {
      method: 'POST',
      key,
      body: JSON.stringify({ message: FOLLOWUP })
    });
    expect(sent.status).toBe(200);
    const again = (await waitForState({ on: ex, key, id }, undefined, { timeoutMs: 240_000 })) as Json;
    expect(again).toMatchObject({ state: 'SUCCEEDED' });
    const resumed = stub.turns().find(request => {
      const last = request.body.messages?.at(-1);
      return last !== undefined && textOf(last).includes(FOLLOWUP);
    });
    // The resumed session carries the first turn's prompt and tool calls to the model.
    const earlier = (resumed?.body.messages ?? []).slice(0, -1).map(textOf).join('\n');
    expect(earlier).toContain('Write a greeting into notes.txt');
    const after = await transcript(ex, key, id);
    expect(after.filter(event => event.kind === 'result').at(-1)).toMatchObject({
      text: `RESUMED-${process.pid}`
    });
  }, 300_000);

  it('keeps unknown config fields', () => {
    expect(record.agent_config).toMatchObject({ unknown_field: { kept: true }, model_id: MODEL });
  });
});

describe('a claude-code run whose key the model API refuses', () => {
  it('fails with the CLI message and agent_auth_failed, at the first refusal', async () => {
    const record = await run({
      prompt: 'hello',
      config: { environment_id: 'claude', model_id: REFUSED_MODEL }
    });
    expect(record).toMatchObject({ state: 'FAILED', error_code: 'agent_auth_failed' });
    expect(String(record.status_message)).toMatch(/Claude Code: .*401.*authentication_failed/);
    expect(String(record.status_message)).toContain('the model API refused the key in ANTHROPIC_API_KEY');
    expect(String(record.status_message)).not.toContain(API_KEY);
    // Stopped at the first refusal, not after the CLI's ten retries.
    expect(stub.turns().filter(turn => turn.body.model === REFUSED_MODEL).length).toBeLessThanOrEqual(2);
  }, 300_000);
});

describe('a claude-code run whose environment lists no key', () => {
  it('fails agent_auth_failed naming the variable to set, not a crash asking for /login', async () => {
    const record = await run({ prompt: 'hello', config: { environment_id: 'nokey' } });
    expect(record).toMatchObject({ state: 'FAILED', error_code: 'agent_auth_failed' });
    expect(String(record.status_message)).toContain(
      "no model key reached the CLI: set ANTHROPIC_API_KEY where the executor runs and list it under the environment's `env`"
    );
  }, 300_000);
});

describe('a claude-code run the model API turns away', () => {
  it('fails with agent_model_not_found for a model that does not exist', async () => {
    const record = await run({
      prompt: 'hello',
      config: { environment_id: 'claude', model_id: MISSING_MODEL }
    });
    expect(record).toMatchObject({ state: 'FAILED', error_code: 'agent_model_not_found' });
    expect(String(record.status_message)).toMatch(/^Claude Code: .*claude-missing-model/);
  }, 300_000);

  it('fails with agent_rate_limited when it is rate-limited', async () => {
    const record = await run({
      prompt: 'hello',
      config: { environment_id: 'claude', model_id: LIMITED_MODEL }
    });
    expect(record).toMatchObject({ state: 'FAILED', error_code: 'agent_rate_limited' });
    expect(String(record.status_message)).toMatch(/^Claude Code: /);
  }, 300_000);
});

describe('a claude-code run without a sandbox (sandbox: off)', () => {
  it('runs the same tool loop with its MCP configuration in a HOME of its own', async () => {
    const record = await run({
      prompt: 'Write a greeting into notes.txt',
      config: {
        environment_id: 'unconfined',
        mcp_servers: { probe: { command: realpathSync(process.execPath), args: ['mcp-probe.mjs'] } }
      }
    });
    expect(record).toMatchObject({ state: 'SUCCEEDED', request_usage: { input_tokens: 3750 } });
    const events = await transcript(ex, key, record.run_id as string);
    expect(events).toContainEqual(expect.objectContaining({ kind: 'result', text: FINAL }));
    const last = stub.turns().at(-1)!;
    expect(JSON.stringify(last.body)).toContain('mcp__probe__echo_probe');
    // Its HOME (the CLI's session) is kept with its workspace while a follow-up may continue it.
    expect(readdirSync(join(ex.dataDir, 'homes'))).toContain(record.run_id);
    // Its temporary files (the CLI's session folders and sockets) were in a folder of its own in the
    // data dir, removed when its turn ended: none in the machine's /tmp, where the CLI names its
    // folder by the workspace's path, which holds the run id.
    const shell = events.find(
      event => event.kind === 'action_result' && String(event.output).includes('wrote-it')
    );
    const tmp = /tmpdir=(.*)\n/.exec(String(shell?.output))?.[1];
    expect(tmp && dirname(tmp)).toBe(join(ex.dataDir, 'tmp'));
    expect(existsSync(tmp!)).toBe(false);
    const machineTmp = `/tmp/claude-${process.getuid!()}`;
    const left = existsSync(machineTmp) ? readdirSync(machineTmp) : [];
    expect(left.filter(name => name.includes(String(record.run_id)))).toEqual([]);
  }, 300_000);
});

describe('a claude-code run that passes its max_cost_usd', () => {
  it('fails with budget_exceeded', async () => {
    const record = await run({
      prompt: 'spend',
      config: { environment_id: 'budget', model_id: COSTLY_MODEL }
    });
    expect(record).toMatchObject({ state: 'FAILED', error_code: 'budget_exceeded' });
    expect(String(record.status_message)).toMatch(/budget|max_cost_usd/);
    expect(record.request_usage).toMatchObject({ input_tokens: expect.any(Number) });
    expect((record.request_usage as Json).inference_cost_usd).toBeGreaterThan(0.01);
  }, 300_000);
});

describe('the provider key', () => {
  it('appears in no event, run record, conversation or file of the data dir and store', async () => {
    const runs = ((await (await ex.request('/api/v1/agent/runs?limit=100', { key })).json()) as Json)
      .runs as Json[];
    expect(runs.length).toBeGreaterThanOrEqual(2);
    for (const listed of runs) {
      const id = listed.run_id as string;
      const shown = [
        JSON.stringify(listed),
        JSON.stringify(await transcript(ex, key, id)),
        await (await ex.request(`/api/v1/agent/runs/${id}/conversation`, { key })).text()
      ].join('\n');
      expect(shown).not.toContain(API_KEY);
    }
    const files = (dir: string): string[] =>
      readdirSync(dir).flatMap(name => {
        const path = join(dir, name);
        return statSync(path).isDirectory() ? files(path) : [path];
      });
    for (const file of [...files(ex.dataDir), ...ex.storeFiles()])
      expect(readFileSync(file).includes(API_KEY)).toBe(false);
  });
});

describe('config.harness.type', () => {
  it('must be the type the environment serves (422 naming it)', async () => {
    const response = await create({
      prompt: 'x',
      config: { environment_id: 'claude', harness: { type: 'codex' } }
    });
    expect(response.status).toBe(422);
    const problem = (await response.json()) as Json;
    expect(problem).toMatchObject({ error_code: 'invalid_field' });
    expect(String(problem.detail)).toContain('claude-code agent, which serves harness type "claude"');
  });
});

describe('the start-up check', () => {
  it('states the CLI it found, run in the sandbox, with its version', () => {
    const report = checkHarnessClis(ex.config.environments);
    expect(report.problems).toEqual([]);
    const line =
      /^environment "(\w+)": claude-code CLI \S+claude runs in its sandbox, version 2\.1\.331 \(Claude Code\)$/;
    const unconfined = line.source.replace('in its sandbox', 'unconfined');
    expect(report.notes).toEqual([
      expect.stringMatching(line),
      expect.stringMatching(line),
      expect.stringMatching(new RegExp(unconfined)),
      expect.stringMatching(line)
    ]);
  });

  it('refuses a missing CLI, naming the command that installs it', () => {
    const environment = {
      ...ex.config.environments[0]!,
      agent: { kind: 'claude-code', command: [], args: [] }
    };
    const problems = environmentProblems(environment, { ...process.env, PATH: '/nonexistent' });
    expect(problems).toEqual([
      expect.stringContaining(
        'claude is not on the PATH runs get (/nonexistent); install it with `npm install -g @anthropic-ai/claude-code@2.1.331`'
      )
    ]);
  });
});
