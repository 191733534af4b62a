// `client.redirects`: the service's two redirects. `conversation(runId)` gives a live run's session
// id (the server answers it only to a key of the run's team); `session(sessionId)` gives the
// conversation a session moved to once its run ended. Each answers `{}` when there is nowhere to go.

import type { ConversationRedirect, SessionRedirect } from '../../api/schemas.js';
import type { ClientCore } from '../core.js';
import type { CallOptions } from '../poll.js';

export class Redirects {
  constructor(private readonly core: ClientCore) {}

  /** `{conversation_id}` once the session's run ended, else `{}`. */
  session(sessionId: string, options: CallOptions = {}): Promise<SessionRedirect> {
    return this.core.object<SessionRedirect>('checkSessionRedirect', {
      ...options,
      params: { session_id: sessionId }
    });
  }

  /** `{session_id}` while the run (the conversation) has started and not ended, else `{}`. */
  conversation(conversationId: string, options: CallOptions = {}): Promise<ConversationRedirect> {
    return this.core.object<ConversationRedirect>('checkConversationRedirect', {
      ...options,
      params: { conversation_id: conversationId }
    });
  }
}
