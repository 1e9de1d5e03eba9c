// `make widget`: builds src/loader.js and src/widget.js into apps/widget/static/widget/.
// Deterministic: no timestamps, no source maps with absolute paths, a fixed target; the loader
// names widget.js with a content hash (`?v=`) so a new build is never served from a stale cache.
import { build } from "esbuild";
import { createHash } from "node:crypto";
import { readFileSync, writeFileSync, mkdirSync } from "node:fs";
import { dirname, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
const out = resolve(here, "../../apps/widget/static/widget");
mkdirSync(out, { recursive: true });

const common = {
  bundle: true,
  minify: true,
  format: "iife",
  target: "es2020",
  legalComments: "none",
  charset: "utf8",
  write: false,
  logLevel: "warning",
};

const widget = await build({
  ...common,
  entryPoints: [resolve(here, "src/widget.js")],
  jsx: "automatic",
  jsxImportSource: "preact",
  loader: { ".js": "jsx" },
});
const widgetCode = widget.outputFiles[0].contents;
const version = createHash("sha256").update(widgetCode).digest("hex").slice(0, 12);
writeFileSync(resolve(out, "widget.js"), widgetCode);

const loader = await build({
  ...common,
  entryPoints: [resolve(here, "src/loader.js")],
  define: {},
});
const loaderCode = Buffer.from(loader.outputFiles[0].contents).toString("utf8").replace("__WIDGET_VERSION__", version);
writeFileSync(resolve(out, "loader.js"), loaderCode);

for (const name of ["loader.js", "widget.js"]) {
  const bytes = readFileSync(resolve(out, name));
  const { gzipSync } = await import("node:zlib");
  console.log(`${name}: ${bytes.length} bytes, ${gzipSync(bytes, { level: 9 }).length} bytes gzipped`);
}
