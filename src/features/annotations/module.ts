import { annotationRoutes } from './routes.js';
import { defineModule } from '../../platform/lib/modules.js';

/** Annotations on payloads (docs/solutions-and-admin.md). */
export const annotationsModule = defineModule({
  name: 'annotations',
  needs: [],
  start: (ctx) => ({ routes: [{ plugin: annotationRoutes, opts: { db: ctx.db } }] }),
});
