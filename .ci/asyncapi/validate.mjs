// Validates an AsyncAPI document with the AsyncAPI Initiative's parser (@asyncapi/parser, pinned in
// package.json / package-lock.json): the spec's JSON Schema plus the parser's Spectral rules.
// Prints every diagnostic; exits 1 on any error or warning, so CI fails on either.
//
//   node .ci/asyncapi/validate.mjs path/to/asyncapi.yaml
import { readFileSync } from "node:fs";
import { Parser } from "@asyncapi/parser";

const path = process.argv[2];
if (!path) {
  console.error("usage: node validate.mjs <asyncapi.yaml>");
  process.exit(2);
}
const severities = ["error", "warning", "information", "hint"];
const parser = new Parser();
const { document, diagnostics } = await parser.parse(readFileSync(path, "utf8"), { source: path });
let failing = 0;
for (const d of diagnostics) {
  const level = severities[d.severity] ?? String(d.severity);
  if (d.severity <= 1) failing += 1;
  console.log(`${level}: ${d.code}: ${d.message} at ${(d.path || []).join(".") || "(root)"}`);
}
if (!document || failing) {
  console.error(`AsyncAPI validation failed: ${failing} error(s) or warning(s)`);
  process.exit(1);
}
const channels = document.channels().all().map((c) => c.address());
const messages = document.messages().all().length;
console.log(`AsyncAPI ${document.version()} valid: channels ${channels.join(", ")}; ${messages} messages`);
