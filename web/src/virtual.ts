import { elementScroll, observeElementOffset, observeElementRect, Virtualizer } from '@tanstack/virtual-core';
import { useLayoutEffect, useReducer, useState } from 'preact/hooks';

/**
 * A list that keeps in the DOM only the items near the viewport (issue 32: a 5,000-turn session
 * scrolls smoothly), through @tanstack/virtual-core, the framework-free core of TanStack Virtual
 * (its React adapter is these same few lines over React). Items have their real heights, measured
 * as they render (markdown, folded tool calls); the list is anchored at its end the way a chat is:
 * at the bottom it follows new and growing items, scrolled up it stays where the reader is.
 */

export interface VirtualList {
  virtualizer: Virtualizer<HTMLElement, HTMLElement>;
  /**
   * Room for the items not drawn, before and after the drawn ones, in px: the heights of two
   * spacer elements (0: no spacer). The scroll container keeps its own padding and gap.
   */
  before: number;
  after: number;
}

export function useVirtualList(opts: { count: number; key: (i: number) => string; getScrollElement: () => HTMLElement | null; gap: number; padding: number; enabled: boolean }): VirtualList {
  const [, redraw] = useReducer((n: number) => n + 1, 0);
  const options = {
    count: opts.count,
    getScrollElement: opts.getScrollElement,
    getItemKey: opts.key,
    // A turn is a few lines to a screenful; real heights replace this once drawn.
    estimateSize: () => 140,
    overscan: 6,
    gap: opts.gap,
    paddingStart: opts.padding,
    paddingEnd: opts.padding,
    scrollToFn: elementScroll,
    observeElementRect,
    observeElementOffset,
    enabled: opts.enabled,
    onChange: () => redraw(undefined),
  };
  const [virtualizer] = useState(() => new Virtualizer<HTMLElement, HTMLElement>(options));
  virtualizer.setOptions(options);
  useLayoutEffect(() => virtualizer._didMount(), [virtualizer]);
  useLayoutEffect(() => {
    virtualizer._willUpdate();
  });
  const items = virtualizer.getVirtualItems();
  const first = items[0];
  const last = items[items.length - 1];
  // A spacer is itself a flex item: it takes a gap of its own, as the items it stands for did.
  const before = first && first.index > 0 ? first.start - opts.padding - opts.gap : 0;
  const after = last && last.index < opts.count - 1 ? virtualizer.getTotalSize() - last.end - opts.padding - opts.gap : 0;
  return { virtualizer, before, after };
}
