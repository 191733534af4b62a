// `client.environments`: the environments the server runs agents in (never their variables or secrets).

import type { EnvironmentRecord } from '../../api/schedules.js';
import type { ClientCore } from '../core.js';
import type { CallOptions } from '../poll.js';

export class Environments {
  constructor(private readonly core: ClientCore) {}

  async list(options: CallOptions = {}): Promise<EnvironmentRecord[]> {
    return (
      (await this.core.object<{ environments?: EnvironmentRecord[] }>('listEnvironments', options))
        .environments ?? []
    );
  }
}
