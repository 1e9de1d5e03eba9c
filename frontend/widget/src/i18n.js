// The widget's own texts in the seven languages of the settings (`widget_default_language`).
// The tenant's translatable texts (widget_name, widget_signature, widget_greeting) come from the
// config's `texts[locale]` first; these are the catalogue fallback the spec names last.
export const LANGUAGES = ["ru", "en", "el", "de", "es", "ar", "zh"];
export const RTL = { ar: 1 };
export const NATIVE = {
  ru: "Русский",
  en: "English",
  el: "Ελληνικά",
  de: "Deutsch",
  es: "Español",
  ar: "العربية",
  zh: "中文",
};

const KEYS = [
  "open",
  "close",
  "title",
  "signature",
  "greeting",
  "placeholder",
  "send",
  "attach",
  "online",
  "offline",
  "typing",
  "offlineTitle",
  "offlineIntro",
  "name",
  "email",
  "phone",
  "message",
  "submit",
  "offlineSent",
  "rate",
  "rated",
  "star",
  "reconnecting",
  "powered",
  "language",
  "messages",
  "uploading",
  "failed",
  "you",
  "operator",
  "unread",
  "prechat",
  "start",
  "away",
  "team",
  "sources",
  "dismiss",
];

const TABLE = {
  en: [
    "Open chat",
    "Close chat",
    "Chat with us",
    "We usually reply in a few minutes",
    "Hello! How can we help you?",
    "Type a message…",
    "Send",
    "Attach a file",
    "Online",
    "Offline",
    "Operator is typing…",
    "Leave us a message",
    "No operator is online right now. Leave a message and we will get back to you.",
    "Name",
    "E-mail",
    "Phone",
    "Message",
    "Send message",
    "Thank you! We will get back to you soon.",
    "Rate this chat",
    "Thank you for your rating!",
    "{n} of 5",
    "Reconnecting…",
    "Powered by Chat Widget",
    "Language",
    "Messages",
    "Uploading…",
    "Not sent. Please try again.",
    "You",
    "Operator",
    "{n} unread",
    "Please introduce yourself before we start.",
    "Start chat",
    "Away",
    "Our team",
    "Sources",
    "Dismiss",
  ],
  ru: [
    "Открыть чат",
    "Закрыть чат",
    "Напишите нам",
    "Обычно отвечаем за несколько минут",
    "Здравствуйте! Чем можем помочь?",
    "Введите сообщение…",
    "Отправить",
    "Прикрепить файл",
    "В сети",
    "Не в сети",
    "Оператор печатает…",
    "Оставьте сообщение",
    "Сейчас нет операторов в сети. Оставьте сообщение, и мы ответим вам.",
    "Имя",
    "E-mail",
    "Телефон",
    "Сообщение",
    "Отправить сообщение",
    "Спасибо! Мы скоро свяжемся с вами.",
    "Оцените чат",
    "Спасибо за оценку!",
    "{n} из 5",
    "Переподключение…",
    "Работает на Chat Widget",
    "Язык",
    "Сообщения",
    "Загрузка…",
    "Не отправлено. Попробуйте ещё раз.",
    "Вы",
    "Оператор",
    "Непрочитанных: {n}",
    "Представьтесь, пожалуйста, прежде чем начать.",
    "Начать чат",
    "Нет на месте",
    "Наша команда",
    "Источники",
    "Скрыть",
  ],
  el: [
    "Άνοιγμα συνομιλίας",
    "Κλείσιμο συνομιλίας",
    "Μιλήστε μαζί μας",
    "Συνήθως απαντάμε σε λίγα λεπτά",
    "Γεια σας! Πώς μπορούμε να βοηθήσουμε;",
    "Γράψτε ένα μήνυμα…",
    "Αποστολή",
    "Επισύναψη αρχείου",
    "Σε σύνδεση",
    "Εκτός σύνδεσης",
    "Ο χειριστής πληκτρολογεί…",
    "Αφήστε μας ένα μήνυμα",
    "Κανένας χειριστής δεν είναι συνδεδεμένος. Αφήστε ένα μήνυμα και θα επικοινωνήσουμε μαζί σας.",
    "Όνομα",
    "E-mail",
    "Τηλέφωνο",
    "Μήνυμα",
    "Αποστολή μηνύματος",
    "Ευχαριστούμε! Θα επικοινωνήσουμε σύντομα μαζί σας.",
    "Αξιολογήστε τη συνομιλία",
    "Ευχαριστούμε για την αξιολόγηση!",
    "{n} από 5",
    "Επανασύνδεση…",
    "Με την υποστήριξη του Chat Widget",
    "Γλώσσα",
    "Μηνύματα",
    "Μεταφόρτωση…",
    "Δεν στάλθηκε. Δοκιμάστε ξανά.",
    "Εσείς",
    "Χειριστής",
    "{n} μη αναγνωσμένα",
    "Συστηθείτε πριν ξεκινήσουμε.",
    "Έναρξη συνομιλίας",
    "Απών",
    "Η ομάδα μας",
    "Πηγές",
    "Απόρριψη",
  ],
  de: [
    "Chat öffnen",
    "Chat schließen",
    "Schreiben Sie uns",
    "Wir antworten meist in wenigen Minuten",
    "Hallo! Wie können wir helfen?",
    "Nachricht eingeben…",
    "Senden",
    "Datei anhängen",
    "Online",
    "Offline",
    "Ein Mitarbeiter schreibt…",
    "Hinterlassen Sie eine Nachricht",
    "Gerade ist kein Mitarbeiter online. Hinterlassen Sie eine Nachricht, wir melden uns.",
    "Name",
    "E-Mail",
    "Telefon",
    "Nachricht",
    "Nachricht senden",
    "Danke! Wir melden uns bald bei Ihnen.",
    "Chat bewerten",
    "Danke für Ihre Bewertung!",
    "{n} von 5",
    "Verbindung wird wiederhergestellt…",
    "Bereitgestellt von Chat Widget",
    "Sprache",
    "Nachrichten",
    "Wird hochgeladen…",
    "Nicht gesendet. Bitte erneut versuchen.",
    "Sie",
    "Mitarbeiter",
    "{n} ungelesen",
    "Bitte stellen Sie sich vor, bevor wir beginnen.",
    "Chat starten",
    "Abwesend",
    "Unser Team",
    "Quellen",
    "Ausblenden",
  ],
  es: [
    "Abrir el chat",
    "Cerrar el chat",
    "Escríbenos",
    "Solemos responder en pocos minutos",
    "¡Hola! ¿En qué podemos ayudarte?",
    "Escribe un mensaje…",
    "Enviar",
    "Adjuntar un archivo",
    "En línea",
    "Desconectado",
    "El operador está escribiendo…",
    "Déjanos un mensaje",
    "Ahora no hay operadores en línea. Deja un mensaje y te responderemos.",
    "Nombre",
    "Correo electrónico",
    "Teléfono",
    "Mensaje",
    "Enviar mensaje",
    "¡Gracias! Te responderemos pronto.",
    "Valora este chat",
    "¡Gracias por tu valoración!",
    "{n} de 5",
    "Reconectando…",
    "Con la tecnología de Chat Widget",
    "Idioma",
    "Mensajes",
    "Subiendo…",
    "No enviado. Inténtalo de nuevo.",
    "Tú",
    "Operador",
    "{n} sin leer",
    "Preséntate antes de empezar, por favor.",
    "Iniciar chat",
    "Ausente",
    "Nuestro equipo",
    "Fuentes",
    "Descartar",
  ],
  ar: [
    "افتح المحادثة",
    "أغلق المحادثة",
    "تحدث معنا",
    "نرد عادةً خلال دقائق",
    "مرحبًا! كيف يمكننا مساعدتك؟",
    "اكتب رسالة…",
    "إرسال",
    "إرفاق ملف",
    "متصل",
    "غير متصل",
    "الموظف يكتب…",
    "اترك لنا رسالة",
    "لا يوجد موظف متصل الآن. اترك رسالة وسنعاود الاتصال بك.",
    "الاسم",
    "البريد الإلكتروني",
    "الهاتف",
    "الرسالة",
    "إرسال الرسالة",
    "شكرًا لك! سنتواصل معك قريبًا.",
    "قيّم هذه المحادثة",
    "شكرًا على تقييمك!",
    "{n} من 5",
    "جارٍ إعادة الاتصال…",
    "مدعوم من Chat Widget",
    "اللغة",
    "الرسائل",
    "جارٍ الرفع…",
    "لم تُرسل. حاول مرة أخرى.",
    "أنت",
    "الموظف",
    "{n} غير مقروءة",
    "يرجى التعريف بنفسك قبل أن نبدأ.",
    "ابدأ المحادثة",
    "بعيد",
    "فريقنا",
    "المصادر",
    "إخفاء",
  ],
  zh: [
    "打开聊天",
    "关闭聊天",
    "与我们聊天",
    "我们通常在几分钟内回复",
    "您好！有什么可以帮您？",
    "输入消息…",
    "发送",
    "附加文件",
    "在线",
    "离线",
    "客服正在输入…",
    "给我们留言",
    "目前没有客服在线。请留言，我们会尽快回复您。",
    "姓名",
    "电子邮件",
    "电话",
    "留言",
    "发送留言",
    "谢谢！我们会尽快与您联系。",
    "为本次聊天评分",
    "感谢您的评分！",
    "{n}/5",
    "正在重新连接…",
    "由 Chat Widget 提供支持",
    "语言",
    "消息",
    "正在上传…",
    "未发送，请重试。",
    "您",
    "客服",
    "{n} 条未读",
    "开始之前，请先介绍一下您自己。",
    "开始聊天",
    "离开",
    "我们的团队",
    "来源",
    "关闭",
  ],
};

