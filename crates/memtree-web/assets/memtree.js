// memtree's web UI: what only a browser can do. Every page works without
// this script; it opens folded subtrees in place, zooms and pans the graph,
// and keeps pages current while agents write (server-sent events).
"use strict";

// A folded subtree (data-src) loads its children when first opened.
document.addEventListener("toggle", async (event) => {
  const details = event.target;
  if (!(details instanceof HTMLDetailsElement) || !details.open || !details.dataset.src) return;
  const src = details.dataset.src;
  delete details.dataset.src;
  const answer = await fetch(src, { credentials: "same-origin" });
  if (!answer.ok) return;
  const list = details.querySelector(":scope > ul");
  list.outerHTML = await answer.text();
}, true);

// The graph: the wheel zooms around the pointer, a drag moves it.
for (const svg of document.querySelectorAll("svg.graph")) {
  let [x, y, w, h] = svg.getAttribute("viewBox").split(" ").map(Number);
  const show = () => svg.setAttribute("viewBox", `${x} ${y} ${w} ${h}`);
  svg.addEventListener("wheel", (event) => {
    event.preventDefault();
    const box = svg.getBoundingClientRect();
    const px = x + (event.clientX - box.left) / box.width * w;
    const py = y + (event.clientY - box.top) / box.height * h;
    const k = event.deltaY > 0 ? 1.2 : 1 / 1.2;
    x = px - (px - x) * k; y = py - (py - y) * k; w *= k; h *= k;
    show();
  }, { passive: false });
  let from = null;
  svg.addEventListener("pointerdown", (event) => { from = [event.clientX, event.clientY]; });
  svg.addEventListener("pointerup", () => { from = null; });
  svg.addEventListener("pointermove", (event) => {
    if (!from) return;
    const box = svg.getBoundingClientRect();
    x -= (event.clientX - from[0]) / box.width * w;
    y -= (event.clientY - from[1]) / box.height * h;
    from = [event.clientX, event.clientY];
    show();
  });
}

// Changes: a document's page reloads when that document changed; a page
// of the whole store, or one that would lose something (a form being filled
// in, an answer), says so and offers to reload.
(() => {
  const mode = document.body.dataset.watch;
  if (!mode || !window.EventSource) return;
  const mine = document.body.dataset.ids;
  const banner = document.getElementById("changed");
  let reloading = false;
  const events = new EventSource("/events");
  events.addEventListener("change", (event) => {
    const ids = JSON.parse(event.data);
    const touches = !mine || ids.length === 0 || ids.includes(mine);
    if (!touches || reloading) return;
    if (mode === "reload") {
      reloading = true;
      // Several writes in a burst: one reload.
      setTimeout(() => location.reload(), 300);
    } else if (mine) {
      banner.textContent = `${mine} was changed by another writer since this page was opened. ` +
        "Saving merges by section, or shows the conflict.";
      banner.hidden = false;
    } else if (banner.hidden) {
      banner.textContent = "The memory changed since this page was opened. ";
      const reload = document.createElement("a");
      reload.href = location.href;
      reload.textContent = "Reload";
      banner.append(reload);
      banner.hidden = false;
    }
  });
  window.addEventListener("beforeunload", () => events.close());
})();
