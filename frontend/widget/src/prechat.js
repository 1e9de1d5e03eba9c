// The pre-chat form part (widget-prechat.js): the owner's form (`settings.prechat`) drawn before the
// first message. Only visitors of a widget with a form fetch it, so its texts and its styles travel
// here and not in widget.js (the first paint's budget). The browser's own checks are off
// (`novalidate`): the server checks every answer and its messages show beside each field.
import { useRef, useState } from "preact/hooks";

const api = window.ChatWidget;

// [required hint, check the fields, choose (a select's empty choice), privacy policy]
const TEXTS = {
  en: ["Fields marked * are required.", "Please check the marked fields.", "Choose…", "Privacy policy"],
  ru: ["Поля, отмеченные *, обязательны.", "Проверьте отмеченные поля.", "Выберите…", "Политика конфиденциальности"],
  el: ["Τα πεδία με * είναι υποχρεωτικά.", "Ελέγξτε τα επισημασμένα πεδία.", "Επιλέξτε…", "Πολιτική απορρήτου"],
  de: ["Mit * markierte Felder sind Pflichtfelder.", "Bitte prüfen Sie die markierten Felder.", "Bitte wählen…", "Datenschutzerklärung"],
  es: ["Los campos marcados con * son obligatorios.", "Revise los campos marcados.", "Elija…", "Política de privacidad"],
  ar: ["الحقول المميزة بـ * مطلوبة.", "يرجى التحقق من الحقول المميزة.", "اختر…", "سياسة الخصوصية"],
  zh: ["标有 * 的字段为必填项。", "请检查标记的字段。", "请选择…", "隐私政策"],
};

const CSS = `
.pf .hint{font-size:12px;opacity:.8}
.pf .fld{display:flex;flex-direction:column;gap:4px}
.pf .fld label{display:block}
.pf .req{font-weight:700;margin-inline-start:2px}
.pf select{padding:8px 10px;border:1px solid var(--line);border-radius:8px;background:var(--bg);color:var(--text);font-weight:400;width:100%;display:block}
.pf label.check{flex-direction:row;align-items:flex-start;gap:8px;font-weight:400}
.pf label.check input{width:20px;height:20px;flex:none;margin-top:1px}
.pf [aria-invalid=true]{border-color:#C62828;border-width:2px}
.pf .err{font-size:12px;font-weight:600;border-inline-start:3px solid #C62828;padding-inline-start:6px;display:block}
.pf .sum{font-size:13px;font-weight:600;padding:8px 10px;border-radius:8px;background:#FFEBEE;color:#8E0000;display:block}
.pf a{text-decoration:underline}
`;

// The part's rules join the shadow root's once, after the ones widget.js put there.
(function addStyles(root) {
  try {
    const sheet = new CSSStyleSheet();
    sheet.replaceSync(CSS);
    root.adoptedStyleSheets = [...root.adoptedStyleSheets, sheet];
  } catch (e) {
    const style = document.createElement("style");
    if (api.nonce) style.nonce = api.nonce;
    style.textContent = CSS;
    root.appendChild(style);
  }
})(api.root);

// A label in the visitor's language, else the widget's fallback language, else English, else any.
function label(map, lang, fallback) {
  map = map || {};
  return map[lang] || map[fallback] || map.en || Object.values(map)[0] || "";
}

// A consent's label: a part written in [brackets] becomes the privacy policy link when the widget
// has one; without brackets the link follows the label.
function ConsentText({ text, url, linkText }) {
  const m = /^(.*?)\[([^\]]+)\](.*)$/.exec(text);
  if (!url) return m ? m[1] + m[2] + m[3] : text;
  const link = (words) => (
    <a href={url} target="_blank" rel="noopener noreferrer">
      {words}
    </a>
  );
  return m ? [m[1], link(m[2]), m[3]] : [text, " (", link(linkText), ")"];
}

const INPUT = { email: ["email", "email"], phone: ["tel", "tel"], number: ["number", "off"], text: ["text", "on"] };

