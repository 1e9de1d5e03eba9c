"""The AI phrases: eight keys in seven languages, the default texts, and the override rules.

An override is plain text up to 500 characters: tags and control characters are stripped, and a
value that becomes empty is refused.
"""

from __future__ import annotations

import re
import unicodedata

LANGUAGES = ("ru", "en", "el", "de", "es", "ar", "zh")
KEYS = (
    "handoff_to_human",
    "handover_notice",
    "handover_offline",
    "handover_unknown",
    "social_reply",
    "handoff_to_ai",
    "pii_restore_fallback",
    "outside_hours",
)
MAX_LENGTH = 500

DEFAULTS: dict[str, dict[str, str]] = {
    "handoff_to_human": {
        "ru": "Передаю разговор оператору, он скоро ответит.",
        "en": "I'm passing the conversation to a human operator who will reply shortly.",
        "el": "Μεταφέρω τη συνομιλία σε έναν εκπρόσωπο, θα απαντήσει σύντομα.",
        "de": "Ich übergebe das Gespräch an einen Mitarbeiter, der Ihnen gleich antwortet.",
        "es": "Paso la conversación a un operador humano, que responderá en breve.",
        "ar": "أقوم بتحويل المحادثة إلى موظف بشري وسيرد عليك قريبًا.",
        "zh": "我正在将对话转接给人工客服，他们很快会回复您。",
    },
    "handover_notice": {
        "ru": "Оператор подключился к разговору.",
        "en": "An operator has joined the conversation.",
        "el": "Ένας εκπρόσωπος συνδέθηκε στη συνομιλία.",
        "de": "Ein Mitarbeiter ist dem Gespräch beigetreten.",
        "es": "Un operador se ha unido a la conversación.",
        "ar": "انضم موظف إلى المحادثة.",
        "zh": "人工客服已加入对话。",
    },
    "handover_offline": {
        "ru": "Сейчас операторов нет в сети. Оставьте сообщение, и мы ответим, как только сможем.",
        "en": "No operators are online right now. Leave a message and we will reply as soon as we can.",
        "el": "Κανένας εκπρόσωπος δεν είναι διαθέσιμος τώρα. Αφήστε μήνυμα και θα απαντήσουμε το συντομότερο.",
        "de": "Gerade ist kein Mitarbeiter online. Hinterlassen Sie eine Nachricht, wir antworten so bald wie möglich.",
        "es": "Ahora no hay operadores conectados. Deje un mensaje y le responderemos lo antes posible.",
        "ar": "لا يوجد موظفون متصلون الآن. اترك رسالة وسنرد عليك في أقرب وقت ممكن.",
        "zh": "目前没有人工客服在线。请留言，我们会尽快回复您。",
    },
    "handover_unknown": {
        "ru": "Я передал ваш вопрос операторам. Если никто не ответит в ближайшее время, мы свяжемся с вами позже.",
        "en": "I've passed your question to our operators. If nobody answers soon, we will get back to you later.",
        "el": (
            "Προώθησα την ερώτησή σας στους εκπροσώπους μας. Αν δεν "
            "απαντήσει κανείς σύντομα, θα επικοινωνήσουμε αργότερα."
        ),
        "de": (
            "Ich habe Ihre Frage an unsere Mitarbeiter weitergegeben. "
            "Falls niemand bald antwortet, melden wir uns später."
        ),
        "es": "He pasado su pregunta a nuestros operadores. Si nadie responde pronto, le contactaremos más tarde.",
        "ar": "لقد أحلت سؤالك إلى موظفينا. إذا لم يرد أحد قريبًا فسنتواصل معك لاحقًا.",
        "zh": "我已将您的问题转交给客服。如果暂时无人回复，我们稍后会联系您。",
    },
    "social_reply": {
        "ru": "Пожалуйста! Если появятся вопросы, пишите.",
        "en": "You're welcome! Write any time you have a question.",
        "el": "Παρακαλώ! Γράψτε μας όποτε έχετε ερώτηση.",
        "de": "Gern geschehen! Schreiben Sie jederzeit, wenn Sie Fragen haben.",
        "es": "¡De nada! Escríbanos cuando tenga alguna pregunta.",
        "ar": "على الرحب والسعة! اكتب لنا في أي وقت لديك سؤال.",
        "zh": "不客气！有任何问题随时联系我们。",
    },
    "handoff_to_ai": {
        "ru": "Оператор отошёл, я снова на связи и помогу с вашим вопросом.",
        "en": "The operator has stepped away; I'm back to help with your question.",
        "el": "Ο εκπρόσωπος απομακρύνθηκε· είμαι ξανά εδώ για να σας βοηθήσω.",
        "de": "Der Mitarbeiter ist gerade nicht da; ich helfe Ihnen wieder weiter.",
        "es": "El operador se ha ausentado; vuelvo a estar aquí para ayudarle.",
        "ar": "ابتعد الموظف مؤقتًا، وأنا هنا من جديد لمساعدتك.",
        "zh": "人工客服暂时离开，我回来继续为您解答。",
    },
    "pii_restore_fallback": {
        "ru": "Не могу показать эти данные в чате. Оператор уточнит их с вами лично.",
        "en": "I can't show that information in the chat. An operator will confirm it with you personally.",
        "el": "Δεν μπορώ να εμφανίσω αυτά τα στοιχεία στη συνομιλία. Ένας εκπρόσωπος θα τα επιβεβαιώσει μαζί σας.",
        "de": "Diese Angaben kann ich im Chat nicht anzeigen. Ein Mitarbeiter klärt sie persönlich mit Ihnen.",
        "es": "No puedo mostrar esos datos en el chat. Un operador los confirmará con usted personalmente.",
        "ar": "لا يمكنني عرض هذه البيانات في المحادثة. سيؤكدها معك أحد الموظفين شخصيًا.",
        "zh": "我无法在聊天中显示这些信息，客服会与您单独确认。",
    },
    # `{opens_at}`: the next opening as `HH:MM DD.MM` in the widget's time zone, or removed.
    "outside_hours": {
        "ru": "Сейчас мы не работаем. Оператор ответит, когда мы откроемся {opens_at}.",
        "en": "We are closed right now. An operator will reply when we open {opens_at}.",
        "el": "Αυτή τη στιγμή είμαστε κλειστά. Ένας εκπρόσωπος θα απαντήσει όταν ανοίξουμε {opens_at}.",
        "de": "Wir haben gerade geschlossen. Ein Mitarbeiter antwortet, sobald wir {opens_at} öffnen.",
        "es": "Ahora estamos cerrados. Un operador responderá cuando abramos {opens_at}.",
        "ar": "نحن مغلقون الآن. سيرد أحد الموظفين عندما نفتح {opens_at}.",
        "zh": "我们现在不在营业时间。我们开门后客服会回复您 {opens_at}。",
    },
}

