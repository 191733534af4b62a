// Signed, time-limited download URLs for artifacts: an HMAC of the artifact id and the expiry, so a
// client can hand the URL to a tool without its API key (like a session link). The secret lives in
// the store, so every node signs and checks the same way.

import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import { endpointPath } from '../../api/endpoints.js';
import type { SecretStore } from '../store/types.js';

/** How long a download URL stays valid. */
export const DOWNLOAD_TTL_SECONDS = 15 * 60;

export class DownloadLinks {
  private constructor(private readonly secret: string) {}

  static async open(store: SecretStore): Promise<DownloadLinks> {
    return new DownloadLinks(
      await store.getSecret('artifact-links', () => randomBytes(32).toString('base64url'))
    );
  }

  private sign(uid: string, expires: number): string {
    return createHmac('sha256', this.secret).update(`${uid}\n${expires}`).digest('base64url');
  }

  /** The download URL of an artifact under `base`, valid from `now` for DOWNLOAD_TTL_SECONDS. */
  url(base: string, uid: string, now = Date.now()): { url: string; expiresAt: string } {
    const expires = Math.floor(now / 1000) + DOWNLOAD_TTL_SECONDS;
    return {
      url: `${base}${endpointPath('downloadArtifact', { artifact_uid: uid })}?expires=${expires}&signature=${this.sign(uid, expires)}`,
      expiresAt: new Date(expires * 1000).toISOString()
    };
  }

  /** Whether `expires` and `signature` (as the query gave them) are this artifact's and not expired. */
  verify(uid: string, expires: unknown, signature: unknown): boolean {
    if (typeof expires !== 'string' || !/^\d{1,12}$/.test(expires)) return false;
    const until = Number(expires);
    if (until * 1000 <= Date.now() || typeof signature !== 'string') return false;
    const given = Buffer.from(signature);
    const expected = Buffer.from(this.sign(uid, until));
    return given.length === expected.length && timingSafeEqual(given, expected);
  }
}
