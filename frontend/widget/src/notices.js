// The typing-preview notice (widget setting `typing_preview`) in the seven languages.
const PREVIEW = {
  en: "Operators may see your text as you type, before you send it.",
  ru: "Операторы могут видеть ваш текст во время набора, ещё до отправки.",
  el: "Οι εκπρόσωποι μπορεί να βλέπουν το κείμενό σας καθώς πληκτρολογείτε, πριν το στείλετε.",
  de: "Mitarbeiter können Ihren Text schon beim Tippen sehen, bevor Sie ihn senden.",
  es: "Los operadores pueden ver su texto mientras escribe, antes de enviarlo.",
  ar: "قد يرى الموظفون نصك أثناء الكتابة، قبل أن ترسله.",
  zh: "在您发送之前，客服可能会在您输入时看到您的文字。",
};

export function previewNotice(lang) {
  return PREVIEW[lang] || PREVIEW.en;
}

// What the builder's preview answers when the owner tries to send something from it.
const SAMPLE = {
  en: "This is a preview: nothing is sent from here.",
  ru: "Это предпросмотр: отсюда ничего не отправляется.",
  el: "Αυτή είναι προεπισκόπηση: από εδώ δεν αποστέλλεται τίποτα.",
  de: "Dies ist eine Vorschau: Von hier wird nichts gesendet.",
  es: "Esto es una vista previa: desde aquí no se envía nada.",
  ar: "هذه معاينة: لا يُرسل شيء من هنا.",
  zh: "这是预览：此处不会发送任何内容。",
};

export function sampleNotice(lang) {
  return SAMPLE[lang] || SAMPLE.en;
}
