// A stand-in for the Anthropic Messages API on loopback, so that the real Claude Code CLI can run
// offline: a real HTTP server answering POST /v1/messages as the service does (server-sent events
// when the request streams, one JSON message otherwise). A test scripts the model: given the
// request, the stub answers with a tool call or text, with the token counts the test chose. Every
// request is kept, so a test can see what the CLI sent (model, system prompt, tools offered).

import { type IncomingMessage, type Server, type ServerResponse, createServer } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface StubRequest {
  /** When it arrived (ms since the epoch). */
  at: number;
  path: string;
  headers: IncomingMessage['headers'];
  body: MessagesBody;
}

export interface MessagesBody {
  model?: string;
  stream?: boolean;
  system?: string | { type: string; text: string }[];
  tools?: { name: string }[];
  messages?: { role: string; content: string | { type: string; [key: string]: unknown }[] }[];
  [key: string]: unknown;
}

/** One answer of the model: text, or a tool call; the usage it reports. */
export type StubReply =
  | { text: string; usage?: StubUsage }
  | { tool: { name: string; input: Record<string, unknown> }; usage?: StubUsage }
  | {
      status: number;
      error: { type: string; message: string };
      /** x-should-retry: false unless true */ retry?: boolean;
    };

export interface StubUsage {
  input_tokens: number;
  output_tokens: number;
  cache_read_input_tokens?: number;
  cache_creation_input_tokens?: number;
}

export interface AnthropicStub {
  url: string;
  port: number;
  requests: StubRequest[];
  /** The requests of the conversation itself (those offering tools), not the CLI's side calls. */
  turns(): StubRequest[];
  close(): Promise<void>;
}

/** The text of a request's system prompt, whichever form it came in. */
export function systemText(body: MessagesBody): string {
  if (typeof body.system === 'string') return body.system;
  return (body.system ?? []).map(block => block.text).join('\n');
}

/** Whether the last message of the request carries a tool's result. */
export function answersTool(body: MessagesBody): boolean {
  const last = body.messages?.at(-1);
  return Array.isArray(last?.content) && last.content.some(block => block.type === 'tool_result');
}

/** The text of every tool result the conversation holds so far. */
export function toolResults(body: MessagesBody): string[] {
  return (body.messages ?? []).flatMap(message =>
    Array.isArray(message.content)
      ? message.content
          .filter(block => block.type === 'tool_result')
          .map(block => (typeof block.content === 'string' ? block.content : JSON.stringify(block.content)))
      : []
  );
}

const DEFAULT_USAGE: StubUsage = { input_tokens: 10, output_tokens: 5 };

/**
 * Starts the stub. `script` answers each conversation turn (a request that offers tools); side
 * calls of the CLI (titles, quota checks) get a short text answer.
 */
export async function startAnthropicStub(
  script: (body: MessagesBody, turn: number) => StubReply
): Promise<AnthropicStub> {
  const requests: StubRequest[] = [];
  let turn = 0;
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      let body: MessagesBody = {};
      try {
        body = JSON.parse(Buffer.concat(chunks).toString('utf8') || '{}') as MessagesBody;
      } catch {
        // kept as an empty body
      }
      const path = (req.url ?? '/').split('?')[0]!;
      requests.push({ at: Date.now(), path, headers: req.headers, body });
      if (req.method !== 'POST' || !path.endsWith('/v1/messages')) {
        if (path.endsWith('/count_tokens')) return json(res, 200, { input_tokens: 10 });
        return json(res, 404, { type: 'error', error: { type: 'not_found_error', message: 'no such path' } });
      }
      const reply = (body.tools?.length ?? 0) > 0 ? script(body, turn++) : { text: 'ok' };
      answer(res, body, reply);
    });
  });
  await new Promise<void>(resolve => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}`,
    port,
    requests,
    turns: () => requests.filter(request => (request.body.tools?.length ?? 0) > 0),
    close: () =>
      new Promise<void>(resolve => {
        server.closeAllConnections();
        server.close(() => resolve());
      })
  };
}

function json(res: ServerResponse, status: number, value: unknown, headers: Record<string, string> = {}) {
  res.writeHead(status, { 'content-type': 'application/json', ...headers });
  res.end(JSON.stringify(value));
}

let ids = 0;

function answer(res: ServerResponse, body: MessagesBody, reply: StubReply): void {
  if ('status' in reply) {
    // The service's error shape; `x-should-retry: false` tells the SDK not to try again.
    const headers: Record<string, string> = reply.retry ? {} : { 'x-should-retry': 'false' };
    return json(res, reply.status, { type: 'error', error: reply.error }, headers);
  }
  const usage = reply.usage ?? DEFAULT_USAGE;
  const id = `msg_stub_${++ids}`;
  const block =
    'text' in reply
      ? { type: 'text', text: reply.text }
      : { type: 'tool_use', id: `toolu_stub_${ids}`, name: reply.tool.name, input: reply.tool.input };
  const stopReason = 'text' in reply ? 'end_turn' : 'tool_use';
  const model = body.model ?? 'stub-model';
  if (!body.stream) {
    return json(res, 200, {
      id,
      type: 'message',
      role: 'assistant',
      model,
      content: [block],
      stop_reason: stopReason,
      stop_sequence: null,
      usage
    });
  }
  res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
  const send = (event: string, data: unknown) =>
    res.write(`event: ${event}\ndata: ${JSON.stringify(data)}\n\n`);
  send('message_start', {
    type: 'message_start',
    message: {
      id,
      type: 'message',
      role: 'assistant',
      model,
      content: [],
      stop_reason: null,
      stop_sequence: null,
      usage: { ...usage, output_tokens: 1 }
    }
  });
  if (block.type === 'text') {
    send('content_block_start', {
      type: 'content_block_start',
      index: 0,
      content_block: { type: 'text', text: '' }
    });
    send('content_block_delta', {
      type: 'content_block_delta',
      index: 0,
      delta: { type: 'text_delta', text: block.text }
    });
  } else {
    send('content_block_start', {
      type: 'content_block_start',
      index: 0,
      content_block: { type: 'tool_use', id: block.id, name: block.name, input: {} }
    });
    send('content_block_delta', {
      type: 'content_block_delta',
      index: 0,
      delta: { type: 'input_json_delta', partial_json: JSON.stringify(block.input) }
    });
  }
  send('content_block_stop', { type: 'content_block_stop', index: 0 });
  send('message_delta', {
    type: 'message_delta',
    delta: { stop_reason: stopReason, stop_sequence: null },
    usage: { output_tokens: usage.output_tokens }
  });
  send('message_stop', { type: 'message_stop' });
  res.end();
}