// The thumbs of `rating_scale: thumbs` (values 5 and 1).
const THUMBS = {
  en: ["Thumbs up", "Thumbs down"],
  ru: ["Нравится", "Не нравится"],
  el: ["Μου αρέσει", "Δεν μου αρέσει"],
  de: ["Daumen hoch", "Daumen runter"],
  es: ["Me gusta", "No me gusta"],
  ar: ["أعجبني", "لم يعجبني"],
  zh: ["赞", "踩"],
};

// The states a conversation can be in, said where they show: the line under the last message of a
// closed conversation, the header while closed by business hours ({when}: the opening, in the
// visitor's time zone), and the reason above the offline form after a hand-over with nobody online.
const STATES_KEYS = ["ended", "closed", "closedUntil", "handover"];
const STATES = {
  en: [
    "This conversation has ended. Write again any time.",
    "Closed now",
    "Closed now · opens {when}",
    "Our assistant passed your question to the team, and nobody is online right now.",
  ],
  ru: [
    "Разговор завершён. Напишите снова, когда захотите.",
    "Сейчас закрыто",
    "Сейчас закрыто · откроемся {when}",
    "Наш ассистент передал ваш вопрос команде, но сейчас никого нет в сети.",
  ],
  el: [
    "Η συζήτηση ολοκληρώθηκε. Γράψτε ξανά όποτε θέλετε.",
    "Κλειστά τώρα",
    "Κλειστά τώρα · ανοίγουμε {when}",
    "Ο βοηθός μας προώθησε την ερώτησή σας στην ομάδα, αλλά κανείς δεν είναι συνδεδεμένος τώρα.",
  ],
  de: [
    "Dieses Gespräch ist beendet. Schreiben Sie jederzeit wieder.",
    "Gerade geschlossen",
    "Gerade geschlossen · öffnet {when}",
    "Unser Assistent hat Ihre Frage an das Team weitergegeben, doch gerade ist niemand online.",
  ],
  es: [
    "Esta conversación ha terminado. Escriba de nuevo cuando quiera.",
    "Cerrado ahora",
    "Cerrado ahora · abre {when}",
    "Nuestro asistente pasó su pregunta al equipo, pero ahora no hay nadie en línea.",
  ],
  ar: [
    "انتهت هذه المحادثة. اكتب لنا مجددًا في أي وقت.",
    "مغلق الآن",
    "مغلق الآن · نفتح {when}",
    "أحال مساعدنا سؤالك إلى الفريق، لكن لا أحد متصل الآن.",
  ],
  zh: [
    "本次对话已结束。您可以随时再次留言。",
    "当前休息中",
    "当前休息中 · {when} 开始服务",
    "我们的助手已将您的问题转给团队，但目前没有人在线。",
  ],
};

