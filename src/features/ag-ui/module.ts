import { defineModule } from '../../platform/lib/modules.js';
import { agUiRoutes } from './routes.js';

/**
 * The AG-UI door: `POST /api/ag-ui/{session_id}` runs a session for an AG-UI front end (CopilotKit,
 * `@ag-ui/client`'s HttpAgent) and answers the run as AG-UI events (docs/protocol-doors.md).
 */
export const agUiModule = defineModule({
  name: 'ag-ui',
  needs: ['doors', 'engine'],
  start(ctx) {
    return {
      routes: [
        { plugin: agUiRoutes, opts: { doors: ctx.get('doors'), conversation: ctx.get('engine').conversation, logger: ctx.logger, pendingBytes: ctx.config.limits.socketBuffer } },
      ],
    };
  },
});
