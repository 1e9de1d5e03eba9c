// `make console-charts`: builds src/reports.js (Chart.js and the reports page's drawing code) into
// apps/console/static/console/charts/, beside Chart.js's licence. Deterministic: no timestamps, no
// source maps, a fixed target, so CI can rebuild and compare with the committed files.
import { build } from "esbuild";
import { copyFileSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { dirname, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { gzipSync } from "node:zlib";

const here = dirname(fileURLToPath(import.meta.url));
const out = resolve(here, "../../apps/console/static/console/charts");
mkdirSync(out, { recursive: true });
for (const name of readdirSync(out)) rmSync(resolve(out, name));

const result = await build({
  entryPoints: [resolve(here, "src/reports.js")],
  bundle: true,
  minify: true,
  format: "iife",
  target: "es2020",
  legalComments: "none",
  charset: "utf8",
  write: false,
  logLevel: "warning",
});
writeFileSync(resolve(out, "reports.js"), result.outputFiles[0].contents);
copyFileSync(resolve(here, "node_modules/chart.js/LICENSE.md"), resolve(out, "chart.js.LICENSE.md"));

for (const name of readdirSync(out).sort()) {
  const bytes = readFileSync(resolve(out, name));
  console.log(`${name}: ${bytes.length} bytes, ${gzipSync(bytes, { level: 9 }).length} bytes gzipped`);
}
