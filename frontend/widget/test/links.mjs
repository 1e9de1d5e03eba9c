// Prints, for each text of the shared corpus (apps/support/tests/link_corpus.json), the links the
// widget's linkify-it finds with the widget's configuration, as JSON; apps/support/tests compares
// them with the corpus and with the server's detection.
import LinkifyIt from "linkify-it";
import { readFileSync } from "node:fs";

const [configPath, corpusPath] = process.argv.slice(2);
const config = JSON.parse(readFileSync(configPath, "utf8"));
const corpus = JSON.parse(readFileSync(corpusPath, "utf8"));
const linkify = new LinkifyIt({}, config.options).tlds([config.tldPattern], false);
const out = corpus.map((item) => (linkify.match(item.text) || []).map((m) => m.text));
process.stdout.write(JSON.stringify(out));
