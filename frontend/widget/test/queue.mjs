// The place-in-line text of every language (src/i18n.js `queueLine`): the next one is told so, the
// wait is whole minutes rounded up with the language's plural form, no wait part without an
// estimate, nothing when not waiting. Run: node test/queue.mjs (exits 1 on a failure).
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";

// src/*.js are ES modules bundled by esbuild; the package is not "type": "module", so the source is
// loaded as a module from its text (i18n.js imports nothing).
const source = readFileSync(new URL("../src/i18n.js", import.meta.url), "utf8");
const { queueLine, LANGUAGES } = await import(`data:text/javascript,${encodeURIComponent(source)}`);

assert.equal(queueLine("en", 3, 120), "You are number 3 in line · about 2 minutes");
assert.equal(queueLine("en", 3, null), "You are number 3 in line");
assert.equal(queueLine("en", 1, 30), "You are next in line · about 1 minute");
assert.equal(queueLine("en", 1, null), "You are next in line");
assert.equal(queueLine("en", 2, 61), "You are number 2 in line · about 2 minutes");
assert.equal(queueLine("en", null, null), "");
assert.equal(queueLine("en", 0, 10), "");
assert.equal(queueLine("xx", 2, null), "You are number 2 in line"); // an unknown language: English
assert.equal(queueLine("ru", 4, 60), "Ваш номер в очереди: 4 · примерно 1 минута");
assert.equal(queueLine("ru", 4, 180), "Ваш номер в очереди: 4 · примерно 3 минуты");
assert.equal(queueLine("ru", 4, 300), "Ваш номер в очереди: 4 · примерно 5 минут");
assert.equal(queueLine("ar", 2, 120), "رقمك في قائمة الانتظار: 2 · حوالي دقيقتين");
assert.equal(queueLine("ar", 2, 600), "رقمك في قائمة الانتظار: 2 · حوالي 10 دقائق");
assert.equal(queueLine("zh", 5, 150), "您在队列中排第 5 位 · 约 3 分钟");
assert.equal(queueLine("de", 2, 60), "Sie sind Nummer 2 in der Warteschlange · etwa 1 Minute");

for (const lang of LANGUAGES) {
  for (const [position, wait] of [[1, null], [2, 45], [7, 3600], [12, 61]]) {
    const line = queueLine(lang, position, wait);
    assert.ok(line && !line.includes("{n}") && !line.includes("undefined"), `${lang} ${position} ${wait}: ${line}`);
    if (position > 1) assert.ok(line.includes(String(position)), `${lang}: the place is said: ${line}`);
    if (wait !== null) assert.ok(line.includes(" · "), `${lang}: the wait is said: ${line}`);
  }
  assert.notEqual(queueLine(lang, 1, null), queueLine(lang, 2, null).replace("2", "1"), `${lang}: next is said`);
}
console.log("queue lines: ok");
