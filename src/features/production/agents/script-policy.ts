/**
 * Scripts the service runs in a user's computer on nobody's behalf (a production agent's
 * init_script) go through the same tool policy as the agent's Bash calls (docs/policy.md "Scripts
 * the service runs"): the script's text is judged as the command of a `Bash` call of that user, by
 * the policy service's own gate. Nobody is there to answer an approval, so a run-time `ask` is a
 * `deny`.
 */
import type { RunInfo } from '../../../core/engine/hooks.js';
import type { SessionSandbox } from '../../../core/files/session-folder.js';
import type { Tool } from '../../../core/tools/types.js';
import type { AuditRecord } from '../../policy/audit-store.js';
import type { PolicyService } from '../../policy/service.js';

/** Null when the script may run, else why it may not (one line for the log and the error). */
export type ScriptCheck = (userId: string, scriptId: string, script: string) => Promise<string | null>;

/**
 * The check, on the policy service. `bash` is the registered Bash tool (its name and provider are
 * what rules match); `scriptId` names the script in the audit trail, in place of a session id (an
 * init_script belongs to no session): e.g. the agent's record id.
 */
export function scriptCheck(policy: PolicyService, bash: () => Pick<Tool, 'name' | 'provider'> | undefined): ScriptCheck {
  return async (userId, scriptId, script) => {
    const tool = bash() ?? { name: 'Bash', provider: 'bash' };
    const callId = `script_${scriptId}`;
    const run: RunInfo = {
      runId: callId,
      userId,
      sessionId: scriptId,
      model: '',
      origin: 'headless',
      // Attended, so that an `ask` comes back as an ask (an unattended run would follow the
      // install's `unattended`, which may allow it); it is refused here.
      unattended: false,
      signal: new AbortController().signal,
      notice: () => {},
    };
    const d = await policy.gate({
      run,
      loopId: callId,
      callId,
      tool: tool as Tool,
      args: { command: script },
      // No session folder: a script's path targets are not resolved (every path pattern matches).
      workspace: null as unknown as SessionSandbox,
    });
    if (!d) return null;
    if (d.action === 'ask') {
      const q = d.question as Partial<Pick<AuditRecord, 'rule' | 'source'>>;
      await policy.audit.add({
        user_id: userId,
        session_id: scriptId,
        tool_call_id: callId,
        tool_name: tool.name,
        arguments: JSON.stringify({ command: script }),
        action: 'denied',
        rule: q.rule ?? null,
        source: q.source ?? null,
        decided_by: 'unattended',
      });
      return 'denied by policy: a rule asks before this command, and nobody is there to answer a script (ask is deny)';
    }
    return d.message;
  };
}
