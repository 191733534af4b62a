// `client.artifacts`: what a run produced, by its uid: the details (with a time-limited download
// URL) and the bytes.

import { type ArtifactDetails, showValue } from '../../api/index.js';
import { type ClientCore, headerLookup, transportFailure } from '../core.js';
import { errorFromResponse } from '../errors.js';
import { ParseError, parseJson } from '../parse.js';
import type { CallOptions } from '../poll.js';
import { type DownloadedArtifact, downloadUrlOf, parseArtifactDetails } from '../run-readers.js';
import { type HttpResponse, TransportError } from '../transport.js';

/** An artifact (the run's changes, say) may be far larger than any API answer. */
const MAX_DOWNLOAD_BYTES = 512 * 1024 * 1024;

export class Artifacts {
  constructor(private readonly core: ClientCore) {}

  /** An artifact's details (for files, a time-limited download URL). */
  async get(artifactUid: string, options: CallOptions = {}): Promise<ArtifactDetails> {
    const label = `GET /agent/artifacts/${artifactUid}`;
    const response = await this.core.call('getArtifact', {
      params: { artifact_uid: artifactUid },
      signal: options.signal
    });
    return parseArtifactDetails(parseJson(response.body, label), label);
  }

  /**
   * An artifact's bytes: reads its details, then follows the download URL (and its redirects).
   * The key goes only to the service's own origin, never to a storage host elsewhere.
   */
  async download(artifactUid: string, options: CallOptions = {}): Promise<DownloadedArtifact> {
    const details = await this.get(artifactUid, options);
    const link = downloadUrlOf(details);
    if (!link) {
      throw new ParseError(`GET /agent/artifacts/${artifactUid}: the details carry no download URL`);
    }
    const { apiRoot, timeoutMs } = this.core;
    const origin = new URL(apiRoot).origin;
    let url = new URL(link, apiRoot + '/');
    for (let hop = 0; ; hop++) {
      // A download (or a redirect) to file:, data: or any other scheme is refused, not fetched.
      if (url.protocol !== 'http:' && url.protocol !== 'https:') {
        throw new ParseError(
          `GET /agent/artifacts/${artifactUid}: the download URL's scheme ${showValue(url.protocol)} is refused; expected http(s)`
        );
      }
      const label = `GET ${url.origin === origin ? url.pathname : `${url.origin}${url.pathname}`}`;
      const headers: Record<string, string> = { accept: '*/*' };
      if (url.origin === origin) headers.authorization = `Bearer ${await this.core.bearer()}`;
      let response: HttpResponse;
      try {
        response = await this.core.transport.send({
          method: 'GET',
          url: url.href,
          headers,
          timeoutMs: Math.max(timeoutMs, 300_000),
          signal: options.signal,
          maxBytes: MAX_DOWNLOAD_BYTES
        });
      } catch (error) {
        if (error instanceof TransportError) throw transportFailure(label, error, timeoutMs);
        throw error;
      }
      const header = headerLookup(response);
      const location = header('location');
      if (response.status >= 300 && response.status < 400 && location && hop < 5) {
        url = new URL(location, url);
        continue;
      }
      if (response.status >= 300) {
        throw errorFromResponse(label, response.status, response.body, header('x-request-id'));
      }
      return {
        details,
        bytes: response.bytes ?? Buffer.from(response.body),
        contentType: header('content-type')
      };
    }
  }
}
