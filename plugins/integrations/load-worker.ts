import { parentPort, workerData } from 'node:worker_threads';
import { parseOpenApi } from './openapi.js';

// Runs in a worker thread (load.ts): the document's full parse, validation and dereferencing stay in
// this thread's heap, which goes when it exits; only the offered operations come back.
const { input, filters } = workerData as { input: Parameters<typeof parseOpenApi>[0]; filters: Parameters<typeof parseOpenApi>[1] };
parseOpenApi(input, filters).then(
  (doc) => parentPort!.postMessage({ ok: true, doc }),
  (e: Error) => parentPort!.postMessage({ ok: false, error: e.message }),
);
