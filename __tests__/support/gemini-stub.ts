// A stand-in for the Gemini API on loopback, so the real Gemini CLI can be run offline: it answers
// `generateContent` and `streamGenerateContent` (SSE) with a scripted tool loop — the model writes a
// file, runs a shell command, then answers — and records what each request carried (model id,
// system instruction, tools offered), so a test can check what reached the model. With `status`
// set it refuses every request with that HTTP status and the API's own error shape.

import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface GeminiStubOptions {
  /** Answer every model request with this HTTP status (e.g. 401) and an API error body. */
  status?: number;
  /** Answer the requests for these model ids with these HTTP statuses (e.g. `{ 'refused-model': 401 }`). */
  refuse?: Record<string, number>;
  /** The file the scripted `write_file` call writes, relative to the workspace. */
  fileName?: string;
  fileContent?: string;
  /** The shell command the scripted `run_shell_command` call runs. */
  command?: string;
  /** The final answer. */
  finalText?: string;
  /** Token counts reported on every response of the main loop. */
  inputTokens?: number;
  outputTokens?: number;
  cachedTokens?: number;
}

export interface GeminiRequest {
  method: string;
  path: string;
  /** The model id from the path (`models/ID:method`). */
  model: string;
  /** `generateContent`, `streamGenerateContent`, `countTokens`, … */
  action: string;
  /** All text of the system instruction. */
  systemInstruction: string;
  /** Names of the function declarations offered. */
  tools: string[];
  /** The API key the request carried, if any (header or query). */
  apiKey: string | undefined;
  body: Record<string, unknown>;
}

export interface GeminiStub {
  url: string;
  port: number;
  requests: GeminiRequest[];
  /** Requests of the scripted main loop only (those offering tools). */
  loopRequests(): GeminiRequest[];
  close(): Promise<void>;
}

type Part = {
  text?: string;
  functionCall?: { name: string; args: unknown };
  functionResponse?: { name: string; response: unknown };
};
type Content = { role?: string; parts?: Part[] };

function textOf(value: unknown): string {
  if (typeof value === 'string') return value;
  const content = value as Content | undefined;
  return (content?.parts ?? []).map(part => part.text ?? '').join('\n');
}

function toolNames(body: Record<string, unknown>): string[] {
  const tools = (body.tools ?? []) as { functionDeclarations?: { name: string }[] }[];
  return tools.flatMap(tool => (tool.functionDeclarations ?? []).map(declaration => declaration.name));
}

/** A value of the shape a JSON schema (Gemini's upper- or lower-case types) describes. */
function fill(schema: unknown): unknown {
  const node = (schema ?? {}) as {
    type?: string;
    enum?: unknown[];
    properties?: Record<string, unknown>;
  };
  if (node.enum?.length) return node.enum[0];
  switch ((node.type ?? '').toLowerCase()) {
    case 'object':
      return Object.fromEntries(
        Object.entries(node.properties ?? {}).map(([key, value]) => [key, fill(value)])
      );
    case 'array':
      return [];
    case 'number':
    case 'integer':
      return 1;
    case 'boolean':
      return false;
    default:
      return 'stub';
  }
}

async function readBody(request: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of request) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