function answers(form, fields) {
  const values = {};
  for (const f of fields) {
    const input = form.elements[`pf-${f.key}`];
    if (!input) continue;
    if (f.type === "checkbox") {
      values[f.key] = input.checked;
      continue;
    }
    const raw = input.value.trim();
    if (!raw) continue;
    // A number field sends a JSON number; what is not one goes as typed, for the server to name.
    values[f.key] = f.type === "number" && raw !== "" && isFinite(Number(raw)) ? Number(raw) : raw;
  }
  return values;
}

// `submit(values)` creates the session if there is none, posts the answers and moves on to the chat;
// a refusal throws an error whose `data.errors` are keyed `fields.<key>`.
function PrechatForm({ t, form, lang, fallback, privacyUrl, submit }) {
  const [errors, setErrors] = useState({});
  const [summary, setSummary] = useState("");
  const [busy, setBusy] = useState(false);
  const node = useRef(null);
  const words = TEXTS[lang] || TEXTS.en;
  const fields = form.fields || [];
  const consentLinked = privacyUrl && fields.some((f) => f.type === "checkbox" && f.required);

  async function onSubmit(e) {
    e.preventDefault();
    if (busy) return;
    setBusy(true);
    setSummary("");
    try {
      await submit(answers(e.target, fields));
    } catch (err) {
      const found = {};
      for (const [path, messages] of Object.entries((err.data && err.data.errors) || {})) {
        found[path.replace(/^fields\./, "")] = [].concat(messages).join(" ");
      }
      setErrors(found);
      setSummary(Object.keys(found).length ? words[1] : err.notice || t.failed);
      const first = fields.find((f) => found[f.key]);
      const el = first && node.current && node.current.elements[`pf-${first.key}`];
      if (el) setTimeout(() => el.focus());
    }
    setBusy(false);
  }

  return (
    <form class="form pf" ref={node} onSubmit={onSubmit} aria-label={t.prechat} noValidate>
      <p>{t.prechat}</p>
      {fields.some((f) => f.required) && <p class="hint">{words[0]}</p>}
      {summary && (
        <p class="sum" role="alert">
          {summary}
        </p>
      )}
      {fields.map((f) => {
        const id = `pf-${f.key}`;
        const error = errors[f.key];
        const text = label(f.label_i18n, lang, fallback);
        const mark = f.required && (
          <span class="req" aria-hidden="true">
            *
          </span>
        );
        const common = {
          id,
          name: id,
          required: f.required,
          "aria-invalid": error ? "true" : undefined,
          "aria-describedby": error ? `${id}-err` : undefined,
        };
        const message = error && (
          <span class="err" id={`${id}-err`}>
            {error}
          </span>
        );
        if (f.type === "checkbox") {
          return (
            <div key={f.key}>
              <label class="check">
                <input type="checkbox" {...common} />
                <span>
                  {f.required ? <ConsentText text={text} url={privacyUrl} linkText={words[3]} /> : text}
                  {mark}
                </span>
              </label>
              {message}
            </div>
          );
        }
        const [type, autocomplete] = INPUT[f.type] || INPUT.text;
        return (
          <div class="fld" key={f.key}>
            <label for={id}>
              {text}
              {mark}
            </label>
            {f.type === "select" ? (
              <select {...common}>
                <option value="">{words[2]}</option>
                {(f.options || []).map((o) => (
                  <option value={o.value}>{label(o.label_i18n, lang, fallback)}</option>
                ))}
              </select>
            ) : (
              <input
                type={type}
                {...common}
                autocomplete={f.key === "name" ? "name" : autocomplete}
                inputmode={f.type === "number" ? "decimal" : undefined}
                dir={type === "email" || type === "tel" ? "ltr" : undefined}
              />
            )}
            {message}
          </div>
        );
      })}
      {privacyUrl && !consentLinked && (
        <a href={privacyUrl} target="_blank" rel="noopener noreferrer">
          {words[3]}
        </a>
      )}
      <button type="submit" class="btn" disabled={busy}>
        {t.start}
      </button>
    </form>
  );
}

api._parts.prechat = { PrechatForm };
