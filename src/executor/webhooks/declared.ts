// The endpoints the operator declares in the configuration file (webhooks.endpoints), as the store
// keeps them: each has a fixed id made from its team and URL (so a restart finds the same one, and
// its delivery log stays) and the secret read from the variable it names.

import { createHash } from 'node:crypto';
import type { ExecutorConfig } from '../config/config.js';
import { ConfigError } from '../config/config.js';
import type { StoredWebhook } from '../store/webhook-types.js';
import { isSecret } from './sign.js';

export function declaredWebhooks(
  config: Pick<ExecutorConfig, 'webhooks'>,
  env: NodeJS.ProcessEnv = process.env
): StoredWebhook[] {
  const problems: string[] = [];
  const seen = new Set<string>();
  const declared = config.webhooks.endpoints.map((entry, index) => {
    const at = `webhooks.endpoints[${index}]`;
    const id = `wh_config_${createHash('sha256').update(`${entry.team}\0${entry.url}`).digest('hex').slice(0, 24)}`;
    if (seen.has(id)) problems.push(`${at}: team ${entry.team} declares ${entry.url} twice`);
    seen.add(id);
    const secret = env[entry.secretEnv];
    if (secret === undefined || secret === '')
      problems.push(
        `${at}.secret_env: the variable ${entry.secretEnv} is not set; expected it to hold a secret such as whsec_… (24 or more random bytes in base64)`
      );
    else if (!isSecret(secret))
      problems.push(
        `${at}.secret_env: the variable ${entry.secretEnv} does not hold a secret of the form whsec_ and base64 of at least 16 bytes`
      );
    const webhook: StoredWebhook = {
      id,
      team: entry.team,
      url: entry.url,
      events: entry.events,
      description: entry.description,
      secret: secret ?? '',
      previous_secret: null,
      previous_until_ms: null,
      source: 'config',
      created_at: new Date().toISOString(),
      disabled_at: null,
      disabled_reason: null
    };
    return webhook;
  });
  if (problems.length > 0)
    throw new ConfigError(`config: ${problems.length === 1 ? problems[0] : `\n- ${problems.join('\n- ')}`}`);
  return declared;
}
