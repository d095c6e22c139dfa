// Runs in web pages: says only "this page was scrolled", never what it holds.
// The background script reads the position itself, so a page can make the
// extension offer nothing but its own URL, title and scroll position.
"use strict";
{
  const api = globalThis.browser ?? globalThis.chrome;
  let timer = null;
  addEventListener("scroll", () => {
    clearTimeout(timer);
    timer = setTimeout(() => api.runtime.sendMessage({ scrolled: true }).catch(() => {}), 250);
  }, { passive: true });
}
