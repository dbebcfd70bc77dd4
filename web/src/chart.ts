// The Activity view's chart library, its own file (scripts/build-web.mjs): loaded when a chart first draws.
export { default } from 'uplot';