assert set(DEFAULTS) == set(KEYS) and all(set(v) == set(LANGUAGES) for v in DEFAULTS.values())

_TAG = re.compile(r"<[^>]*>")


def clean_override(value: str) -> str:
    """Plain text: tags and control characters removed (a line break becomes a space), trimmed.
    The caller refuses an empty result and one over MAX_LENGTH."""
    text = _TAG.sub("", value)
    text = "".join(
        " " if ch in "\n\r\t" else ch
        for ch in text
        if ch in "\n\r\t" or unicodedata.category(ch) not in ("Cc", "Cf", "Cs", "Zl", "Zp")
    )
    return " ".join(text.split())


def resolved(overrides: dict) -> dict:
    """The read shape `{key: {lang: {text, source, default}}}`."""
    out = {}
    for key in KEYS:
        mine = overrides.get(key) or {}
        out[key] = {
            lang: {
                "text": mine.get(lang) or DEFAULTS[key][lang],
                "source": "override" if mine.get(lang) else "default",
                "default": DEFAULTS[key][lang],
            }
            for lang in LANGUAGES
        }
    return out


def text_of(overrides: dict, key: str, lang: str) -> str:
    return (overrides.get(key) or {}).get(lang) or DEFAULTS[key][lang]


_SPACE_BEFORE_STOP = re.compile(r"\s+([.,!?;:。،])")


def with_opens_at(text: str, opens_at: str) -> str:
    """`{opens_at}` replaced by the next opening (`HH:MM DD.MM`), or removed with its space when
    there is none."""
    filled = text.replace("{opens_at}", opens_at)
    return _SPACE_BEFORE_STOP.sub(r"\1", " ".join(filled.split()))
