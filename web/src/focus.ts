import { useEffect, useRef } from 'preact/hooks';

/** Focus goes to a new view's heading (tabIndex -1), so a screen reader starts there, not at the page's top. */
export function useFocusedHeading(key: unknown = null) {
  const heading = useRef<HTMLHeadingElement>(null);
  useEffect(() => heading.current?.focus(), [key]);
  return heading;
}
