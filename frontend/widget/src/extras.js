// The extras part (widget-extras.js): the screens and controls a visitor may never see (the offline
// form, the pre-chat form, the rating, the emoji list). widget.js adds it when the open window needs
// one of them; its Preact is widget.js's own (build.mjs), so these render in the same tree.
import { useEffect } from "preact/hooks";
const EMOJI = ["😀", "😊", "👍", "🙏", "❤️", "😂", "🎉", "🤔"];

function Privacy({ url }) {
  return (
    url && (
      <a href={url} target="_blank" rel="noopener noreferrer">
        {url}
      </a>
    )
  );
}

function PrechatForm({ t, settings, profile, fields, onSubmit }) {
  return (
    <form class="form" onSubmit={onSubmit} aria-label={t.prechat}>
      <p>{t.prechat}</p>
      {fields.map((field) => (
        <label>
          {t[field]}
          <input
            name={field}
            required
            type={field === "email" ? "email" : field === "phone" ? "tel" : "text"}
            autocomplete={field === "phone" ? "tel" : field}
            defaultValue={profile[field] || ""}
          />
        </label>
      ))}
      <Privacy url={settings.widget_privacy_policy_url} />
      <button type="submit" class="btn">
        {t.start}
      </button>
    </form>
  );
}

// `brief`: under the conversation after a hand-over, where a line above already says why.
function OfflineForm({ t, settings, profile, error, busy, textarea, open, onSubmit, brief }) {
  // Opening the window focuses the message box; a form that arrives after the opening does it itself.
  useEffect(() => {
    if (open && textarea.current) textarea.current.focus();
  }, []);
  return (
    <form class="form" onSubmit={onSubmit} aria-label={t.offlineTitle}>
      <h3>{t.offlineTitle}</h3>
      {!brief && <p>{settings.widget_offline_message || t.offlineIntro}</p>}
      {["name", "email", "phone"].map((field) => (
        <label>
          {t[field]}
          <input
            name={field}
            type={field === "email" ? "email" : field === "phone" ? "tel" : "text"}
            autocomplete={field === "phone" ? "tel" : field}
            defaultValue={profile[field] || ""}
          />
        </label>
      ))}
      <label>
        {t.message}
        <textarea name="message" required ref={textarea} />
      </label>
      <Privacy url={settings.widget_privacy_policy_url} />
      {error && <p role="alert">{error}</p>}
      <button type="submit" class="btn" disabled={busy}>
        {t.submit}
      </button>
    </form>
  );
}

function Rating({ t, prompt, thumbs, onRate }) {
  return (
    <div class="rate" role="group" aria-label={prompt}>
      <span>{prompt}</span>
      <div class={thumbs ? "thumbs" : "stars"}>
        {(thumbs ? [1, 5] : [1, 2, 3, 4, 5]).map((n) =>
          thumbs ? (
            <button type="button" aria-label={n === 5 ? t.thumbUp : t.thumbDown} onClick={() => onRate(n)}>
              {n === 5 ? "👍" : "👎"}
            </button>
          ) : (
            <button type="button" aria-label={t.star.replace("{n}", n)} onClick={() => onRate(n)}>
              ★
            </button>
          ),
        )}
      </div>
    </div>
  );
}

function EmojiList({ onPick }) {
  return (
    <span class="emo-list">
      {EMOJI.map((c) => (
        <button type="button" aria-label={c} onClick={() => onPick(c)}>
          {c}
        </button>
      ))}
    </span>
  );
}

window.ChatWidget._parts.extras = { PrechatForm, OfflineForm, Rating, EmojiList };
