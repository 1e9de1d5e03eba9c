// What widget.js lends its parts (build.mjs resolves a part's `preact` imports to these): one Preact
// instance renders the whole tree, parts included.
export { jsx, jsxs, Fragment } from "preact/jsx-runtime";
export { useState, useEffect, useRef } from "preact/hooks";
