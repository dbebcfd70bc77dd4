import type { ComponentChildren } from 'preact';
import { revealInvisible } from './timeline.js';

/**
 * Stored text as the page draws it (payloads, names, ids, titles): its invisible and bidi control
 * characters shown as marks, none of them acting on the text around it.
 */
export function revealed(text: string): ComponentChildren {
  const pieces = revealInvisible(text);
  if (pieces.length === 1 && !pieces[0]!.mark) return text;
  return pieces.map((piece) => (piece.mark ? <span class="invisible-char" title="an invisible or text-direction character">{piece.text}</span> : piece.text));
}
