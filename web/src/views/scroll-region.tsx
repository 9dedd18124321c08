import type { ComponentChildren } from 'preact';

/**
 * A region that may scroll sideways (a wide table on a narrow screen), reachable and scrollable by
 * keyboard: focusable and named, as axe-core's scrollable-region-focusable asks.
 */
export function ScrollRegion({ label, children }: { label: string; children: ComponentChildren }) {
  return (
    // biome-ignore lint/a11y/noNoninteractiveTabindex: a scrollable region must take the focus to be scrolled by keyboard
    <section class="table-wrap" tabIndex={0} aria-label={label}>
      {children}
    </section>
  );
}
