// A stand-in for the OpenAI Responses API on loopback, so the real Codex CLI can be run offline. It
// streams `POST /responses` answers as server-sent events with a scripted tool loop — the model
// writes a file with a shell command, runs another command, then answers — and records what each
// request carried (model id, instructions, tools offered). Codex first tries the same path as a
// WebSocket; the stub refuses the upgrade (426) so the CLI falls back to HTTP streaming. With
// `status` set it refuses every request with that HTTP status and the API's own error shape.

import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Duplex } from 'node:stream';

export interface OpenAiStubOptions {
  /** Answer every request (and WebSocket upgrade) with this HTTP status and an API error body. */
  status?: number;
  /** Answer the requests for these model ids with these HTTP statuses (e.g. `{ 'refused-model': 401 }`). */
  refuse?: Record<string, number>;
  /** The file the first scripted command writes, relative to the workspace. */
  fileName?: string;
  /** The second scripted command. */
  command?: string;
  finalText?: string;
  /** Token counts reported on every response. */
  inputTokens?: number;
  cachedTokens?: number;
  outputTokens?: number;
}

export interface OpenAiRequest {
  method: string;
  path: string;
  model: string;
  /** The `instructions` field and every developer/system message's text, joined. */
  instructions: string;
  /** Names of the tools offered (functions inside namespaces as `namespace.name`). */
  tools: string[];
  /** The bearer token the request carried. */
  apiKey: string | undefined;
  body: Record<string, unknown>;
}

export interface OpenAiStub {
  /** The API base, ending in `/v1` (what `openai_base_url` takes). */
  url: string;
  port: number;
  requests: OpenAiRequest[];
  /** WebSocket upgrade attempts seen (refused). */
  upgrades: number;
  /** The bearer token of every request and upgrade attempt, in order. */
  keys: string[];
  close(): Promise<void>;
}

type Tool = { type?: string; name?: string; tools?: Tool[] };
type InputItem = { type?: string; role?: string; content?: unknown };

function toolNames(tools: Tool[], prefix = ''): string[] {
  return tools.flatMap(tool =>
    tool.type === 'namespace'
      ? toolNames(tool.tools ?? [], `${prefix}${tool.name ?? ''}.`)
      : [`${prefix}${tool.name ?? tool.type ?? ''}`]
  );
}

function contentText(content: unknown): string {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return '';
  return content.map(part => (part as { text?: string }).text ?? '').join('\n');
}

function instructionsOf(body: Record<string, unknown>): string {
  const input = (Array.isArray(body.input) ? body.input : []) as InputItem[];
  const messages = input
    .filter(item => item.type === 'message' && (item.role === 'developer' || item.role === 'system'))
    .map(item => contentText(item.content));
  return [typeof body.instructions === 'string' ? body.instructions : '', ...messages].join('\n');
}

async function readBody(request: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of request) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

/** What the API answers a request that carries no key. */
const NO_KEY_BODY = {
  error: {
    message: "You didn't provide an API key. Provide it in an Authorization header using Bearer auth.",
    type: 'invalid_request_error',
    code: null
  }
};

function errorBody(status: number, model: string): Record<string, unknown> {
  if (status === 404) {
    return {
      error: {
        message: `The model \`${model}\` does not exist or you do not have access to it.`,
        type: 'invalid_request_error',
        code: 'model_not_found'
      }
    };
  }
  if (status === 401) {
    return {
      error: {
        message: 'Incorrect API key provided. You can find your API key at https://platform.openai.com.',
        type: 'invalid_request_error',
        code: 'invalid_api_key'
      }
    };
  }
  if (status === 429) {
    return {
      error: { message: 'Rate limit reached for requests', type: 'requests', code: 'rate_limit_exceeded' }
    };
  }
  return { error: { message: `stub refuses with ${status}`, type: 'server_error', code: null } };
}

