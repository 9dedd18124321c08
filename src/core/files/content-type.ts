import { basename, extname } from 'node:path';

const TEXT = 'text/plain; charset=utf-8';

/** Plain-text source and config formats: shown as text rather than offered as a download. */
const PLAIN = [
  'txt', 'text', 'md', 'markdown', 'rst', 'log', 'out', 'err', 'py', 'pyi', 'ts', 'tsx', 'jsx', 'mts', 'cts', 'sh', 'bash', 'zsh',
  'fish', 'ps1', 'bat', 'yaml', 'yml', 'toml', 'ini', 'cfg', 'conf', 'env', 'properties', 'c', 'h', 'cc', 'cpp', 'cxx', 'hpp',
  'hh', 'cs', 'java', 'kt', 'kts', 'scala', 'go', 'rs', 'rb', 'php', 'pl', 'pm', 'swift', 'm', 'mm', 'r', 'jl', 'lua', 'sql',
  'diff', 'patch', 'tex', 'bib', 'vue', 'svelte', 'scss', 'sass', 'less', 'graphql', 'gql', 'proto', 'tf', 'hcl', 'gradle',
  'dockerfile', 'makefile', 'mk', 'cmake', 'gitignore', 'gitattributes', 'editorconfig', 'lock', 'tsv', 'srt', 'vtt', 'jsonl',
  'ndjson', 'ex', 'exs', 'erl', 'hs', 'clj', 'dart', 'zig', 'nim', 'v', 'sv', 'asm', 's',
];

const BY_EXT: Record<string, string> = {
  ...Object.fromEntries(PLAIN.map((e) => [e, TEXT])),
  html: 'text/html; charset=utf-8',
  htm: 'text/html; charset=utf-8',
  css: 'text/css; charset=utf-8',
  js: 'text/javascript; charset=utf-8',
  mjs: 'text/javascript; charset=utf-8',
  cjs: 'text/javascript; charset=utf-8',
  csv: 'text/csv; charset=utf-8',
  json: 'application/json',
  ipynb: 'application/json',
  map: 'application/json',
  xml: 'application/xml',
  svg: 'image/svg+xml',
  png: 'image/png',
  jpg: 'image/jpeg',
  jpeg: 'image/jpeg',
  gif: 'image/gif',
  webp: 'image/webp',
  avif: 'image/avif',
  bmp: 'image/bmp',
  ico: 'image/x-icon',
  tif: 'image/tiff',
  tiff: 'image/tiff',
  pdf: 'application/pdf',
  zip: 'application/zip',
  gz: 'application/gzip',
  tgz: 'application/gzip',
  tar: 'application/x-tar',
  bz2: 'application/x-bzip2',
  xz: 'application/x-xz',
  '7z': 'application/x-7z-compressed',
  wasm: 'application/wasm',
  mp3: 'audio/mpeg',
  wav: 'audio/wav',
  ogg: 'audio/ogg',
  flac: 'audio/flac',
  m4a: 'audio/mp4',
  mp4: 'video/mp4',
  webm: 'video/webm',
  mov: 'video/quicktime',
  woff: 'font/woff',
  woff2: 'font/woff2',
  ttf: 'font/ttf',
  otf: 'font/otf',
  doc: 'application/msword',
  docx: 'application/vnd.openxmlformats-officedocument.wordprocessingml.document',
  xls: 'application/vnd.ms-excel',
  xlsx: 'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet',
  ppt: 'application/vnd.ms-powerpoint',
  pptx: 'application/vnd.openxmlformats-officedocument.presentationml.presentation',
};

/** Extension-less names that are text by convention. */
const PLAIN_NAMES = new Set(['makefile', 'dockerfile', 'readme', 'license', 'licence', 'changelog', 'authors', 'procfile', 'gemfile']);

/** The content-type a file is served with, judged by its name alone (the bytes are never sniffed). */
export function contentTypeOf(path: string): string {
  const name = basename(path).toLowerCase();
  const ext = extname(name).slice(1) || (name.startsWith('.') ? name.slice(1) : '');
  return BY_EXT[ext] ?? (PLAIN_NAMES.has(name) ? TEXT : 'application/octet-stream');
}
