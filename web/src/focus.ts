import { useEffect, useRef } from 'preact/hooks';

/** Focus goes to a new view's heading (tabIndex -1), so a screen reader starts there, not at the page's top. */
export function useFocusedHeading(key: unknown = null) {
  const heading = useRef<HTMLHeadingElement>(null);
  useEffect(() => heading.current?.focus(), [key]);
  return heading;
}

/** The timeline's rows take the focus, on the selected row. */
export const focusRows = () => document.querySelector<HTMLElement>('[role=grid]')?.focus({ preventScroll: true });

/** Once the page has drawn what an action changed, the rows take the focus (the action's control stays, but what it opened is a row). */
export const focusRowsOnceDrawn = () => void requestAnimationFrame(focusRows);

/**
 * Once the page has drawn what an action changed, `focus` moves the focus if the control that held
 * it went with it (the focus fell to the page's body, which sends the next Tab to the page's top).
 */
export function focusIfLost(focus: () => void) {
  requestAnimationFrame(() => {
    if (!document.activeElement || document.activeElement === document.body) focus();
  });
}

/** The rows take the focus if the control that held it went (focusIfLost). */
export const focusRowsIfLost = () => focusIfLost(focusRows);

/** The link of the first item of `list` (an <li> with its id in `key`) not among `before` takes the focus if the button that loaded it went (the last page). */
export function focusFirstNewIfLost(list: string, key: string, before: ReadonlySet<string | null>) {
  focusIfLost(() => [...document.querySelectorAll(`${list} li[${key}]`)].find((item) => !before.has(item.getAttribute(key)))?.querySelector<HTMLElement>('a[href]')?.focus());
}
