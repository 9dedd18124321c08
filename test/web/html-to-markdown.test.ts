import t from 'tap';
import { htmlToMarkdown, toMarkdown } from '../../src/core/tools/web/index.js';

const PAGE = `<!doctype html>
<html><head><title>Docs &amp; Guides</title><meta charset="utf-8"><style>body { color: red }</style>
<script>var secret = "SCRIPT_TEXT";</script></head>
<body>
<nav><a href="/home">NAV_LINK</a></nav>
<h1>Getting started</h1>
<p>Read the <a href="/guide/install?x=1">install guide</a> or <a href="https://other.example/page">elsewhere</a>.</p>
<h2>Usage</h2>
<ul><li>one</li><li>two</li></ul>
<pre><code>npm install thing</code></pre>
<noscript>NOSCRIPT_TEXT</noscript><iframe src="/ad">IFRAME_TEXT</iframe>
<svg><text>SVG_TEXT</text></svg>
<img src="data:image/png;base64,AAAA" alt="a chart"><img src="/logo.png" alt="logo">
<a href="javascript:alert(1)">click</a>
<script>document.write("MORE_SCRIPT")</script>
</body></html>`;

t.test('HTML becomes Markdown without page chrome or code', async (t) => {
  const { title, markdown } = htmlToMarkdown(PAGE, 'https://docs.example/start/');
  t.equal(title, 'Docs & Guides');
  t.match(markdown, /^# Getting started$/m);
  t.match(markdown, /^## Usage$/m);
  t.match(markdown, '[install guide](https://docs.example/guide/install?x=1)', 'relative links made absolute');
  t.match(markdown, '[elsewhere](https://other.example/page)');
  t.match(markdown, /^-\s+one$/m);
  t.match(markdown, '```\nnpm install thing\n```');
  t.match(markdown, '[image: a chart]', 'data: images keep only their alt text');
  t.match(markdown, '![logo](https://docs.example/logo.png)');
  t.match(markdown, /\bclick\b/);
  t.notMatch(markdown, 'javascript:');
  for (const gone of ['SCRIPT_TEXT', 'MORE_SCRIPT', 'NAV_LINK', 'NOSCRIPT_TEXT', 'IFRAME_TEXT', 'SVG_TEXT', 'color: red', 'base64', 'Docs &amp;']) {
    t.notMatch(markdown, gone, `no ${gone}`);
  }
});

t.test('toMarkdown by content type', async (t) => {
  const html = toMarkdown(Buffer.from(PAGE), 'text/html; charset=utf-8', 'https://docs.example/');
  t.equal(html.kind, 'html');
  t.equal(html.title, 'Docs & Guides');
  t.match(html.markdown, /^Title: Docs & Guides\n\n# Getting started/);

  const text = toMarkdown(Buffer.from('plain <b>not html</b>'), 'text/plain');
  t.same(text, { kind: 'text', markdown: 'plain <b>not html</b>' }, 'text passes through');
  t.equal(toMarkdown(Buffer.from('{"a":1}'), 'application/json').markdown, '{"a":1}');
  t.equal(toMarkdown(Buffer.from('<x/>'), 'application/atom+xml').kind, 'text');

  const png = toMarkdown(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0, 0, 0, 0]), 'image/png');
  t.equal(png.kind, 'binary');
  t.match(png.markdown, /Binary content \(image\/png, 8 bytes\)/);
  t.equal(toMarkdown(Buffer.from('%PDF-1.7'), 'application/pdf').kind, 'binary');

  // Unlabelled bodies are sniffed.
  t.equal(toMarkdown(Buffer.from('<!DOCTYPE html><h1>Hi</h1>'), '').kind, 'html');
  t.equal(toMarkdown(Buffer.from('just words'), 'application/octet-stream').kind, 'text');
  t.equal(toMarkdown(Buffer.from([1, 2, 0, 3]), '').kind, 'binary');
});

t.test('charsets', async (t) => {
  const latin1 = Buffer.from('<p>caf\xe9</p>', 'latin1');
  t.match(toMarkdown(latin1, 'text/html; charset=iso-8859-1').markdown, 'café');
  const meta = Buffer.concat([Buffer.from('<meta charset="windows-1252"><p>'), Buffer.from([0x93, 0x71, 0x94]), Buffer.from('</p>')]);
  t.match(toMarkdown(meta, 'text/html').markdown, '“q”', 'meta charset used when the header has none');
  t.match(toMarkdown(Buffer.from('<p>ünï</p>'), 'text/html; charset=bogus-charset').markdown, 'ünï', 'unknown charset falls back to UTF-8');
});
