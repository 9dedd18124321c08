// WebFetch's HTML → Markdown conversion, in a worker thread: the HTML parser and turndown are
// superlinear on hostile pages (deep nesting: seconds, then a stack overflow), and here that only
// costs this thread, which the caller terminates at its time limit.
import { parentPort, workerData } from 'node:worker_threads';
import { toMarkdown } from './html-to-markdown.js';

const { body, contentType, url } = workerData as { body: Uint8Array; contentType: string; url?: string };
parentPort!.postMessage(toMarkdown(Buffer.from(body.buffer, body.byteOffset, body.byteLength), contentType, url));
