// `make widget`: builds src/loader.js, src/widget.js and the widget's lazy parts into
// apps/widget/static/widget/, beside a copy of src/chat-widget.d.ts (the API's types).
// Deterministic: no timestamps, no source maps with absolute paths, a fixed target. Every file but the
// loader is named with its content hash (`?v=`), so a new build is never served from a stale cache:
// widget.js carries its parts' hashes (so its own hash changes with theirs) and the loader carries
// widget.js's.
//
// A part (src/<name>.js, built into widget-<name>.js) is a classic script that sets
// `ChatWidget._parts.<name>`; widget.js adds it when a view first needs it. Its imports of preact
// resolve to the instance widget.js lends in `ChatWidget._preact` (src/shared.js): one Preact renders
// the whole tree and its code ships once.
import { build } from "esbuild";
import { createHash } from "node:crypto";
import { readdirSync, readFileSync, rmSync, writeFileSync, mkdirSync } from "node:fs";
import { dirname, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { gzipSync } from "node:zlib";

const here = dirname(fileURLToPath(import.meta.url));
const out = resolve(here, "../../apps/widget/static/widget");
const PARTS = ["links", "extras", "prechat", "proactive"];
mkdirSync(out, { recursive: true });
for (const name of readdirSync(out)) rmSync(resolve(out, name)); // a part that is gone leaves no file

const common = {
  bundle: true,
  minify: true,
  format: "iife",
  target: "es2020",
  legalComments: "none",
  charset: "utf8",
  write: false,
  logLevel: "warning",
  jsx: "automatic",
  jsxImportSource: "preact",
  loader: { ".js": "jsx" },
};

const shared = await build({ ...common, entryPoints: [resolve(here, "src/shared.js")], format: "esm", metafile: true });
const lent = Object.values(shared.metafile.outputs)[0].exports.sort();
const hostPreact = {
  name: "host-preact",
  setup(b) {
    b.onResolve({ filter: /^preact(\/.*)?$/ }, () => ({ path: "preact", namespace: "host-preact" }));
    b.onLoad({ filter: /.*/, namespace: "host-preact" }, () => ({
      contents: `export const { ${lent.join(", ")} } = window.ChatWidget._preact;`,
      loader: "js",
    }));
  },
};

const hash = (bytes) => createHash("sha256").update(bytes).digest("hex").slice(0, 12);
const written = [];
function write(name, bytes) {
  writeFileSync(resolve(out, name), bytes);
  written.push(name);
}

const versions = {};
for (const name of PARTS) {
  const part = await build({ ...common, entryPoints: [resolve(here, `src/${name}.js`)], plugins: [hostPreact] });
  const code = part.outputFiles[0].contents;
  versions[name] = hash(code);
  write(`widget-${name}.js`, code);
}

const widget = await build({
  ...common,
  entryPoints: [resolve(here, "src/widget.js")],
  define: { __WIDGET_PARTS__: JSON.stringify(versions) },
});
const widgetCode = widget.outputFiles[0].contents;
write("widget.js", widgetCode);

const loader = await build({ ...common, entryPoints: [resolve(here, "src/loader.js")] });
const loaderCode = Buffer.from(loader.outputFiles[0].contents)
  .toString("utf8")
  .replace("__WIDGET_VERSION__", hash(widgetCode));
write("loader.js", loaderCode);
// The API's TypeScript declarations, served beside the loader for the sites that type their calls.
write("chat-widget.d.ts", readFileSync(resolve(here, "src/chat-widget.d.ts")));

for (const name of written.sort()) {
  const bytes = readFileSync(resolve(out, name));
  console.log(`${name}: ${bytes.length} bytes, ${gzipSync(bytes, { level: 9 }).length} bytes gzipped`);
}
