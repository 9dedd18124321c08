import { annotationRoutes } from './routes.js';
import { defineModule } from '../../platform/lib/modules.js';
import { AnnotationStore } from './store.js';

declare module '../../platform/lib/modules.js' {
  interface Provides {
    /** Annotations on payloads: their store (a session's archive carries them). */
    annotations: AnnotationStore;
  }
}

/** Annotations on payloads (docs/solutions-and-admin.md). */
export const annotationsModule = defineModule({
  name: 'annotations',
  needs: ['engine'],
  start(ctx) {
    const annotations = new AnnotationStore(ctx.db);
    return { provides: annotations, routes: [{ plugin: annotationRoutes, opts: { annotations, turns: ctx.get('engine').turns } }] };
  },
});
