// Launcher icon presets (settings_vocabulary.ICON_PRESETS), 24x24 outline paths.
export const ICONS = {
  chat_bubble: "M4 4h16v12H7l-3 3z",
  chat_dots: "M4 4h16v12H7l-3 3zM8 10h.01M12 10h.01M16 10h.01",
  chat_double: "M3 3h12v9H6l-3 3zM9 15v2h9l3 3V8h-3",
  message_square: "M3 3h18v14H8l-5 4z",
  headset: "M4 14v-2a8 8 0 0 1 16 0v2M4 14h3v6H4zM17 14h3v6h-3z",
  support_agent: "M12 12a4 4 0 1 0 0-8 4 4 0 0 0 0 8zM4 21a8 8 0 0 1 16 0M18 8h2v4h-2",
  question: "M12 22a10 10 0 1 0 0-20 10 10 0 0 0 0 20zM9.1 9a3 3 0 0 1 5.8 1c0 2-3 3-3 3M12 17h.01",
  envelope: "M3 5h18v14H3zM3 5l9 8 9-8",
  phone: "M5 3h4l2 5-2.5 1.5a11 11 0 0 0 6 6L16 13l5 2v4a2 2 0 0 1-2 2A16 16 0 0 1 3 5a2 2 0 0 1 2-2",
  hand_wave: "M7 11V6a1.5 1.5 0 0 1 3 0v4M10 10V4a1.5 1.5 0 0 1 3 0v6M13 10V5a1.5 1.5 0 0 1 3 0v7M16 12V9a1.5 1.5 0 0 1 3 0v5a7 7 0 0 1-12 5l-3-4a1.5 1.5 0 0 1 2.5-1.7L7 14",
  sparkle: "M12 3l2 7 7 2-7 2-2 7-2-7-7-2 7-2z",
  heart: "M12 21l-8.5-8.5a5 5 0 0 1 8.5-6.5 5 5 0 0 1 8.5 6.5z",
  close: "M6 6l12 12M18 6L6 18",
  clip: "M21 11l-8.5 8.5a5 5 0 0 1-7-7L14 4a3.5 3.5 0 0 1 5 5l-8.5 8.5a2 2 0 0 1-3-3L15 7",
  send: "M3 20l18-8L3 4l3 8zM6 12h15",
  smile: "M12 22a10 10 0 1 0 0-20 10 10 0 0 0 0 20zM8 14a5 5 0 0 0 8 0M9 9h.01M15 9h.01",
};