// The visitor's place in the routing queue: "number {n} in line" (the next one is told so), and the
// estimated wait in whole minutes with the language's plural form (Intl.PluralRules categories).
const QUEUE = {
  en: {
    number: "You are number {n} in line",
    next: "You are next in line",
    wait: { one: "about {n} minute", other: "about {n} minutes" },
  },
  ru: {
    number: "Ваш номер в очереди: {n}",
    next: "Ваша очередь следующая",
    wait: { one: "примерно {n} минута", few: "примерно {n} минуты", many: "примерно {n} минут", other: "примерно {n} минуты" },
  },
  el: {
    number: "Είστε νούμερο {n} στη σειρά",
    next: "Είστε οι επόμενοι στη σειρά",
    wait: { one: "περίπου {n} λεπτό", other: "περίπου {n} λεπτά" },
  },
  de: {
    number: "Sie sind Nummer {n} in der Warteschlange",
    next: "Sie sind als Nächstes an der Reihe",
    wait: { one: "etwa {n} Minute", other: "etwa {n} Minuten" },
  },
  es: {
    number: "Es el número {n} en la fila",
    next: "Le atenderemos a continuación",
    wait: { one: "alrededor de {n} minuto", other: "alrededor de {n} minutos" },
  },
  ar: {
    number: "رقمك في قائمة الانتظار: {n}",
    next: "دورك هو التالي",
    wait: {
      zero: "حوالي {n} دقيقة",
      one: "حوالي دقيقة واحدة",
      two: "حوالي دقيقتين",
      few: "حوالي {n} دقائق",
      many: "حوالي {n} دقيقة",
      other: "حوالي {n} دقيقة",
    },
  },
  zh: {
    number: "您在队列中排第 {n} 位",
    next: "下一位就是您",
    wait: { other: "约 {n} 分钟" },
  },
};

