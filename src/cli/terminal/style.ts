/** ANSI styling on a terminal, none when piped (or NO_COLOR is set). */

export interface Style {
  dim(s: string): string;
  bold(s: string): string;
  red(s: string): string;
  green(s: string): string;
  yellow(s: string): string;
  cyan(s: string): string;
  gray(s: string): string;
}

const wrap = (open: number, close: number) => (s: string) => (s ? `\x1b[${open}m${s}\x1b[${close}m` : s);

export const ansi: Style = {
  dim: wrap(2, 22),
  bold: wrap(1, 22),
  red: wrap(31, 39),
  green: wrap(32, 39),
  yellow: wrap(33, 39),
  cyan: wrap(36, 39),
  gray: wrap(90, 39),
};

const same = (s: string) => s;
export const plain: Style = { dim: same, bold: same, red: same, green: same, yellow: same, cyan: same, gray: same };

export interface Output {
  write(s: string): unknown;
  isTTY?: boolean;
  columns?: number;
}

export function styleFor(out: Output, env: NodeJS.ProcessEnv = process.env): Style {
  return out.isTTY && !env.NO_COLOR ? ansi : plain;
}

/** Remove ANSI escapes (and other control characters but newline and tab) from text we did not write. */
export function clean(s: string): string {
  // biome-ignore lint/suspicious/noControlCharactersInRegex: stripping control characters is the point
  return s.replace(/\x1b\[[0-9;?]*[ -/]*[@-~]/g, '').replace(/[\x00-\x08\x0b-\x1f\x7f]/g, '');
}
