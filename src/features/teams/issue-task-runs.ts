import type { Turn } from '../../core/conversation/turns.js';
import type { TurnStore } from '../../core/conversation/turn-store.js';
import type { Database } from '../../platform/db/index.js';
import type { Hooks } from '../../core/engine/hooks.js';
import type { RunOutcome, Runs } from '../../core/engine/runs.js';
import { errField, type Logger } from '../../platform/lib/logger.js';
import type { IssueStore } from './issues.js';
import type { IssueT, IssueTaskRunT } from './schemas.js';
import { iso, wsId } from './store.js';

/** The production agents a workspace's issues can be assigned to (src/features/production/agents). */
export interface AgentPort {
  /** The agent `agentId` of `userId` (null when it is not theirs, or does not exist). */
  owned(userId: string, agentId: string): Promise<{ id: string; name: string } | null>;
  /** The agent's record as its owner sees it, or null once it is gone. */
  record(agentId: string): Promise<Record<string, unknown> | null>;
  /** A new session of the owner configured from the agent; answers its id. */
  startSession(ownerId: string, agentId: string, opts: { intent: string; workspace_id: string }): Promise<string>;
}

export interface IssueTaskRunDeps {
  db: Database;
  issues: IssueStore;
  agents: AgentPort;
  runs: Pick<Runs, 'start' | 'onEnded'>;
  hooks: Pick<Hooks, 'on'>;
  chat: { stop(userId: string, sessionId: string): Promise<unknown> };
  /** Whether the agent still works in the workspace (its owner a member): checked again as the run starts. */
  stillThere(workspaceId: string, agentId: string): Promise<boolean>;
  conversation: { turns(sessionId: string): Promise<Turn[]> };
  turns: Pick<TurnStore, 'usageOf'>;
  sessions: { status(id: string): Promise<string | undefined> };
  logger: Logger;
}

interface RunRow {
  id: string;
  issue_id: string;
  workspace_id: string;
  agent_id: string;
  user_id: string;
  session_id: string | null;
  status: IssueTaskRunT['status'];
  final_answer: string | null;
  error: string | null;
  input_tokens: number;
  output_tokens: number;
  started_at: Date;
  finished_at: Date | null;
}

const OPEN = `('starting', 'running', 'waiting_for_input')`;
const toRun = (r: RunRow): IssueTaskRunT => ({
  id: r.id,
  issue_id: r.issue_id,
  agent_id: r.agent_id,
  session_id: r.session_id,
  status: r.status,
  final_answer: r.final_answer,
  error: r.error,
  input_tokens: Number(r.input_tokens),
  output_tokens: Number(r.output_tokens),
  started_at: iso(r.started_at)!,
  finished_at: iso(r.finished_at),
});

/** What the agent is told: the issue, whole. */
export function issuePrompt(issue: IssueT, workspaceName: string): string {
  return [
    `You are assigned issue #${issue.number} of the team workspace "${workspaceName}": ${issue.title}`,
    `Priority: ${issue.priority}. Status: ${issue.status}.${issue.labels.length ? ` Labels: ${issue.labels.join(', ')}.` : ''}${issue.project ? ` Project: ${issue.project}.` : ''}`,
    '',
    issue.description || '(no description)',
    '',
    'Work on this issue now. When you are done, end with your answer: a short report of what you did and what came of it.',
  ].join('\n');
}

/**
 * Task runs (docs/solutions-and-admin.md): assigning an issue to an agent starts a session of that agent (its
 * owner's, configured from the agent) whose prompt is the issue. The record follows its run through
 * the runs API like a scheduled task's: the end of every `task` run (on its node, or on the node
 * that recovered it) settles it; a check at start and when a session is deleted settles what no run
 * end will (a crash before the run started, a deleted session). When a run ends its usage (tokens
 * of every turn of the session) and its final answer are stored and written to the issue's timeline.
 */
export class IssueTaskRuns {
  private offs: (() => void)[] = [];

  constructor(private readonly d: IssueTaskRunDeps) {}

  start() {
    this.offs.push(this.d.runs.onEnded('task', (o) => this.ended(o)));
    // An answer resumes the run (its origin stays `task`).
    this.offs.push(
      this.d.hooks.on('run.started', ({ run }) =>
        run.origin === 'task' ? this.d.db.sql(`update issue_task_runs set status = 'running' where session_id = ? and status = 'waiting_for_input'`, [run.sessionId]) : undefined,
      ),
    );
    this.offs.push(this.d.hooks.on('session.deleted', () => this.sweep()));
    void this.sweep();
  }