// "You are number 3 in line · about 2 minutes": the place (1 is "next in line") and, when the
// estimate is known, the wait rounded up to whole minutes (at least one). Empty when not waiting.
export function queueLine(lang, position, waitSeconds) {
  if (typeof position !== "number" || position < 1) return "";
  const table = QUEUE[lang] || QUEUE.en;
  const place = position === 1 ? table.next : table.number.replace("{n}", String(position));
  if (typeof waitSeconds !== "number" || waitSeconds < 0) return place;
  const minutes = Math.max(1, Math.ceil(waitSeconds / 60));
  let form = "other";
  try {
    form = new Intl.PluralRules(lang).select(minutes);
  } catch (e) {
    /* an engine without plural rules: the general form */
  }
  const wait = (table.wait[form] || table.wait.other).replace("{n}", String(minutes));
  return `${place} · ${wait}`;
}

export function texts(lang) {
  const row = TABLE[lang] || TABLE.en;
  const out = {};
  KEYS.forEach((key, i) => (out[key] = row[i]));
  [out.thumbUp, out.thumbDown] = THUMBS[lang] || THUMBS.en;
  STATES_KEYS.forEach((key, i) => (out[key] = (STATES[lang] || STATES.en)[i]));
  return out;
}

// The spec's resolution: an explicit language (the page's setLanguage or data-language, then the
// visitor's own pick in the switcher, then a non-auto `widget_default_language`) when the widget
// supports it; for `auto`, the first of the browser's languages the widget supports; else the
// fallback language.
export function resolveLanguage(settings, wanted, browser) {
  const supported = settings.widget_supported_languages || LANGUAGES;
  const fallback = settings.widget_fallback_language || "en";
  const pick = (code) => {
    const base = String(code || "").toLowerCase().split(/[-_]/)[0];
    return supported.indexOf(base) >= 0 ? base : null;
  };
  if (pick(wanted)) return pick(wanted);
  const configured = settings.widget_default_language;
  if (configured && configured !== "auto") return pick(configured) || fallback;
  for (const code of browser || []) {
    if (pick(code)) return pick(code);
  }
  return fallback;
}
