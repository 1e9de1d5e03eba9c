// Styles of the shadow root. `:host { all: initial !important }` cuts every inherited property the
// host page could push through the shadow boundary (important declarations of the shadow tree win
// over the page's, even `* { all: unset; font-size: 40px !important }`); page selectors never match
// inside. Colours, sizes and offsets arrive as custom properties set on .cw from the config.
export const CSS = `
:host{all:initial!important;display:block!important;position:static!important;visibility:visible!important;opacity:1!important;width:0!important;height:0!important}
.cw,.cw *{box-sizing:border-box;margin:0;padding:0;border:0;font:inherit;color:inherit;background:none;text-align:start;line-height:1.4;letter-spacing:normal;text-transform:none;visibility:visible}
.cw{font-family:var(--font);font-size:14px;color:var(--text);-webkit-font-smoothing:antialiased}
.cw [hidden]{display:none!important}
.cw button,.cw a,.cw input,.cw textarea{cursor:pointer;display:inline-flex;align-items:center}
.cw :focus-visible{outline:3px solid var(--focus);outline-offset:2px}
.sr{position:absolute!important;width:1px;height:1px;overflow:hidden;clip:rect(0 0 0 0);white-space:nowrap}
.launcher{position:fixed;z-index:var(--z);width:var(--size);height:var(--size);border-radius:50%;justify-content:center;background:var(--button);color:var(--primary-text);box-shadow:0 4px 16px rgba(0,0,0,.25);transition:transform .15s}
.launcher:hover{transform:scale(1.06)}
.launcher svg{width:45%;height:45%}
.launcher img{width:60%;height:60%;object-fit:contain}
.anim-spin svg,.anim-spin img{animation:cw-spin 4s linear infinite}
.anim-spiral svg,.anim-spiral img{animation:cw-spiral 3s ease-in-out infinite}
@keyframes cw-spin{to{transform:rotate(360deg)}}
@keyframes cw-spiral{50%{transform:rotate(180deg) scale(.8)}100%{transform:rotate(360deg)}}
@media (prefers-reduced-motion:reduce){.launcher *,.launcher{animation:none!important;transition:none!important}}
.badge{position:absolute;top:-4px;inset-inline-end:-4px;min-width:22px;height:22px;border-radius:11px;background:#C62828;color:#fff;font-size:12px;font-weight:700;justify-content:center;display:flex;align-items:center;padding:0 6px}
.bubble{position:fixed;z-index:var(--z);max-width:260px;padding:10px 14px;border-radius:var(--radius);background:var(--bg);color:var(--text);box-shadow:0 4px 16px rgba(0,0,0,.2);display:block}
.win{position:fixed;z-index:var(--z);width:var(--w);height:var(--h);max-height:calc(100vh - 24px);max-width:calc(100vw - 24px);display:flex;flex-direction:column;background:var(--bg);color:var(--text);border-radius:var(--radius);box-shadow:0 8px 32px rgba(0,0,0,.28);overflow:hidden}
.mobile .win{inset:0!important;width:100vw;height:100%;max-height:none;max-width:none;border-radius:0!important}
.head{display:flex;align-items:center;gap:10px;padding:14px 16px;background:var(--primary);color:var(--primary-text)}
.head .t{flex:1;min-width:0}
.head h2{font-size:16px;font-weight:700}
.head p{font-size:12px;opacity:.9}
.dot{display:inline-block;width:8px;height:8px;border-radius:50%;background:#9E9E9E;margin-inline-end:6px}
.dot.on{background:#43A047}
.ops{display:flex;gap:8px;margin-top:4px;font-size:12px;align-items:center;list-style:none;padding:0;flex-wrap:wrap}
.ops-item{display:inline-flex;align-items:center;gap:4px;min-width:0}
.av{position:relative;flex:none;width:24px;height:24px;border-radius:50%;background:rgba(255,255,255,.3);display:inline-flex;justify-content:center;align-items:center;font-weight:700;font-size:12px}
.av img{width:100%;height:100%;border-radius:50%;object-fit:cover}
.pres{position:absolute;inset-inline-end:-1px;bottom:-1px;width:9px;height:9px;border-radius:50%;border:2px solid var(--primary);background:#9E9E9E}
.pres.online{background:#43A047}
.pres.away{background:#FB8C00}
.icon-btn{width:36px;height:36px;border-radius:50%;justify-content:center;color:inherit}
.icon-btn svg{width:20px;height:20px}
.icon-btn:hover{background:rgba(127,127,127,.18)}
.head select{background:rgba(255,255,255,.2);color:var(--primary-text);border-radius:6px;padding:4px;font-size:12px;cursor:pointer}
.head option{color:#1F2933;background:#fff}
.log{flex:1;overflow-y:auto;padding:14px 12px;display:flex;flex-direction:column;gap:8px}
.msg{max-width:82%;padding:8px 12px;border-radius:var(--radius);background:var(--agent);color:var(--agent-text);white-space:pre-wrap;overflow-wrap:anywhere;display:block;align-self:flex-start}
.msg.me{align-self:flex-end;background:var(--visitor);color:var(--visitor-text)}
.msg .who{display:block;font-size:11px;font-weight:700;opacity:.75;margin-bottom:2px}
.msg a{text-decoration:underline;display:inline;cursor:pointer}
.msg img{max-width:100%;border-radius:6px;display:block}
.msg.sys{align-self:center;background:none;font-size:12px;opacity:.75}
.kb{display:flex;flex-wrap:wrap;gap:6px;margin-top:8px}
.kb a{display:inline-flex;padding:6px 12px;border-radius:16px;background:var(--primary);color:var(--primary-text);text-decoration:none;font-weight:600}
.kb a.secondary{background:transparent;color:var(--text);border:1px solid currentColor}
.src{display:block;margin-top:8px;font-size:12px;white-space:normal}
.src-h{display:block;font-weight:700;opacity:.75}
.src ul{display:block;list-style:none}
.src li{display:block;overflow-wrap:anywhere}
.ended{align-self:stretch;display:flex;align-items:center;gap:8px;font-size:12px;opacity:.75;text-align:center;margin:6px 0}
.ended::before,.ended::after{content:"";flex:1;border-top:1px solid var(--line)}
.handover{display:flex;flex-direction:column;max-height:62%;min-height:0;border-top:1px solid var(--line)}
.handover h3{font-weight:700}
.handover .why{font-size:13px;font-weight:600;padding:10px 16px 0;display:block}
.handover>p[role=status]:not(.why){padding:10px 16px 14px;display:block}
.handover .form{padding-top:8px}
.typing{font-size:12px;opacity:.75;padding:0 14px 6px;display:block}
.queue{font-size:13px;font-weight:600;padding:8px 14px;border-top:1px solid var(--line);color:var(--text);display:block}
.note{font-size:12px;padding:6px 14px;background:#FFF3E0;color:#5D4037;display:block}
.foot{display:flex;align-items:flex-end;gap:6px;padding:10px;border-top:1px solid var(--line)}
.foot textarea{flex:1;resize:none;min-height:40px;max-height:120px;padding:9px 12px;border-radius:20px;border:1px solid var(--line);background:var(--bg);color:var(--text);cursor:text;display:block}
.send{width:40px;height:40px;border-radius:50%;background:var(--primary);color:var(--primary-text);justify-content:center}
.send svg{width:20px;height:20px}
.emo{position:relative}
.emo-list{position:absolute;bottom:44px;inset-inline-start:0;background:var(--bg);border:1px solid var(--line);border-radius:8px;padding:4px;display:grid;grid-template-columns:repeat(4,32px);gap:2px}
.emo-list button{width:32px;height:32px;justify-content:center;font-size:18px}
.form{padding:16px;display:flex;flex-direction:column;gap:10px;overflow-y:auto;flex:1}
.form label{display:flex;flex-direction:column;gap:4px;font-size:13px;font-weight:600}
.form input,.form textarea{padding:8px 10px;border:1px solid var(--line);border-radius:8px;background:var(--bg);color:var(--text);font-weight:400;cursor:text;display:block;width:100%}
.form textarea{min-height:90px}
.btn{justify-content:center;padding:10px 16px;border-radius:8px;background:var(--primary);color:var(--primary-text);font-weight:700}
.rate{display:flex;flex-direction:column;align-items:center;gap:4px;padding:8px;font-size:13px}
.stars,.thumbs{display:flex;gap:2px}
.stars button,.thumbs button{font-size:22px;width:32px;height:32px;justify-content:center;color:#B0B0B0}
.stars button.on{color:#F9A825}
.brand{font-size:11px;text-align:center;opacity:.6;padding:4px;display:block}
.brand,.form a{color:var(--text)}
.skin-minimal .win{box-shadow:0 2px 8px rgba(0,0,0,.15);border:1px solid var(--line)}
.skin-minimal .head{background:var(--bg);color:var(--text);border-bottom:1px solid var(--line)}
.skin-minimal .head select{color:var(--text)}
.skin-rounded .win{border-radius:calc(var(--radius) + 12px)}
.skin-rounded .msg{border-radius:18px}
.skin-compact{font-size:13px}
.skin-compact .head{padding:8px 12px}
.skin-compact .log{gap:4px;padding:8px}
.skin-glass .win{background:color-mix(in srgb,var(--bg) 80%,transparent);backdrop-filter:blur(12px)}
.skin-gradient .head,.skin-gradient .launcher{background:linear-gradient(135deg,var(--primary),#7B1FA2)}
.skin-neon .win{box-shadow:0 0 0 2px var(--primary),0 0 24px var(--primary)}
.skin-corporate .win{border-radius:4px}
.skin-corporate .head{text-transform:uppercase;letter-spacing:.04em}
`;
