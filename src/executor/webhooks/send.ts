// One attempt of a webhook delivery: a POST of the signed body to the endpoint, connected to the
// address resolve-and-check chose (address.ts), never following a redirect, within a time limit for
// the whole exchange, and reading nothing of the receiver's answer but its status line and headers
// (a receiver that sends a gigabyte, or trickles, costs the executor nothing).

import http from 'node:http';
import https from 'node:https';
import type { LookupFunction } from 'node:net';
import { AddressRefused, hostOf, resolveHost } from './address.js';

export interface SendOptions {
  timeoutMs: number;
  allowPrivate: boolean;
  /** Ends the attempt at once (the node is stopping). */
  signal?: AbortSignal;
}

export interface SendResult {
  /** The receiver's status, or null when it did not answer. */
  status: number | null;
  /** Why the attempt failed without an answer (refused address, timeout, connection error). */
  error: string | null;
  /** Retry-After of a 429/502/503/504, in ms. */
  retryAfterMs?: number;
}

/** A Retry-After value (seconds, or an HTTP date) in ms from now; undefined when unreadable. */
export function retryAfterMs(value: string | undefined, nowMs = Date.now()): number | undefined {
  if (value === undefined) return undefined;
  const trimmed = value.trim();
  if (/^\d+$/.test(trimmed)) return Number(trimmed) * 1000;
  const date = Date.parse(trimmed);
  return Number.isNaN(date) ? undefined : Math.max(0, date - nowMs);
}

export async function send(
  url: string,
  headers: Record<string, string>,
  body: string,
  options: SendOptions
): Promise<SendResult> {
  const target = new URL(url);
  const deadline = Date.now() + options.timeoutMs;
  let resolved;
  try {
    resolved = await withDeadline(resolveHost(hostOf(target), options.allowPrivate), deadline);
  } catch (error) {
    if (error instanceof AddressRefused) return { status: null, error: `refused: ${error.message}` };
    return { status: null, error: `the host ${hostOf(target)} did not resolve (${describe(error)})` };
  }
  // The connection goes to the checked address whatever the name resolves to by then; TLS still
  // checks the certificate against the name.
  const pinned: LookupFunction = (_host, opts, callback) => {
    if ((opts as { all?: boolean }).all)
      callback(null, [{ address: resolved.address, family: resolved.family }]);
    else callback(null, resolved.address, resolved.family);
  };
  const client = target.protocol === 'https:' ? https : http;
  return new Promise<SendResult>(resolve => {
    let settled = false;
    const finish = (result: SendResult) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      request.destroy();
      resolve(result);
    };
    const request = client.request(
      target,
      {
        method: 'POST',
        headers: { ...headers, 'content-length': String(Buffer.byteLength(body)) },
        lookup: pinned,
        agent: false
      },
      // The status and headers are the answer: the body is never read (the socket is closed at
      // once), so a receiver that sends a gigabyte, or trickles it, holds nothing.
      response =>
        finish({
          status: response.statusCode ?? 0,
          error: null,
          retryAfterMs: retryAfterMs(response.headers['retry-after'] as string | undefined)
        })
    );
    const timer = setTimeout(
      () => finish({ status: null, error: `no answer within ${options.timeoutMs} ms (webhooks.timeout)` }),
      Math.max(0, deadline - Date.now())
    );
    request.on('error', error => finish({ status: null, error: `connection failed (${describe(error)})` }));
    options.signal?.addEventListener('abort', () => finish({ status: null, error: 'the node stopped' }), {
      once: true
    });
    request.end(body);
  });
}

function describe(error: unknown): string {
  const code = (error as NodeJS.ErrnoException).code;
  return code ?? (error as Error).message ?? String(error);
}

function withDeadline<T>(promise: Promise<T>, deadline: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  return Promise.race([
    promise,
    new Promise<never>((_resolve, reject) => {
      timer = setTimeout(() => reject(new Error('timed out')), Math.max(0, deadline - Date.now()));
    })
  ]).finally(() => clearTimeout(timer));
}
