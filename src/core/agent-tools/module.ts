import { defineModule } from '../../platform/lib/modules.js';
import { agentTool } from './fork.js';
import { askUserQuestionTool } from './question.js';
import { createSessionTaskTools, SessionTaskStore, sessionTaskRoutes } from './session-tasks.js';

declare module '../../platform/lib/modules.js' {
  interface Provides {
    /** A session's task list (TaskCreate/TaskUpdate/TaskList and compaction read it). */
    agents: SessionTaskStore;
  }
}

/** The Agent, AskUserQuestion and Task tools. */
export const agentsModule = defineModule({
  name: 'agents',
  needs: [],
  start({ db }) {
    const tasks = new SessionTaskStore(db);
    return { provides: tasks, tools: [askUserQuestionTool, agentTool, ...createSessionTaskTools(tasks)] };
  },
});

/** The task list routes of a session. */
export const sessionTasksModule = defineModule({
  name: 'tasks',
  needs: ['agents', 'sessions'],
  start: (ctx) => ({ routes: [{ plugin: sessionTaskRoutes, opts: { sessions: ctx.get('sessions'), tasks: ctx.get('agents') } }] }),
});