  close() {
    for (const off of this.offs.splice(0)) off();
  }

  /** Records the run and starts it in the background (an agent may first have to be instantiated). */
  async begin(issue: IssueT, workspaceName: string, agent: { agent_id: string; owner_id: string }): Promise<IssueTaskRunT> {
    const [row] = await this.d.db.sql<RunRow>(
      `insert into issue_task_runs (id, issue_id, workspace_id, agent_id, user_id, status) values (?, ?, ?, ?, ?, 'starting') returning *`,
      [wsId('irun'), issue.id, issue.workspace_id, agent.agent_id, agent.owner_id],
    );
    const actor = { type: 'agent' as const, id: agent.agent_id };
    await this.d.issues.event(issue.id, 'task_run_started', actor, { data: { run_id: row.id, agent_id: agent.agent_id } });
    if (issue.status === 'backlog' || issue.status === 'todo') await this.d.issues.update(issue.workspace_id, issue.id, { status: 'in_progress' }, actor);
    void this.launch(row, issue, workspaceName);
    return toRun(row);
  }

  /**
   * Starts the run unless its agent left the workspace meanwhile. A member who leaves stops their
   * open runs (stopOwner), which can happen at any point of this: the run row is claimed
   * `starting -> running` only while still open, and once the message is sent the row is read
   * again, so a run stopped in between is stopped here and never goes on in the ex-member's computer.
   */
  private async launch(row: RunRow, issue: IssueT, workspaceName: string): Promise<void> {
    let sessionId: string | null = null;
    try {
      if (!(await this.d.stillThere(row.workspace_id, row.agent_id))) throw new Error('the agent no longer works in this workspace');
      sessionId = await this.d.agents.startSession(row.user_id, row.agent_id, { intent: `#${issue.number} ${issue.title}`.slice(0, 10000), workspace_id: issue.workspace_id });
      const claimed = await this.d.db.sql(`update issue_task_runs set session_id = ?, status = 'running' where id = ? and status = 'starting' returning id`, [sessionId, row.id]);
      if (!claimed.length || !(await this.d.stillThere(row.workspace_id, row.agent_id))) throw new Error('the agent no longer works in this workspace');
      await this.d.runs.start(row.user_id, { session_id: sessionId, message: issuePrompt(issue, workspaceName) }, 'task');
      if (!(await this.isOpen(row.id))) {
        await this.d.chat.stop(row.user_id, sessionId);
        return;
      }
      this.d.logger.info({ run_id: row.id, issue_id: issue.id, session_id: sessionId }, 'issue task run started');
    } catch (e) {
      this.d.logger.warn({ ...errField(e), run_id: row.id, issue_id: issue.id }, 'issue task run could not start');
      await this.finish(row.id, 'failed', `could not start: ${(e as Error).message}`).catch(() => {});
    }
  }

  private async isOpen(runId: string): Promise<boolean> {
    return (await this.d.db.sql(`select 1 from issue_task_runs where id = ? and status in ${OPEN}`, [runId])).length > 0;
  }

  /**
   * The open runs of `ownerId`'s agents in the workspace end `interrupted` (timeline included),
   * then their sessions stop; a run still starting sees it and stops itself (launch).
   */
  async stopOwner(workspaceId: string, ownerId: string, reason: string): Promise<void> {
    const open = await this.d.db.sql<{ id: string }>(`select id from issue_task_runs where workspace_id = ? and user_id = ? and status in ${OPEN}`, [workspaceId, ownerId]);
    for (const r of open) {
      const ended = await this.finish(r.id, 'interrupted', reason);
      if (!ended?.session_id) continue;
      await this.d.chat.stop(ownerId, ended.session_id).catch((e) => this.d.logger.warn({ ...errField(e), run_id: r.id }, 'could not stop an issue task run'));
    }
  }

  private async ended(o: RunOutcome) {
    try {
      const [open] = await this.d.db.sql<{ id: string }>(`select id from issue_task_runs where session_id = ? and status in ${OPEN}`, [o.sessionId]);
      if (!open) return;
      if (o.finish_reason === 'tool_question') {
        await this.d.db.sql(`update issue_task_runs set status = 'waiting_for_input' where id = ? and status = 'running'`, [open.id]);
        return;
      }
      const final = o.status === 'completed' ? 'completed' : o.status === 'interrupted' ? 'interrupted' : 'failed';
      await this.finish(open.id, final, final === 'completed' ? null : (o.error?.message ?? `the run ended ${o.status} (${o.finish_reason})`));
    } catch (e) {
      this.d.logger.error({ ...errField(e), session_id: o.sessionId }, 'could not record an issue task run');
    }
  }