export async function startGeminiStub(options: GeminiStubOptions = {}): Promise<GeminiStub> {
  const fileName = options.fileName ?? 'notes.txt';
  const fileContent = options.fileContent ?? 'written by the stub model\n';
  const command = options.command ?? 'echo shell-says-hello';
  const finalText = options.finalText ?? 'All done: the file is written and the command ran.';
  const usage = {
    promptTokenCount: options.inputTokens ?? 1234,
    candidatesTokenCount: options.outputTokens ?? 56,
    cachedContentTokenCount: options.cachedTokens ?? 0,
    totalTokenCount: (options.inputTokens ?? 1234) + (options.outputTokens ?? 56)
  };
  const requests: GeminiRequest[] = [];

  function reply(body: Record<string, unknown>, tools: string[]): Record<string, unknown> {
    const contents = (body.contents ?? []) as Content[];
    const answered = contents.flatMap(content => content.parts ?? []).filter(part => part.functionResponse);
    const config = (body.generationConfig ?? {}) as Record<string, unknown>;
    let parts: Part[];
    if (tools.length === 0) {
      // A side request (the model router's complexity check when no model is named, a check on who
      // speaks next): an answer of the shape its schema asks for, that asks for nothing.
      const schema = config.responseJsonSchema ?? config.responseSchema;
      parts = [{ text: schema ? JSON.stringify(fill(schema)) : 'ok' }];
    } else if (answered.length === 0) {
      parts = [{ functionCall: { name: 'write_file', args: { file_path: fileName, content: fileContent } } }];
    } else if (answered.length === 1) {
      parts = [{ functionCall: { name: 'run_shell_command', args: { command, description: 'say hello' } } }];
    } else {
      parts = [{ text: finalText }];
    }
    return {
      candidates: [{ content: { role: 'model', parts }, finishReason: 'STOP', index: 0 }],
      usageMetadata: tools.length === 0 ? { promptTokenCount: 1, candidatesTokenCount: 1 } : usage,
      modelVersion: 'stub'
    };
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
    const match = /models\/([^/:]+):(\w+)/.exec(url.pathname);
    const tools = toolNames(body);
    const key = request.headers['x-goog-api-key'];
    requests.push({
      method: request.method ?? 'GET',
      path: url.pathname,
      model: match?.[1] ?? '',
      action: match?.[2] ?? '',
      systemInstruction: textOf(body.systemInstruction),
      tools,
      apiKey: (Array.isArray(key) ? key[0] : key) ?? url.searchParams.get('key') ?? undefined,
      body
    });
    const refused = options.status ?? options.refuse?.[match?.[1] ?? ''];
    if (refused) {
      const status = refused;
      const message =
        status === 401
          ? 'API key not valid. Please pass a valid API key.'
          : status === 429
            ? 'Resource has been exhausted (e.g. check quota).'
            : status === 404
              ? `models/${match?.[1] ?? '?'} is not found for API version v1beta, or is not supported for generateContent.`
              : `stub refuses with ${status}`;
      const reasons: Record<number, string> = {
        401: 'UNAUTHENTICATED',
        404: 'NOT_FOUND',
        429: 'RESOURCE_EXHAUSTED'
      };
      const reason = reasons[status] ?? 'UNKNOWN';
      response.writeHead(status, { 'content-type': 'application/json' });
      response.end(JSON.stringify({ error: { code: status, message, status: reason } }));
      return;
    }
    if (!match) {
      response.writeHead(404, { 'content-type': 'application/json' });
      response.end(
        JSON.stringify({ error: { code: 404, message: `no route ${url.pathname}`, status: 'NOT_FOUND' } })
      );
      return;
    }
    if (match[2] === 'countTokens') {
      response.writeHead(200, { 'content-type': 'application/json' });
      response.end(JSON.stringify({ totalTokens: 42 }));
      return;
    }
    const answer = reply(body, tools);
    if (match[2] === 'streamGenerateContent') {
      response.writeHead(200, { 'content-type': 'text/event-stream' });
      response.end(`data: ${JSON.stringify(answer)}\r\n\r\n`);
      return;
    }
    response.writeHead(200, { 'content-type': 'application/json' });
    response.end(JSON.stringify(answer));
  }

  const server = createServer((request, response) => {
    handle(request, response).catch(error => {
      response.writeHead(500, { 'content-type': 'application/json' });
      response.end(JSON.stringify({ error: { code: 500, message: String(error) } }));
    });
  });
  await new Promise<void>(resolve => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    port,
    requests,
    loopRequests: () => requests.filter(request => request.tools.length > 0),
    close: () =>
      new Promise<void>(resolve => {
        server.closeAllConnections();
        server.close(() => resolve());
      })
  };
}
