/**
 * Masking credentials in a setting's value for `GET /api/env` (docs/memories-and-settings.md). Written by hand:
 * the values are our own settings (URLs, host strings, tokens), and the masking libraries found
 * redact object keys or known token shapes, not a password inside a URL's userinfo or query.
 */

/** What a credential becomes. */
export const MASKED = '****';

/** Setting names whose whole value is a credential (`OPENAI_API_KEY`, `AGENTSVC_METRICS_TOKEN`, `X_PASSWD`, ...). */
const SECRET_NAME = /SECRET|PASSW(?:OR)?D|CREDENTIAL|PRIVATE|(?:^|_)(?:API_?KEY|KEY|TOKEN|PASS|PWD|AUTH|COOKIE|SIG(?:NATURE)?)(?:_|$)/i;

/** A parameter name holding a credential, inside a value (`?password=`, `&api_key=`, `token:`). */
const SECRET_PARAM = String.raw`[\w.-]*(?:secret|passw(?:or)?d|pwd|pass|token|api[_-]?key|apikey|access[_-]?key|key|auth|credential|signature|sig|session|cookie)[\w.-]*`;

const RULES: [RegExp, string][] = [
  // A URL's password runs from `//user:` to the last `@` of the URL: it may hold `/`, `:` or `@`
  // unencoded (the host never holds `@`), so stopping at the first `/` would show the rest.
  [/(\/\/[^/:@\s]*:)\S*@/g, `$1${MASKED}@`],
  // Userinfo without a colon is a token used as the user name (`https://ghp_x@github.com`).
  [/(\/\/)[^/:@\s?#]+@/g, `$1${MASKED}@`],
  // `name=value` in a query string, a list or a command line: up to the next separator.
  [new RegExp(String.raw`(^|[?&;,\s])(${SECRET_PARAM})=(?:"[^"]*"|'[^']*'|[^&;,\s#]*)`, 'gi'), `$1$2=${MASKED}`],
  // An Authorization header's credentials.
  [/\b(Bearer|Basic|Token)\s+[A-Za-z0-9._~+/=-]+/g, `$1 ${MASKED}`],
  // `"name": "value"` (JSON).
  [new RegExp(String.raw`"(${SECRET_PARAM})"(\s*:\s*)"(?:[^"\\]|\\.)*"`, 'gi'), `"$1"$2"${MASKED}"`],
  // `name: value` (a header or YAML line): to the end of the line.
  [new RegExp(String.raw`(^|[{,\s])(${SECRET_PARAM}):[ \t]*[^"\s][^\n]*`, 'gi'), `$1$2: ${MASKED}`],
];

/** The value as `GET /api/env` shows it: all of it masked for a credential's name, else each credential form in it. */
export function maskSetting(name: string, value: string): string {
  if (!value) return value;
  if (SECRET_NAME.test(name)) return MASKED;
  return RULES.reduce((v, [re, to]) => v.replace(re, to), value);
}