export async function startOpenAiStub(options: OpenAiStubOptions = {}): Promise<OpenAiStub> {
  const fileName = options.fileName ?? 'notes.txt';
  const command = options.command ?? 'echo shell-says-hello';
  const finalText = options.finalText ?? 'All done: the file is written and the command ran.';
  const usage = {
    input_tokens: options.inputTokens ?? 1234,
    input_tokens_details: { cached_tokens: options.cachedTokens ?? 0 },
    output_tokens: options.outputTokens ?? 56,
    output_tokens_details: { reasoning_tokens: 0 },
    total_tokens: (options.inputTokens ?? 1234) + (options.outputTokens ?? 56)
  };
  const requests: OpenAiRequest[] = [];
  let upgrades = 0;
  const keys: string[] = [];
  let responses = 0;

  function script(body: Record<string, unknown>): Record<string, unknown>[] {
    const input = (Array.isArray(body.input) ? body.input : []) as InputItem[];
    const done = input.filter(
      item => item.type === 'function_call_output' || item.type === 'custom_tool_call_output'
    ).length;
    const patchTool = toolNames((Array.isArray(body.tools) ? body.tools : []) as Tool[]).includes(
      'apply_patch'
    );
    const id = `resp_${++responses}`;
    const call = (cmd: string): Record<string, unknown> => ({
      type: 'function_call',
      id: `fc_${responses}`,
      call_id: `call_${responses}`,
      name: 'exec_command',
      arguments: JSON.stringify({ cmd })
    });
    const events: Record<string, unknown>[] = [
      { type: 'response.created', response: { id, status: 'in_progress' } }
    ];
    let item: Record<string, unknown>;
    if (done === 0 && patchTool) {
      // Models that know `apply_patch` write files with it (Codex reports those as file changes).
      item = {
        type: 'custom_tool_call',
        id: `ctc_${responses}`,
        call_id: `call_${responses}`,
        name: 'apply_patch',
        input: `*** Begin Patch\n*** Add File: ${fileName}\n+written by the stub model\n*** End Patch\n`
      };
    } else if (done === 0) item = call(`printf 'written by the stub model\\n' > ${fileName}`);
    else if (done === 1) item = call(command);
    else {
      item = {
        type: 'message',
        id: `msg_${responses}`,
        role: 'assistant',
        status: 'completed',
        content: [{ type: 'output_text', text: finalText, annotations: [] }]
      };
      events.push({ type: 'response.output_item.added', output_index: 0, item: { ...item, content: [] } });
      events.push({
        type: 'response.output_text.delta',
        output_index: 0,
        content_index: 0,
        delta: finalText
      });
    }
    events.push({ type: 'response.output_item.done', output_index: 0, item });
    events.push({ type: 'response.completed', response: { id, status: 'completed', usage } });
    return events;
  }

  async function handle(request: IncomingMessage, response: ServerResponse): Promise<void> {
    const url = new URL(request.url ?? '/', 'http://stub');
    const raw = await readBody(request);
    let body: Record<string, unknown> = {};
    try {
      body = raw ? (JSON.parse(raw) as Record<string, unknown>) : {};
    } catch {
      body = {};
    }
    const auth = request.headers.authorization;
    if (auth) keys.push(auth.replace(/^Bearer\s+/i, ''));
    requests.push({
      method: request.method ?? 'GET',
      path: url.pathname,
      model: typeof body.model === 'string' ? body.model : '',
      instructions: instructionsOf(body),
      tools: toolNames((Array.isArray(body.tools) ? body.tools : []) as Tool[]),
      apiKey: auth?.replace(/^Bearer\s+/i, ''),
      body
    });
    const model = typeof body.model === 'string' ? body.model : '';
    // As the real API: a request without a key is refused, whatever else is set.
    if (!auth || auth.replace(/^Bearer\s*/i, '').trim() === '') {
      response.writeHead(401, { 'content-type': 'application/json' });
      response.end(JSON.stringify(NO_KEY_BODY));
      return;
    }
    const status = options.status ?? options.refuse?.[model];
    if (status) {
      response.writeHead(status, { 'content-type': 'application/json' });
      response.end(JSON.stringify(errorBody(status, model)));
      return;
    }
    if (request.method !== 'POST' || !url.pathname.endsWith('/responses')) {
      response.writeHead(404, { 'content-type': 'application/json' });
      response.end(JSON.stringify({ error: { message: `no route ${request.method} ${url.pathname}` } }));
      return;
    }
    response.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
    for (const event of script(body)) {
      response.write(`event: ${String(event.type)}\ndata: ${JSON.stringify(event)}\n\n`);
    }
    response.end();
  }

  const server = createServer((request, response) => {
    handle(request, response).catch(error => {
      response.writeHead(500, { 'content-type': 'application/json' });
      response.end(JSON.stringify({ error: { message: String(error) } }));
    });
  });
  server.on('upgrade', (request: IncomingMessage, socket: Duplex) => {
    upgrades++;
    if (request.headers.authorization) keys.push(request.headers.authorization.replace(/^Bearer\s+/i, ''));
    // An upgrade has no body; Codex names the model in a metadata header.
    let model = '';
    try {
      model = String(JSON.parse(String(request.headers['x-codex-turn-metadata'] ?? '{}')).model ?? '');
    } catch {
      model = '';
    }
    const status = options.status ?? options.refuse?.[model] ?? 426;
    const text = JSON.stringify(errorBody(status, model));
    socket.end(
      `HTTP/1.1 ${status} Refused\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(text)}\r\nconnection: close\r\n\r\n${text}`
    );
  });
  await new Promise<void>(resolve => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/v1`,
    port,
    requests,
    get upgrades() {
      return upgrades;
    },
    keys,
    close: () =>
      new Promise<void>(resolve => {
        server.closeAllConnections();
        server.close(() => resolve());
      })
  };
}
