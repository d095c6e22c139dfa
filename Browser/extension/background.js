// Handoff for Linux: offers the active tab of the focused browser window as this
// laptop's current activity, through the native messaging host
// io.github.handoff (handoff-webext-host), and opens the tabs continued here.
// One source for Firefox and Chromium (Scripts/build-webext writes the manifests).
"use strict";

const api = globalThis.browser ?? globalThis.chrome;
const HOST = "io.github.handoff";
// A burst of tab events (switch, load, title) becomes one offer.
const DEBOUNCE_MS = 300;
const RECONNECT_MS = 5000;

let port = null;
let timer = null;
// Whether the browser has focus; null until the first focus event (X servers
// without a window manager never send one, so unknown counts as focused).
let focused = null;
let offering = false;

function isWeb(url) {
  return typeof url === "string" && /^https?:\/\/[^\/?#\s]/i.test(url);
}

function connect() {
  try {
    port = api.runtime.connectNative(HOST);
  } catch (error) {
    port = null;
    setTimeout(connect, RECONNECT_MS);
    return;
  }
  port.onMessage.addListener(onHostMessage);
  port.onDisconnect.addListener(() => {
    const error = api.runtime.lastError ?? port?.error;
    console.warn("handoff: the native host is not reachable:", error?.message ?? "disconnected",
      "- see Docs/INSTALL.md, or run handoff-peer doctor");
    port = null;
    offering = false;
    setTimeout(connect, RECONNECT_MS);
  });
  schedule();
}

function post(message) {
  if (!port) return;
  try {
    port.postMessage(message);
  } catch (error) {
    console.warn("handoff: cannot reach the native host:", error.message);
  }
}

function schedule() {
  clearTimeout(timer);
  timer = setTimeout(() => refresh().catch((error) => console.warn("handoff:", error.message)), DEBOUNCE_MS);
}

function resign() {
  if (offering) post({ type: "resign" });
  offering = false;
}

async function scrollOf(tabId) {
  try {
    const [result] = await api.scripting.executeScript({
      target: { tabId },
      func: () => [Math.round(window.scrollX), Math.round(window.scrollY)],
    });
    const [x, y] = result?.result ?? [0, 0];
    return { scrollX: Math.max(0, x | 0), scrollY: Math.max(0, y | 0) };
  } catch {
    // No host permission for this page, or it is still loading: the top of the page.
    return { scrollX: 0, scrollY: 0 };
  }
}

// What the person looks at now: the active tab of the last focused normal window.
async function refresh() {
  if (focused === false) return resign();
  let window;
  try {
    window = await api.windows.getLastFocused({ windowTypes: ["normal"] });
  } catch {
    return resign(); // no window left
  }
  if (!window || window.incognito) return resign();
  const [tab] = await api.tabs.query({ active: true, windowId: window.id });
  // Private tabs and anything but http(s) pages are never offered.
  if (!tab || tab.incognito || !isWeb(tab.url)) return resign();
  // Still loading, with the stand-in title the browser makes from the address: wait for the
  // page's own title (its title or "complete" update schedules this again).
  if (tab.status === "loading" && (!tab.title || tab.url.includes(tab.title))) return;
  const { scrollX, scrollY } = await scrollOf(tab.id);
  post({ type: "current", url: tab.url, title: tab.title ?? "", scrollX, scrollY });
  offering = true;
}

// Runs in the page. Scrolls once the page has laid out, trying again for about
// 2 s while the page is still shorter than the position (late images, scripts).
function scrollTo(x, y) {
  return new Promise((resolve) => {
    let tries = 0;
    const attempt = () => {
      window.scrollTo(x, y);
      const there = Math.abs(window.scrollX - x) < 2 && Math.abs(window.scrollY - y) < 2;
      if (there || ++tries > 20) resolve(there);
      else setTimeout(attempt, 100);
    };
    requestAnimationFrame(attempt);
  });
}

// A continuation of a tab from the other laptop: a new tab in the front window,
// scrolled to where it was there. The host sends each continuation once.
async function onHostMessage(message) {
  if (message?.type === "error") {
    console.warn(`handoff: the native host refused a message (${message.code}): ${message.message} ${message.fix}`);
    return;
  }
  if (message?.type !== "continue" || !isWeb(message.url)) return;
  let windowId;
  try {
    const front = await api.windows.getLastFocused({ windowTypes: ["normal"] });
    if (front && !front.incognito) windowId = front.id;
  } catch {}
  let tab;
  if (windowId === undefined) {
    const created = await api.windows.create({ url: message.url, focused: true });
    tab = created.tabs[0];
  } else {
    tab = await api.tabs.create({ url: message.url, windowId, active: true });
  }
  const x = message.scrollX | 0, y = message.scrollY | 0;
  if (x === 0 && y === 0) return;
  const restore = async (tabId, change) => {
    if (tabId !== tab.id || change.status !== "complete") return;
    api.tabs.onUpdated.removeListener(restore);
    try {
      await api.scripting.executeScript({ target: { tabId }, func: scrollTo, args: [x, y] });
    } catch (error) {
      console.warn("handoff: cannot restore the scroll position:", error.message);
    }
    schedule();
  };
  api.tabs.onUpdated.addListener(restore);
}

// Switching tabs is the person at this browser: it has focus again, even where
// no focus event says so (X servers without a window manager send none).
api.tabs.onActivated.addListener(() => {
  focused = null;
  schedule();
});
api.tabs.onUpdated.addListener((tabId, change, tab) => {
  if (tab.active && (change.status === "complete" || "title" in change || "url" in change)) schedule();
});
api.tabs.onRemoved.addListener(schedule);
api.windows.onRemoved.addListener(schedule);
api.windows.onFocusChanged.addListener((windowId) => {
  // Debounced too: moving between two windows of the browser reports NONE in between.
  focused = windowId !== api.windows.WINDOW_ID_NONE;
  schedule();
});
api.runtime.onMessage.addListener((message, sender) => {
  if (message?.scrolled && sender.tab?.active) schedule();
});
connect();