  /** Tokens of every turn of these sessions (every branch, sub-agents included). */
  usageOf(sessionIds: string[]): Promise<Map<string, { input: number; output: number }>> {
    return this.d.turns.usageOf(sessionIds);
  }

  /** open -> completed/failed/interrupted, once (whichever node sees the end first), then the timeline. */
  async finish(runId: string, status: 'completed' | 'failed' | 'interrupted', error: string | null): Promise<RunRow | null> {
    const [cur] = await this.d.db.sql<RunRow>('select * from issue_task_runs where id = ?', [runId]);
    if (!cur) return null;
    let answer: string | null = null;
    let usage = { input: 0, output: 0 };
    if (cur.session_id) {
      usage = (await this.usageOf([cur.session_id])).get(cur.session_id) ?? usage;
      const turns = await this.d.conversation.turns(cur.session_id);
      const last = turns.filter((t) => t.role === 'assistant' && t.parent_fork_tool_call_id == null).at(-1);
      const text = last?.blocks.filter((b) => b.type === 'text').map((b) => b.content).join('').trim();
      answer = text ? text.slice(0, 100_000) : null;
    }
    const [row] = await this.d.db.sql<RunRow>(
      `update issue_task_runs set status = ?, error = ?, final_answer = ?, input_tokens = ?, output_tokens = ?, finished_at = now()
       where id = ? and status in ${OPEN} returning *`,
      [status, error, answer, usage.input, usage.output, runId],
    );
    if (!row) return null;
    const actor = { type: 'agent' as const, id: row.agent_id };
    await this.d.issues.event(row.issue_id, 'task_run_finished', actor, {
      data: { run_id: row.id, session_id: row.session_id, status, error, input_tokens: usage.input, output_tokens: usage.output },
    });
    if (answer) await this.d.issues.event(row.issue_id, 'agent_answer', actor, { data: { run_id: row.id, text: answer } });
    if (status === 'completed') {
      const issue = await this.d.issues.get(row.workspace_id, row.issue_id).catch(() => null);
      if (issue?.status === 'in_progress') await this.d.issues.update(row.workspace_id, row.issue_id, { status: 'in_review' }, actor);
    }
    return row;
  }

  /**
   * Settle open runs that no run end will settle: their node died before the run started or while
   * this install was down, or their session was deleted. At start and on a session's deletion. Never throws.
   */
  async sweep(): Promise<void> {
    try {
      const open = await this.d.db.sql<{ id: string; status: string; session_id: string | null; started_at: Date }>(
        `select id, status, session_id, started_at from issue_task_runs where status in ${OPEN} and started_at < now() - interval '10 seconds' limit 100`,
      );
      for (const o of open) {
        const r = { ...o, session_status: o.session_id ? ((await this.d.sessions.status(o.session_id)) ?? null) : null };
        if (r.status === 'starting') {
          if (Date.now() - new Date(r.started_at).getTime() > 600_000) await this.finish(r.id, 'failed', 'the run never started');
        } else if (!r.session_status) {
          await this.finish(r.id, 'failed', 'the session was deleted');
        } else if (r.session_status === 'completed' || r.session_status === 'failed' || r.session_status === 'interrupted') {
          await this.finish(r.id, r.session_status, r.session_status === 'completed' ? null : `the run ended ${r.session_status}`);
        } else if (r.session_status === 'waiting_for_input' && r.status === 'running') {
          await this.d.db.sql(`update issue_task_runs set status = 'waiting_for_input' where id = ? and status = 'running'`, [r.id]);
        } else if (r.session_status === 'running' && r.status === 'waiting_for_input') {
          await this.d.db.sql(`update issue_task_runs set status = 'running' where id = ? and status = 'waiting_for_input'`, [r.id]);
        }
      }
    } catch (e) {
      this.d.logger.error(errField(e), 'issue task runs sweep failed');
    }
  }

  async list(issueId: string): Promise<IssueTaskRunT[]> {
    const rows = await this.d.db.sql<RunRow>('select * from issue_task_runs where issue_id = ? order by started_at, id limit 1000', [issueId]);
    // Open runs show their tokens so far.
    const live = await this.usageOf(rows.filter((r) => r.finished_at == null && r.session_id).map((r) => r.session_id!));
    return rows.map((r) => {
      const u = r.session_id ? live.get(r.session_id) : undefined;
      return toRun(u ? { ...r, input_tokens: u.input, output_tokens: u.output } : r);
    });
  }
}
