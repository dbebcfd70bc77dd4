// The declared-vs-effective diff's library, its own file (scripts/build-web.mjs): loaded when a row's inputs differ.
export { diff } from 'jsondiffpatch';
export { format as formatDiffHtml } from 'jsondiffpatch/formatters/html';
